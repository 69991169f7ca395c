/** Alias calls (ledger-rules.md §5.1): validation order, apply semantics, alias nonce. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { concatBytes } from '../../src/base/bytes.js';
import { getAliasOwner } from '../../src/ledger/records.js';
import { aliasCall, assertRejected, didOf, Harness, rootSigner, seedKey, type Signer } from './harness.js';

const key7 = seedKey(7);
const key8 = seedKey(8);
const A = didOf(11);
const B = didOf(12);
const rootA: Signer = rootSigner(key7);
const rootB: Signer = rootSigner(key8);

function setup(): Harness {
  const h = new Harness();
  h.register(A, key7);
  h.register(B, key8, { alias: 'bravo' });
  return h;
}

test('alias add: raw call argument, normalised payload, nonce +1, version +1, index', (t) => {
  const h = setup();
  t.after(() => h.close());
  const before = h.record(A)!;
  assert.equal(h.headNonce('alias_nonce', A), 0n);
  h.apply(aliasCall(A, { kind: 'add', alias: ' SalesGroup ' }, rootA, { nonce: 0n }));
  const rec = h.record(A)!;
  assert.deepEqual(rec.aliases, ['salesgroup']);
  assert.equal(rec.version, before.version + 1);
  assert.equal(rec.updatedAt, h.ledger.headRef().timestampMs);
  assert.equal(getAliasOwner(h.ledger.finalizedView(), 'salesgroup'), A);
  assert.equal(h.headNonce('alias_nonce', A), 1n);
  assert.equal(h.headNonce('document_nonce', A), 0n, 'other domains untouched');
  // the payload must carry the normalised form
  assertRejected(h, aliasCall(A, { kind: 'add', alias: 'Other' }, rootA, { nonce: 1n, payloadAliases: { alias: 'Other' } }), 'InvalidAliasPayload');
  // nonce equal to the current value only
  assertRejected(h, aliasCall(A, { kind: 'add', alias: 'x' }, rootA, { nonce: 0n }), 'InvalidAliasNonce');
  assertRejected(h, aliasCall(A, { kind: 'add', alias: 'x' }, rootA, { nonce: 2n }), 'InvalidAliasNonce');
  assert.equal(h.poolNonce('alias_nonce', A), 1n, 'rejections consume nothing');
  // a VM key of the DID signs too
  h.apply(aliasCall(A, { kind: 'add', alias: 'x' }, { keyId: `${A}#root`, key: key7 }, { nonce: 1n }));
  assert.deepEqual(h.record(A)!.aliases, ['salesgroup', 'x']);
});

test('alias add: AliasTaken, AliasAlreadyExists, TooManyAliases (8)', (t) => {
  const h = setup();
  t.after(() => h.close());
  assertRejected(h, aliasCall(A, { kind: 'add', alias: 'Bravo' }, rootA), 'AliasTaken');
  let n = 0n;
  for (let i = 0; i < 8; i++) h.apply(aliasCall(A, { kind: 'add', alias: `a${i}` }, rootA, { nonce: n++ }));
  assert.equal(h.record(A)!.aliases!.length, 8);
  assertRejected(h, aliasCall(A, { kind: 'add', alias: 'a3' }, rootA, { nonce: n }), 'AliasAlreadyExists');
  assertRejected(h, aliasCall(A, { kind: 'add', alias: 'a8' }, rootA, { nonce: n }), 'TooManyAliases');
  assert.equal(h.headNonce('alias_nonce', A), 8n);
});

test('alias update: in place, AliasAlreadyExists / AliasTaken / AliasNotFound, index moves', (t) => {
  const h = setup();
  t.after(() => h.close());
  let n = 0n;
  for (const a of ['one', 'two', 'three']) h.apply(aliasCall(A, { kind: 'add', alias: a }, rootA, { nonce: n++ }));
  h.apply(aliasCall(A, { kind: 'update', oldAlias: 'TWO', newAlias: ' Deux ' }, rootA, { nonce: n++ }));
  assert.deepEqual(h.record(A)!.aliases, ['one', 'deux', 'three'], 'replaced in place');
  const view = h.ledger.finalizedView();
  assert.equal(getAliasOwner(view, 'two'), undefined);
  assert.equal(getAliasOwner(view, 'deux'), A);
  assertRejected(h, aliasCall(A, { kind: 'update', oldAlias: 'one', newAlias: 'One' }, rootA, { nonce: n }), 'AliasAlreadyExists');
  assertRejected(h, aliasCall(A, { kind: 'update', oldAlias: 'one', newAlias: 'bravo' }, rootA, { nonce: n }), 'AliasTaken');
  assertRejected(h, aliasCall(A, { kind: 'update', oldAlias: 'one', newAlias: 'three' }, rootA, { nonce: n }), 'AliasAlreadyExists');
  assertRejected(h, aliasCall(A, { kind: 'update', oldAlias: 'nine', newAlias: 'ten' }, rootA, { nonce: n }), 'AliasNotFound');
  // B's alias is indexed to B, not listed on A
  assertRejected(h, aliasCall(A, { kind: 'remove', alias: 'bravo' }, rootA, { nonce: n }), 'AliasNotFound');
  // aliases None → AliasNotFound
  const c = didOf(13);
  h.register(c, key7);
  assertRejected(h, aliasCall(c, { kind: 'update', oldAlias: 'a', newAlias: 'b' }, rootA), 'AliasNotFound');
  assertRejected(h, aliasCall(c, { kind: 'remove', alias: 'a' }, rootA), 'AliasNotFound');
});

test('alias remove: empty list becomes None, alias is released for others', (t) => {
  const h = setup();
  t.after(() => h.close());
  h.apply(aliasCall(B, { kind: 'remove', alias: ' BRAVO' }, rootB, { nonce: 0n }));
  assert.equal(h.record(B)!.aliases, null);
  assert.equal(getAliasOwner(h.ledger.finalizedView(), 'bravo'), undefined);
  assert.equal(h.headNonce('alias_nonce', B), 1n);
  h.apply(aliasCall(A, { kind: 'add', alias: 'bravo' }, rootA, { nonce: 0n }));
  assert.equal(getAliasOwner(h.ledger.finalizedView(), 'bravo'), A);
});

test('alias validation order (§5.1 steps 1–9)', (t) => {
  const h = setup();
  t.after(() => h.close());
  const now = BigInt(h.ledger.poolNowMs());
  const longDid = 'did:p:' + '1'.repeat(123);
  const unknown = didOf(99);
  const cases: [string, ReturnType<typeof aliasCall>, string][] = [
    // 1 before 2
    ['did too long + invalid alias', aliasCall(longDid, { kind: 'add', alias: '@' }, rootA), 'DidTooLong'],
    // 2 before 3: alias, then old, then new
    ['invalid alias + long signer', aliasCall(A, { kind: 'add', alias: 'a b' }, { keyId: 'k'.repeat(65), key: key7 }), 'InvalidAlias'],
    ['alias too long', aliasCall(A, { kind: 'add', alias: 'a'.repeat(65) }, rootA), 'AliasTooLong'],
    ['old invalid before new too long', aliasCall(A, { kind: 'update', oldAlias: '@', newAlias: 'b'.repeat(65) }, rootA), 'InvalidAlias'],
    ['old too long before new invalid', aliasCall(A, { kind: 'update', oldAlias: 'b'.repeat(65), newAlias: '@' }, rootA), 'AliasTooLong'],
    // 3: signer_key_id ≤ 64
    ['signer 65 bytes', aliasCall(A, { kind: 'add', alias: 'ok' }, { keyId: 'k'.repeat(65), key: key7 }), 'InvalidAliasPayload'],
    // 4: strict decode
    [
      'trailing byte',
      aliasCall(A, { kind: 'add', alias: 'ok' }, rootA, {
        signedPayload: concatBytes((aliasCall(A, { kind: 'add', alias: 'ok' }, rootA).args as { signedPayload: Uint8Array }).signedPayload, Uint8Array.of(0)),
      }),
      'InvalidAliasPayload',
    ],
    ['garbage payload', aliasCall(A, { kind: 'add', alias: 'ok' }, rootA, { signedPayload: Uint8Array.of(1, 2, 3) }), 'InvalidAliasPayload'],
    // 5: payload fields equal the call's (before expiry)
    ['payload did', aliasCall(A, { kind: 'add', alias: 'ok' }, rootA, { payloadDid: B, validUntil: now }), 'InvalidAliasPayload'],
    ['payload alias', aliasCall(A, { kind: 'add', alias: 'ok' }, rootA, { payloadAliases: { alias: 'ko' }, validUntil: now }), 'InvalidAliasPayload'],
    ['payload extra option', aliasCall(A, { kind: 'add', alias: 'ok' }, rootA, { payloadAliases: { newAlias: 'ok' } }), 'InvalidAliasPayload'],
    [
      'payload action',
      aliasCall(A, { kind: 'remove', alias: 'ok' }, rootA, {
        signedPayload: (aliasCall(A, { kind: 'add', alias: 'ok' }, rootA).args as { signedPayload: Uint8Array }).signedPayload,
      }),
      'InvalidAliasPayload',
    ],
    ['signer id differs from call', aliasCall(A, { kind: 'add', alias: 'ok' }, rootA, { callSignerKeyId: `${A}#root` }), 'InvalidAliasPayload'],
    // 6 before 7 and 8: expiry is strict
    ['expired == now, unknown DID', aliasCall(unknown, { kind: 'add', alias: 'ok' }, rootA, { validUntil: now }), 'AliasAuthorizationExpired'],
    ['expired + wrong nonce', aliasCall(A, { kind: 'add', alias: 'ok' }, rootA, { validUntil: now, nonce: 5n }), 'AliasAuthorizationExpired'],
    [
      'expired + bad signature',
      aliasCall(A, { kind: 'add', alias: 'ok' }, rootA, { validUntil: now - 1n, signature: new Uint8Array(64) }),
      'AliasAuthorizationExpired',
    ],
    // 7 before 8
    ['unknown DID + wrong nonce', aliasCall(unknown, { kind: 'add', alias: 'ok' }, rootA, { nonce: 5n }), 'DidNotFound'],
    // 8 before 9
    ['wrong nonce + bad signature', aliasCall(A, { kind: 'add', alias: 'ok' }, rootA, { nonce: 1n, signature: new Uint8Array(64) }), 'InvalidAliasNonce'],
    // 9
    ['zero signature', aliasCall(A, { kind: 'add', alias: 'ok' }, rootA, { signature: new Uint8Array(64) }), 'InvalidSignature'],
    ['63-byte signature', aliasCall(A, { kind: 'add', alias: 'ok' }, rootA, { signature: key7.sign(new Uint8Array(1)).subarray(0, 63) }), 'InvalidSignature'],
    ['other DID root key', aliasCall(A, { kind: 'add', alias: 'ok' }, rootB), 'InvalidSignature'],
    ['unknown VM id', aliasCall(A, { kind: 'add', alias: 'ok' }, { keyId: `${A}#nope`, key: key7 }), 'InvalidSignature'],
    ['VM of another DID', aliasCall(A, { kind: 'add', alias: 'ok' }, { keyId: `${B}#root`, key: key8 }), 'InvalidSignature'],
    // apply errors only after the signature
    ['taken + bad signature', aliasCall(A, { kind: 'add', alias: 'bravo' }, rootA, { signature: new Uint8Array(64) }), 'InvalidSignature'],
  ];
  for (const [name, call, err] of cases) {
    const f = h.ledger.check(call);
    assert.equal(f?.errorName, err, name);
  }
  // valid_until one past now is valid
  assert.equal(h.ledger.check(aliasCall(A, { kind: 'add', alias: 'ok' }, rootA, { validUntil: now + 1n })), null);
  assert.equal(h.poolNonce('alias_nonce', A), 0n);
});
