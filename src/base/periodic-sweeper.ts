/**
 * A background purge on a timer, one run at a time. Reads never depend on it (they filter by time); it only
 * reclaims space. Tests call `sweep()` directly with an injected clock.
 */
import type { Logger } from 'pino';

/** Default time between purges. */
export const DEFAULT_SWEEP_INTERVAL_MS = 30_000;

/** Runs `sweepOnce` every `intervalMs`; its result counts what was removed. */
export class PeriodicSweeper<R extends object> {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<R> | undefined;

  constructor(
    private readonly name: string,
    private readonly sweepOnce: () => Promise<R>,
    private readonly intervalMs: number = DEFAULT_SWEEP_INTERVAL_MS,
    private readonly logger?: Logger,
  ) {}

  /** Starts the timer (idempotent). The timer never keeps the process alive. */
  start(): void {
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => {
      this.sweep().catch((err: unknown) => this.logger?.error({ err }, `${this.name} sweep failed`));
    }, this.intervalMs);
    this.timer.unref();
  }

  /** One purge now; concurrent calls share the run in progress. */
  sweep(): Promise<R> {
    this.running ??= this.sweepOnce()
      .then((r) => {
        if (Object.values(r).some((n) => typeof n === 'number' && n > 0)) this.logger?.debug({ removed: r }, `${this.name} sweep`);
        return r;
      })
      .finally(() => {
        this.running = undefined;
      });
    return this.running;
  }

  /** Stops the timer and waits for a run in progress. */
  async stop(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    await this.running?.catch(() => undefined);
  }
}

/** Runs `step` (one bounded batch) until it reports no `more`, summing its numeric counts into `zero`. */
export async function sweepInBatches<R extends Record<keyof R, number>>(step: () => Promise<R & { more: boolean }>, zero: R): Promise<R> {
  const total = { ...zero };
  for (;;) {
    const r = await step();
    for (const k of Object.keys(zero) as (keyof R)[]) (total[k] as number) += r[k];
    if (!r.more) return total;
  }
}
