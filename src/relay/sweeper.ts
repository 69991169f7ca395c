/**
 * The Relay's background purge (http-api.md §10.4.3): staged sets past `retry_until`, remembered results older
 * than 24 h and expired nonces are deleted on a timer. Tests call `sweep()` directly with an injected clock.
 */
import type { Logger } from 'pino';
import type { RelaySweepResult } from './staging-store.js';

/** Default time between purges. */
export const DEFAULT_RELAY_SWEEP_INTERVAL_MS = 30_000;

/** Runs `sweepOnce` every `intervalMs`, one run at a time. */
export class RelaySweeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<RelaySweepResult> | undefined;

  constructor(
    private readonly sweepOnce: () => Promise<RelaySweepResult>,
    private readonly intervalMs: number = DEFAULT_RELAY_SWEEP_INTERVAL_MS,
    private readonly logger?: Logger,
  ) {}

  /** Starts the timer (idempotent). The timer never keeps the process alive. */
  start(): void {
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => {
      this.sweep().catch((err: unknown) => this.logger?.error({ err }, 'relay sweep failed'));
    }, this.intervalMs);
    this.timer.unref();
  }

  /** One purge now; concurrent calls share the run in progress. */
  sweep(): Promise<RelaySweepResult> {
    this.running ??= this.sweepOnce()
      .then((r) => {
        if (r.purgedSets + r.expiredResults + r.expiredNonces > 0) this.logger?.debug({ ...r }, 'relay sweep');
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
