/**
 * The background purge (http-api.md §11.7): expired entries, incomplete chunk sets past `retry_until` and
 * expired nonce records are deleted on a timer. Reads never depend on it (they filter by time); it only
 * reclaims space. Tests call `sweep()` directly.
 */
import type { Logger } from 'pino';
import type { SweepResult } from './mailbox-store.js';

/** Default time between purges. */
export const DEFAULT_SWEEP_INTERVAL_MS = 30_000;

/** Runs `sweep` every `intervalMs`, one run at a time. */
export class CacheSweeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<SweepResult> | undefined;

  constructor(
    private readonly sweepOnce: () => Promise<SweepResult>,
    private readonly intervalMs: number = DEFAULT_SWEEP_INTERVAL_MS,
    private readonly logger?: Logger,
  ) {}

  /** Starts the timer (idempotent). The timer never keeps the process alive. */
  start(): void {
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => {
      this.sweep().catch((err: unknown) => this.logger?.error({ err }, 'cache sweep failed'));
    }, this.intervalMs);
    this.timer.unref();
  }

  /** One purge now; concurrent calls share the run in progress. */
  sweep(): Promise<SweepResult> {
    this.running ??= this.sweepOnce()
      .then((r) => {
        if (r.expiredEntries + r.purgedChunks + r.expiredNonces > 0) this.logger?.debug({ ...r }, 'cache sweep');
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
