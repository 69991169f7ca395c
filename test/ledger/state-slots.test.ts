/**
 * The ledger state's typed slots (src/ledger/state-slot.ts): each record kind is written under the key text stored
 * ledgers hold (a slot that changed its key would lose every stored record of its kind) and read back as written;
 * writing undefined deletes.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { NETWORK_CONSTRAINTS } from '../../src/protocol/constraints.js';
import {
  bumpNonce,
  controlsApplication,
  getAliasOwner,
  getDidRecord,
  getNonce,
  isDeletedDid,
  markDeletedDid,
  putAliasOwner,
  putDidRecord,
  type DidRecord,
} from '../../src/ledger/records.js';
import { applicationsOfControlDid, getApplication, putApplication, setApplicationsOfControlDid } from '../../src/ledger/runtime/application-state.js';
import { getPersona, putPersona, type PersonaRecord } from '../../src/ledger/runtime/persona-state.js';
import { getDidConstraints, policyV2Key, policyV3Key, putDidConstraints } from '../../src/ledger/runtime/policy-state.js';
import { EMPTY_STATE, Overlay } from '../../src/ledger/state.js';

const DID = 'did:platform:zSlot';
const didRecord: DidRecord = {
  aliases: ['slot'],
  devices: null,
  document: null,
  version: 1,
  updatedAt: 7,
  rootPubkey: new Uint8Array(32),
  deactivated: false,
};
const persona: PersonaRecord = {
  operatorDid: DID,
  controllerKeyIds: ['root'],
  controllerThreshold: 1,
  deliveryConstraints: null,
  dnsProofHash: new Uint8Array(32),
  verifiedAt: 1,
  verificationExpiresAt: 2,
  revision: 1,
  active: true,
  named: false,
};

describe('ledger state slots', () => {
  it('write each kind under its stored key text and read it back', () => {
    const s = new Overlay(EMPTY_STATE);
    putDidRecord(s, DID, didRecord);
    bumpNonce(s, 'persona_nonce', 'shop.example.com', 4n);
    putAliasOwner(s, 'slot', DID);
    markDeletedDid(s, 'did:platform:zGone');
    putPersona(s, 'shop.example.com', persona);
    const app = { controlDid: DID, status: 'Active' as const, revision: 1n, registeredAt: 1, updatedAt: 1, domain: null, linkedDids: [] };
    putApplication(s, 'push.app', app);
    setApplicationsOfControlDid(s, DID, ['push.app']);
    putDidConstraints(s, DID, NETWORK_CONSTRAINTS);
    assert.deepEqual([...s.writtenKeys()].sort(), [
      `alias/slot`,
      `app/push.app`,
      `appidx/${DID}`,
      `constraints/did/${DID}`,
      'deleted/did:platform:zGone',
      `did/${DID}`,
      'nonce/persona_nonce/shop.example.com',
      'persona/shop.example.com',
    ]);
    assert.equal(policyV2Key({ kind: 'Persona', id: 'p.example' }), 'policy2/persona/p.example');
    assert.equal(policyV3Key({ kind: 'Application', id: 'push.app' }), 'policy3/app/push.app');
    assert.equal(policyV3Key({ kind: 'Did', id: DID }), `policy3/did/${DID}`);

    assert.equal(getDidRecord(s, DID), didRecord);
    assert.equal(getNonce(s, 'persona_nonce', 'shop.example.com'), 5n);
    assert.equal(getNonce(s, 'operator_nonce', DID), 0n, 'an absent nonce is 0');
    assert.equal(getAliasOwner(s, 'slot'), DID);
    assert.equal(isDeletedDid(s, 'did:platform:zGone'), true);
    assert.equal(getPersona(s, 'shop.example.com'), persona);
    assert.equal(getApplication(s, 'push.app'), app);
    assert.deepEqual(applicationsOfControlDid(s, DID), ['push.app']);
    assert.equal(controlsApplication(s, DID), true);
    assert.equal(getDidConstraints(s, DID), NETWORK_CONSTRAINTS);
  });

  it('writing undefined (or an empty index) deletes', () => {
    const s = new Overlay(EMPTY_STATE);
    putDidRecord(s, DID, didRecord);
    putAliasOwner(s, 'slot', DID);
    setApplicationsOfControlDid(s, DID, ['push.app']);
    const child = s.child();
    putDidRecord(child, DID, undefined);
    putAliasOwner(child, 'slot', undefined);
    setApplicationsOfControlDid(child, DID, []);
    assert.equal(getDidRecord(child, DID), undefined);
    assert.equal(getAliasOwner(child, 'slot'), undefined);
    assert.deepEqual(applicationsOfControlDid(child, DID), []);
    assert.equal(controlsApplication(child, DID), false);
    assert.equal(getDidRecord(s, DID), didRecord, 'the parent keeps its value');
  });
});
