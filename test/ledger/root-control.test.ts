/** Root-key rotation (ledger-rules.md §5.3) and control actions (§5.4), incl. deactivation, deletion, re-registration. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { concatBytes } from '../../src/base/bytes.js';
import { encodeControlPayload, type ControlAction } from '../../src/protocol/payloads/control.js';
import { DID_SCOPED_NONCES, getAliasOwner, keys, policyKeys } from '../../src/ledger/records.js';
import type { CallHandler } from '../../src/ledger/runtime/dispatch.js';
import { makeProfile } from '../../src/protocol/profile.js';
import { hex, vectors as V } from '../vectors/ledger-vectors.js';
import {
  aliasCall,
  assertRejected,
  controlCall,
  didOf,
  genesisConfig,
  Harness,
  patchCall,
  registerCall,
  replaceDocumentCall,
  rootKeyCall,
  rootSigner,
  seedKey,
  serviceOf,
  VALID_UNTIL,
  vmOf,
} from './harness.js';

const key7 = seedKey(7);
const key8 = seedKey(8);
const key5 = seedKey(5);
const A = didOf(31);
const root7 = rootSigner(key7);
const root8 = rootSigner(key8);
const OPENPAYLOAD = makeProfile('openpayload');

function setup(opts: ConstructorParameters<typeof Harness>[0] = {}): Harness {
  const h = new Harness(opts);
  h.register(A, key7, { alias: 'alpha' });
  return h;
}

// ---- §5.3 ----

test('root key rotation: new key signs, old key fails, VMs keep signing, nonce +1', (t) => {
  const h = setup();
  t.after(() => h.close());
  const v = h.record(A)!.version;
  h.apply(rootKeyCall(A, key8.publicKey, root7, { nonce: 0n }));
  const rec = h.record(A)!;
  assert.deepEqual(rec.rootPubkey, key8.publicKey);
  assert.equal(rec.version, v + 1);
  assert.equal(h.headNonce('root_pubkey_nonce', A), 1n);
  assertRejected(h, aliasCall(A, { kind: 'add', alias: 'one' }, root7), 'InvalidSignature');
  h.apply(aliasCall(A, { kind: 'add', alias: 'one' }, root8, { nonce: 0n }));
  // the VM #root still holds key 7 and still signs, even a rotation back
  const vm7 = { keyId: `${A}#root`, key: key7 };
  h.apply(aliasCall(A, { kind: 'add', alias: 'two' }, vm7, { nonce: 1n }));
  assertRejected(h, rootKeyCall(A, key5.publicKey, root7, { nonce: 1n }), 'InvalidSignature');
  h.apply(rootKeyCall(A, key5.publicKey, vm7, { nonce: 1n }));
  assert.deepEqual(h.record(A)!.rootPubkey, key5.publicKey);
  // no check that the key differs
  h.apply(rootKeyCall(A, key5.publicKey, rootSigner(key5), { nonce: 2n }));
  assert.equal(h.headNonce('root_pubkey_nonce', A), 3n);
  assert.equal(h.headNonce('alias_nonce', A), 2n);
});

test('root key rotation validation order (§5.3 steps 1–9)', (t) => {
  const h = setup();
  t.after(() => h.close());
  const now = BigInt(h.ledger.poolNowMs());
  const longDid = 'did:p:' + '1'.repeat(123);
  const unknown = didOf(96);
  const k = key8.publicKey;
  const cases: [string, ReturnType<typeof rootKeyCall>, string][] = [
    ['31-byte key + did too long', rootKeyCall(longDid, k.subarray(0, 31), root7), 'InvalidRootPubkey'],
    ['33-byte key', rootKeyCall(A, concatBytes(k, Uint8Array.of(1)), root7, { payloadKey: k }), 'InvalidRootPubkey'],
    ['did too long + long signer', rootKeyCall(longDid, k, { keyId: 'k'.repeat(65), key: key7 }), 'DidTooLong'],
    ['long signer', rootKeyCall(A, k, { keyId: 'k'.repeat(65), key: key7 }), 'InvalidRootPubkeyPayload'],
    ['garbage payload', rootKeyCall(A, k, root7, { signedPayload: Uint8Array.of(9) }), 'InvalidRootPubkeyPayload'],
    ['payload key differs + expired', rootKeyCall(A, k, root7, { payloadKey: key5.publicKey, validUntil: now }), 'InvalidRootPubkeyPayload'],
    ['payload did differs', rootKeyCall(A, k, root7, { payloadDid: didOf(95) }), 'InvalidRootPubkeyPayload'],
    ['call signer differs', rootKeyCall(A, k, root7, { callSignerKeyId: `${A}#root` }), 'InvalidRootPubkeyPayload'],
    ['expired + unknown', rootKeyCall(unknown, k, root7, { validUntil: now }), 'RootPubkeyAuthorizationExpired'],
    ['unknown + wrong nonce', rootKeyCall(unknown, k, root7, { nonce: 3n }), 'DidNotFound'],
    ['wrong nonce + bad signature', rootKeyCall(A, k, root7, { nonce: 3n, signature: new Uint8Array(64) }), 'InvalidRootPubkeyNonce'],
    ['signed by the new key', rootKeyCall(A, k, root8), 'InvalidSignature'],
  ];
  for (const [name, call, err] of cases) assert.equal(h.ledger.check(call)?.errorName, err, name);
  assert.equal(h.ledger.check(rootKeyCall(A, k, root7, { validUntil: now + 1n })), null);
});

// ---- §5.4 devices ----

test('devices: add, re-add un-tombstones keeping added_at, tombstone idempotent, rename, remove → None', (t) => {
  const h = setup();
  t.after(() => h.close());
  let n = 0n;
  const ctl = (a: Parameters<typeof controlCall>[1]) => h.apply(controlCall(A, a, root7, { nonce: n++ }));
  ctl({ kind: 'AddDevice', deviceId: 'phone-1' });
  const addedAt = h.ledger.headRef().timestampMs;
  assert.deepEqual(h.record(A)!.devices, [{ deviceId: 'phone-1', addedAt, tombstoned: false }]);
  h.clock.advance(10_000);
  ctl({ kind: 'TombstoneDevice', deviceId: 'phone-1' });
  ctl({ kind: 'TombstoneDevice', deviceId: 'phone-1' });
  assert.deepEqual(h.record(A)!.devices, [{ deviceId: 'phone-1', addedAt, tombstoned: true }]);
  ctl({ kind: 'UpdateDevice', oldDeviceId: 'phone-1', newDeviceId: 'phone-2' });
  assert.deepEqual(h.record(A)!.devices, [{ deviceId: 'phone-2', addedAt, tombstoned: true }], 'rename keeps added_at and tombstoned');
  ctl({ kind: 'AddDevice', deviceId: 'phone-2' });
  assert.deepEqual(h.record(A)!.devices, [{ deviceId: 'phone-2', addedAt, tombstoned: false }]);
  ctl({ kind: 'RemoveDevice', deviceId: 'phone-2' });
  assert.equal(h.record(A)!.devices, null);
  assert.equal(h.headNonce('control_nonce', A), n);
  assert.equal(h.record(A)!.version, 1 + Number(n));
});

test('devices: error cases and TooManyDevices at the 11th', (t) => {
  const h = setup();
  t.after(() => h.close());
  // devices None
  assertRejected(h, controlCall(A, { kind: 'UpdateDevice', oldDeviceId: 'x', newDeviceId: 'x' }, root7), 'DeviceAlreadyExists');
  assertRejected(h, controlCall(A, { kind: 'UpdateDevice', oldDeviceId: 'x', newDeviceId: 'y' }, root7), 'DeviceNotFound');
  assertRejected(h, controlCall(A, { kind: 'TombstoneDevice', deviceId: 'x' }, root7), 'DeviceNotFound');
  assertRejected(h, controlCall(A, { kind: 'RemoveDevice', deviceId: 'x' }, root7), 'DeviceNotFound');
  let n = 0n;
  for (let i = 0; i < 10; i++) h.apply(controlCall(A, { kind: 'AddDevice', deviceId: `d${i}` }, root7, { nonce: n++ }));
  assertRejected(h, controlCall(A, { kind: 'AddDevice', deviceId: 'd10' }, root7, { nonce: n }), 'TooManyDevices');
  // re-adding an existing one is fine at the limit
  assert.equal(h.ledger.check(controlCall(A, { kind: 'AddDevice', deviceId: 'd3' }, root7, { nonce: n })), null);
  assertRejected(h, controlCall(A, { kind: 'UpdateDevice', oldDeviceId: 'd1', newDeviceId: 'd2' }, root7, { nonce: n }), 'DeviceAlreadyExists');
  assertRejected(h, controlCall(A, { kind: 'UpdateDevice', oldDeviceId: 'zz', newDeviceId: 'd2' }, root7, { nonce: n }), 'DeviceAlreadyExists');
  assertRejected(h, controlCall(A, { kind: 'UpdateDevice', oldDeviceId: 'zz', newDeviceId: 'yy' }, root7, { nonce: n }), 'DeviceNotFound');
  assert.equal(h.record(A)!.devices!.length, 10);
  assert.equal(h.poolNonce('control_nonce', A), 10n);
});

test('control validation order (§5.4 steps 1–8)', (t) => {
  const h = setup();
  t.after(() => h.close());
  const now = BigInt(h.ledger.poolNowMs());
  const unknown = didOf(94);
  const add: ControlAction = { kind: 'AddDevice', deviceId: 'p' };
  const links: ControlAction = { kind: 'SetDeliveryPolicyLinks', links: { recipientPolicy: null, tagPolicies: [], personaPolicies: [] } };
  const longDidPayload = encodeControlPayload({ did: 'd'.repeat(129), action: add, nonce: 0n, validUntil: VALID_UNTIL, signerKeyId: 'root' });
  const cases: [string, ReturnType<typeof controlCall>, string][] = [
    ['long signer', controlCall(A, add, { keyId: 'k'.repeat(65), key: key7 }), 'InvalidControlPayload'],
    ['did > 128 in payload', controlCall(A, add, root7, { signedPayload: longDidPayload }), 'InvalidControlPayload'],
    ['action index 8', controlCall(A, add, root7, { signedPayload: hex(V.V3.delete.payload_hex.replace(/^(.{60})07/, '$108')) }), 'InvalidControlPayload'],
    ['signer differs + links', controlCall(A, links, root7, { callSignerKeyId: `${A}#root` }), 'InvalidControlPayload'],
    ['set links + expired', controlCall(A, links, root7, { validUntil: now }), 'PolicyLinksRemoved'],
    ['clear links + unknown DID', controlCall(unknown, { kind: 'ClearDeliveryPolicyLinks' }, root7), 'PolicyLinksRemoved'],
    ['expired + unknown DID', controlCall(unknown, add, root7, { validUntil: now }), 'ControlAuthorizationExpired'],
    ['unknown DID + wrong nonce', controlCall(unknown, add, root7, { nonce: 4n }), 'DidNotFound'],
    ['wrong nonce + bad signature', controlCall(A, add, root7, { nonce: 4n, signature: new Uint8Array(64) }), 'InvalidControlNonce'],
    ['bad signature + apply error', controlCall(A, { kind: 'RemoveDevice', deviceId: 'x' }, root7, { signature: new Uint8Array(64) }), 'InvalidSignature'],
    ['other key', controlCall(A, add, root8), 'InvalidSignature'],
  ];
  for (const [name, call, err] of cases) assert.equal(h.ledger.check(call)?.errorName, err, name);
  assert.equal(h.ledger.check(controlCall(A, add, root7, { validUntil: now + 1n })), null);
});

// ---- deactivation ----

test('deactivation is permanent: every later proof fails DidDeactivated, registration DidAlreadyExists', (t) => {
  const h = setup();
  t.after(() => h.close());
  h.apply(controlCall(A, { kind: 'AddDevice', deviceId: 'p' }, root7, { nonce: 0n }));
  h.apply(controlCall(A, { kind: 'DeactivateDid' }, root7, { nonce: 1n }));
  const rec = h.record(A)!;
  assert.equal(rec.deactivated, true);
  assert.equal(rec.version, 3);
  assert.deepEqual(
    rec.devices?.map((d) => d.deviceId),
    ['p'],
    'the record is kept',
  );
  assert.equal(h.headNonce('control_nonce', A), 2n);
  const now = BigInt(h.ledger.poolNowMs());
  assertRejected(h, aliasCall(A, { kind: 'add', alias: 'x' }, root7), 'DidDeactivated');
  assertRejected(h, aliasCall(A, { kind: 'add', alias: 'x' }, root7, { nonce: 7n }), 'DidDeactivated');
  assertRejected(h, aliasCall(A, { kind: 'add', alias: 'x' }, root7, { validUntil: now }), 'AliasAuthorizationExpired');
  assertRejected(h, patchCall('add_service', A, serviceOf(A, 's'), root7), 'DidDeactivated');
  assertRejected(h, rootKeyCall(A, key8.publicKey, root7), 'DidDeactivated');
  assertRejected(h, replaceDocumentCall(A, { id: A, verificationMethod: [], authentication: null, keyAgreement: [], service: null }, root7), 'DidDeactivated');
  assertRejected(h, controlCall(A, { kind: 'DeleteDid' }, root7, { nonce: 2n }), 'DidDeactivated');
  assertRejected(h, controlCall(A, { kind: 'DeactivateDid' }, root7, { nonce: 2n }), 'DidDeactivated');
  assertRejected(h, registerCall(A, key8), 'DidAlreadyExists');
  assert.equal(getAliasOwner(h.ledger.finalizedView(), 'alpha'), A);
});

// ---- retirement guard (a stand-in application module marks A as a control DID) ----

test('retirement guard: DeactivateDid and DeleteDid fail DidControlsApplication; nonce untouched', (t) => {
  const markControl: CallHandler = (s, _ctx, call) => {
    if (call.name !== 'register_application') throw new Error('unexpected');
    s.set(policyKeys.applicationsOfControlDid(call.args.controlDid), [call.args.applicationId]);
  };
  const h = setup({ handlers: { register_application: markControl } });
  t.after(() => h.close());
  h.apply({ name: 'register_application', args: { applicationId: 'app', controlDid: A, signerKeyId: 'root', signature: new Uint8Array(64) } });
  assertRejected(h, controlCall(A, { kind: 'DeactivateDid' }, root7), 'DidControlsApplication');
  assertRejected(h, controlCall(A, { kind: 'DeleteDid' }, root7), 'DidControlsApplication');
  assert.equal(h.poolNonce('control_nonce', A), 0n);
  assert.equal(h.record(A)!.deactivated, false);
  // without injected handlers the built-in modules run (module 9: a payload that does not decode, §5.8 step 1)
  const bare = new Harness();
  t.after(() => bare.close());
  assert.equal(
    bare.ledger.check({ name: 'apply_policy_v3_with_proof', args: { signedPayload: new Uint8Array(1), signature: new Uint8Array(64), signerKeyId: 'root' } })
      ?.errorName,
    'InvalidPolicyV3Payload',
  );
});

// ---- deletion and re-registration ----

const seedPolicies: CallHandler = (s, _ctx, call) => {
  if (call.name !== 'register_application') throw new Error('unexpected');
  const d = call.args.controlDid;
  s.set(policyKeys.didConstraints(d), { x: 1 });
  s.set(policyKeys.policyV2Did(d), { x: 2 });
  s.set(policyKeys.policyV3Did(d), { x: 3 });
  for (const dom of ['policy_nonce', 'policy_v3_nonce', 'operator_nonce', 'application_nonce'] as const) s.set(keys.nonce(dom, d), 5n);
};

/** Registers the policy seed, an alias, a service, a root rotation and a device on A; then deletes A. */
function historyThenDelete(h: Harness) {
  h.apply({ name: 'register_application', args: { applicationId: 'app', controlDid: A, signerKeyId: 'root', signature: new Uint8Array(64) } });
  const addBeta = aliasCall(A, { kind: 'add', alias: 'beta' }, root7, { nonce: 0n });
  const firstHash = h.apply(addBeta);
  h.apply(patchCall('add_service', A, serviceOf(A, 's'), root7, { nonce: 0n }));
  h.apply(rootKeyCall(A, key7.publicKey, root7, { nonce: 0n }));
  h.apply(controlCall(A, { kind: 'AddDevice', deviceId: 'p' }, root7, { nonce: 0n }));
  // signed before the deletion, never submitted: the next usable alias nonce
  const unsent = aliasCall(A, { kind: 'add', alias: 'gamma' }, root7, { nonce: 1n });
  const deleteDid = controlCall(A, { kind: 'DeleteDid' }, root7, { nonce: 1n });
  const delHash = h.apply(deleteDid);
  assert.equal(h.ledger.txView(delHash)?.status, 'finalized');
  const view = h.ledger.finalizedView();
  assert.equal(h.record(A), undefined);
  assert.equal(getAliasOwner(view, 'alpha'), undefined);
  assert.equal(getAliasOwner(view, 'beta'), undefined);
  assert.equal(view.get(keys.nonce('application_nonce', A)), 5n, 'application nonce is not removed');
  assert.equal(view.get(policyKeys.didConstraints(A)), undefined);
  assert.equal(view.get(policyKeys.policyV2Did(A)), undefined);
  assert.equal(view.get(policyKeys.policyV3Did(A)), undefined);
  // the DID reads as absent
  assertRejected(h, aliasCall(A, { kind: 'add', alias: 'x' }, root7, { nonce: 2n }), 'DidNotFound');
  return { addBeta, firstHash, unsent, deleteDid };
}

