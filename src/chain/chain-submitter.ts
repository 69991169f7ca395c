/**
 * Submits the changes this Directory accepted to the chain (`--ledger substrate`): batches of the transactions
 * waiting for the chain's order (Ledger.awaitingOrder), one remark in flight at a time from the Directory's own
 * account, re-submitted until the chain orders them. A batch counts as done once the follower has applied the
 * block that included it: what it ordered then no longer waits, and what still waits goes into the next batch.
 * A batch the chain may have included twice (a time-out, a restart) is harmless: the ledger skips a transaction
 * already in a block.
 */
import type { Logger } from 'pino';
import { anchorOverhead, anchoredTxSize, encodeAnchorBatch, ANCHOR_LIMITS, type AnchoredTx } from '../ledger/anchor-batch.js';
import type { Ledger } from '../ledger/chain.js';
import type { PoolEntry } from '../ledger/types.js';
import { ChainError, type ChainClient, type ChainErrorKind } from './chain-port.js';
import type { ChainFollower } from './chain-follower.js';

export interface SubmitterSettings {
  /** The most bytes of one remark. */
  maxBatchBytes: number;
  /** How long one submission may take before its batch is submitted again. */
  submitTimeoutMs: number;
  /** How often an idle submitter looks for new admissions. */
  pollMs: number;
}

export const DEFAULT_SUBMITTER_SETTINGS: Readonly<SubmitterSettings> = Object.freeze({
  maxBatchBytes: 128 * 1024,
  submitTimeoutMs: 120_000,
  pollMs: 50,
});

/** What the submitter did since start (metrics). */
export interface SubmitterStats {
  batchesSubmitted: number;
  batchesIncluded: number;
  transactionsSubmitted: number;
  /** Fees paid, in the token's smallest unit. */
  feesPaid: bigint;
  /** Refusals by kind. */
  failures: Record<ChainErrorKind | 'timeout' | 'other', number>;
  /** The last refusal, else null. */
  lastFailure: { kind: string; message: string } | null;
}

const BACKOFF_MIN_MS = 1000;
const BACKOFF_MAX_MS = 60_000;

/** The first entries of `entries` whose batch fits `maxBytes` (at least one, when one fits at all). */
export function packBatch(entries: readonly PoolEntry[], networkId: string, maxBytes: number): AnchoredTx[] {
  const out: AnchoredTx[] = [];
  let size = anchorOverhead(networkId);
  for (const e of entries) {
    if (out.length >= ANCHOR_LIMITS.maxItems) break;
    const item: AnchoredTx = { submittedAtMs: e.tx.submittedAtMs, meta: e.tx.meta, bytes: e.bytes };
    const n = anchoredTxSize(item);
    if (size + n > maxBytes) break;
    size += n;
    out.push(item);
  }
  return out;
}

export class ChainSubmitter {
  private inFlight = false;
  private stopped = false;
  private timer: NodeJS.Timeout | null = null;
  /** The time-out of the submission in flight (cleared once it settles, and by {@link stop}). */
  private submitTimer: NodeJS.Timeout | undefined;
  private backoffMs = BACKOFF_MIN_MS;
  readonly stats: SubmitterStats = {
    batchesSubmitted: 0,
    batchesIncluded: 0,
    transactionsSubmitted: 0,
    feesPaid: 0n,
    failures: { unavailable: 0, insufficient_funds: 0, too_large: 0, rejected: 0, timeout: 0, other: 0 },
    lastFailure: null,
  };
  private maxBatchBytes: number;
  private readonly settings: SubmitterSettings;

  constructor(
    private readonly client: ChainClient,
    private readonly ledger: Ledger,
    private readonly follower: ChainFollower,
    private readonly networkId: string,
    private readonly logger: Logger,
    settings: Partial<SubmitterSettings> = {},
  ) {
    this.settings = { ...DEFAULT_SUBMITTER_SETTINGS, ...settings };
    this.maxBatchBytes = Math.min(this.settings.maxBatchBytes, client.info().maxRemarkBytes);
  }

  /**
   * Starts submitting once the follower has applied the chain's finalized head as it is now (after a restart,
   * what the last run submitted may be there already).
   */
  start(finalizedAtStart: number): void {
    void this.follower.reached(finalizedAtStart).then(() => this.schedule(0));
  }

  private schedule(delayMs: number): void {
    if (this.stopped || this.timer !== null) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.tick();
    }, delayMs);
  }

  private async tick(): Promise<void> {
    if (this.stopped || this.inFlight) return;
    const waiting = this.ledger.awaitingOrder();
    if (waiting.length === 0 || !this.client.connected) return this.schedule(this.settings.pollMs);
    const items = packBatch(waiting, this.networkId, this.maxBatchBytes);
    if (items.length === 0) {
      this.logger.error({ maxBatchBytes: this.maxBatchBytes }, 'a transaction does not fit one remark; raise the batch size');
      return this.schedule(BACKOFF_MAX_MS);
    }
    this.inFlight = true;
    let next = this.settings.pollMs;
    try {
      next = await this.submit(items);
    } finally {
      this.inFlight = false;
      this.schedule(next);
    }
  }

  /** Submits one batch; returns the delay before the next one. */
  private async submit(items: AnchoredTx[]): Promise<number> {
    const data = encodeAnchorBatch({ networkId: this.networkId, items });
    this.stats.batchesSubmitted += 1;
    this.stats.transactionsSubmitted += items.length;
    try {
      const included = await Promise.race([
        this.client.submitRemark(data),
        new Promise<never>((_, reject) => {
          this.submitTimer = setTimeout(() => reject(new SubmitTimeout()), this.settings.submitTimeoutMs);
        }),
      ]).finally(() => clearTimeout(this.submitTimer));
      this.stats.batchesIncluded += 1;
      this.stats.feesPaid += included.fee;
      this.logger.debug({ chainBlock: included.blockNumber, txs: items.length, bytes: data.length }, 'batch included');
      // done when the follower has applied it: what it ordered no longer waits
      await this.follower.reached(included.blockNumber);
      this.backoffMs = BACKOFF_MIN_MS;
      return 0;
    } catch (err) {
      return this.refused(err, items.length, data.length);
    }
  }

  private refused(err: unknown, txs: number, bytes: number): number {
    const kind = err instanceof ChainError ? err.kind : err instanceof SubmitTimeout ? 'timeout' : 'other';
    this.stats.failures[kind] += 1;
    this.stats.lastFailure = { kind, message: err instanceof Error ? err.message : String(err) };
    const delay = this.backoffMs;
    this.backoffMs = Math.min(BACKOFF_MAX_MS, this.backoffMs * 2);
    if (kind === 'too_large' && this.maxBatchBytes > 1024) {
      this.maxBatchBytes = Math.max(1024, Math.floor(this.maxBatchBytes / 2));
      this.logger.warn({ maxBatchBytes: this.maxBatchBytes, bytes }, 'the chain refused a batch as too large; smaller batches from now on');
      return 0;
    }
    if (kind === 'insufficient_funds') {
      this.logger.error({ account: this.client.info().account, txs }, 'the chain account cannot pay the fee; fund it — the batch waits and is submitted again');
    } else this.logger.warn({ err, kind, txs, retryMs: delay }, 'batch not included; submitting it again');
    return delay;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    // a submission still in flight is left to the chain: its time-out alone would keep the process alive
    clearTimeout(this.submitTimer);
  }
}

class SubmitTimeout extends Error {
  constructor() {
    super('the submission did not finalize in time');
    this.name = 'SubmitTimeout';
  }
}
