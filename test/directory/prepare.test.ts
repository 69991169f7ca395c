/** `POST /dids/{did}/prepare` (http-api.md §5.1): response shape per action, action names, check order. */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { to0x } from '../../src/base/bytes.js';
import { multibaseEd25519 } from '../../src/protocol/keys.js';
import { startDirectory, type DirectoryHarness } from '../support/directory-harness.js';
import {
  ALL_ACTIONS,
  assertError,
  didOf,
  kaOf,
  keyOf,
  kid,
  mutate,
  nonceDomainOf,
  prepare,
  registerDid,
  registerFixture,
  vmOf,
  type Fixture,
} from '../support/directory-flows.js';

type Body = Record<string, unknown>;

const EXTRINSIC: Record<string, string> = {
  add_alias: 'add_alias',
  update_alias: 'update_alias',
  remove_alias: 'remove_alias',
  add_device: 'apply_control_with_proof',
  update_device: 'apply_control_with_proof',
  remove_device: 'apply_control_with_proof',
  tombstone_device: 'apply_control_with_proof',
  deactivate_did: 'apply_control_with_proof',
  delete_did: 'apply_control_with_proof',
  UpdateRootPubkey: 'update_root_pubkey',
  AddVerificationMethod: 'add_verification_method',
  UpdateVerificationMethod: 'update_verification_method',
  RemoveVerificationMethod: 'remove_verification_method',
  AddAuthentication: 'add_authentication',
  RemoveAuthentication: 'remove_authentication',
  AddKeyAgreement: 'add_key_agreement',
  UpdateKeyAgreement: 'update_key_agreement',
  RemoveKeyAgreement: 'remove_key_agreement',
  AddService: 'add_service',
  UpdateService: 'update_service',
  RemoveService: 'remove_service',
  replace_document: 'set_document_with_proof_v2',
};

/** Fields as a client sends them, and the action fields `request` must carry (normalised). */
function fieldsOf(f: Fixture, action: string): { sent: Body; expected: Body } {
  const k = keyOf(220);
  const same = (b: Body) => ({ sent: b, expected: b });
  switch (action) {
    case 'add_alias':
      return { sent: { alias: '  MixedCase ' }, expected: { alias: 'mixedcase' } };
    case 'update_alias':
      return { sent: { old_alias: f.alias.toUpperCase(), new_alias: ' Next ' }, expected: { old_alias: f.alias, new_alias: 'next' } };
    case 'remove_alias':
      return { sent: { alias: `\t${f.alias}` }, expected: { alias: f.alias } };
    case 'add_device':
      return same({ device_id: 'Device One' });
    case 'update_device':
      return same({ device_id: 'dev-1', new_device_id: 'dev-2' });
    case 'remove_device':
    case 'tombstone_device':
      return same({ device_id: 'dev-1' });
    case 'deactivate_did':
    case 'delete_did':
      return same({});
    case 'UpdateRootPubkey':
      return { sent: { new_root_pubkey: multibaseEd25519(k.publicKey) }, expected: { new_root_pubkey: to0x(k.publicKey) } };
    case 'AddVerificationMethod':
      return same({ verification_method: vmOf(f.did, 'key-3', k) });
    case 'UpdateVerificationMethod':
      return same({ verification_method: vmOf(f.did, 'key-2', k) });
    case 'AddKeyAgreement':
      return same({ key_agreement: kaOf(f.did, 'ka-2', 1) });
    case 'UpdateKeyAgreement':
      return same({ key_agreement: kaOf(f.did, 'ka-1', 9) });
    case 'AddService':
      return same({ service: { serviceEndpoint: 'https://x.example', type: 'T', id: kid(f.did, 'svc-2') } });
    case 'UpdateService':
      return same({ service: { id: kid(f.did, 'svc-1'), type: 'T', serviceEndpoint: 'https://y.example', authorization: null } });
    case 'RemoveVerificationMethod':
    case 'AddAuthentication':
      return same({ id: kid(f.did, 'key-2') });
    case 'RemoveAuthentication':
      return same({ id: kid(f.did, 'key-1') });
    case 'RemoveKeyAgreement':
      return same({ id: kid(f.did, 'ka-1') });
    case 'RemoveService':
      return same({ id: kid(f.did, 'svc-1') });
    case 'replace_document':
      return same({ document: { id: f.did, authentication: [], verificationMethod: [] } });
    default:
      throw new Error(action);
  }
}

