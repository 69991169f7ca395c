/**
 * How a CLI command waits between attempts: one stderr line saying why it retries (always, so logs show it), a
 * countdown redrawn each second on a terminal, and an end to the wait as soon as `signal` aborts (Ctrl-C).
 */
import type { PollTiming } from '../client/poll.js';
import type { RelayRetry } from '../client/relay-client.js';
import type { CliIo } from './io.js';

/** Line shown before a wait. */
export function retryLine(r: RelayRetry): string {
  return `${r.error.message}; attempt ${r.attempt} of ${r.maxAttempts} failed, retrying in ${Math.ceil(r.waitMs / 1000)} s`;
}

/** A {@link PollTiming} whose sleep counts down on a terminal and rejects with `signal.reason` when it aborts. */
export function countdownTiming(io: CliIo, signal: AbortSignal): PollTiming {
  return {
    now: () => Date.now(),
    sleep: (ms) =>
      new Promise<void>((resolve, reject) => {
        const end = Date.now() + ms;
        const draw = (): void => {
          if (io.stderrIsTTY === true) io.stderr(`\rretrying in ${Math.max(0, Math.ceil((end - Date.now()) / 1000))} s… `);
        };
        const done = (): void => {
          clearInterval(tick);
          clearTimeout(timer);
          signal.removeEventListener('abort', onAbort);
          if (io.stderrIsTTY === true) io.stderr('\r\x1b[K');
        };
        const onAbort = (): void => {
          done();
          reject(signal.reason);
        };
        const tick = setInterval(draw, 1000);
        const timer = setTimeout(() => {
          done();
          resolve();
        }, ms);
        if (signal.aborted) return onAbort();
        signal.addEventListener('abort', onAbort, { once: true });
        draw();
      }),
  };
}
