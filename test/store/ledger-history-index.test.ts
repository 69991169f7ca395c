/**
 * The SQLite ledger's history index (src/store/sqlite/ledger-history.ts): a registration its DID's current record
 * names is not entered in `ledger_txs_history` (one random leaf less a registration) and is found through the record;
 * a block that deletes the record, or registers the identifier again, enters the registration the record named; a
 * ledger written before (every row in the index) answers the same, each row once. The contract test
 * (test/store/ledger-contract.ts) reads the same histories through the ledger on both backends.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { StateValue } from '../../src/ledger/state.js';
import type { StoredBlock, TxRecord } from '../../src/ledger/store.js';
import { migrate, openSqlite, type SqliteDb } from '../../src/store/sqlite/database.js';
import { LEDGER_HISTORY_MIGRATIONS, LEDGER_HISTORY_NAMESPACE } from '../../src/store/sqlite/ledger-history.js';
import { HISTORY_SQL, LEDGER_MIGRATIONS, SqliteLedgerStore } from '../../src/store/sqlite/ledger-store.js';

const hash = (n: number) => `0x${n.toString(16).padStart(64, '0')}`;
const record = (registrationTx: string, version = 1): StateValue => ({ aliases: null, document: { v: version }, version, registrationTx });

function block(n: number): StoredBlock {
  const h = (b: number) => new Uint8Array(32).fill(b);
  return { header: { parentHash: h(n - 1), number: n, timestampMs: 1_000 * n, extrinsicsRoot: h(0), resultsRoot: h(0) }, hash: h(n) };
}

/** An included transaction of block `n` at `index` about `subject`. */
function tx(
  n: number,
  index: number,
  txHash: string,
  subject: string,
  extrinsic = 'register_with_proof_v2',
  status: TxRecord['status'] = 'included',
): TxRecord {
  return {
    txHash,
    extrinsic,
    status,
    submittedAtMs: 0,
    meta: { subject, action: extrinsic, limitKey: subject },
    blockNumber: n,
    blockIndex: index,
    finishedAtMs: n * 1_000,
  };
}

