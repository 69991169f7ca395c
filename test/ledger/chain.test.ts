/**
 * Blocks, pool and persistence (ledger-rules.md §2.2–§2.5): duplicate submissions, nonce reservation, failures inside
 * blocks, drops at pool rebuild, PoolFull, header hash chain and roots, finality, restart from the same SQLite file.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { to0x } from '../../src/base/bytes.js';
import type { LedgerFailure } from '../../src/ledger/errors.js';
import { blockHash, extrinsicsRoot, genesisHeader, resultsRoot } from '../../src/ledger/block.js';
import type { BlockRef, TxView } from '../../src/ledger/types.js';
import { encodeExtrinsic, txHashOf } from '../../src/ledger/extrinsic.js';
import { getAliasOwner } from '../../src/ledger/records.js';
import {
  aliasCall,
  controlCall,
  didOf,
  genesisConfig,
  Harness,
  isFailure,
  metaOf,
  patchCall,
  registerCall,
  rootSigner,
  seedKey,
  serviceOf,
  T0,
} from './harness.js';

const key7 = seedKey(7);
const key8 = seedKey(8);
const A = didOf(41);
const B = didOf(42);
const root7 = rootSigner(key7);
const root8 = rootSigner(key8);

function setup(opts: ConstructorParameters<typeof Harness>[0] = {}): Harness {
  const h = new Harness(opts);
  h.register(A, key7);
  h.register(B, key8);
  return h;
}

/** The block a transaction view points at, if any. */
function blockOf(v: TxView): BlockRef | undefined {
  return 'block' in v ? v.block : undefined;
}

/** Checks a stored block against §2.2: hash, parent link, both roots from its recorded transactions. */
function assertBlockConsistent(h: Harness, n: number): void {
  const { block, txs } = h.ledger.block(n)!;
  const parent = h.ledger.block(n - 1)!.block;
  assert.deepEqual(block.header.parentHash, parent.hash, `block ${n} parent_hash`);
  assert.equal(block.header.number, n);
  assert.ok(block.header.timestampMs > parent.header.timestampMs, 'timestamps strictly increase');
  assert.deepEqual(block.hash, blockHash(block.header));
  const hashes = txs.map((t) => Buffer.from(t.txHash.slice(2), 'hex'));
  assert.deepEqual(block.header.extrinsicsRoot, extrinsicsRoot(hashes));
  assert.deepEqual(
    block.header.resultsRoot,
    resultsRoot(txs.map((t, i) => ({ txHash: hashes[i]!, success: t.status === 'included', error: t.error?.name ?? '' }))),
  );
  txs.forEach((t, i) => assert.equal(t.blockIndex, i));
}

test('genesis: block 0 is the genesis header; the genesis hash is stored and checked on reopen', (t) => {
  const h = new Harness();
  t.after(() => h.close());
  const g = genesisHeader(genesisConfig());
  assert.deepEqual(h.ledger.genesisHash, blockHash(g));
  const b0 = h.ledger.block(0)!;
  assert.deepEqual(b0.block.header, g);
  assert.deepEqual(b0.txs, []);
  assert.deepEqual(h.ledger.headRef(), { number: 0, hash: to0x(blockHash(g)), timestampMs: T0 });
  assert.equal(h.ledger.produceBlock(), null, 'no empty blocks');
  assert.throws(() => h.reopen({ genesis: genesisConfig({ chainId: 'other' }) }), /another genesis/);
  h.reopen();
  assert.deepEqual(h.ledger.genesisHash, blockHash(g));
});

test('blocks: parent hash chain, hashes, roots; timestamp = max(clock, parent + 1)', (t) => {
  const h = setup();
  t.after(() => h.close());
  const t2 = h.ledger.headRef().timestampMs;
  // the clock does not move: each block is parent + 1
  h.apply(aliasCall(A, { kind: 'add', alias: 'a' }, root7, { nonce: 0n }));
  assert.equal(h.ledger.headRef().timestampMs, t2 + 1);
  h.clock.advance(5_000);
  h.apply(aliasCall(A, { kind: 'add', alias: 'b' }, root7, { nonce: 1n }));
  assert.equal(h.ledger.headRef().timestampMs, h.clock.nowMs());
  assert.equal(h.ledger.headRef().number, 4);
  for (let n = 1; n <= 4; n++) assertBlockConsistent(h, n);
  assert.equal(h.record(A)!.updatedAt, h.clock.nowMs(), 'updated_at is the block timestamp');
});

