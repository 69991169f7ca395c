/**
 * PostgreSQL for tests: suites run when DDN_TEST_PG_URL is set (.ci/run sets it). Each test gets its own schema,
 * dropped afterwards.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openPgPool, type PgPool } from '../../src/store/postgres/pool.js';

export const PG_URL = process.env.DDN_TEST_PG_URL;

/** A fresh schema and a pool on it; `drop()` closes the pool and drops the schema. */
export async function freshPgSchema(length = 14): Promise<{ pool: PgPool; schema: string; url: string; drop(): Promise<void> }> {
  if (!PG_URL) throw new Error('DDN_TEST_PG_URL is not set');
  // `length` characters (at least 14): t_, 12 random hex digits, then padding
  const schema = `t_${randomBytes(6).toString('hex')}`.padEnd(length, '_');
  const pool = await openPgPool({ url: PG_URL, schema });
  return {
    pool,
    schema,
    url: PG_URL,
    async drop() {
      await pool.end();
      const admin = new pg.Client({ connectionString: PG_URL });
      await admin.connect();
      await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await admin.end();
    },
  };
}

/**
 * The pid of the process producing the blocks of `pg`'s schema, read off its leader session's application name
 * (`ddn-ledger-leader <schema> <pid>@<host>`); undefined while no single process leads.
 */
export async function ledgerLeaderPid(pg: { pool: PgPool; schema: string }): Promise<number | undefined> {
  const r = await pg.pool.query<{ application_name: string }>('SELECT application_name FROM pg_stat_activity WHERE application_name LIKE $1', [
    `ddn-ledger-leader ${pg.schema} %`,
  ]);
  return r.rows.length === 1 ? Number(r.rows[0]!.application_name.split(' ')[2]!.split('@')[0]) : undefined;
}
