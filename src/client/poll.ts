/** Polling with a deadline that rides out the "try again later" statuses (http-api.md §0.5). */
import { WaitTimeoutError } from './errors.js';
import { isRetryableError } from './http.js';

/** How long to wait and how often to ask. */
export interface WaitOptions {
  /** Give up after this long; default 60 000 ms. */
  timeoutMs?: number;
  /** Pause between polls; default 500 ms (a longer `Retry-After` is honoured, within the deadline). */
  intervalMs?: number;
}

/** Time and sleep, injectable for tests. */
export interface PollTiming {
  now(): number;
  sleep(ms: number): Promise<void>;
}

/** Real time. */
export const realTiming: PollTiming = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

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
  const deadline = timing.now() + timeoutMs;
  let last: T | undefined;
  for (;;) {
    let waitMs = intervalMs;
    try {
      const v = await read();
      last = v;
      if (done(v)) return v;
    } catch (e) {
      if (!isRetryableError(e)) throw e;
      if (e.retryAfterSeconds !== undefined) waitMs = Math.max(waitMs, e.retryAfterSeconds * 1000);
    }
    const left = deadline - timing.now();
    if (left <= 0) throw new WaitTimeoutError(what, timeoutMs, last);
    await timing.sleep(Math.min(waitMs, left));
  }
}
