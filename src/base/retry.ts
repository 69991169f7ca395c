/**
 * The one retry loop of this code base: run an attempt and, after a failure the caller calls retryable, wait a
 * back-off (doubling, capped, optionally jittered) and run it again, up to a number of attempts, a deadline or an
 * abort. Which failures are worth another attempt is the caller's rule (`retryable`); what the last failure
 * becomes is the caller's too: when attempts run out the last error is rethrown as it was.
 *
 * Users: the PostgreSQL stores' transactions (src/store/postgres/retryable.ts says which SQLSTATEs retry), the
 * Relay's outbound Cache stores, the SDK's Relay client and pollers, the node identity's registration.
 */
import { setTimeout as delay } from 'node:timers/promises';

/** Time and sleep, injectable for tests (the SDK's `PollTiming` is this shape). */
export interface RetryTiming {
  now(): number;
  /** Waits `ms`; rejects when `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** Real time. */
export const realRetryTiming: RetryTiming = {
  now: () => Date.now(),
  sleep: (ms, signal) => delay(ms, undefined, signal === undefined ? undefined : { signal }),
};

/** Pauses between attempts: `firstMs` after the first failure, times `factor` after each further one. */
export interface Backoff {
  firstMs: number;
  /** Growth per failure (default 2). */
  factor?: number;
  /** Longest pause (default none). */
  maxMs?: number;
  /** "Full jitter": a uniformly random pause between 0 and the computed one (default false). */
  jitter?: boolean;
}

/** The pause after the `failures`-th failure (1 for the first) under `b`; `random` returns [0, 1). */
export function backoffDelay(b: Backoff, failures: number, random: () => number = Math.random): number {
  const ms = Math.min(b.maxMs ?? Infinity, b.firstMs * (b.factor ?? 2) ** Math.max(0, failures - 1));
  return b.jitter === true ? random() * ms : ms;
}

/** A failed attempt about to be followed by another. */
export interface RetryNotice {
  /** The attempt that failed (1 for the first). */
  attempt: number;
  error: unknown;
  /** The pause before the next attempt. */
  waitMs: number;
}

/** Options of {@link retry}. */
export interface RetryOptions {
  /** Attempts in all, the first included (at least 1; `Infinity` with a `deadlineMs`). */
  attempts: number;
  /** Whether `err` is worth another attempt; any other error is thrown at once. */
  retryable(err: unknown): boolean;
  /** Pauses between attempts (default none: the next attempt follows at once). */
  backoff?: Backoff;
  /** The pause after `err` instead of the back-off's `backoffMs` (e.g. a server's `Retry-After`). */
  waitMs?(err: unknown, attempt: number, backoffMs: number): number;
  /** No attempt starts at or after this instant (`timing.now()`); a pause is shortened to end there. */
  deadlineMs?: number;
  /** Told before each pause. */
  onRetry?(notice: RetryNotice): void;
  /** Aborting stops the loop: before the next attempt, or during a pause (which then rejects). */
  signal?: AbortSignal;
  timing?: RetryTiming;
  /** The jitter's random source (tests pass a fixed one). */
  random?: () => number;
}

/**
 * Runs `attempt(n)` (n = 1, 2, …) until it resolves, a failure is not `retryable`, the attempts or the deadline
 * run out (the last failure is then rethrown), or `signal` aborts.
 */
export async function retry<T>(attempt: (n: number) => Promise<T>, o: RetryOptions): Promise<T> {
  const timing = o.timing ?? realRetryTiming;
  for (let n = 1; ; n++) {
    o.signal?.throwIfAborted();
    try {
      return await attempt(n);
    } catch (err) {
      if (!o.retryable(err) || n >= o.attempts) throw err;
      const backoffMs = o.backoff === undefined ? 0 : backoffDelay(o.backoff, n, o.random);
      let waitMs = o.waitMs === undefined ? backoffMs : o.waitMs(err, n, backoffMs);
      if (o.deadlineMs !== undefined) {
        const left = o.deadlineMs - timing.now();
        if (left <= 0) throw err;
        waitMs = Math.min(waitMs, left);
      }
      o.onRetry?.({ attempt: n, error: err, waitMs });
      // without a back-off or a `waitMs` rule the next attempt follows at once
      if (o.backoff !== undefined || o.waitMs !== undefined) await timing.sleep(waitMs, o.signal);
    }
  }
}