test('pool: identical submission returns the same hash with duplicate = true, checked before the dry run', (t) => {
  const h = setup();
  t.after(() => h.close());
  const call = aliasCall(A, { kind: 'add', alias: 'dup' }, root7, { nonce: 0n });
  const first = h.ledger.submit(call, metaOf(call));
  assert.equal(first.duplicate, false);
  assert.equal(first.txHash, to0x(txHashOf(encodeExtrinsic(call))));
  const again = h.ledger.submit(call, metaOf(call));
  assert.deepEqual(again, { txHash: first.txHash, duplicate: true });
  assert.equal(h.ledger.pendingEntries().length, 1);
  assert.equal(h.ledger.txView(first.txHash)?.status, 'pending');
  h.produce();
  // once executed it is no longer pending: the same bytes now fail on the consumed nonce
  assert.throws(() => h.ledger.submit(call, metaOf(call)), isFailure('InvalidAliasNonce'));
  assert.equal(h.ledger.txView(first.txHash)?.status, 'finalized');
});

test('pool: a pending change reserves its nonce; nonce queries answer from the pool state', (t) => {
  const h = setup();
  t.after(() => h.close());
  h.submit(aliasCall(A, { kind: 'add', alias: 'one' }, root7, { nonce: 0n }));
  assert.equal(h.poolNonce('alias_nonce', A), 1n);
  assert.equal(h.headNonce('alias_nonce', A), 0n);
  assert.throws(() => h.submit(aliasCall(A, { kind: 'add', alias: 'two' }, root7, { nonce: 0n })), isFailure('InvalidAliasNonce'));
  h.submit(aliasCall(A, { kind: 'add', alias: 'two' }, root7, { nonce: 1n }));
  // the pool state also sees the pending alias
  assert.throws(() => h.submit(aliasCall(B, { kind: 'add', alias: 'one' }, root8, { nonce: 0n })), isFailure('AliasTaken'));
  // other domains and other DIDs are independent
  h.submit(patchCall('add_service', A, serviceOf(A, 's'), root7, { nonce: 0n }));
  h.submit(aliasCall(B, { kind: 'add', alias: 'three' }, root8, { nonce: 0n }));
  assert.equal(h.ledger.pendingEntries().length, 4);
  assert.equal(h.record(A)!.aliases, null, 'the finalized state does not see pending changes');
  const block = h.produce();
  const { txs } = h.ledger.block(block.number)!;
  assert.deepEqual(
    txs.map((x) => x.status),
    ['included', 'included', 'included', 'included'],
  );
  assert.deepEqual(
    txs.map((x) => x.extrinsic),
    ['add_alias', 'add_alias', 'add_service', 'add_alias'],
    'FIFO order',
  );
  assert.deepEqual(h.record(A)!.aliases, ['one', 'two']);
  assert.equal(h.headNonce('alias_nonce', A), 2n);
  assert.equal(h.headNonce('document_nonce', A), 1n);
  assert.equal(h.ledger.pendingEntries().length, 0);
});

