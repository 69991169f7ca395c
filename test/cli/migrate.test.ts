/**
 * `ddn migrate`: applies the migrations of the configured roles to the data directory's SQLite files or to a
 * PostgreSQL schema, prints one JSON line, and is idempotent. A node started afterwards runs on what it made.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { ddn, spawnDdn } from './cli-process.js';
import { freshPgSchema, PG_URL } from '../support/pg.js';

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'ddn-migrate-'));
  dirs.push(d);
  return d;
};

describe('ddn migrate', () => {
  it('creates and versions the SQLite stores of the given roles, and changes nothing when run again', async () => {
    const dir = tempDir();
    const first = await ddn(['migrate', '--data-dir', dir, '--roles', 'directory,cache']);
    assert.equal(first.code, 0, first.stderr);
    assert.deepEqual(first.json, {
      event: 'migrated',
      database: 'sqlite',
      location: dir,
      applied: ['ledger@6', 'ledger_history@2', 'ledger-feed@2', 'directory@1', 'cache@6', 'events@2'],
    });
    assert.ok(existsSync(join(dir, 'ledger.sqlite')) && existsSync(join(dir, 'cache.sqlite')));
    assert.equal(existsSync(join(dir, 'relay.sqlite')), false, 'no store of a role not asked for');
    const db = new Database(join(dir, 'ledger.sqlite'), { readonly: true });
    const versions = db.prepare('SELECT namespace, version FROM schema_migrations ORDER BY namespace').all();
    db.close();
    assert.deepEqual(versions, [
      { namespace: 'directory', version: 1 },
      { namespace: 'ledger', version: 1 },
      { namespace: 'ledger', version: 2 },
      { namespace: 'ledger', version: 3 },
      { namespace: 'ledger', version: 4 },
      { namespace: 'ledger', version: 5 },
      { namespace: 'ledger', version: 6 },
      { namespace: 'ledger-feed', version: 1 },
      { namespace: 'ledger-feed', version: 2 },
      { namespace: 'ledger_history', version: 1 },
      { namespace: 'ledger_history', version: 2 },
    ]);
    const again = await ddn(['migrate', '--data-dir', dir, '--roles', 'directory,cache']);
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual(again.json, first.json);
  });

  it('exits 2 on a bad option and 1 when the database cannot be reached', async () => {
    const bad = spawnDdn(['migrate', '--roles', 'nonsense']);
    assert.equal(await bad.exit, 2);
    assert.match(bad.stderr(), /^ddn migrate: --roles/);
    assert.equal(bad.stdout(), '');
    const unreachable = spawnDdn(['migrate', '--data-dir', tempDir(), '--db', 'postgres://nobody@127.0.0.1:1/none']);
    assert.equal(await unreachable.exit, 1);
    assert.match(unreachable.stderr(), /^ddn migrate: /);
    assert.equal(unreachable.stdout(), '');
  });

  if (PG_URL) {
    it("creates every role's tables in a PostgreSQL schema, once", async () => {
      const pg = await freshPgSchema();
      try {
        const args = ['migrate', '--data-dir', tempDir(), '--db', pg.url, '--db-schema', pg.schema];
        const first = await ddn(args);
        assert.equal(first.code, 0, first.stderr);
        assert.equal(first.json.database, 'postgres');
        assert.equal(first.json.location, pg.schema);
        const tables = (
          await pg.pool.query<{ table_name: string }>('SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name', [
            pg.schema,
          ])
        ).rows.map((r) => r.table_name);
        for (const t of [
          'ledger_blocks',
          'ledger_txs',
          'ledger_state',
          'ledger_block_extrinsics',
          'directory_dns_challenges',
          'cache_entries',
          'cache_nonces',
          'relay_live_bodies',
          'rate_limits',
          'schema_migrations',
        ]) {
          assert.ok(tables.includes(t), `${t} in ${tables.join(',')}`);
        }
        const again = await ddn(args);
        assert.equal(again.code, 0, again.stderr);
        assert.deepEqual(again.json, first.json);
      } finally {
        await pg.drop();
      }
    });
  }
});
