/**
 * The Cache's background purge (http-api.md §11.7): expired entries, incomplete chunk sets past `retry_until`
 * and expired nonce records.
 */
import type { Logger } from 'pino';
import { DEFAULT_SWEEP_INTERVAL_MS, PeriodicSweeper } from '../base/periodic-sweeper.js';
import type { SweepResult } from './mailbox-store.js';

export { DEFAULT_SWEEP_INTERVAL_MS };

export class CacheSweeper extends PeriodicSweeper<SweepResult> {
  constructor(sweepOnce: () => Promise<SweepResult>, intervalMs = DEFAULT_SWEEP_INTERVAL_MS, logger?: Logger) {
    super('cache', sweepOnce, intervalMs, logger);
  }
}