test('block execution: expiry at the block timestamp (valid_until == now) fails inside the block; nonce untouched', (t) => {
  const h = setup();
  t.after(() => h.close());
  const headTs = h.ledger.headRef().timestampMs;
  const deadline = BigInt(headTs + 500);
  const a = h.submit(aliasCall(A, { kind: 'add', alias: 'late' }, root7, { nonce: 0n, validUntil: deadline }));
  const b = h.submit(aliasCall(A, { kind: 'add', alias: 'next' }, root7, { nonce: 1n }));
  const c = h.submit(controlCall(B, { kind: 'AddDevice', deviceId: 'p' }, root8, { nonce: 0n }));
  h.clock.set(headTs + 500); // block timestamp == valid_until
  const block = h.produce();
  assert.equal(block.timestampMs, headTs + 500);
  const { txs } = h.ledger.block(block.number)!;
  assert.deepEqual(
    txs.map((x) => [x.txHash, x.status, x.error?.name]),
    [
      [a, 'failed', 'AliasAuthorizationExpired'],
      [b, 'failed', 'InvalidAliasNonce'], // invalidated by the earlier failure in the same block
      [c, 'included', undefined],
    ],
  );
  assert.equal(txs[0]!.error?.module, 'DidRegistry');
  assertBlockConsistent(h, block.number);
  assert.equal(h.headNonce('alias_nonce', A), 0n, 'failed extrinsics consume nothing');
  assert.equal(h.record(A)!.aliases, null);
  assert.equal(h.headNonce('control_nonce', B), 1n);
  const va = h.ledger.txView(a)!;
  assert.equal(va.status, 'failed');
  assert.equal(blockOf(va)?.number, block.number);
  // the nonce is still 0: a fresh authorization with nonce 0 succeeds
  h.apply(aliasCall(A, { kind: 'add', alias: 'late' }, root7, { nonce: 0n }));
  assert.deepEqual(h.record(A)!.aliases, ['late']);
});

test('extendBuilt: entries pooled after a block was built are checked after its pool, as building it with them would', (t) => {
  const h = setup({ maxExtrinsicsPerBlock: 1 });
  t.after(() => h.close());
  const headTs = h.ledger.headRef().timestampMs;
  const a = h.submit(aliasCall(A, { kind: 'add', alias: 'late' }, root7, { nonce: 0n, validUntil: BigInt(headTs + 10) }));
  h.clock.set(headTs + 10);
  const early = h.ledger.buildBlock();
  assert.ok(early);
  // admitted while the block was being made: b needs a, which the block fails; c does not
  const b = h.submit(aliasCall(A, { kind: 'add', alias: 'next' }, root7, { nonce: 1n }));
  const c = h.submit(aliasCall(B, { kind: 'add', alias: 'fine' }, root8, { nonce: 0n }));
  const added = h.ledger.pendingEntries().slice(1);
  assert.deepEqual(
    added.map((e) => e.tx.txHash),
    [b, c],
  );
  const built = h.ledger.extendBuilt(early, added);
  assert.equal(h.ledger.extendBuilt(early, []), early);
  h.ledger.commitBuilt(built);
  const { txs } = h.ledger.block(built.block.header.number)!;
  assert.deepEqual(
    txs.map((x) => [x.txHash, x.status]),
    [[a, 'failed']],
  );
  assert.deepEqual(
    h.ledger.pendingEntries().map((e) => e.tx.txHash),
    [c],
  );
  assert.deepEqual(
    built.dropped.map((d) => [d.txHash, d.error?.name]),
    [[b, 'InvalidAliasNonce']],
  );
  assert.equal(h.poolNonce('alias_nonce', A), 0n);
  h.produce();
  assert.equal(h.ledger.txView(c)?.status, 'finalized');
});

