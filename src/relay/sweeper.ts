/**
 * The Relay's background purge (http-api.md §10.4.3): staged sets past `retry_until`, remembered results older
 * than 24 h and expired nonces.
 */
import type { Logger } from 'pino';
import { DEFAULT_SWEEP_INTERVAL_MS, PeriodicSweeper } from '../base/periodic-sweeper.js';
import type { RelaySweepResult } from './staging-store.js';

export const DEFAULT_RELAY_SWEEP_INTERVAL_MS = DEFAULT_SWEEP_INTERVAL_MS;

export class RelaySweeper extends PeriodicSweeper<RelaySweepResult> {
  constructor(sweepOnce: () => Promise<RelaySweepResult>, intervalMs = DEFAULT_RELAY_SWEEP_INTERVAL_MS, logger?: Logger) {
    super('relay', sweepOnce, intervalMs, logger);
  }
}