test('DeleteDid removes record, aliases, nonces and DID-scoped policy keys; profile platform never registers the DID again', (t) => {
  const h = setup({ handlers: { register_application: seedPolicies } });
  t.after(() => h.close());
  historyThenDelete(h);
  const view = h.ledger.finalizedView();
  for (const d of DID_SCOPED_NONCES) assert.equal(view.get(keys.nonce(d, A)), undefined, d);
  assert.equal(view.get(keys.deletedDid(A)), true, 'the identifier is remembered');
  // neither the owner nor a stranger can take the identifier again
  assertRejected(h, registerCall(A, key7), 'DidDeleted');
  assertRejected(h, registerCall(A, key8, { alias: 'alpha' }), 'DidDeleted');
  // a restart keeps it
  h.reopen();
  assertRejected(h, registerCall(A, key8), 'DidDeleted');
  assert.equal(h.record(A), undefined);
});

test('DeleteDid in profile openpayload: the DID may be registered again, its nonces continue above every pre-deletion payload', (t) => {
  const h = new Harness({ profile: OPENPAYLOAD, genesis: genesisConfig({ profile: 'openpayload' }), handlers: { register_application: seedPolicies } });
  t.after(() => h.close());
  h.register(A, key7, { alias: 'alpha', profile: OPENPAYLOAD });
  const { addBeta, unsent, deleteDid } = historyThenDelete(h);
  const view = h.ledger.finalizedView();
  assert.equal(view.get(keys.deletedDid(A)), undefined);
  // each DID-scoped nonce moved one past its value (alias 1, document 1, root 1, control 1 (the deletion's), policy seeds 5)
  const expected = { alias_nonce: 2n, document_nonce: 2n, root_pubkey_nonce: 2n, control_nonce: 2n, policy_nonce: 6n, policy_v3_nonce: 6n, operator_nonce: 6n };
  for (const d of DID_SCOPED_NONCES) assert.equal(view.get(keys.nonce(d, A)), expected[d as keyof typeof expected], d);
  // registered again with the same root key (the deployed chain's rule)
  h.register(A, key7, { profile: OPENPAYLOAD });
  assert.equal(h.record(A)!.version, 1);
  // hazard 3 closed: no payload signed before the deletion verifies again, submitted or not
  assertRejected(h, addBeta, 'InvalidAliasNonce');
  assertRejected(h, unsent, 'InvalidAliasNonce');
  assertRejected(h, deleteDid, 'InvalidControlNonce');
  h.reopen();
  assertRejected(h, addBeta, 'InvalidAliasNonce');
  // new payloads use the continued nonces
  h.apply(aliasCall(A, { kind: 'add', alias: 'beta' }, root7, { nonce: 2n }));
  h.apply(controlCall(A, { kind: 'AddDevice', deviceId: 'q' }, root7, { nonce: 2n }));
  assert.deepEqual(h.record(A)!.aliases, ['beta']);
});