test('pool rebuild: a pending entry invalidated by a failure in the previous block is dropped and recorded failed', (t) => {
  const h = setup({ maxExtrinsicsPerBlock: 1 });
  t.after(() => h.close());
  const headTs = h.ledger.headRef().timestampMs;
  const a = h.submit(aliasCall(A, { kind: 'add', alias: 'late' }, root7, { nonce: 0n, validUntil: BigInt(headTs + 10) }));
  const b = h.submit(aliasCall(A, { kind: 'add', alias: 'next' }, root7, { nonce: 1n }));
  const c = h.submit(aliasCall(B, { kind: 'add', alias: 'fine' }, root8, { nonce: 0n }));
  h.clock.set(headTs + 10);
  const block = h.produce();
  const { txs } = h.ledger.block(block.number)!;
  assert.deepEqual(
    txs.map((x) => x.txHash),
    [a],
    'one extrinsic per block',
  );
  assert.equal(txs[0]!.status, 'failed');
  // b was re-validated against the new head and dropped; c stays pending
  assert.deepEqual(
    h.ledger.pendingEntries().map((e) => e.tx.txHash),
    [c],
  );
  const vb = h.ledger.txView(b)!;
  assert.equal(vb.status, 'failed');
  assert.equal(vb.tx.error?.name, 'InvalidAliasNonce');
  assert.equal(blockOf(vb), undefined, 'dropped: no block');
  assert.equal(h.poolNonce('alias_nonce', A), 0n);
  h.produce();
  assert.equal(h.ledger.txView(c)?.status, 'finalized');
  assert.equal(h.ledger.produceBlock(), null);
});

test('pool limits: PoolFull at 16 pending per (DID, nonce domain) and at max_pool_size', (t) => {
  const h = setup();
  t.after(() => h.close());
  h.submit(controlCall(A, { kind: 'AddDevice', deviceId: 'p' }, root7, { nonce: 0n }));
  for (let n = 1n; n < 16n; n++) h.submit(controlCall(A, { kind: 'TombstoneDevice', deviceId: 'p' }, root7, { nonce: n }));
  assert.equal(h.ledger.pendingEntries().length, 16);
  const seventeenth = controlCall(A, { kind: 'TombstoneDevice', deviceId: 'p' }, root7, { nonce: 16n });
  assert.throws(
    () => h.ledger.submit(seventeenth, metaOf(seventeenth)),
    (e: unknown) => isFailure('PoolFull')(e) && (e as LedgerFailure).module === 'Ledger',
  );
  // a duplicate of a pending one is still answered
  const dup = controlCall(A, { kind: 'TombstoneDevice', deviceId: 'p' }, root7, { nonce: 15n });
  assert.equal(h.ledger.submit(dup, metaOf(dup)).duplicate, true);
  // other domains of the same DID and other DIDs still have room
  h.submit(aliasCall(A, { kind: 'add', alias: 'ok' }, root7, { nonce: 0n }));
  h.submit(controlCall(B, { kind: 'AddDevice', deviceId: 'p' }, root8, { nonce: 0n }));
  h.produce();
  assert.equal(h.headNonce('control_nonce', A), 16n);
  h.submit(seventeenth);
  assert.equal(h.ledger.pendingEntries().length, 1);

  const small = setup({ maxPoolSize: 2 });
  t.after(() => small.close());
  small.submit(aliasCall(A, { kind: 'add', alias: 'x' }, root7, { nonce: 0n }));
  small.submit(aliasCall(B, { kind: 'add', alias: 'y' }, root8, { nonce: 0n }));
  const third = controlCall(A, { kind: 'AddDevice', deviceId: 'p' }, root7);
  assert.throws(() => small.ledger.submit(third, metaOf(third)), isFailure('PoolFull'));
});

test('finality depth 1: public reads lag one block; tx status in_block → finalized', (t) => {
  const h = new Harness({ finalityDepth: 1 });
  t.after(() => h.close());
  const reg = h.submit(registerCall(A, key7));
  h.produce();
  assert.equal(h.ledger.txView(reg)?.status, 'in_block');
  assert.equal(h.ledger.finalizedRefNow().number, 0);
  assert.equal(h.record(A), undefined, 'not final yet');
  // submissions validate against head + pool, so A can already be used
  h.submit(aliasCall(A, { kind: 'add', alias: 'early' }, root7, { nonce: 0n }));
  h.produce();
  assert.equal(h.ledger.txView(reg)?.status, 'finalized');
  assert.ok(h.record(A));
  assert.equal(h.record(A)!.aliases, null);
  assert.equal(h.ledger.finalizedRefNow().number, 1);
});

