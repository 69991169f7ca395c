/**
 * Follows a Substrate chain's finalized blocks (`--ledger substrate`): each block's ddn remarks of this network,
 * in chain order, become ddn blocks (Ledger.applyOrdered) at the chain block's time. Only finalized blocks are
 * read, one after another from the network's start block, each checked to extend the last one applied; where it
 * stands is stored with the ledger, so a restart resumes there.
 */
import type { Logger } from 'pino';
import { parseHex, to0x } from '../base/bytes.js';
import { ScaleReader, ScaleWriter } from '../codec/scale.js';
import { decodeAnchorBatch, type AnchoredTx } from '../ledger/anchor-batch.js';
import type { Ledger } from '../ledger/chain.js';
import type { ChainBlock, ChainClient } from './chain-port.js';
import { NetworkDefinitionError, type ChainPoint, type NetworkDefinition } from './network-definition.js';

/** Where a follower stands: the last chain block applied (its number and hash). */
export function encodeCursor(p: ChainPoint): Uint8Array {
  return new ScaleWriter()
    .u32(p.number)
    .raw(parseHex(p.hash.slice(2))!)
    .finish();
}

export function decodeCursor(bytes: Uint8Array): ChainPoint {
  const r = new ScaleReader(bytes);
  const number = r.u32();
  const hash = to0x(r.raw(32));
  r.end();
  return { number, hash };
}

/** The ddn extrinsics a chain block carries for `networkId`, in chain order (remarks that are not a valid batch skipped). */
export function orderedItems(block: ChainBlock, networkId: string): AnchoredTx[] {
  return block.remarks.flatMap((r) => decodeAnchorBatch(r.data, networkId)?.items ?? []);
}

export interface FollowerStatus {
  /** The newest finalized chain block number seen (-1: none yet). */
  readonly chainFinalized: number;
  /** The last chain block applied (a null hash: the network's unchecked start block, see defaultNetwork). */
  readonly applied: { readonly number: number; readonly hash: string | null };
  /** True while every finalized block seen has been applied. */
  readonly caughtUp: boolean;
  /** True once the follower has been caught up (since start). */
  readonly caughtUpOnce: boolean;
  /** Why following stopped for good (the chain does not extend what was applied), else null. */
  readonly halted: string | null;
  /** The last transient error (reading a block failed), else null. */
  readonly lastError: string | null;
}

const RETRY_MIN_MS = 500;
const RETRY_MAX_MS = 30_000;

export class ChainFollower {
  /** The last chain block applied; a null hash: the network's unchecked start block (see defaultNetwork). */
  private cursor: { number: number; hash: string | null };
  private chainFinalized = -1;
  private running = false;
  private caughtUpOnce = false;
  private stopped = false;
  private halted: string | null = null;
  private lastError: string | null = null;
  private retryMs = RETRY_MIN_MS;
  private retryTimer: NodeJS.Timeout | null = null;
  private unsubscribe: (() => void) | null = null;
  private waiters: { number: number; resolve: () => void }[] = [];
  private readonly appliedListeners = new Set<(status: FollowerStatus) => void>();

  constructor(
    private readonly client: ChainClient,
    private readonly ledger: Ledger,
    private readonly network: NetworkDefinition,
    private readonly logger: Logger,
  ) {
    const stored = ledger.orderCursor();
    this.cursor = stored === undefined ? network.chain.start : decodeCursor(stored);
  }

  /**
   * Checks that the connected chain is the network's (its genesis and start block) and still holds the block
   * this ledger last applied; throws {@link NetworkDefinitionError} saying what differs.
   */
  async verifyChain(): Promise<void> {
    const { genesisHash, start } = this.network.chain;
    const info = this.client.info();
    if (genesisHash !== null && info.genesisHash !== genesisHash) {
      throw new NetworkDefinitionError(`the chain's genesis is ${info.genesisHash}, but the network file names ${genesisHash}: wrong --chain-url?`);
    }
    const finalized = await this.client.finalizedNumber();
    for (const [what, point] of [
      ["the network file's start block", start],
      ['the block this data directory last applied', this.cursor],
    ] as const) {
      if (point.number > finalized) {
        throw new NetworkDefinitionError(`${what} (#${point.number}) is beyond the chain's finalized head #${finalized}: another chain?`);
      }
      if (point.hash === null) continue;
      const b = await this.client.block(point.number);
      if (b.hash !== point.hash) {
        throw new NetworkDefinitionError(`${what} #${point.number} is ${point.hash}, but the chain's block #${point.number} is ${b.hash}: another chain?`);
      }
    }
  }

