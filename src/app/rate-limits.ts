/**
 * The node's request rate limits (src/http/rate-limit.ts), built from its configuration. On SQLite (one
 * process) every budget counts in memory. With `--db postgres://…` every budget but `read` counts in one
 * PostgreSQL table shared by all processes (rate-limiter-flexible's RateLimiterPostgres, on a small pool of its
 * own), so a limit holds across them; `read` stays per process, as a database write per read would cost more than
 * the read. A key that used up its budget is also blocked in this process's memory for the rest of its window
 * (at most `maxKeys` such keys, the least recently asked forgotten first), so a flood costs the database nothing
 * more; and when the database does not answer within a second, the request is counted in memory instead (bounded
 * as on SQLite) rather than refused.
 */
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import { RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import { BoundedMemoryLimiter, RateLimits, type Limiter, type RateBudget, type RateLimitSettings } from '../http/rate-limit.js';
import { migratePg, openPgPool, type PgMigration, type PgPool } from '../store/postgres/pool.js';

/** The table RateLimiterPostgres expects (its own layout), created by our migrations instead of by it. */
export const RATE_LIMIT_PG_MIGRATIONS: readonly PgMigration[] = [
  {
    version: 1,
    sql: 'CREATE TABLE IF NOT EXISTS rate_limits (key VARCHAR(255) PRIMARY KEY, points INTEGER NOT NULL DEFAULT 0, expire BIGINT)',
  },
];
export const RATE_LIMIT_PG_NAMESPACE = 'rate-limit';

/** Longest wait for the database before a request is counted in memory instead. */
const PG_TIMEOUT_MS = 1000;

/** The limits and what closing them takes. */
export interface NodeRateLimits {
  readonly limits: RateLimits;
  close(): Promise<void>;
}

/**
 * A budget counted in PostgreSQL under `name` (the rows' key prefix), in this process's memory when the database
 * fails; `first` deletes the expired rows of every budget.
 */
export function pgLimiter(pool: PgPool, schema: string, name: string, budget: RateBudget, maxKeys: number, first: boolean, logger?: Logger): Limiter {
  const shared = new RateLimiterPostgres({
    storeClient: pool,
    storeType: 'pool',
    tableName: 'rate_limits',
    schemaName: schema,
    tableCreated: true,
    // one limiter deletes the expired rows of every budget (every 5 minutes, rows expired for an hour)
    clearExpiredByTimeout: first,
    keyPrefix: name,
    points: budget.points,
    duration: budget.seconds,
  });
  // (not the library's inMemoryBlockOnConsumed: its map is unbounded and scanned whole on every add past 999 keys)
  const blockedUntil = new LRUCache<string, number>({ max: maxKeys });
  const block = (key: string, res: RateLimiterRes) => {
    if (res.consumedPoints >= budget.points && res.msBeforeNext > 0) blockedUntil.set(key, Date.now() + res.msBeforeNext);
  };
  const fallback = new BoundedMemoryLimiter(budget, maxKeys);
  let failing = false;
  return {
    consume: (key) => {
      const until = blockedUntil.get(key);
      if (until !== undefined) {
        const ms = until - Date.now();
        if (ms > 0) return Promise.reject(new RateLimiterRes(0, ms, budget.points + 1, false));
        blockedUntil.delete(key);
      }
      return shared.consume(key).then(
        (res) => {
          failing = false;
          block(key, res);
          return res;
        },
        (err: unknown) => {
          if (err instanceof RateLimiterRes) {
            block(key, err);
            throw err;
          }
          if (!failing) logger?.warn({ err, budget: name }, 'rate limits: the database failed; counting in memory');
          failing = true;
          return fallback.consume(key);
        },
      );
    },
    get: (key) =>
      shared.get(key).then(
        (res) => res,
        () => fallback.get(key),
      ),
  };
}

/**
 * A pool of `max` connections for budgets counted in `rate_limits` (migrated), which waits a second at most for the
 * database; `what` names it in its log lines.
 */
export async function openRateLimitPool(db: { url: string; schema: string }, max: number, what: string, logger?: Logger): Promise<PgPool> {
  const pool = await openPgPool({
    url: db.url,
    schema: db.schema,
    max,
    timeoutMs: PG_TIMEOUT_MS,
    onError: (err) => logger?.warn({ err }, `${what}: idle database connection failed`),
  });
  try {
    await migratePg(pool, RATE_LIMIT_PG_MIGRATIONS, RATE_LIMIT_PG_NAMESPACE);
  } catch (err) {
    await pool.end();
    throw err;
  }
  return pool;
}

/** The node's limits per its configuration; undefined when they are off. */
export async function openRateLimits(
  settings: RateLimitSettings | null,
  db: { url: string; schema: string } | null,
  logger?: Logger,
): Promise<NodeRateLimits | undefined> {
  if (settings === null) return undefined;
  if (db === null) return { limits: new RateLimits(settings), close: async () => {} };
  const pool = await openRateLimitPool(db, 4, 'rate limits', logger);
  let first = true;
  const limits = new RateLimits(settings, (name, budget) => {
    if (name === 'read') return undefined;
    const limiter = pgLimiter(pool, db.schema, name, budget, settings.maxKeys, first, logger);
    first = false;
    return limiter;
  });
  return { limits, close: () => pool.end() };
}
