/** Registration v2 (ledger-rules.md §5.5) through the pool and blocks, including the V5 vector end to end. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { concatBytes, toHex } from '../../src/base/bytes.js';
import { encodeDocument } from '../../src/protocol/document.js';
import { makeProfile } from '../../src/protocol/profile.js';
import { DID_SCOPED_NONCES, getAliasOwner } from '../../src/ledger/records.js';
import { hex, vectors as V } from '../vectors/ledger-vectors.js';
import { assertRejected, defaultDocument, didOf, Harness, registerCall, seedKey, T0, vmOf } from './harness.js';

const key7 = seedKey(7);
const key8 = seedKey(8);

test('V5 registration executes with the vector signature and writes the record of §5.5', (t) => {
  const h = new Harness();
  t.after(() => h.close());
  const v = V.V5;
  const call = {
    name: 'register_with_proof_v2' as const,
    args: {
      did: v.did,
      alias: v.alias_raw, // raw " SalesGroup ": the ledger normalises it
      rootPubkey: key7.publicKey,
      expiryMs: BigInt(v.expiry_ms),
      docBlob: hex(v.doc_blob_hex),
      signature: hex(v.signature_hex),
    },
  };
  const txHash = h.submit(call);
  const block = h.produce();
  const rec = h.record(v.did)!;
  assert.ok(rec, 'record written');
  assert.deepEqual(rec.aliases, ['salesgroup']);
  assert.equal(rec.devices, null);
  assert.equal(toHex(encodeDocument(rec.document!)), v.doc_blob_hex);
  assert.equal(rec.version, 1);
  assert.equal(rec.updatedAt, block.timestampMs);
  assert.equal(toHex(rec.rootPubkey), V.keys.seed7.public_key_hex);
  assert.equal(rec.deactivated, false);
  assert.equal(rec.registrationTx, txHash);
  assert.equal(getAliasOwner(h.ledger.finalizedView(), 'salesgroup'), v.did);
  for (const d of DID_SCOPED_NONCES) assert.equal(h.headNonce(d, v.did), 0n, `${d}: registration consumes no nonce`);
  const txs = h.ledger.block(block.number)!.txs;
  assert.equal(txs.length, 1);
  assert.equal(txs[0]!.status, 'included');
  assert.equal(h.ledger.txView(txHash)?.status, 'finalized');
});

test('registration: the DID must not exist yet (DidAlreadyExists precedes the signature)', (t) => {
  const h = new Harness();
  t.after(() => h.close());
  const did = didOf(1);
  h.register(did, key7);
  assertRejected(h, registerCall(did, key8), 'DidAlreadyExists');
  assertRejected(h, registerCall(did, key8, { signature: new Uint8Array(64) }), 'DidAlreadyExists');
  // a registration already pending reserves the DID in the pool state
  const other = didOf(2);
  h.submit(registerCall(other, key7));
  assertRejected(h, registerCall(other, key8), 'DidAlreadyExists');
});

test('registration: each check of §5.5 and the order between adjacent checks', (t) => {
  const h = new Harness();
  t.after(() => h.close());
  const now = BigInt(h.ledger.poolNowMs());
  const did = didOf(3);
  const badBlob = concatBytes(encodeDocument(defaultDocument(did, key7)), Uint8Array.of(0));
  const cases: [string, ReturnType<typeof registerCall>, string][] = [
    // 1. root key length, before everything (here: before a short signature and a bad DID)
    ['root 31 bytes', registerCall('nope', key7, { rootPubkey: new Uint8Array(31), signature: new Uint8Array(63) }), 'InvalidRootPubkey'],
    ['root 33 bytes', registerCall(did, key7, { rootPubkey: new Uint8Array(33) }), 'InvalidRootPubkey'],
    // 2. signature length, before the DID grammar
    ['signature 63 bytes', registerCall('nope', key7, { signature: new Uint8Array(63) }), 'InvalidSignature'],
    ['signature 65 bytes', registerCall(did, key7, { signature: new Uint8Array(65) }), 'InvalidSignature'],
    // 3. DID length then grammar, before the alias
    ['did too long', registerCall('did:p:' + '1'.repeat(123), key7, { alias: '@' }), 'DidTooLong'],
    ['did grammar', registerCall('did:Platform:1111111111111111', key7, { alias: '@' }), 'InvalidDidFormat'],
    ['did three segments', registerCall('did:platform:device:1111111111111111', key7), 'InvalidDidFormat'],
    // 4. alias, before expiry
    ['alias invalid', registerCall(did, key7, { alias: 'a b', expiryMs: now }), 'InvalidAlias'],
    ['alias too long', registerCall(did, key7, { alias: 'a'.repeat(65), expiryMs: now }), 'AliasTooLong'],
    // 5. expiry (strict), before the document
    ['expiry == now', registerCall(did, key7, { expiryMs: now, docBlob: badBlob }), 'RegistrationExpired'],
    ['expiry past', registerCall(did, key7, { expiryMs: now - 1n }), 'RegistrationExpired'],
    ['expiry too far', registerCall(did, key7, { expiryMs: now + 3_600_001n, docBlob: badBlob }), 'RegistrationExpiryTooFar'],
    // 6. blob decode, before structure
    ['trailing byte', registerCall(did, key7, { docBlob: badBlob }), 'InvalidDocument'],
    ['blob too large', registerCall(did, key7, { docBlob: new Uint8Array(16_385) }), 'InvalidDocument'],
    // 7. structure, before existence and signature
    ['doc id', registerCall(did, key7, { doc: defaultDocument(didOf(4), key7), signature: new Uint8Array(64) }), 'InvalidDocument'],
    [
      'duplicate vm',
      registerCall(did, key7, { doc: { ...defaultDocument(did, key7), verificationMethod: [vmOf(did, 'root', key7), vmOf(did, 'root', key8)] } }),
      'VerificationMethodAlreadyExists',
    ],
    ['auth without vm', registerCall(did, key7, { doc: { ...defaultDocument(did, key7), authentication: [`${did}#gone`] } }), 'VerificationMethodNotFound'],
    // 9. signature
    ['signed by another key', registerCall(did, key7, { signWith: key8 }), 'InvalidSignature'],
    ['raw alias in signed bytes', registerCall(did, key7, { alias: ' SalesGroup ', signedAlias: ' SalesGroup ' }), 'InvalidSignature'],
    ['alias omitted from signed bytes', registerCall(did, key7, { alias: 'team', signedAlias: null }), 'InvalidSignature'],
    ['other profile prefix', registerCall(did, key7, { profile: makeProfile('openpayload') }), 'InvalidSignature'],
  ];
  for (const [name, call, err] of cases) {
    const f = h.ledger.check(call);
    assert.equal(f?.errorName, err, name);
    assert.equal(f?.module, 'DidRegistry', name);
  }
  assertRejected(h, registerCall(did, key7, { expiryMs: now }), 'RegistrationExpired');
  // boundary: exactly now + 1 h is accepted
  assert.equal(h.ledger.check(registerCall(did, key7, { expiryMs: now + 3_600_000n })), null);
});

test('registration: alias is soft (dropped when taken), normalised, and any platform segment is accepted', (t) => {
  const h = new Harness();
  t.after(() => h.close());
  const a = didOf(5);
  const b = didOf(6);
  h.register(a, key7, { alias: ' Team ' });
  assert.deepEqual(h.record(a)!.aliases, ['team']);
  h.register(b, key8, { alias: 'TEAM' });
  const rb = h.record(b)!;
  assert.equal(rb.aliases, null, 'registered without the taken alias');
  assert.equal(getAliasOwner(h.ledger.finalizedView(), 'team'), a);
  const op = 'did:openpayload:1111111111111111';
  h.register(op, key8);
  assert.ok(h.record(op));
  // a registration without alias, with an empty document
  const c = didOf(7);
  h.register(c, key7, { doc: { id: c, verificationMethod: [], authentication: null, keyAgreement: [], service: null } });
  assert.deepEqual(h.record(c)!.document, { id: c, verificationMethod: [], authentication: null, keyAgreement: [], service: null });
});

test('registration: pool "now" is max(head timestamp, wall clock)', (t) => {
  const h = new Harness({}, T0 + 1_000);
  t.after(() => h.close());
  h.clock.set(T0 + 50_000);
  h.register(didOf(8), key7);
  const headTs = h.ledger.headRef().timestampMs;
  assert.equal(headTs, T0 + 50_000);
  h.clock.set(T0); // wall clock behind the head
  assert.equal(h.ledger.poolNowMs(), headTs);
  assertRejected(h, registerCall(didOf(9), key7, { expiryMs: BigInt(headTs) }), 'RegistrationExpired');
  assert.equal(h.ledger.check(registerCall(didOf(9), key7, { expiryMs: BigInt(headTs + 1) })), null);
});