test('restart: the same SQLite file gives the same head, state and pending pool', (t) => {
  const h = setup();
  t.after(() => h.close());
  h.apply(aliasCall(A, { kind: 'add', alias: 'kept' }, root7, { nonce: 0n }));
  const p1 = h.submit(aliasCall(A, { kind: 'add', alias: 'pend' }, root7, { nonce: 1n }));
  const p2 = h.submit(patchCall('add_service', B, serviceOf(B, 's'), root8, { nonce: 0n }));
  const p3 = h.submit(aliasCall(A, { kind: 'add', alias: 'pend2' }, root7, { nonce: 2n }));
  const head = h.ledger.headRef();
  const recA = h.record(A);
  const l2 = h.reopen();
  assert.deepEqual(l2.headRef(), head);
  assert.deepEqual(h.record(A), recA);
  assert.equal(getAliasOwner(l2.finalizedView(), 'kept'), A);
  assert.deepEqual(
    l2.pendingEntries().map((e) => e.tx.txHash),
    [p1, p2, p3],
    'same pool, same order',
  );
  assert.equal(h.poolNonce('alias_nonce', A), 3n, 'pool state rebuilt');
  assert.equal(h.headNonce('alias_nonce', A), 1n);
  assert.equal(l2.txView(p2)?.status, 'pending');
  // resubmission after restart is recognised as a duplicate
  const again = aliasCall(A, { kind: 'add', alias: 'pend' }, root7, { nonce: 1n });
  assert.deepEqual(l2.submit(again, metaOf(again)), { txHash: p1, duplicate: true });
  const block = h.produce();
  assert.equal(block.number, head.number + 1);
  assertBlockConsistent(h, block.number);
  assert.deepEqual(h.record(A)!.aliases, ['kept', 'pend', 'pend2']);
  assert.equal(h.record(B)!.document!.service!.length, 2);
  // and once more: nothing pending, same head
  const head2 = h.ledger.headRef();
  h.reopen();
  assert.deepEqual(h.ledger.headRef(), head2);
  assert.equal(h.ledger.pendingEntries().length, 0);
});

test('restart: a pending entry that expired while the node was down is dropped as failed on reopen', (t) => {
  const h = setup();
  t.after(() => h.close());
  const headTs = h.ledger.headRef().timestampMs;
  const stale = h.submit(aliasCall(A, { kind: 'add', alias: 'soon' }, root7, { nonce: 0n, validUntil: BigInt(headTs + 100) }));
  const fine = h.submit(aliasCall(B, { kind: 'add', alias: 'fine' }, root8, { nonce: 0n }));
  h.clock.set(headTs + 100);
  h.reopen();
  assert.deepEqual(
    h.ledger.pendingEntries().map((e) => e.tx.txHash),
    [fine],
  );
  const v = h.ledger.txView(stale)!;
  assert.equal(v.status, 'failed');
  assert.equal(v.tx.error?.name, 'AliasAuthorizationExpired');
  h.produce();
  assert.deepEqual(h.record(B)!.aliases, ['fine']);
});

test('check() runs the full path without keeping anything', (t) => {
  const h = setup();
  t.after(() => h.close());
  const call = aliasCall(A, { kind: 'add', alias: 'probe' }, root7, { nonce: 0n });
  assert.equal(h.ledger.check(call), null);
  assert.equal(h.ledger.check(call), null, 'nothing was reserved');
  assert.equal(h.poolNonce('alias_nonce', A), 0n);
  assert.equal(h.ledger.pendingEntries().length, 0);
  // skipSignatures (prepare routes) runs every other check
  const unsigned = aliasCall(A, { kind: 'add', alias: 'probe' }, root7, { nonce: 0n, signature: new Uint8Array(64) });
  assert.equal(h.ledger.check(unsigned)?.errorName, 'InvalidSignature');
  assert.equal(h.ledger.check(unsigned, { skipSignatures: true }), null);
  assert.equal(h.ledger.check(aliasCall(A, { kind: 'add', alias: 'probe' }, root7, { nonce: 1n }), { skipSignatures: true })?.errorName, 'InvalidAliasNonce');
});
