/**
 * ledger_current (SQLite ledger migration 2): each state key's newest value, read before the values later blocks
 * replaced (ledger_replaced since migration 5, ledger_state before). Reads at the head, at older blocks (finality behind the head, historical
 * reads), of a deleted key, after a restart, and of a ledger made before the table existed (the migration
 * backfills it; the trigger follows later writes).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { StoredBlock } from '../../src/ledger/store.js';
import { openSqlite, type SqliteDb } from '../../src/store/sqlite/database.js';
import { LEDGER_MIGRATIONS, SqliteLedgerStore } from '../../src/store/sqlite/ledger-store.js';

function block(n: number): StoredBlock {
  const h = (b: number) => new Uint8Array(32).fill(b);
  return { header: { parentHash: h(n - 1), number: n, timestampMs: 1_000 * n, extrinsicsRoot: h(0), resultsRoot: h(0) }, hash: h(n) };
}

/** A file database in a fresh directory; `migrations` defaults to all of the ledger's. */
function tempLedger(): { path: string; open: (migrations?: typeof LEDGER_MIGRATIONS) => SqliteDb; done: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'ddn-ledger-current-'));
  const path = join(dir, 'ledger.sqlite');
  return { path, open: (m = LEDGER_MIGRATIONS) => openSqlite(path, m, 'ledger'), done: () => rmSync(dir, { recursive: true, force: true }) };
}

const currentRows = (db: SqliteDb) => db.prepare('SELECT key, block, value FROM ledger_current ORDER BY key').all();

describe('ledger_current', () => {
  it('answers reads at the head, at older blocks, before a key existed and after it was deleted, and after a restart', () => {
    const t = tempLedger();
    let db = t.open();
    try {
      const store = new SqliteLedgerStore(db);
      store.initGenesis(block(0));
      store.commitBlock(
        block(1),
        new Map<string, unknown>([
          ['a', { v: 1 }],
          ['b', 10n],
        ]),
        [],
      );
      store.commitBlock(block(2), new Map<string, unknown>([['a', { v: 2 }]]), []);
      store.commitBlock(
        block(3),
        new Map<string, unknown>([
          ['b', undefined],
          ['c', new Uint8Array([7])],
        ]),
        [],
      );
      const check = (s: SqliteLedgerStore) => {
        assert.deepEqual(s.readState('a', 3), { v: 2 }, 'head');
        assert.deepEqual(s.readState('a', 2), { v: 2 }, 'at the block that wrote it');
        assert.deepEqual(s.readState('a', 1), { v: 1 }, 'an older block reads the replaced values');
        assert.equal(s.readState('a', 0), undefined, 'before any block wrote it');
        assert.equal(s.readState('b', 2), 10n, 'before its deletion');
        assert.equal(s.readState('b', 3), undefined, 'deleted');
        assert.deepEqual(s.readState('c', 3), new Uint8Array([7]));
        assert.equal(s.readState('c', 2), undefined);
        assert.equal(s.readState('never', 3), undefined);
      };
      check(store);
      assert.deepEqual(currentRows(db), [
        { key: 'a', block: 2, value: '{"v":2}' },
        { key: 'b', block: 3, value: null },
        { key: 'c', block: 3, value: '{"$x":"07"}' },
      ]);
      // ledger_replaced (migration 5) keeps only what a later block replaced: a key written once (c) has no row there
      assert.deepEqual(db.prepare('SELECT key, block, value FROM ledger_replaced ORDER BY key, block').all(), [
        { key: 'a', block: 1, value: '{"v":1}' },
        { key: 'b', block: 1, value: '{"$n":"10"}' },
      ]);
      db.close();
      db = t.open();
      check(new SqliteLedgerStore(db));
    } finally {
      db.close();
      t.done();
    }
  });

  it('is backfilled from ledger_state when a ledger made without it is opened, and follows later writes of any writer', () => {
    const t = tempLedger();
    let db = t.open(LEDGER_MIGRATIONS.filter((m) => m.version === 1));
    try {
      // what a ledger of the previous version holds: several blocks per key, a deletion
      const put = db.prepare('INSERT INTO ledger_state (key, block, value) VALUES (?, ?, ?)');
      for (const [k, b, v] of [
        ['a', 1, '1'],
        ['a', 4, '4'],
        ['a', 2, '2'],
        ['b', 1, '"x"'],
        ['b', 3, null],
      ] as const)
        put.run(k, b, v);
      assert.throws(() => db.prepare('SELECT 1 FROM ledger_current').get(), /no such table/);
      db.close();
      db = t.open();
      assert.deepEqual(currentRows(db), [
        { key: 'a', block: 4, value: '4' },
        { key: 'b', block: 3, value: null },
      ]);
      const store = new SqliteLedgerStore(db);
      assert.equal(store.readState('a', 4), 4);
      assert.equal(store.readState('a', 3), 2);
      assert.equal(store.readState('b', 2), 'x');
      assert.equal(store.readState('b', 3), undefined);
      // a write of ledger_state that does not know the table (an older process) keeps it in step; an older block
      // written late does not replace a newer row
      db.prepare('INSERT INTO ledger_state (key, block, value) VALUES (?, ?, ?)').run('b', 5, '"y"');
      db.prepare('INSERT INTO ledger_state (key, block, value) VALUES (?, ?, ?)').run('a', 3, '3');
      assert.equal(store.readState('b', 5), 'y');
      assert.equal(store.readState('a', 5), 4);
      assert.equal(store.readState('a', 3), 3);
    } finally {
      db.close();
      t.done();
    }
  });
});
