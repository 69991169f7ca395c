/**
 * ledger_pending (SQLite ledger migration 3): a pending admission's row sits in a table of its own, without a
 * secondary index, and moves into ledger_txs when a block finishes it (included or failed) or when a restart drops
 * it; a ledger whose pending rows are still in ledger_txs has them moved, in their order, when it is opened.
 */
import { describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { openSqlite, type SqliteDb } from '../../src/store/sqlite/database.js';
import {
  DELETE_PENDING_AT_SQL,
  DELETE_PENDING_SQL,
  FINISHED_TX_SQL,
  LAST_FAILURE_SQL,
  LEDGER_MIGRATIONS,
  SqliteLedgerStore,
} from '../../src/store/sqlite/ledger-store.js';
import { to0x } from '../../src/base/bytes.js';
import { encodeExtrinsic, txHashOf } from '../../src/ledger/extrinsic.js';
import { aliasCall, didOf, Harness, metaOf, patchCall, registerCall, rootSigner, seedKey, serviceOf } from '../ledger/harness.js';

const key = seedKey(31);
const other = seedKey(32);
const A = didOf(701);
const B = didOf(702);

/** A second connection to the harness's file (the harness keeps its own), with a store over it. */
function peek(h: Harness): { db: SqliteDb; store: SqliteLedgerStore } {
  const db = openSqlite(h.path, LEDGER_MIGRATIONS, 'ledger');
  return { db, store: new SqliteLedgerStore(db) };
}

/** A harness, and a second connection to its file; both closed after the test. */
function opened(t: TestContext): { h: Harness; p: { db: SqliteDb; store: SqliteLedgerStore } } {
  const h = new Harness();
  const p = peek(h);
  t.after(() => {
    p.db.close();
    h.close();
  });
  return { h, p };
}

/** A registers; its next change expires while the node is down, and the restart drops it. */
function droppedAtRestart(h: Harness): { stale: string; headTs: number } {
  h.apply(registerCall(A, key));
  const headTs = h.ledger.headRef().timestampMs;
  const stale = h.submit(aliasCall(A, { kind: 'add', alias: 'soon' }, rootSigner(key), { nonce: 0n, validUntil: BigInt(headTs + 100) }));
  h.clock.set(headTs + 100);
  h.reopen();
  return { stale, headTs };
}

const pendingHashes = (db: SqliteDb) => (db.prepare('SELECT tx_hash FROM ledger_pending ORDER BY seq').all() as { tx_hash: string }[]).map((r) => r.tx_hash);
const txRows = (db: SqliteDb, txHash: string) =>
  db.prepare('SELECT status, block_number, bytes IS NOT NULL AS has_bytes FROM ledger_txs WHERE tx_hash = ? ORDER BY seq').all(txHash);
const indexes = (db: SqliteDb) =>
  (db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name IN ('ledger_txs', 'ledger_pending')").all() as { name: string }[]).map(
    (r) => r.name,
  );

/**
 * Puts the harness's ledger file back as migration 2 left such a ledger: its pending rows in ledger_txs (as the
 * store wrote them then), with the whole subject index, its replaced values in ledger_state, the index on the
 * whole hash, and no ledger_pending.
 */
function asMigration2(h: Harness): void {
  h.ledger.stop();
  const db = openSqlite(h.path, [], 'ledger');
  db.exec(`
    INSERT INTO ledger_txs (tx_hash, extrinsic, status, subject, submitted_at_ms, meta, bytes)
      SELECT tx_hash, extrinsic, 'pending', subject, submitted_at_ms, meta, bytes FROM ledger_pending ORDER BY seq;
    DROP TABLE ledger_pending;
    DROP INDEX ledger_txs_failed;
    CREATE INDEX ledger_txs_subject ON ledger_txs (subject, extrinsic, seq);
    INSERT INTO ledger_state (key, block, value) SELECT key, block, value FROM ledger_replaced;
    DROP TABLE ledger_replaced;
    DROP INDEX ledger_txs_hash_key;
    CREATE INDEX ledger_txs_hash ON ledger_txs (tx_hash, seq);
    DELETE FROM schema_migrations WHERE namespace = 'ledger' AND version >= 3;
  `);
  db.close();
}

describe('ledger_pending', () => {
  it('holds an admission until its block, which moves it into ledger_txs with the outcome', (t) => {
    const { h, p } = opened(t);
    h.apply(registerCall(A, key));
    const admitted = h.submit(aliasCall(A, { kind: 'add', alias: 'moved' }, rootSigner(key), { nonce: 0n }));
    const second = h.submit(patchCall('add_service', A, serviceOf(A, 's'), rootSigner(key), { nonce: 0n }));
    assert.deepEqual(pendingHashes(p.db), [admitted, second]);
    assert.deepEqual(txRows(p.db, admitted), [], 'no row in ledger_txs while pending');
    assert.equal(p.store.finishedTx(admitted), undefined, 'a pending transaction is not read by hash: it is the pool’s');
    assert.equal(h.ledger.txView(admitted)?.status, 'pending');
    assert.deepEqual(
      p.store.pendingTxs().map((tx) => tx.txHash),
      [admitted, second],
    );
    const block = h.produce();
    assert.deepEqual(pendingHashes(p.db), []);
    assert.deepEqual(txRows(p.db, admitted), [{ status: 'included', block_number: block.number, has_bytes: 1 }]);
    assert.equal(p.store.finishedTx(admitted)?.blockNumber, block.number);
    assert.equal(p.store.finishedTx(second)?.blockNumber, block.number);
    assert.deepEqual(
      p.store.blockTxs(block.number).map((tx) => tx.txHash),
      [admitted, second],
    );
    assert.deepEqual(
      p.store
        .feedAfter(0, block.number, 100)
        .filter((e) => e.blockNumber === block.number)
        .map((e) => e.tx?.txHash),
      [admitted, second],
    );
  });

  it('gives a transaction dropped at a restart its failed row in ledger_txs', (t) => {
    const { h, p } = opened(t);
    const { stale } = droppedAtRestart(h);
    assert.deepEqual(pendingHashes(p.db), []);
    assert.deepEqual(txRows(p.db, stale), [{ status: 'failed', block_number: null, has_bytes: 0 }]);
    assert.equal(p.store.finishedTx(stale)?.error?.name, 'AliasAuthorizationExpired');
    assert.equal(p.store.lastFailure(A, 'add_alias', 0)?.txHash, stale);
  });

  it('takes over the pending rows a ledger kept in ledger_txs, in their order, when it is opened', (t) => {
    const h = new Harness();
    t.after(() => h.close());
    h.apply(registerCall(A, key));
    h.apply(registerCall(B, other));
    const first = h.submit(aliasCall(A, { kind: 'add', alias: 'one' }, rootSigner(key), { nonce: 0n }));
    const second = h.submit(aliasCall(B, { kind: 'add', alias: 'two' }, rootSigner(other), { nonce: 0n }));
    const third = h.submit(aliasCall(A, { kind: 'add', alias: 'three' }, rootSigner(key), { nonce: 1n }));
    asMigration2(h);
    const before = openSqlite(h.path, [], 'ledger');
    assert.equal((before.prepare("SELECT count(*) AS n FROM ledger_txs WHERE status = 'pending'").get() as { n: number }).n, 3);
    before.close();

    const ledger = h.reopen();
    const p = peek(h);
    t.after(() => p.db.close());
    assert.deepEqual(pendingHashes(p.db), [first, second, third]);
    assert.equal((p.db.prepare("SELECT count(*) AS n FROM ledger_txs WHERE status = 'pending'").get() as { n: number }).n, 0);
    assert.deepEqual(
      indexes(p.db).filter((n) => n.startsWith('ledger_pending')),
      [],
      'ledger_pending has no secondary index',
    );
    assert.deepEqual(
      ledger.pendingEntries().map((e) => e.tx.txHash),
      [first, second, third],
      'the restarted pool, in admission order',
    );
    assert.equal(ledger.txView(second)?.status, 'pending');
    const block = h.produce();
    assert.deepEqual(pendingHashes(p.db), []);
    for (const tx of [first, second, third]) assert.deepEqual(txRows(p.db, tx), [{ status: 'included', block_number: block.number, has_bytes: 1 }]);
    assert.deepEqual(h.record(A)!.aliases, ['one', 'three']);
  });

  it('takes over, when it opens the file, pending rows an older version wrote into ledger_txs after the migration', (t) => {
    const h = new Harness();
    t.after(() => h.close());
    h.apply(registerCall(A, key));
    const kept = h.submit(aliasCall(A, { kind: 'add', alias: 'kept' }, rootSigner(key), { nonce: 0n }));
    h.ledger.stop();
    // `ddn migrate` ran beside a node of the version before: its next admission went where that version puts it
    const db = openSqlite(h.path, [], 'ledger');
    const late = aliasCall(A, { kind: 'add', alias: 'late' }, rootSigner(key), { nonce: 1n });
    const bytes = encodeExtrinsic(late);
    const lateHash = to0x(txHashOf(bytes));
    db.prepare(`INSERT INTO ledger_txs (tx_hash, extrinsic, status, subject, submitted_at_ms, meta, bytes) VALUES (?, ?, 'pending', ?, ?, ?, ?)`).run(
      lateHash,
      late.name,
      A,
      h.clock.nowMs(),
      JSON.stringify(metaOf(late)),
      Buffer.from(bytes),
    );
    db.close();
    const ledger = h.reopen();
    const p = peek(h);
    t.after(() => p.db.close());
    assert.deepEqual(
      ledger.pendingEntries().map((e) => e.tx.txHash),
      [kept, lateHash],
    );
    assert.deepEqual(pendingHashes(p.db), [kept, lateHash]);
    assert.equal((p.db.prepare("SELECT count(*) AS n FROM ledger_txs WHERE status = 'pending'").get() as { n: number }).n, 0);
    const probe = p.db.prepare("EXPLAIN QUERY PLAN SELECT 1 FROM ledger_txs WHERE status = 'pending' LIMIT 1").all() as { detail: string }[];
    assert.match(probe.map((r) => r.detail).join('\n'), /INDEX ledger_txs_pending/, 'the look at each start reads the (empty) partial index');
    h.produce();
    assert.deepEqual(h.record(A)!.aliases, ['kept', 'late']);
  });

  it('writes a block it has no pending rows of (a replica, a follower) straight into ledger_txs', (t) => {
    const source = new Harness();
    const replica = new Harness();
    const p = peek(replica);
    t.after(() => {
      p.db.close();
      replica.close();
      source.close();
    });
    const tx = source.apply(registerCall(A, key));
    const n = source.ledger.headRef().number;
    const { block, txs } = source.ledger.block(n)!;
    const store = p.store;
    store.commitBlock(block, new Map(), txs);
    assert.deepEqual(txRows(p.db, tx), [{ status: 'included', block_number: n, has_bytes: 1 }]);
    assert.equal(store.finishedTx(tx)?.blockNumber, n);
  });

  it("finds a block's pending rows in one pass, however many it finishes", (t) => {
    const { p } = opened(t);
    const plan = (p.db.prepare(`EXPLAIN QUERY PLAN ${DELETE_PENDING_SQL}`).all('[]') as { detail: string }[]).map((r) => r.detail);
    assert.deepEqual(
      plan.filter((d) => /ledger_pending/.test(d)),
      ['SCAN ledger_pending'],
    );
    assert.ok(
      plan.some((d) => /^LIST SUBQUERY/.test(d)),
      `the hashes are a list, not a subquery run per row: ${plan.join(' | ')}`,
    );
  });

  it("deletes the pending rows of a block's transactions by their seq, not by reading the rows behind them", (t) => {
    const { p } = opened(t);
    const plan = (p.db.prepare(`EXPLAIN QUERY PLAN ${DELETE_PENDING_AT_SQL}`).all('[]') as { detail: string }[]).map((r) => r.detail);
    assert.deepEqual(
      plan.filter((d) => /ledger_pending/.test(d)),
      ['SEARCH ledger_pending USING INTEGER PRIMARY KEY (rowid=?)'],
    );
  });

  it('finishes the pending rows it wrote by their seq, and a row another connection wrote by its hash', (t) => {
    const source = new Harness();
    const replica = new Harness();
    const p = peek(replica);
    const other = peek(replica);
    t.after(() => {
      other.db.close();
      p.db.close();
      replica.close();
      source.close();
    });
    const dids = [A, B, didOf(703), didOf(704), didOf(705)];
    for (const [i, d] of dids.entries()) source.submit(registerCall(d, seedKey(40 + i)));
    const pending = source.ledger.pendingEntries().map((e) => ({ ...e.tx, status: 'pending' as const }));
    p.store.putPendingTxs(pending.slice(0, 2));
    other.store.putPendingTx(pending[2]!);
    p.store.putPendingTxs(pending.slice(3));
    source.produce();
    const n = source.ledger.headRef().number;
    const { block, txs } = source.ledger.block(n)!;
    assert.equal(txs.length, 5);
    // the block finishes the first three: two rows this store wrote, one the other connection wrote
    p.store.commitBlock(block, new Map(), txs.slice(0, 3));
    assert.deepEqual(
      pendingHashes(p.db),
      pending.slice(3).map((x) => x.txHash),
    );
    for (const tx of txs.slice(0, 3)) assert.deepEqual(txRows(p.db, tx.txHash), [{ status: 'included', block_number: n, has_bytes: 1 }]);
  });

  it('looks a transaction up by hash in the finished rows’ index, never by reading the pending rows', (t) => {
    const { h, p } = opened(t);
    h.apply(registerCall(A, key));
    const admitted = h.submit(aliasCall(A, { kind: 'add', alias: 'waiting' }, rootSigner(key), { nonce: 0n }));
    const plan = (p.db.prepare(`EXPLAIN QUERY PLAN ${FINISHED_TX_SQL}`).all({ hash: admitted }) as { detail: string }[]).map((r) => r.detail);
    assert.deepEqual(plan, ['SEARCH ledger_txs USING INDEX ledger_txs_hash_key (<expr>=?)']);
    // the ledger answers from its pool, then the finished rows: pending, unknown, finished
    assert.equal(h.ledger.txView(admitted)?.status, 'pending');
    assert.equal(h.ledger.txView(to0x(txHashOf(encodeExtrinsic(registerCall(B, other))))), undefined);
    h.produce();
    assert.equal(p.store.finishedTx(admitted)?.status, 'included');
    assert.equal(h.ledger.txView(admitted)?.status, 'finalized');
  });
});

describe('ledger_txs_failed (migration 4)', () => {
  it("finds a subject's last failure through the failed rows' index, which holds no included row", (t) => {
    const { h, p } = opened(t);
    const { stale, headTs } = droppedAtRestart(h);
    h.apply(aliasCall(A, { kind: 'add', alias: 'later' }, rootSigner(key), { nonce: 0n }));
    const plan = (p.db.prepare(`EXPLAIN QUERY PLAN ${LAST_FAILURE_SQL}`).all(A, 'add_alias', 0) as { detail: string }[]).map((r) => r.detail).join('\n');
    assert.match(plan, /USING INDEX ledger_txs_failed/);
    assert.equal(p.store.lastFailure(A, 'add_alias', 0)?.txHash, stale);
    assert.equal(p.store.lastFailure(A, 'add_alias', headTs + 101), undefined, 'none since');
    assert.equal(p.store.lastFailure(A, 'register_with_proof_v2', 0), undefined, 'an included row is no failure');
    const sql = (p.db.prepare("SELECT sql FROM sqlite_master WHERE name = 'ledger_txs_failed'").get() as { sql: string }).sql;
    assert.match(sql, /WHERE status = 'failed'$/, 'only failed rows are in the index');
    assert.ok(!indexes(p.db).includes('ledger_txs_subject'));
  });
});