describe('POST /dids/{did}/prepare', () => {
  let h: DirectoryHarness;
  let f: Fixture;
  before(async () => {
    h = await startDirectory();
    f = await registerFixture(h, 1);
  });
  after(() => h.close());

  it('answers the §5.1 shape for every action, with exactly the documented request keys', async () => {
    const vu = String(h.clock.nowMs() + 1000);
    for (const action of ALL_ACTIONS) {
      const { sent, expected } = fieldsOf(f, action);
      const res = await prepare(h, f.did, action, { ...sent, valid_until: vu, unknown: 'ignored' });
      assert.equal(res.status, 200, `${action}: ${JSON.stringify(res.body)}`);
      const b = res.body;
      assert.deepEqual(Object.keys(b).sort(), [
        'action',
        'canonical_payload',
        'did',
        'extrinsic',
        'nonce',
        'nonce_domain',
        'payload_to_sign',
        'previous_version',
        'request',
        'schema_version',
        'signer_key_id',
        'valid_until',
      ]);
      assert.equal(b.did, f.did);
      assert.equal(b.action, action);
      assert.equal(b.extrinsic, EXTRINSIC[action]);
      assert.equal(b.nonce_domain, nonceDomainOf(action));
      assert.equal(b.nonce, nonceDomainOf(action) === 'control_nonce' ? '1' : '0');
      assert.equal(b.valid_until, vu);
      assert.equal(b.signer_key_id, 'root');
      assert.equal(b.schema_version, '1');
      assert.equal(b.previous_version, 2);
      assert.match(b.payload_to_sign as string, /^0x([0-9a-f]{2})+$/);
      assert.equal(b.canonical_payload, b.payload_to_sign);
      const request = b.request as Body;
      const common = { did: f.did, action, nonce: b.nonce, valid_until: vu, signer_key_id: 'root', canonical_payload: b.payload_to_sign };
      if (action === 'replace_document') {
        assert.deepEqual(request, { ...common, ...expected, timestamp: `v2:${b.nonce}:${vu}`, pubkey: to0x(f.key.publicKey) });
        assert.ok((b.payload_to_sign as string).startsWith(`0x${Buffer.from('platform:set_document:v2|').toString('hex')}`));
      } else {
        assert.deepEqual(request, { ...common, ...expected }, action);
      }
    }
  });

  it('matches action names exactly: anything else is 400 unsupported_action', async () => {
    for (const action of [
      'AddAlias',
      'add_Alias',
      'ADD_ALIAS',
      'addAlias',
      'update_root_pubkey',
      'add_verification_method',
      'set_delivery_policy_links',
      '',
      42,
      null,
    ]) {
      assertError(await prepare(h, f.did, action as string, { alias: 'x' }), 400, 'unsupported_action');
    }
    assertError(await h.call('POST', `/dids/${f.did}/prepare`, { did: f.did }), 400, 'unsupported_action');
  });

  it('requires the body did to equal the path (400 path_body_mismatch); the body may omit it', async () => {
    const other = await registerDid(h, 2);
    assertError(await h.call('POST', `/dids/${f.did}/prepare`, { did: other.did, action: 'add_alias', alias: 'x' }), 400, 'path_body_mismatch');
    const res = await h.call('POST', `/dids/${encodeURIComponent(f.did)}/prepare`, { action: 'add_alias', alias: 'x' });
    assert.equal(res.status, 200);
    assert.equal((res.body.request as Body).did, f.did);
    assertError(await h.call('POST', '/dids/did:bad/prepare', { action: 'add_alias', alias: 'x' }), 400, 'invalid_did');
  });

  it('checks in order: DID, deactivation, field syntax, signer, then the ledger', async () => {
    const ghost = didOf(200);
    assertError(await prepare(h, ghost, 'add_alias', { alias: 'bad alias', signer_key_id: 'nope', valid_until: 'x' }), 404, 'did_not_found');
    const gone = await registerDid(h, 3);
    await mutate(h, gone.did, gone.key, 'deactivate_did');
    assertError(await prepare(h, gone.did, 'add_alias', { alias: 'bad alias', signer_key_id: 'nope' }), 409, 'did_deactivated');
    assertError(await prepare(h, f.did, 'add_alias', { alias: 'bad alias', signer_key_id: 'nope', valid_until: 'x' }), 400, 'invalid_alias');
    assertError(await prepare(h, f.did, 'add_alias', { alias: 'ok', signer_key_id: 'nope', valid_until: 'x' }), 400, 'invalid_valid_until');
    assertError(await prepare(h, f.did, 'add_alias', { alias: 'ok', signer_key_id: 's'.repeat(65) }), 400, 'invalid_request');
    assertError(await prepare(h, f.did, 'add_alias', { alias: 'ok', signer_key_id: 42 }), 400, 'invalid_request');
    assertError(await prepare(h, f.did, 'add_alias', { alias: f.alias, signer_key_id: 'nope' }), 403, 'signer_not_authorized');
    assertError(await prepare(h, f.did, 'add_alias', { alias: f.alias }), 409, 'alias_already_exists');
    const expired = await prepare(h, f.did, 'add_alias', { alias: 'ok', valid_until: String(h.clock.nowMs()) });
    assertError(expired, 400, 'authorization_expired');
    assert.equal((expired.body.details as Body).ledger_error, 'AliasAuthorizationExpired');
  });

  it('resolves VM signers against the pool state, and refuses key agreements as signers', async () => {
    const k = keyOf(230);
    await mutate(h, f.did, f.key, 'AddVerificationMethod', { verification_method: vmOf(f.did, 'pending-key', k) }, { pending: true });
    const res = await prepare(h, f.did, 'add_alias', { alias: 'by-pending-vm', signer_key_id: kid(f.did, 'pending-key') });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.previous_version, 2, 'finalized version, not the pool one');
    assertError(await prepare(h, f.did, 'add_alias', { alias: 'x', signer_key_id: kid(f.did, 'ka-1') }), 403, 'signer_not_authorized');
    h.settle();
  });
});
