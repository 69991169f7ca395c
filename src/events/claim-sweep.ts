/**
 * Forgetting the claims of event runs whose events cannot happen again (their envelopes expired: every Relay and
 * Cache refuses them), so that `events.sqlite` holds the claims of live envelopes only, not one row per rule run
 * since the node began. A claim made before claims had an expiry is kept.
 */
import type { Logger } from 'pino';
import type { Clock } from '../base/clock.js';
import type { EventRunStore } from '../ports/event-run-store.js';

/** How often a node forgets expired claims. */
export const CLAIM_SWEEP_EVERY_MS = 600_000;
/** Claims forgotten per statement (each a transaction of its own, so writes in between do not wait long). */
export const CLAIM_SWEEP_BATCH = 10_000;

/** A running sweep: `stop` ends it after the statement in progress. */
export interface ClaimSweep {
  /** Forgets every expired claim now (tests, and each tick); resolves with how many. */
  sweep(): Promise<number>;
  stop(): Promise<void>;
}

export function sweepClaims(runs: EventRunStore, clock: Clock, o: { everyMs?: number; batch?: number; logger?: Logger } = {}): ClaimSweep {
  const batch = o.batch ?? CLAIM_SWEEP_BATCH;
  let stopped = false;
  let running: Promise<number> | undefined;
  const forgetAll = async (): Promise<number> => {
    let total = 0;
    for (;;) {
      const n = await runs.forgetExpired(clock.nowMs(), batch);
      total += n;
      if (n < batch || stopped) break;
    }
    if (total > 0) o.logger?.info({ forgotten: total }, 'event run claims of expired envelopes forgotten');
    return total;
  };
  const sweep = (): Promise<number> => {
    running ??= forgetAll().finally(() => (running = undefined));
    return running;
  };
  const timer = setInterval(() => {
    sweep().catch((err: unknown) => o.logger?.warn({ err }, 'forgetting expired event run claims failed'));
  }, o.everyMs ?? CLAIM_SWEEP_EVERY_MS);
  timer.unref();
  return {
    sweep,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running?.catch(() => undefined);
    },
  };
}
