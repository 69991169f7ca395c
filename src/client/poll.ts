/** Polling with a deadline that rides out the "try again later" statuses (http-api.md §0.5). */
import { WaitTimeoutError } from './errors.js';
import { isRetryableError } from './http.js';
import { realRetryTiming, retry, type RetryTiming } from '../base/retry.js';

/** How long to wait and how often to ask. */
export interface WaitOptions {
  /** Give up after this long; default 60 000 ms. */
  timeoutMs?: number;
  /** Pause between polls; default 500 ms (a longer `Retry-After` is honoured, within the deadline). */
  intervalMs?: number;
}

/** Time and sleep, injectable for tests. */
export type PollTiming = RetryTiming;

/** Real time. */
export const realTiming: PollTiming = realRetryTiming;

/** `read` answered, but not yet what `done` waits for. */
class NotYet extends Error {}

/**
 * Calls `read` until `done(value)` is true and returns that value. Errors with status 425/429/5xx are
 * tolerated; any other error (and anything `done` throws) ends the wait. Throws {@link WaitTimeoutError}
 * when the deadline passes.
 */
export async function pollUntil<T>(
  what: string,
  read: () => Promise<T>,
  done: (value: T) => boolean,
  opts: WaitOptions = {},
  timing: PollTiming = realTiming,
): Promise<T> {
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const intervalMs = opts.intervalMs ?? 500;
  let last: T | undefined;
  const again = (e: unknown): boolean => e instanceof NotYet || isRetryableError(e);
  try {
    return await retry(
      async () => {
        const v = await read();
        last = v;
        if (done(v)) return v;
        throw new NotYet();
      },
      {
        attempts: Infinity,
        deadlineMs: timing.now() + timeoutMs,
        retryable: again,
        backoff: { firstMs: intervalMs, factor: 1 },
        waitMs: (e, _n, waitMs) => (isRetryableError(e) && e.retryAfterSeconds !== undefined ? Math.max(waitMs, e.retryAfterSeconds * 1000) : waitMs),
        timing,
      },
    );
  } catch (e) {
    if (again(e)) throw new WaitTimeoutError(what, timeoutMs, last);
    throw e;
  }
}
