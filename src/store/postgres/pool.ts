/** PostgreSQL connections: one pg Pool per process, every query scoped to the configured schema. */
import pg from 'pg';

export interface PgOptions {
  url: string;
  /** Schema holding ddn's tables (created if absent); default `public`. */
  schema?: string;
  max?: number;
  /** Longest wait for a connection, and for a query's answer (pg's `connectionTimeoutMillis`, `query_timeout`); default: none. */
  timeoutMs?: number;
  /** Told about errors of idle pooled connections. */
  onError?: (err: Error) => void;
}

export type PgPool = pg.Pool;

/** Opens a pool whose connections use `schema` first on their search path. */
export async function openPgPool(opts: PgOptions): Promise<PgPool> {
  const schema = opts.schema ?? 'public';
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) throw new Error(`invalid PostgreSQL schema name: ${schema}`);
  const pool = new pg.Pool({
    connectionString: opts.url,
    max: opts.max ?? 10,
    options: `-c search_path="${schema}"`,
    ...(opts.timeoutMs === undefined ? {} : { connectionTimeoutMillis: opts.timeoutMs, query_timeout: opts.timeoutMs }),
  });
  // An idle client losing its connection (server restart) must not crash the process; the next query reconnects.
  pool.on('error', (err) => opts.onError?.(err));
  // Nor one that is checked out (pg emits 'error' on it, and the pool listens only while it is idle): the query in
  // flight rejects with the error, and the pool discards the client when it is released.
  pool.on('connect', (client) => client.on('error', () => undefined));
  // Processes that start together (a deployment's roles) would race on the catalog: one statement string is one
  // transaction, and the lock makes the others wait until the first one's schema is committed.
  await pool.query(`SELECT pg_advisory_xact_lock(hashtext('ddn-schema:${schema}')); CREATE SCHEMA IF NOT EXISTS "${schema}"`);
  return pool;
}

const MIGRATION_LOCK = "SELECT pg_advisory_lock(hashtext('ddn-migrate:' || current_schema()))";
const MIGRATION_UNLOCK = "SELECT pg_advisory_unlock(hashtext('ddn-migrate:' || current_schema()))";

export interface PgMigration {
  version: number;
  sql: string;
}

/**
 * Applies numbered migrations once per (schema, namespace), serialised across processes by an advisory lock on the
 * schema (its namespaces share `schema_migrations`, which the first of them creates).
 */
export async function migratePg(pool: PgPool, migrations: readonly PgMigration[], namespace: string): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query(MIGRATION_LOCK);
    try {
      await client.query('CREATE TABLE IF NOT EXISTS schema_migrations (namespace TEXT NOT NULL, version INTEGER NOT NULL, PRIMARY KEY (namespace, version))');
      const done = new Set(
        (await client.query<{ version: number }>('SELECT version FROM schema_migrations WHERE namespace = $1', [namespace])).rows.map((r) => r.version),
      );
      for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
        if (done.has(m.version)) continue;
        await client.query('BEGIN');
        try {
          await client.query(m.sql);
          await client.query('INSERT INTO schema_migrations (namespace, version) VALUES ($1, $2)', [namespace, m.version]);
          await client.query('COMMIT');
        } catch (e) {
          await client.query('ROLLBACK');
          throw e;
        }
      }
    } finally {
      await client.query(MIGRATION_UNLOCK);
    }
  } finally {
    client.release();
  }
}
