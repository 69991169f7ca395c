/**
 * The pool carried onto a new head in work bounded by the block (ledger-rules.md §2.5 item 4, src/ledger/pool-effects.ts):
 * after a block only the next block's worth of entries and the entries whose reads the block reached run again;
 * the pool, its verdicts and its nonces are those a full rebuild gives (a restart rebuilds it in full).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TxPool } from '../../src/ledger/pool.js';
import { getAliasOwner } from '../../src/ledger/records.js';
import { StateAt } from '../../src/ledger/state-at.js';
import { aliasCall, controlCall, didOf, Harness, registerCall, rootSigner, seedKey } from './harness.js';

const key7 = seedKey(7);
const key8 = seedKey(8);
const key9 = seedKey(19);
const A = didOf(41);
const B = didOf(42);
const C = didOf(43);

function setup(maxExtrinsicsPerBlock: number): Harness {
  const h = new Harness({ maxExtrinsicsPerBlock, maxPoolSize: 1_000 });
  h.ledger.submit(registerCall(A, key7), { subject: A, action: 'register', limitKey: `${A}|registration` });
  h.ledger.submit(registerCall(B, key8), { subject: B, action: 'register', limitKey: `${B}|registration` });
  h.ledger.submit(registerCall(C, key9), { subject: C, action: 'register', limitKey: `${C}|registration` });
  while (h.ledger.poolSize > 0) h.produce();
  return h;
}

/** The pool as this process holds it, and as a restart rebuilds it from the stored pending rows. */
function assertSameAsRebuilt(h: Harness, dids: readonly string[]): void {
  const pending = h.ledger.pendingEntries().map((e) => e.tx.txHash);
  const nonces = dids.map((d) => [h.poolNonce('alias_nonce', d), h.poolNonce('control_nonce', d), h.poolNonce('document_nonce', d)]);
  const owners = ['one', 'two', 'three', 'late', 'next'].map((a) => getAliasOwner(h.ledger.poolView(), a));
  const subjects = dids.map((d) => h.ledger.hasPendingFor(d));
  assert.deepEqual(
    subjects,
    dids.map((d) => h.ledger.pendingEntries().some((e) => e.tx.meta.subject === d)),
    'the pool counts its subjects as its entries are',
  );
  h.reopen();
  assert.deepEqual(
    h.ledger.pendingEntries().map((e) => e.tx.txHash),
    pending,
    'the same pool as a full rebuild',
  );
  assert.deepEqual(
    dids.map((d) => [h.poolNonce('alias_nonce', d), h.poolNonce('control_nonce', d), h.poolNonce('document_nonce', d)]),
    nonces,
  );
  assert.deepEqual(
    ['one', 'two', 'three', 'late', 'next'].map((a) => getAliasOwner(h.ledger.poolView(), a)),
    owners,
  );
  assert.deepEqual(
    dids.map((d) => h.ledger.hasPendingFor(d)),
    subjects,
  );
}

test('carry: an entry deep in the pool that read what the block changed runs again and is dropped; the others keep their effects', (t) => {
  const h = setup(1);
  t.after(() => h.close());
  const headTs = h.ledger.headRef().timestampMs;
  const a = h.submit(aliasCall(A, { kind: 'add', alias: 'late' }, rootSigner(key7), { nonce: 0n, validUntil: BigInt(headTs + 10) }));
  const c = h.submit(aliasCall(B, { kind: 'add', alias: 'one' }, rootSigner(key8), { nonce: 0n }));
  const x = h.submit(controlCall(C, { kind: 'AddDevice', deviceId: 'p' }, rootSigner(key9), { nonce: 0n }));
  const b = h.submit(aliasCall(A, { kind: 'add', alias: 'next' }, rootSigner(key7), { nonce: 1n }));
  h.clock.set(headTs + 10);
  const block = h.produce();
  assert.deepEqual(
    h.ledger.block(block.number)!.txs.map((r) => [r.txHash, r.status]),
    [[a, 'failed']],
  );
  // c: the next block's worth (one here); b: it read A's alias nonce, which a's failure left as it was
  assert.equal(h.ledger.lastPoolRerun, 2);
  assert.deepEqual(
    h.ledger.pendingEntries().map((e) => e.tx.txHash),
    [c, x],
  );
  const vb = h.ledger.txView(b)!;
  assert.equal(vb.status, 'failed');
  assert.equal(vb.tx.error?.name, 'InvalidAliasNonce');
  assert.ok(!('block' in vb) || vb.block === undefined, 'dropped: no block');
  assert.equal(h.poolNonce('alias_nonce', A), 0n);
  assertSameAsRebuilt(h, [A, B, C]);
  h.produce();
  h.produce();
  assert.equal(h.ledger.txView(c)?.status, 'finalized');
  assert.equal(h.ledger.txView(x)?.status, 'finalized');
});