test('V1 and V3 end to end: vector signatures execute and the tx_hash is the vector one', (t) => {
  const h = new Harness();
  t.after(() => h.close());
  const did = V.V1.did;
  h.register(did, key7);
  const addHash = h.apply({
    name: 'add_alias',
    args: { did, alias: V.V1.alias, signedPayload: hex(V.V1.payload_hex), signature: hex(V.V1.signature_hex), signerKeyId: 'root' },
  });
  assert.equal(addHash, V.V1.tx_hash);
  assert.deepEqual(h.record(did)!.aliases, ['salesgroup']);
  const addDevice = hex(V.V3.add_device.payload_hex);
  h.apply({ name: 'apply_control_with_proof', args: { signedPayload: addDevice, signature: key7.sign(addDevice), signerKeyId: 'root' } });
  assert.equal(h.headNonce('control_nonce', did), 1n);
  h.apply({
    name: 'apply_control_with_proof',
    args: { signedPayload: hex(V.V3.delete.payload_hex), signature: hex(V.V3.delete.signature_hex), signerKeyId: 'root' },
  });
  assert.equal(h.record(did), undefined);
  assert.equal(getAliasOwner(h.ledger.finalizedView(), 'salesgroup'), undefined);
});

test('a VM of another controller in the document never signs (first VM with id AND controller)', (t) => {
  const h = setup();
  t.after(() => h.close());
  // patches cannot add a foreign-controller VM (InvalidDocument), so the only signer keys are the DID's own VMs
  assertRejected(h, patchCall('add_verification_method', A, vmOf(didOf(93), 'k', key8, { id: `${A}#k` }), root7), 'InvalidDocument');
  h.apply(patchCall('add_verification_method', A, vmOf(A, 'k', key8), root7));
  h.apply(aliasCall(A, { kind: 'add', alias: 'viak' }, { keyId: `${A}#k`, key: key8 }));
  assertRejected(h, aliasCall(A, { kind: 'add', alias: 'viak2' }, { keyId: `${A}#k`, key: key7 }, { nonce: 1n }), 'InvalidSignature');
});
