/**
 * The pure runtime below the chain: atomic execution (§2.3), state overlays and their persistence encoding, and
 * records that registration v2 cannot produce (document None, §5.2), driven directly through `applyAtomically`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PLATFORM } from '../../src/protocol/profile.js';
import { LedgerFailure } from '../../src/ledger/errors.js';
import { bumpNonce, getDidRecord, getNonce, keys, putDidRecord, type DidRecord } from '../../src/ledger/records.js';
import type { ExecContext } from '../../src/ledger/runtime/context.js';
import { applyAtomically } from '../../src/ledger/runtime/dispatch.js';
import { deserializeStateValue, EMPTY_STATE, Overlay, serializeStateValue } from '../../src/ledger/state.js';
import { aliasCall, didOf, patchCall, rootKeyCall, rootSigner, seedKey, serviceOf, T0, vmOf } from './harness.js';

const key7 = seedKey(7);
const key8 = seedKey(8);
const D = didOf(51);
const root = rootSigner(key7);

const ctx: ExecContext = {
  nowMs: T0 + 1_000,
  blockNumber: 1,
  txHash: '0x01',
  profile: PLATFORM,
  genesisHash: new Uint8Array(32),
  attestors: [],
};

/** A record as the deployed chain could hold it: no document at all. */
function stateWithoutDocument(): Overlay {
  const s = new Overlay(EMPTY_STATE);
  const rec: DidRecord = {
    aliases: null,
    devices: null,
    document: null,
    version: 1,
    updatedAt: T0,
    rootPubkey: key7.publicKey,
    deactivated: false,
  };
  putDidRecord(s, D, rec);
  return s;
}

test('document None: updates and removes are InvalidDocument; adds start from the empty document', () => {
  const s = stateWithoutDocument();
  const none: [string, ReturnType<typeof patchCall>][] = [
    ['update vm', patchCall('update_verification_method', D, vmOf(D, 'k', key8), root)],
    ['remove vm', patchCall('remove_verification_method', D, `${D}#k`, root)],
    ['add auth', patchCall('add_authentication', D, `${D}#k`, root)],
    ['remove auth', patchCall('remove_authentication', D, `${D}#k`, root)],
    ['update ka', patchCall('update_key_agreement', D, vmOf(D, 'x', key8), root)],
    ['remove ka', patchCall('remove_key_agreement', D, `${D}#x`, root)],
    ['update service', patchCall('update_service', D, serviceOf(D, 's'), root)],
    ['remove service', patchCall('remove_service', D, `${D}#s`, root)],
  ];
  for (const [name, call] of none) {
    const f = applyAtomically(s, ctx, call);
    assert.equal(f?.errorName, 'InvalidDocument', name);
    assert.equal(f?.module, 'DidRegistry');
  }
  assert.equal(getNonce(s, 'document_nonce', D), 0n);
  // a VM id cannot sign without a document
  assert.equal(applyAtomically(s, ctx, aliasCall(D, { kind: 'add', alias: 'a' }, { keyId: `${D}#k`, key: key7 }))?.errorName, 'InvalidSignature');
  const adds: [ReturnType<typeof patchCall>, (d: NonNullable<DidRecord['document']>) => void][] = [
    [patchCall('add_service', D, serviceOf(D, 's'), root), (d) => assert.deepEqual(d.service, [serviceOf(D, 's')])],
    [patchCall('add_key_agreement', D, vmOf(D, 'x', key8), root), (d) => assert.deepEqual(d.keyAgreement, [vmOf(D, 'x', key8)])],
    [patchCall('add_verification_method', D, vmOf(D, 'k', key8), root), (d) => assert.deepEqual(d.verificationMethod, [vmOf(D, 'k', key8)])],
  ];
  for (const [call, check] of adds) {
    const fresh = stateWithoutDocument();
    assert.equal(applyAtomically(fresh, ctx, call), null, call.name);
    const d = getDidRecord(fresh, D)!.document!;
    assert.equal(d.id, D);
    check(d);
    assert.equal(getDidRecord(fresh, D)!.version, 2);
    assert.equal(getDidRecord(fresh, D)!.updatedAt, ctx.nowMs);
    assert.equal(getNonce(fresh, 'document_nonce', D), 1n);
  }
});

test('RemoveVerificationMethod: "in use" is checked before existence (§5.2)', () => {
  const s = stateWithoutDocument();
  const rec = getDidRecord(s, D)!;
  // an authentication entry naming no VM (only a record written outside v2 registration can hold one)
  putDidRecord(s, D, {
    ...rec,
    document: { id: D, verificationMethod: [vmOf(D, 'k', key8)], authentication: [`${D}#ghost`], keyAgreement: [], service: null },
  });
  assert.equal(applyAtomically(s, ctx, patchCall('remove_verification_method', D, `${D}#ghost`, root))?.errorName, 'VerificationMethodInUse');
  assert.equal(applyAtomically(s, ctx, patchCall('remove_verification_method', D, `${D}#nope`, root))?.errorName, 'VerificationMethodNotFound');
  assert.equal(applyAtomically(s, ctx, patchCall('remove_verification_method', D, `${D}#k`, root)), null);
  assert.deepEqual(getDidRecord(s, D)!.document!.verificationMethod, []);
  assert.deepEqual(getDidRecord(s, D)!.document!.authentication, [`${D}#ghost`], 'authentication is not touched');
});

