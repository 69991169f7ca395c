/**
 * ledger_replaced (SQLite ledger migration 5): the values later blocks replaced, appended to a rowid table with a
 * (key, block) index instead of ledger_state's WITHOUT ROWID tree. A ledger written before it (its replaced values in
 * ledger_state) keeps answering every read at every block the same once opened, and after blocks written since; an
 * older version writing ledger_state beside it is read too.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { StoredBlock } from '../../src/ledger/store.js';
import { serializeStateValue, type StateValue } from '../../src/ledger/state.js';
import { openSqlite, type SqliteDb } from '../../src/store/sqlite/database.js';
import { LEDGER_MIGRATIONS, SqliteLedgerStore } from '../../src/store/sqlite/ledger-store.js';

function block(n: number): StoredBlock {
  const h = (b: number) => new Uint8Array(32).fill(b);
  return { header: { parentHash: h(n - 1), number: n, timestampMs: 1_000 * n, extrinsicsRoot: h(0), resultsRoot: h(0) }, hash: h(n) };
}

/** What each block wrote (undefined: deleted), and the value a read at any block must answer. */
class Model {
  private readonly writes = new Map<string, [number, StateValue | undefined][]>();
  record(n: number, writes: Map<string, StateValue | undefined>): void {
    for (const [k, v] of writes) this.writes.set(k, [...(this.writes.get(k) ?? []), [n, v]]);
  }
  at(key: string, n: number): StateValue | undefined {
    let found: StateValue | undefined;
    for (const [b, v] of this.writes.get(key) ?? []) if (b <= n) found = v;
    return found;
  }
  get keys(): string[] {
    return [...this.writes.keys()];
  }
}

/** The blocks of the test: keys written again and again, deleted, written once, written again after a deletion. */
function blockWrites(n: number): Map<string, StateValue | undefined> {
  const w = new Map<string, StateValue | undefined>();
  w.set('did/a', { doc: 'a'.repeat(40), n });
  if (n % 2 === 0) w.set('did/b', n === 4 ? undefined : BigInt(n));
  if (n === 1) w.set('did/c', new Uint8Array([n]));
  if (n % 3 === 0) w.set(`did/d${n % 2}`, `v${n}`);
  return w;
}

/**
 * The store's writes before migration 5 (session 28's SqliteLedgerStore.writeKey): the newest value in
 * ledger_current, the one it replaces into ledger_state.
 */
function writeAsBefore(db: SqliteDb, n: number, writes: Map<string, StateValue | undefined>): void {
  const current = db.prepare<[string], { block: number; value: string | null }>('SELECT block, value FROM ledger_current WHERE key = ?');
  db.transaction(() => {
    for (const [key, v] of writes) {
      const value = v === undefined ? null : serializeStateValue(v);
      const c = current.get(key);
      if (c === undefined) db.prepare('INSERT INTO ledger_current (key, block, value) VALUES (?, ?, ?)').run(key, n, value);
      else {
        db.prepare('UPDATE ledger_current SET block = ?, value = ? WHERE key = ?').run(n, value, key);
        db.prepare('INSERT OR IGNORE INTO ledger_state (key, block, value) VALUES (?, ?, ?)').run(key, c.block, c.value);
      }
    }
  })();
}

function checkEveryRead(store: SqliteLedgerStore, model: Model, head: number, what: string): void {
  for (const key of [...model.keys, 'did/never'])
    for (let n = 0; n <= head; n++) assert.deepEqual(store.readState(key, n), model.at(key, n), `${what}: ${key} at block ${n}`);
}

const count = (db: SqliteDb, table: string) => (db.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n;

describe('ledger_replaced', () => {
  it('keeps the values later blocks replaced out of ledger_state', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ddn-ledger-replaced-'));
    const db = openSqlite(join(dir, 'ledger.sqlite'), LEDGER_MIGRATIONS, 'ledger');
    try {
      const store = new SqliteLedgerStore(db);
      const model = new Model();
      for (let n = 1; n <= 8; n++) {
        store.commitBlock(block(n), blockWrites(n), []);
        model.record(n, blockWrites(n));
      }
      checkEveryRead(store, model, 8, 'new ledger');
      assert.equal(count(db, 'ledger_state'), 0);
      // every value but each key's newest, in block order
      assert.deepEqual(
        db.prepare("SELECT key, block FROM ledger_replaced WHERE key = 'did/b' ORDER BY id").all(),
        [2, 4, 6].map((block) => ({ key: 'did/b', block })),
      );
      assert.equal(count(db, 'ledger_replaced'), 7 + 3);
    } finally {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('answers every read of a ledger written before it the same, and after later blocks, an older writer beside', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ddn-ledger-replaced-'));
    const path = join(dir, 'ledger.sqlite');
    let db = openSqlite(
      path,
      LEDGER_MIGRATIONS.filter((m) => m.version <= 4),
      'ledger',
    );
    try {
      const model = new Model();
      for (let n = 1; n <= 6; n++) {
        writeAsBefore(db, n, blockWrites(n));
        model.record(n, blockWrites(n));
      }
      const before = db.prepare('SELECT key, block, value FROM ledger_state ORDER BY key, block').all();
      assert.ok(before.length > 5);
      db.close();

      db = openSqlite(path, LEDGER_MIGRATIONS, 'ledger');
      let store = new SqliteLedgerStore(db);
      checkEveryRead(store, model, 6, 'opened by the new version');
      assert.equal(count(db, 'ledger_replaced'), 0, 'nothing copied');
      for (let n = 7; n <= 10; n++) {
        store.commitBlock(block(n), blockWrites(n), []);
        model.record(n, blockWrites(n));
      }
      checkEveryRead(store, model, 10, 'after blocks of the new version');
      assert.deepEqual(db.prepare('SELECT key, block, value FROM ledger_state ORDER BY key, block').all(), before, 'ledger_state as it was');
      // an older version's block (a node left running beside `ddn migrate`) writes ledger_state: read as well
      writeAsBefore(db, 11, blockWrites(11));
      model.record(11, blockWrites(11));
      store.commitBlock(block(12), blockWrites(12), []);
      model.record(12, blockWrites(12));
      checkEveryRead(store, model, 12, 'after an older writer');
      db.close();
      db = openSqlite(path, LEDGER_MIGRATIONS, 'ledger');
      store = new SqliteLedgerStore(db);
      checkEveryRead(store, model, 12, 'reopened');
    } finally {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
