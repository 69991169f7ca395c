/**
 * ledger_txs's hash index keyed by the hash's first 8 bytes (SQLite ledger migration 6): a lookup by hash searches
 * it and checks the whole hash, and a ledger that migration 5 left (the index on the whole hash) answers every
 * lookup the same once the new code has opened it.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { openSqlite, type SqliteDb } from '../../src/store/sqlite/database.js';
import { FINISHED_TX_SQL, LEDGER_MIGRATIONS, SqliteLedgerStore } from '../../src/store/sqlite/ledger-store.js';
import { aliasCall, didOf, Harness, registerCall, rootSigner, seedKey } from '../ledger/harness.js';

const key = seedKey(41);
const other = seedKey(42);
const A = didOf(801);
const B = didOf(802);

/** The lookup by hash as it was before migration 6 (the index on the whole hash). */
const WHOLE_HASH_SQL = 'SELECT * FROM ledger_txs WHERE tx_hash = ? ORDER BY seq DESC LIMIT 1';

const indexes = (db: SqliteDb) =>
  (db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'ledger_txs' ORDER BY name").all() as { name: string }[]).map((r) => r.name);
const planOf = (db: SqliteDb, hash: string) => (db.prepare(`EXPLAIN QUERY PLAN ${FINISHED_TX_SQL}`).all({ hash }) as { detail: string }[]).map((r) => r.detail);

/** A ledger with included and failed rows; its file put back as migration 5 left such a ledger. */
function ledgerOfMigration5(): { h: Harness; hashes: string[] } {
  const h = new Harness();
  const hashes = [h.apply(registerCall(A, key)), h.apply(registerCall(B, other))];
  const headTs = h.ledger.headRef().timestampMs;
  // dropped at the restart below: a failed row
  hashes.push(h.submit(aliasCall(A, { kind: 'add', alias: 'soon' }, rootSigner(key), { nonce: 0n, validUntil: BigInt(headTs + 100) })));
  h.clock.set(headTs + 100);
  h.reopen();
  hashes.push(h.apply(aliasCall(B, { kind: 'add', alias: 'kept' }, rootSigner(other), { nonce: 0n })));
  h.ledger.stop();
  const db = openSqlite(h.path, [], 'ledger');
  db.exec(`
    DROP INDEX ledger_txs_hash_key;
    CREATE INDEX ledger_txs_hash ON ledger_txs (tx_hash, seq);
    DELETE FROM schema_migrations WHERE namespace = 'ledger' AND version >= 6;
  `);
  db.close();
  return { h, hashes };
}

describe('ledger_txs_hash_key (migration 6)', () => {
  it("finds a transaction by hash through the index on the hash's first 8 bytes, whole hash checked", (t) => {
    const h = new Harness();
    t.after(() => h.close());
    const tx = h.apply(registerCall(A, key));
    const db = openSqlite(h.path, LEDGER_MIGRATIONS, 'ledger');
    t.after(() => db.close());
    assert.deepEqual(
      indexes(db).filter((n) => n.startsWith('ledger_txs_hash')),
      ['ledger_txs_hash_key'],
    );
    assert.deepEqual(planOf(db, tx), ['SEARCH ledger_txs USING INDEX ledger_txs_hash_key (<expr>=?)']);
    const entry = db.prepare('SELECT coalesce(unhex(substr(tx_hash, 3, 16)), tx_hash) AS k FROM ledger_txs WHERE tx_hash = ?').get(tx) as { k: Buffer };
    assert.equal(entry.k.length, 8, 'an index entry keys by 8 bytes, not the 66 characters');
    const store = new SqliteLedgerStore(db);
    assert.equal(store.finishedTx(tx)?.status, 'included');
    // same first 8 bytes, another hash: the whole hash is checked
    assert.equal(store.finishedTx(`${tx.slice(0, 18)}${'0'.repeat(48)}`), undefined);
    assert.equal(store.finishedTx(tx.slice(0, 18)), undefined);
  });

  it('answers every lookup by hash as the whole-hash index did, on a ledger migration 5 left', (t) => {
    const { h, hashes } = ledgerOfMigration5();
    t.after(() => h.close());
    // rows no node writes but a file may hold: the newest of a repeated hash, strings that are not 0x-hex
    const old = openSqlite(h.path, [], 'ledger');
    const insert = old.prepare(
      "INSERT INTO ledger_txs (tx_hash, extrinsic, status, subject, submitted_at_ms, meta) VALUES (?, 'add_alias', 'failed', ?, 0, '{}')",
    );
    for (const odd of [hashes[3]!, 'h1', '0xzz', '', '0x12', hashes[0]!.toUpperCase()]) insert.run(odd, A);
    assert.deepEqual(
      indexes(old).filter((n) => n.startsWith('ledger_txs_hash')),
      ['ledger_txs_hash'],
    );
    const probes = [...hashes, 'h1', '0xzz', '', '0x12', hashes[0]!.toUpperCase(), hashes[0]!.slice(0, 18), `0x${'ab'.repeat(32)}`, 'did:ddn:x'];
    const before = probes.map((p) => old.prepare(WHOLE_HASH_SQL).get(p));
    old.close();
    assert.ok(before.filter((r) => r !== undefined).length >= 9, 'most probes find a row');

    h.reopen();
    const db = openSqlite(h.path, LEDGER_MIGRATIONS, 'ledger');
    t.after(() => db.close());
    assert.deepEqual(
      indexes(db).filter((n) => n.startsWith('ledger_txs_hash')),
      ['ledger_txs_hash_key'],
      'the whole-hash index dropped',
    );
    assert.deepEqual(
      probes.map((hash) => db.prepare(FINISHED_TX_SQL).get({ hash })),
      before,
    );
    const store = new SqliteLedgerStore(db);
    assert.equal(store.finishedTx(hashes[3]!)?.status, 'failed', 'the newest row of a repeated hash');
    assert.equal(h.ledger.txView(hashes[0]!)?.status, 'finalized');
    assert.equal(h.ledger.txView(hashes[2]!)?.status, 'failed');
  });
});
