/** The §5.1 → §5.2 submit-route table, with ids percent-encoded (http-api.md §0.4). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DID_ACTIONS, isDidAction, submitRoute, type DidAction } from '../../src/client/actions.js';

const DID = 'did:platform:entity1111111111';
const E = 'did%3Aplatform%3Aentity1111111111';
const VM = { id: `${DID}#k/1`, type: 'T', controller: DID, publicKeyMultibase: 'z' };
const SVC = { id: `${DID}#svc@x`, type: 'T', serviceEndpoint: 'https://x' };

const CASES: [DidAction, Record<string, unknown>, string, string, string, string][] = [
  ['add_alias', { alias: 'a' }, 'POST', `/dids/${E}/aliases`, 'add_alias', 'alias_nonce'],
  ['update_alias', { old_alias: 'old.a', new_alias: 'b' }, 'PATCH', `/dids/${E}/aliases/old.a`, 'update_alias', 'alias_nonce'],
  ['remove_alias', { alias: 'a-b' }, 'DELETE', `/dids/${E}/aliases/a-b`, 'remove_alias', 'alias_nonce'],
  ['add_device', { device_id: 'd' }, 'POST', `/dids/${E}/devices`, 'apply_control_with_proof', 'control_nonce'],
  ['update_device', { device_id: 'd/1', new_device_id: 'e' }, 'PATCH', `/dids/${E}/devices/d%2F1`, 'apply_control_with_proof', 'control_nonce'],
  ['remove_device', { device_id: 'd#1' }, 'DELETE', `/dids/${E}/devices/d%231`, 'apply_control_with_proof', 'control_nonce'],
  ['tombstone_device', { device_id: 'a+b' }, 'POST', `/dids/${E}/devices/a%2Bb/tombstone`, 'apply_control_with_proof', 'control_nonce'],
  ['deactivate_did', {}, 'POST', `/dids/${E}/deactivate`, 'apply_control_with_proof', 'control_nonce'],
  ['delete_did', {}, 'DELETE', `/dids/${E}`, 'apply_control_with_proof', 'control_nonce'],
  ['UpdateRootPubkey', { new_root_pubkey: '0x00' }, 'PUT', `/dids/${E}/root-pubkey`, 'update_root_pubkey', 'root_pubkey_nonce'],
  ['AddVerificationMethod', { verification_method: VM }, 'POST', `/dids/${E}/document/verification-methods`, 'add_verification_method', 'document_nonce'],
  [
    'UpdateVerificationMethod',
    { verification_method: VM },
    'PUT',
    `/dids/${E}/document/verification-methods/${E}%23k%2F1`,
    'update_verification_method',
    'document_nonce',
  ],
  [
    'RemoveVerificationMethod',
    { id: `${DID}#k1` },
    'DELETE',
    `/dids/${E}/document/verification-methods/${E}%23k1`,
    'remove_verification_method',
    'document_nonce',
  ],
  ['AddAuthentication', { id: `${DID}#k1` }, 'POST', `/dids/${E}/document/authentication`, 'add_authentication', 'document_nonce'],
  ['RemoveAuthentication', { id: `${DID}#k1` }, 'DELETE', `/dids/${E}/document/authentication/${E}%23k1`, 'remove_authentication', 'document_nonce'],
  ['AddKeyAgreement', { key_agreement: VM }, 'POST', `/dids/${E}/document/key-agreements`, 'add_key_agreement', 'document_nonce'],
  ['UpdateKeyAgreement', { key_agreement: VM }, 'PUT', `/dids/${E}/document/key-agreements/${E}%23k%2F1`, 'update_key_agreement', 'document_nonce'],
  ['RemoveKeyAgreement', { id: `${DID}#ka` }, 'DELETE', `/dids/${E}/document/key-agreements/${E}%23ka`, 'remove_key_agreement', 'document_nonce'],
  ['AddService', { service: SVC }, 'POST', `/dids/${E}/document/services`, 'add_service', 'document_nonce'],
  ['UpdateService', { service: SVC }, 'PUT', `/dids/${E}/document/services/${E}%23svc%40x`, 'update_service', 'document_nonce'],
  ['RemoveService', { id: `${DID}#s` }, 'DELETE', `/dids/${E}/document/services/${E}%23s`, 'remove_service', 'document_nonce'],
  ['replace_document', { document: { id: DID } }, 'PUT', `/dids/${E}/document/proof`, 'set_document_with_proof_v2', 'document_nonce'],
];

test('every §5.1 action has its submit route, ledger call and nonce domain', () => {
  assert.deepEqual(CASES.map((c) => c[0]).sort(), (Object.keys(DID_ACTIONS) as DidAction[]).sort(), 'table covers every action');
  for (const [action, fields, method, path, extrinsic, domain] of CASES) {
    assert.deepEqual(submitRoute(DID, action, fields), { method, path }, action);
    assert.equal(DID_ACTIONS[action].extrinsic, extrinsic, action);
    assert.equal(DID_ACTIONS[action].nonceDomain, domain, action);
  }
});

test('action names are matched exactly (case-sensitive, mixed naming)', () => {
  assert.ok(isDidAction('AddService') && isDidAction('add_alias') && isDidAction('UpdateRootPubkey'));
  for (const bad of ['addService', 'Add_Alias', 'update_root_pubkey', 'ReplaceDocument', 'toString', 'constructor', 1]) {
    assert.equal(isDidAction(bad), false, String(bad));
  }
});

test('a route whose id is missing from the body is refused', () => {
  assert.throws(() => submitRoute(DID, 'remove_alias', {}));
  assert.throws(() => submitRoute(DID, 'UpdateService', { service: { type: 'x' } }));
});