test('applyAtomically: a failing call leaves no write behind; a success commits into the parent only', () => {
  const s = stateWithoutDocument();
  const before = getDidRecord(s, D);
  const child = s.child();
  // rotation succeeds in the child
  assert.equal(applyAtomically(child, ctx, rootKeyCall(D, key8.publicKey, root)), null);
  assert.deepEqual(getDidRecord(child, D)!.rootPubkey, key8.publicKey);
  assert.deepEqual(getDidRecord(s, D), before, 'parent untouched until the child commits');
  // a call failing in its apply step (after writes would have been possible) writes nothing
  const sizeBefore = child.size;
  assert.equal(applyAtomically(child, ctx, aliasCall(D, { kind: 'remove', alias: 'zz' }, rootSigner(key8)))?.errorName, 'AliasNotFound');
  assert.equal(child.size, sizeBefore);
  assert.equal(getNonce(child, 'alias_nonce', D), 0n);
  // a plug-in handler that writes and then fails: the write is discarded
  const handlers = {
    register_application: (o: Overlay) => {
      o.set('scratch', 1);
      throw new LedgerFailure('InvalidAuthorization', 'ApplicationRegistry');
    },
  };
  const f = applyAtomically(
    child,
    ctx,
    { name: 'register_application', args: { applicationId: 'a', controlDid: D, signerKeyId: 'root', signature: new Uint8Array(64) } },
    handlers,
  );
  assert.equal(f?.errorName, 'InvalidAuthorization');
  assert.equal(f?.module, 'ApplicationRegistry');
  assert.equal(child.get('scratch'), undefined);
  // other exceptions are bugs and propagate
  assert.throws(
    () =>
      applyAtomically(
        child,
        ctx,
        { name: 'register_application', args: { applicationId: 'a', controlDid: D, signerKeyId: 'root', signature: new Uint8Array(64) } },
        {
          register_application: () => {
            throw new TypeError('bug');
          },
        },
      ),
    TypeError,
  );
  child.commitInto(s);
  assert.deepEqual(getDidRecord(s, D)!.rootPubkey, key8.publicKey);
});

test('nonces saturate at u64::MAX', () => {
  const s = new Overlay(EMPTY_STATE);
  const max = (1n << 64n) - 1n;
  bumpNonce(s, 'alias_nonce', D, max);
  assert.equal(getNonce(s, 'alias_nonce', D), max);
  bumpNonce(s, 'alias_nonce', D, max - 1n);
  assert.equal(getNonce(s, 'alias_nonce', D), max);
  assert.equal(getNonce(s, 'control_nonce', D), 0n, 'absent = 0');
});

test('overlay: set/delete/child/commit; state values survive serialisation (bigint, bytes, null)', () => {
  const base = new Overlay(EMPTY_STATE);
  base.set('a', 1);
  base.set('b', 2);
  const c = base.child();
  c.delete('a');
  c.set('b', undefined);
  c.set('c', { n: 5n });
  assert.equal(c.get('a'), undefined);
  assert.equal(base.get('a'), 1);
  c.commitInto(base);
  assert.equal(base.get('a'), undefined);
  assert.equal(base.get('b'), undefined);
  assert.deepEqual(
    [...base.changes().entries()],
    [
      ['a', undefined],
      ['b', undefined],
      ['c', { n: 5n }],
    ],
  );
  const rec = {
    aliases: null,
    document: { id: D, service: [{ priority: null, authorization: [] }] },
    rootPubkey: key7.publicKey,
    nonce: (1n << 64n) - 1n,
    list: [1n, new Uint8Array([0, 255])],
  };
  assert.deepEqual(deserializeStateValue(serializeStateValue(rec)), rec);
  assert.equal(keys.nonce('alias_nonce', D), `nonce/alias_nonce/${D}`);
});

test('a patch call run again (its block after its admission): the state checks run again, a refused payload is refused again', () => {
  const call = patchCall('add_service', D, serviceOf(D, 's'), root);
  const first = stateWithoutDocument();
  assert.equal(applyAtomically(first, ctx, call), null, 'the admission');
  // the same call object again, as the block runs its pool entry: on a state where the nonce moved it fails
  assert.equal(applyAtomically(first, ctx, call)?.errorName, 'InvalidDocumentNonce');
  // …and on a state where the signer's key is another, the signature is checked again
  const rotated = stateWithoutDocument();
  putDidRecord(rotated, D, { ...getDidRecord(rotated, D)!, rootPubkey: key8.publicKey });
  assert.equal(applyAtomically(rotated, ctx, call)?.errorName, 'InvalidSignature');
  // on a state like the admission's it applies as it did there
  const again = stateWithoutDocument();
  assert.equal(applyAtomically(again, ctx, call), null);
  assert.deepEqual(getDidRecord(again, D)!.document!.service, [serviceOf(D, 's')]);
  // a payload that does not match its call is refused each time it runs
  const mismatched = patchCall('add_service', D, serviceOf(D, 's'), root, { payloadField: serviceOf(D, 't') });
  for (let i = 0; i < 2; i++) assert.equal(applyAtomically(stateWithoutDocument(), ctx, mismatched)?.errorName, 'InvalidDocumentPayload');
});
