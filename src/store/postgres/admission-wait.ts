/**
 * An admission batch's wait for company (`--ledger-admission-wait-ms`, PgLedgerSync): on a PostgreSQL ledger every
 * batch is one statement and one commit, whose cost hardly depends on how many admissions it carries; at a steady
 * low rate each admission is otherwise a batch of its own. Waiting a few milliseconds lets the ones behind it share
 * the statement and the commit's WAL flush.
 *
 * The wait adapts to the recent arrivals: a batch waits only while they say company is due — the recent gap between
 * admissions (a moving average) is shorter than the cap — and only until two such gaps have passed since the last
 * admission joined it, never beyond the cap from its first. So a lone write after a quiet period goes at once, and
 * a full batch leaves at once. When the gap is shorter than a batch's recent time in the database, company comes
 * while the previous batch is there and batches fill without a wait: none is added (with many clients that send
 * their next write when the last is answered, a wait would gather them all into one batch and take the database's
 * time off the pipeline of two). Waits that found no
 * company (a client that sends its next write only after the last was answered looks like a steady rate) are backed
 * off: after k of them in a row the next 2^k − 1 batches do not wait (at most {@link MAX_SKIPPED}).
 */

/** What this process knows of its recent admissions' arrivals. */
export interface Arrivals {
  /** When the last admission arrived (ms, the caller's clock). */
  lastAtMs: number | undefined;
  /** The recent gap between arrivals, a moving average (ms); undefined before the second arrival. */
  gapMs: number | undefined;
  /** Batches in a row that waited and left with no company. */
  lonelyWaits: number;
  /** Batches still to leave without waiting (the back-off of {@link lonelyWaits}). */
  skip: number;
  /** A batch's recent time from leaving to its answers (ms), a moving average; undefined before the first. */
  batchMs?: number;
}

/** Nothing arrived yet. */
export const NO_ARRIVALS: Arrivals = { lastAtMs: undefined, gapMs: undefined, lonelyWaits: 0, skip: 0 };

/** Weight of the newest gap in the moving average. */
const GAP_WEIGHT = 0.3;
/** Batches that leave without waiting after lonely waits, at most. */
export const MAX_SKIPPED = 63;
/** The wait after the last admission joined a batch, in recent gaps. */
const GAPS_AFTER_LAST = 2;

/**
 * The arrivals after one more at `nowMs`. A gap of at least `capMs` (a quiet period) restarts the average at
 * that gap, counted at most 4 × `capMs`: the admission after it goes at once, and a few arrivals at a steady rate
 * bring the average back below the cap.
 */
export function arrived(a: Arrivals, capMs: number, nowMs: number): Arrivals {
  if (a.lastAtMs === undefined) return { ...a, lastAtMs: nowMs };
  const gap = Math.min(Math.max(0, nowMs - a.lastAtMs), 4 * capMs);
  const gapMs = a.gapMs === undefined || gap >= capMs ? gap : a.gapMs + GAP_WEIGHT * (gap - a.gapMs);
  return { ...a, lastAtMs: nowMs, gapMs };
}

/** The arrivals after a batch of `size` admissions left, having waited (`waited`) or not. */
export function batchLeft(a: Arrivals, size: number, waited: boolean): Arrivals {
  if (!waited) return a.skip > 0 ? { ...a, skip: a.skip - 1 } : a;
  if (size > 1) return { ...a, lonelyWaits: 0, skip: 0 };
  const lonelyWaits = a.lonelyWaits + 1;
  return { ...a, lonelyWaits, skip: Math.min(MAX_SKIPPED, 2 ** lonelyWaits - 1) };
}

/** The arrivals after a batch took `ms` from leaving to its answers. */
export function batchTook(a: Arrivals, ms: number): Arrivals {
  return { ...a, batchMs: a.batchMs === undefined ? ms : a.batchMs + GAP_WEIGHT * (ms - a.batchMs) };
}

/** A batch being formed: its first admission's arrival, its last's, and how many it holds. */
export interface FormingBatch {
  firstAtMs: number;
  lastAtMs: number;
  size: number;
}

/**
 * How long `batch` still waits at `nowMs` before it leaves, with `capMs` the longest wait (0: never wait), given
 * the recent `arrivals`: 0 when no batch is forming, it is full, company is not due within the cap, it comes
 * faster than a batch's time in the database (batches fill without a wait), or the back-off says this batch goes
 * at once.
 */
export function batchWaitMs(capMs: number, arrivals: Arrivals, batch: FormingBatch | undefined, maxBatch: number, nowMs: number): number {
  if (capMs <= 0 || batch === undefined || batch.size >= maxBatch || arrivals.skip > 0) return 0;
  const gap = arrivals.gapMs;
  if (gap === undefined || gap >= capMs || gap < (arrivals.batchMs ?? 0)) return 0;
  const until = Math.min(batch.firstAtMs + capMs, batch.lastAtMs + GAPS_AFTER_LAST * gap);
  return Math.max(0, until - nowMs);
}