  /** Starts following the finalized head. */
  start(): void {
    this.unsubscribe = this.client.onFinalized((n) => {
      if (n > this.chainFinalized) this.chainFinalized = n;
      this.kick();
    });
    this.client.finalizedNumber().then(
      (n) => {
        if (n > this.chainFinalized) this.chainFinalized = n;
        this.kick();
      },
      (err: unknown) => this.failed(err),
    );
  }

  status(): FollowerStatus {
    const caughtUp = this.chainFinalized >= 0 && this.cursor.number >= this.chainFinalized;
    if (caughtUp) this.caughtUpOnce = true;
    return {
      chainFinalized: this.chainFinalized,
      applied: this.cursor,
      caughtUp,
      caughtUpOnce: this.caughtUpOnce,
      halted: this.halted,
      lastError: this.lastError,
    };
  }

  /** Told after each chain block applied. */
  onApplied(listener: (status: FollowerStatus) => void): () => void {
    this.appliedListeners.add(listener);
    return () => this.appliedListeners.delete(listener);
  }

  /** Resolves once the chain block `number` is applied (at once when it is). */
  reached(number: number): Promise<void> {
    if (this.cursor.number >= number) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ number, resolve }));
  }

  private kick(): void {
    if (this.running || this.stopped || this.halted !== null || this.retryTimer !== null) return;
    if (this.cursor.number >= this.chainFinalized) {
      if (this.chainFinalized >= 0) this.caughtUpOnce = true;
      return;
    }
    this.running = true;
    this.catchUp().then(
      () => {
        this.running = false;
        this.retryMs = RETRY_MIN_MS;
        this.kick();
      },
      (err: unknown) => {
        this.running = false;
        this.failed(err);
      },
    );
  }

  private failed(err: unknown): void {
    if (this.stopped) return;
    if (err instanceof NetworkDefinitionError) {
      this.halted = err.message;
      this.logger.error({ err }, 'stopped following the chain');
      return;
    }
    this.lastError = err instanceof Error ? err.message : String(err);
    this.logger.warn({ err, retryMs: this.retryMs }, 'reading the chain failed; retrying');
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.kick();
    }, this.retryMs);
    this.retryMs = Math.min(RETRY_MAX_MS, this.retryMs * 2);
  }

  private async catchUp(): Promise<void> {
    while (!this.stopped && this.cursor.number < this.chainFinalized) {
      const block = await this.client.block(this.cursor.number + 1);
      if (this.stopped) return;
      if (this.cursor.hash !== null && block.parentHash !== this.cursor.hash) {
        throw new NetworkDefinitionError(
          `finalized block #${block.number} (${block.hash}) does not extend #${this.cursor.number} (${this.cursor.hash}), the last block applied`,
        );
      }
      const items = orderedItems(block, this.network.networkId);
      const point = { number: block.number, hash: block.hash };
      const head = this.ledger.applyOrdered(block.timestampMs, items, encodeCursor(point));
      if (head !== null) this.logger.debug({ chainBlock: block.number, ddnBlock: head.number, txs: items.length }, 'chain block applied');
      this.cursor = point;
      this.lastError = null;
      const due = this.waiters.filter((w) => w.number <= point.number);
      this.waiters = this.waiters.filter((w) => w.number > point.number);
      for (const w of due) w.resolve();
      const status = this.status();
      for (const l of this.appliedListeners) l(status);
    }
  }

  stop(): void {
    this.stopped = true;
    this.unsubscribe?.();
    if (this.retryTimer !== null) clearTimeout(this.retryTimer);
    this.retryTimer = null;
  }
}
