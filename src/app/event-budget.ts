/**
 * The per-owner event budget (`--event-budget-per-owner`, src/events/limits.ts) of a node: counted in memory on
 * SQLite (one process), and with `--db postgres://…` in the rate limits' PostgreSQL table, shared by every process of
 * the deployment (rows `event-owner:<owner DID>`), so that an owner gets its budget once per minute in all and not
 * once per process. Like the request rate limits (rate-limits.ts): an owner that used up its budget is also blocked
 * in this process's memory for the rest of its minute, and when the database does not answer within a second the
 * run is counted in memory instead.
 */
import type { Logger } from 'pino';
import { RateLimiterRes } from 'rate-limiter-flexible';
import type { Clock } from '../base/clock.js';
import { MemoryOwnerBudget, type OwnerBudget } from '../events/limits.js';
import { openRateLimitPool, pgLimiter } from './rate-limits.js';

/** The rows' key prefix in `rate_limits`. */
export const EVENT_BUDGET_KEY_PREFIX = 'event-owner';
/** Owners blocked in memory (and counted in memory while the database fails) at most. */
const MAX_OWNERS_IN_MEMORY = 100_000;

export interface NodeOwnerBudget {
  readonly budget: OwnerBudget;
  close(): Promise<void>;
}

/** The budget of `perMinute` runs per owner: in memory without a database, else shared through it. */
export async function openOwnerBudget(perMinute: number, db: { url: string; schema: string } | null, clock: Clock, logger?: Logger): Promise<NodeOwnerBudget> {
  if (db === null) return { budget: new MemoryOwnerBudget(clock, perMinute), close: async () => {} };
  const pool = await openRateLimitPool(db, 2, 'event budget', logger);
  const limiter = pgLimiter(pool, db.schema, EVENT_BUDGET_KEY_PREFIX, { points: perMinute, seconds: 60 }, MAX_OWNERS_IN_MEMORY, true, logger);
  const budget: OwnerBudget = {
    take: (owner) =>
      limiter.consume(owner).then(
        () => true,
        (err: unknown) => {
          if (err instanceof RateLimiterRes) return false;
          throw err;
        },
      ),
  };
  return { budget, close: () => pool.end() };
}
