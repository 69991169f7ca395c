/**
 * An admission batch's wait for company (`--ledger-admission-wait-ms`, PgLedgerSync): on a PostgreSQL ledger every
 * batch is one statement and one commit, whose cost hardly depends on how many admissions it carries; at a steady
 * low rate each admission is otherwise a batch of its own. Waiting a few milliseconds from the first admission's
 * arrival lets the ones behind it share the statement and the commit's WAL flush. A full batch leaves at once.
 */

/**
 * How long a batch whose first admission arrived at `firstAtMs` still waits before it leaves, given `waitMs`:
 * 0 when no wait is set, nothing waits, or the batch is full.
 */
export function batchWaitMs(waitMs: number, firstAtMs: number | undefined, waiting: number, maxBatch: number, nowMs: number): number {
  if (waitMs <= 0 || firstAtMs === undefined || waiting >= maxBatch) return 0;
  return Math.max(0, firstAtMs + waitMs - nowMs);
}