function open(t: { after(f: () => void): void }): { db: SqliteDb; store: SqliteLedgerStore; path: string } {
  const dir = mkdtempSync(join(tmpdir(), 'ddn-ledger-history-'));
  const path = join(dir, 'ledger.sqlite');
  const db = openSqlite(path, LEDGER_MIGRATIONS, 'ledger');
  t.after(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const store = new SqliteLedgerStore(db);
  store.initGenesis(block(0));
  return { db, store, path };
}

/** Block 1: x and y registered (their registrations `hash(1)` and `hash(2)`). */
function registerXY(store: SqliteLedgerStore): void {
  store.commitBlock(
    block(1),
    new Map([
      ['did/x', record(hash(1))],
      ['did/y', record(hash(2))],
    ]),
    [tx(1, 0, hash(1), 'x'), tx(1, 1, hash(2), 'y')],
  );
}

/** The rows of `subject` the history index holds (a search of the index alone). */
const indexed = (db: SqliteDb, subject: string) =>
  (
    db
      .prepare(
        "SELECT tx_hash FROM ledger_txs INDEXED BY ledger_txs_history WHERE subject = ? AND status = 'included' AND history_via_record IS NULL ORDER BY block_number, block_index",
      )
      .all(subject) as { tx_hash: string }[]
  ).map((r) => r.tx_hash);

const history = (store: SqliteLedgerStore, subject: string, limit = 10, maxBlock = 100) =>
  store.subjectHistory({ subject, maxBlock, limit }).map((r) => r.txHash);

describe('SQLite ledger: the history index', () => {
  it('leaves out the registration a record names, finds it through the record, and plans both by index', (t) => {
    const { db, store } = open(t);
    registerXY(store);
    store.commitBlock(block(2), new Map([['nonce/alias_nonce/x', 1n]]), [
      tx(2, 0, hash(9), 'x', 'add_alias'),
      tx(2, 1, hash(8), 'z', 'register_with_proof_v2', 'failed'),
    ]);
    assert.deepEqual(indexed(db, 'x'), [hash(9)], "x's registration is not in the index; its alias is");
    assert.deepEqual(indexed(db, 'y'), []);
    assert.deepEqual(history(store, 'x'), [hash(9), hash(1)]);
    assert.deepEqual(history(store, 'y'), [hash(2)]);
    assert.deepEqual(history(store, 'z'), [], 'a failed registration is in no history');
    assert.deepEqual(history(store, 'x', 1), [hash(9)], 'the limit holds over both');
    assert.deepEqual(
      store.subjectHistory({ subject: 'x', maxBlock: 100, limit: 10, before: { blockNumber: 2, blockIndex: 0 } }).map((r) => r.txHash),
      [hash(1)],
    );
    assert.deepEqual(history(store, 'x', 10, 0), [], 'nothing after the block asked for');
    // an update of the record keeps its registration out of the index
    store.commitBlock(block(3), new Map([['did/x', record(hash(1), 2)]]), [tx(3, 0, hash(10), 'x', 'set_document_with_proof_v2')]);
    assert.deepEqual(indexed(db, 'x'), [hash(9), hash(10)]);
    assert.deepEqual(history(store, 'x'), [hash(10), hash(9), hash(1)]);

    const plan = (
      db.prepare(`EXPLAIN QUERY PLAN ${HISTORY_SQL}`).all({
        subject: 'x',
        block: 100,
        index: 0,
        all: 1,
        extrinsics: '[]',
        limit: 10,
      }) as { detail: string }[]
    ).map((r) => r.detail);
    assert.ok(
      plan.some((d) => d.includes('USING INDEX ledger_txs_history')),
      plan.join('\n'),
    );
    assert.ok(
      plan.some((d) => d.includes('USING INDEX ledger_txs_hash_key')),
      plan.join('\n'),
    );
    assert.ok(!plan.some((d) => /SCAN ledger_txs\b/.test(d)), plan.join('\n'));
  });

  it('enters the registration a record no longer names: a deletion, a registration again, both in one block', (t) => {
    const { db, store } = open(t);
    registerXY(store);
    // x deleted; y deleted and registered again in one block; w registered and deleted in one block
    store.commitBlock(
      block(2),
      new Map<string, StateValue | undefined>([
        ['did/x', undefined],
        ['did/y', record(hash(4))],
        ['did/w', undefined],
      ]),
      [
        tx(2, 0, hash(3), 'x', 'control_v2'),
        tx(2, 1, hash(5), 'y', 'control_v2'),
        tx(2, 2, hash(4), 'y'),
        tx(2, 3, hash(6), 'w'),
        tx(2, 4, hash(7), 'w', 'control_v2'),
      ],
    );
    assert.deepEqual(indexed(db, 'x'), [hash(1), hash(3)]);
    assert.deepEqual(indexed(db, 'y'), [hash(2), hash(5)], "y's first registration is back, its second is named by the record");
    assert.deepEqual(indexed(db, 'w'), [hash(6), hash(7)]);
    assert.deepEqual(history(store, 'x'), [hash(3), hash(1)]);
    assert.deepEqual(history(store, 'y'), [hash(4), hash(5), hash(2)]);
    assert.deepEqual(history(store, 'w'), [hash(7), hash(6)]);
    // x registered again later: its first registration stays in the index, the new one is named
    store.commitBlock(block(3), new Map([['did/x', record(hash(11))]]), [tx(3, 0, hash(11), 'x')]);
    assert.deepEqual(indexed(db, 'x'), [hash(1), hash(3)]);
    assert.deepEqual(history(store, 'x'), [hash(11), hash(3), hash(1)]);
  });

  it('reads a ledger written before the rule (every registration in the index) the same, each row once', (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'ddn-ledger-history-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, 'ledger.sqlite');
    const before = openSqlite(path, LEDGER_MIGRATIONS, 'ledger');
    migrate(before, LEDGER_HISTORY_MIGRATIONS.slice(0, 1), LEDGER_HISTORY_NAMESPACE);
    before.exec(`
      INSERT INTO ledger_current (key, block, value) VALUES ('did/x', 1, '{"version":1,"registrationTx":"${hash(1)}"}');
      INSERT INTO ledger_txs (tx_hash, extrinsic, status, subject, submitted_at_ms, meta, block_number, block_index)
        VALUES ('${hash(1)}', 'register_with_proof_v2', 'included', 'x', 0, '{}', 1, 0),
               ('${hash(2)}', 'add_alias', 'included', 'x', 0, '{}', 1, 1);
    `);
    before.close();
    const db = openSqlite(path, LEDGER_MIGRATIONS, 'ledger');
    t.after(() => db.close());
    const store = new SqliteLedgerStore(db);
    assert.deepEqual(indexed(db, 'x'), [hash(1), hash(2)], 'the rebuilt index holds every row written before');
    assert.deepEqual(history(store, 'x'), [hash(2), hash(1)]);
  });
});