test('carry: an entry past the next block that expired meanwhile is dropped once it comes within the next block', (t) => {
  const h = setup(1);
  t.after(() => h.close());
  const headTs = h.ledger.headRef().timestampMs;
  const p = h.submit(aliasCall(A, { kind: 'add', alias: 'one' }, rootSigner(key7), { nonce: 0n }));
  const q = h.submit(aliasCall(B, { kind: 'add', alias: 'two' }, rootSigner(key8), { nonce: 0n }));
  const e = h.submit(aliasCall(C, { kind: 'add', alias: 'late' }, rootSigner(key9), { nonce: 0n, validUntil: BigInt(headTs + 50) }));
  h.clock.set(headTs + 100);
  h.produce();
  // p's block: q is the next block's worth and runs again; e read nothing p wrote and keeps its effects
  assert.equal(h.ledger.lastPoolRerun, 1);
  assert.deepEqual(
    h.ledger.pendingEntries().map((x) => x.tx.txHash),
    [q, e],
  );
  h.produce();
  assert.equal(h.ledger.txView(p)?.status, 'finalized');
  assert.equal(h.ledger.txView(q)?.status, 'finalized');
  const ve = h.ledger.txView(e)!;
  assert.equal(ve.status, 'failed');
  assert.equal(ve.tx.error?.name, 'AliasAuthorizationExpired');
  assert.ok(!('block' in ve) || ve.block === undefined, 'dropped before any block took it');
  assert.equal(h.ledger.produceBlock(), null);
});

test('carry: with a backlog of unrelated registrations a block runs again only the next block’s worth', (t) => {
  const h = setup(2);
  t.after(() => h.close());
  const dids = Array.from({ length: 10 }, (_, i) => didOf(100 + i));
  for (const [i, d] of dids.entries()) h.submit(registerCall(d, seedKey(100 + i)));
  h.produce();
  assert.equal(h.ledger.lastPoolRerun, 2);
  assert.equal(h.ledger.poolSize, 8);
  // an update of a DID the block registered, admitted behind the backlog, sees the block's record
  h.submit(controlCall(dids[0]!, { kind: 'AddDevice', deviceId: 'd' }, rootSigner(seedKey(100)), { nonce: 0n }));
  h.produce();
  assert.equal(h.ledger.lastPoolRerun, 2);
  assertSameAsRebuilt(h, dids);
  while (h.ledger.poolSize > 0) h.produce();
  assert.equal(h.headNonce('control_nonce', dids[0]!), 1n);
  for (const d of dids) assert.ok(h.record(d), `${d} registered`);
});

/** Calls of `proto[name]` while `run` runs. */
function callsDuring<T extends object>(proto: T, name: keyof T & string, run: () => void): number {
  const orig = proto[name] as (...a: unknown[]) => unknown;
  let calls = 0;
  Object.defineProperty(proto, name, {
    configurable: true,
    writable: true,
    value: function (this: unknown, ...a: unknown[]) {
      calls++;
      return orig.apply(this, a);
    },
  });
  try {
    run();
  } finally {
    Object.defineProperty(proto, name, { configurable: true, writable: true, value: orig });
  }
  return calls;
}

test('carry: a block and the front run again read from the head state only what the pool did not read, however deep the pool', (t) => {
  const h = setup(2);
  t.after(() => h.close());
  const dids = Array.from({ length: 12 }, (_, i) => didOf(200 + i));
  for (const [i, d] of dids.entries()) h.submit(registerCall(d, seedKey(200 + i)));
  // the block's two entries and the next two (run again for their time checks) read what they read when admitted
  // from their recorded effects: the head's memo (bounded) or the store is not asked, whatever the pool's size
  assert.equal(
    callsDuring(StateAt.prototype, 'get', () => h.produce()),
    0,
  );
  assert.equal(h.ledger.lastPoolRerun, 2);
  // an update admitted behind the backlog reads the record a block wrote: read from the head, where it is
  h.submit(controlCall(dids[0]!, { kind: 'AddDevice', deviceId: 'd' }, rootSigner(seedKey(200)), { nonce: 0n }));
  assert.equal(
    callsDuring(StateAt.prototype, 'get', () => h.produce()),
    0,
  );
  assertSameAsRebuilt(h, dids);
  while (h.ledger.poolSize > 0) h.produce();
  assert.equal(h.headNonce('control_nonce', dids[0]!), 1n);
  for (const d of dids) assert.ok(h.record(d), `${d} registered`);
});

test('carry: a block leaves the pool’s index and counts in step without building them again', (t) => {
  const h = setup(2);
  t.after(() => h.close());
  const headTs = h.ledger.headRef().timestampMs;
  const dids = Array.from({ length: 6 }, (_, i) => didOf(300 + i));
  const reg = (i: number) => h.submit(registerCall(dids[i]!, seedKey(300 + i)));
  reg(0);
  reg(1);
  // within the next block's worth: run again after the block, and dropped, as the block's own are taken
  const late = h.submit(aliasCall(A, { kind: 'add', alias: 'late' }, rootSigner(key7), { nonce: 0n, validUntil: BigInt(headTs + 10) }));
  for (let i = 2; i < dids.length; i++) reg(i);
  h.clock.set(headTs + 10);
  assert.equal(
    callsDuring(TxPool.prototype, 'set', () => h.produce()),
    0,
  );
  assert.equal(h.ledger.txView(late)?.status, 'failed');
  assert.equal(h.ledger.poolSize, 4);
  assert.equal(h.ledger.hasPendingFor(A), false, 'the drop left the counts');
  assert.equal(h.ledger.hasPendingFor(dids[2]!), true);
  assertSameAsRebuilt(h, [...dids, A]);
  assert.equal(
    callsDuring(TxPool.prototype, 'set', () => h.produce()),
    0,
  );
  assert.equal(h.ledger.poolSize, 2);
  assert.equal(h.ledger.hasPendingFor(dids[2]!), false);
  assertSameAsRebuilt(h, [...dids, A]);
  while (h.ledger.poolSize > 0) h.produce();
  for (const d of dids) assert.ok(h.record(d), `${d} registered`);
});
