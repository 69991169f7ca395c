/**
 * The PostgreSQL pool's start: processes that start at the same moment on a schema nobody created yet (a
 * deployment's Directory, Relay and Cache, or two Cache processes) each create the schema and migrate their own
 * namespace into it. Registers no tests when DDN_TEST_PG_URL is unset.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { migratePg, openPgPool, type PgPool } from '../../src/store/postgres/pool.js';
import { PG_URL } from '../support/pg.js';

async function dropSchema(url: string, schema: string): Promise<void> {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await admin.end();
}

if (PG_URL) {
  const url = PG_URL;
  describe('PostgreSQL pool start', () => {
    it('processes starting together on a new schema all open it and migrate their namespaces', async () => {
      // Several rounds: the race this guards (two CREATE SCHEMA or two CREATE TABLE schema_migrations at once) is
      // one of timing, and a single round of eight starts lost it about half the time before the start serialised.
      for (let round = 0; round < 6; round++) {
        const schema = `t_${randomBytes(6).toString('hex')}`;
        const pools: PgPool[] = [];
        try {
          const started = await Promise.allSettled(
            Array.from({ length: 8 }, async (_, i) => {
              const pool = await openPgPool({ url, schema, max: 2 });
              pools.push(pool);
              await migratePg(pool, [{ version: 1, sql: `CREATE TABLE t${i} (x INTEGER)` }], `ns${i}`);
            }),
          );
          const failed = started.filter((s): s is PromiseRejectedResult => s.status === 'rejected').map((s) => String(s.reason));
          assert.deepEqual(failed, [], `round ${round}`);
          const probe = pools[0]!;
          const rows = (await probe.query<{ namespace: string }>('SELECT namespace FROM schema_migrations ORDER BY namespace')).rows;
          assert.deepEqual(
            rows.map((r) => r.namespace),
            Array.from({ length: 8 }, (_, i) => `ns${i}`),
          );
        } finally {
          await Promise.all(pools.map((p) => p.end()));
          await dropSchema(url, schema);
        }
      }
    });
  });
}
