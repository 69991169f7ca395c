/**
 * Blocks (ledger-rules.md §2): made of the pool by this ledger's producer (on its timer, or built and committed by
 * a shared pool's producer), replicated from another process, imported from a followed ledger, or cut from an
 * outside chain's order — each advances the {@link ChainHead} and carries the pool onto the new head. The part of
 * the `Ledger` that empties its pool; admission fills it. The ledger's machinery: the producer's timer and the
 * build duration (`performance.now`) of its metric.
 */
import { bytesEqual, to0x } from '../base/bytes.js';
import type { Clock } from '../base/clock.js';
import { executeBlock, verifyBlock } from './block-execution.js';
import type { Executor, PoolRun } from './executor.js';
import { decodeExtrinsic, encodeExtrinsic, txHashOf } from './extrinsic.js';
import type { ChainHead } from './head.js';
import { touchedBy } from './pool-effects.js';
import type { TxPool } from './pool.js';
import { VerifiedSignatures } from './runtime/verified-signatures.js';
import { Overlay, type StateValue } from './state.js';
import type { LedgerStore, StoredBlock, TxRecord } from './store.js';
import type { BlockRef, BuiltBlock, ImportedTx, LedgerOptions, OrderedTx, PoolEntry } from './types.js';

/** The ledger meta key of the chain cursor ({@link BlockProduction.applyOrdered}). */
const CHAIN_CURSOR_KEY = 'chain_cursor';

/** What block production works on, shared with the ledger's other parts. */
export interface ProductionParts {
  readonly head: ChainHead;
  readonly pool: TxPool;
  readonly exec: Executor;
  readonly store: Pick<LedgerStore, 'finishedTx' | 'markDropped' | 'readMeta' | 'writeMeta'>;
  readonly options: Pick<LedgerOptions, 'clock' | 'autoProduce' | 'blockIntervalMs' | 'onError'>;
  /** An outside chain orders the transactions (`LedgerOptions.ordering`). */
  readonly chainOrdered: boolean;
  readonly maxPerBlock: number;
}

export class BlockProduction {
  private readonly head: ChainHead;
  private readonly pool: TxPool;
  private readonly exec: Executor;
  private readonly store: ProductionParts['store'];
  private readonly options: ProductionParts['options'];
  private readonly clock: Clock;
  private readonly chainOrdered: boolean;
  private readonly maxPerBlock: number;
  /** Pool entries run again by the last carry onto a new head (metrics, tests). */
  private lastRerun = 0;
  private timer: NodeJS.Timeout | null = null;
  private lastBlockWallMs = 0;
  private stopped = false;
  private readonly listeners = new Set<(b: BlockRef) => void>();
  /** When the block being built was started (`performance.now()`), for {@link onProduced}. */
  private buildStartedAt = 0;
  private readonly producedListeners = new Set<(seconds: number) => void>();

  constructor(parts: ProductionParts) {
    this.head = parts.head;
    this.pool = parts.pool;
    this.exec = parts.exec;
    this.store = parts.store;
    this.options = parts.options;
    this.clock = parts.options.clock;
    this.chainOrdered = parts.chainOrdered;
    this.maxPerBlock = parts.maxPerBlock;
  }

  /** At a start: the pending transactions the store held form the pool again; a block is due when any pass. */
  restore(pending: PoolEntry[]): void {
    if (this.chainOrdered) this.reorderPool(pending);
    else this.rebuildPool(pending);
    if (this.pool.size > 0) this.schedule();
  }

  /**
   * The ddn blocks of one finalized block of an outside chain (`ordering: 'chain'`): its ddn extrinsics in chain
   * order, executed under the ledger's rules at the chain block's time, so that every Directory following the
   * chain computes the same blocks, hashes and failures. Deterministic from the head and `items` alone: an item
   * whose bytes do not decode exactly is skipped, and so is a transaction already in a block (a batch submitted
   * twice), or already earlier in `items`; what remains is cut into blocks of at most `maxExtrinsicsPerBlock`
   * (none when nothing remains). `cursor` — where the caller stands on the chain — is stored with the last of
   * them, or alone. Returns the new head, or null when no block was made.
   */
  applyOrdered(chainTimestampMs: number, items: readonly OrderedTx[], cursor: Uint8Array): BlockRef | null {
    if (!this.chainOrdered) throw new Error('applyOrdered needs a ledger ordered by a chain');
    const txs = this.orderedEntries(items);
    if (txs.length === 0) {
      this.store.writeMeta(CHAIN_CURSOR_KEY, cursor);
      return null;
    }
    const finished = new Set<string>();
    for (let start = 0; start < txs.length; start += this.maxPerBlock) {
      const part = txs.slice(start, start + this.maxPerBlock);
      const last = start + this.maxPerBlock >= txs.length;
      const timestampMs = Math.max(chainTimestampMs, this.head.ref.timestampMs + 1);
      const built = executeBlock(this.exec, this.head.ref, this.head.state, part, timestampMs);
      this.head.advance(built.block, built.writes, built.records, last ? { meta: new Map([[CHAIN_CURSOR_KEY, cursor]]) } : undefined);
      for (const r of built.records) finished.add(r.txHash);
      this.reorderPool(this.pool.awaitingOrder.filter((e) => !finished.has(e.tx.txHash)));
      this.announce();
    }
    return this.head.ref;
  }

  /** The entries of `items` that {@link applyOrdered} executes: canonical, in no block yet, each once. */
  private orderedEntries(items: readonly OrderedTx[]): PoolEntry[] {
    const seen = new Set<string>();
    const txs: PoolEntry[] = [];
    for (const it of items) {
      const call = decodeExtrinsic(it.bytes);
      if (!call) continue;
      // canonical: the call encodes back to exactly its bytes (an argument out of bounds does not encode)
      let encoded: Uint8Array;
      try {
        encoded = encodeExtrinsic(call);
      } catch {
        continue;
      }
      if (!bytesEqual(encoded, it.bytes)) continue;
      const txHash = to0x(txHashOf(it.bytes));
      if (seen.has(txHash) || this.store.finishedTx(txHash)?.blockNumber !== undefined) continue;
      seen.add(txHash);
      const own = this.pool.awaiting(txHash);
      const tx: TxRecord = { txHash, extrinsic: call.name, status: 'pending', submittedAtMs: it.submittedAtMs, meta: it.meta };
      txs.push({ tx, call, bytes: it.bytes, verified: own?.verified ?? new VerifiedSignatures() });
    }
    return txs;
  }

  /** Under a chain: the cursor stored by the last {@link applyOrdered}; undefined before the first. */
  orderCursor(): Uint8Array | undefined {
    return this.store.readMeta(CHAIN_CURSOR_KEY);
  }

  /**
   * Under a chain: `entries` (waiting for the chain's order) checked again on the head; those that pass form the
   * pool, all of them stay waiting — none is dropped.
   */
  private reorderPool(entries: PoolEntry[]): void {
    // signatures were verified on admission; the block that orders an entry verifies them again
    const next = this.exec.validate(new Overlay(this.head.state), entries, this.head.poolNowMs(), this.head.ref.number + 1, true);
    this.pool.set(next.state, next.pool);
    this.pool.awaitOrder(entries);
  }

  /** Executes up to `maxExtrinsicsPerBlock` pooled extrinsics into a new block. Null when the pool is empty. */
  produceBlock(): BlockRef | null {
    const built = this.buildBlock();
    return built ? this.commitBuilt(built) : null;
  }

  /**
   * The next block out of the pool, not yet stored: its header, state writes, the outcome of each extrinsic, and
   * the pooled transactions the new head invalidates (dropped as failed). Null when the pool is empty, unless
   * `allowEmpty` (a shared pool's producer recording drops).
   */
  buildBlock(opts: { allowEmpty?: boolean } = {}): BuiltBlock | null {
    if (this.pool.size === 0 && opts.allowEmpty !== true) return null;
    this.buildStartedAt = performance.now();
    const timestampMs = Math.max(this.clock.nowMs(), this.head.ref.timestampMs + 1);
    const taken = this.pool.entries.slice(0, this.maxPerBlock);
    const { block, writes, records, overlay } = executeBlock(this.exec, this.head.ref, this.head.state, taken, timestampMs);
    const next = this.carry(
      new Overlay(overlay),
      touchedBy(writes.keys(), taken),
      this.pool.entries.slice(taken.length),
      Math.max(timestampMs, this.clock.nowMs()),
      block.header.number + 1,
    );
    return { block, writes, records, dropped: next.dropped, pool: next.pool, poolWrites: next.state };
  }

  /**
   * `built` (from {@link buildBlock} on the current head) with `entries`, pool entries added after every entry
   * the pool held then: checked after its pool on the new head, as {@link buildBlock} checks the pool's last
   * entries — those that pass join its pool, the others its drops.
   */
  extendBuilt(built: BuiltBlock, entries: readonly PoolEntry[]): BuiltBlock {
    if (entries.length === 0) return built;
    const h = built.block.header;
    const next = this.exec.validate(built.poolWrites, entries, Math.max(h.timestampMs, this.clock.nowMs()), h.number + 1, false, true);
    return { ...built, pool: [...built.pool, ...next.pool], dropped: [...built.dropped, ...next.dropped] };
  }

  /** Stores a {@link BuiltBlock} (built on the current head) and makes it the head; the pool keeps what still passes. */
  commitBuilt(built: BuiltBlock): BlockRef {
    if (built.block.header.number !== this.head.ref.number + 1) throw new Error('the head moved since the block was built');
    this.head.advance(built.block, built.writes, [...built.records, ...built.dropped]);
    this.lastBlockWallMs = this.clock.nowMs();
    // the pool's writes were laid over the block's: now over the head that holds them
    this.pool.carry(built.poolWrites.over(this.head.state), built.pool, hashesOf(built.records, built.dropped));
    this.schedule();
    const seconds = (performance.now() - this.buildStartedAt) / 1000;
    for (const l of this.producedListeners) l(seconds);
    return this.announce();
  }

  /**
   * A block another process produced, with its state writes and the transactions it finished (included, failed
   * or dropped): stored in this process's replica, then the pool is rebuilt on the new head without them.
   * `serialized`: the writes' values as the database holds them ({@link LedgerStore.commitBlock}), not serialized again.
   */
  applyReplicatedBlock(block: StoredBlock, writes: Map<string, StateValue | undefined>, txs: TxRecord[], serialized?: ReadonlyMap<string, string>): BlockRef {
    const head = this.head.ref;
    if (block.header.number !== head.number + 1 || to0x(block.header.parentHash) !== head.hash) {
      throw new Error(`replicated block ${block.header.number} does not extend the local head ${head.number}`);
    }
    this.head.advance(block, writes, txs, { serialized });
    const finished = new Set(txs.map((t) => t.txHash));
    const [done, remaining] = [this.pool.entries.filter((e) => finished.has(e.tx.txHash)), this.pool.entries.filter((e) => !finished.has(e.tx.txHash))];
    // the drops are the producer's to record: this pool only leaves them out
    const next = this.carry(new Overlay(this.head.state), touchedBy(writes.keys(), done), remaining, this.head.poolNowMs(), this.head.ref.number + 1, true);
    this.pool.carry(next.state, next.pool, hashesOf(txs, next.dropped));
    return this.announce();
  }

  /**
   * A finalized block of another ledger (a mirror following a Directory's export feed), verified by executing its
   * extrinsics here: the extrinsics root, every outcome (results root, signatures checked by the runtime) and the
   * block hash must come out as `block` says, on a parent that is this ledger's head. Stored and made the head;
   * throws {@link BlockImportError} when anything differs, changing nothing.
   */
  importBlock(block: StoredBlock, txs: readonly ImportedTx[]): BlockRef {
    const { writes, records } = verifyBlock(this.exec, this.head.ref, this.head.state, block, txs);
    this.head.advance(block, writes, records);
    this.rebuildPool([], false);
    return this.announce();
  }

  /**
   * Verifies the signatures of the pool's entries this process has not verified and no admitting process vouched
   * for (a shared pool's rows stored without their digests), on the head state, so that building the next block
   * under the pool lock finds them done
   * (an entry that needs an earlier one of the pool may stop before its signature; the block verifies it then).
   * Changes no state and no verdict.
   */
  verifyPoolSignatures(): void {
    const unverified = this.pool.entries.filter((e) => e.verified.size === 0);
    if (unverified.length > 0) this.exec.validate(new Overlay(this.head.state), unverified, this.head.poolNowMs(), this.head.ref.number + 1);
  }

  private announce(): BlockRef {
    const ref = this.head.ref;
    for (const l of this.listeners) l(ref);
    return ref;
  }

  /** Rebuilds the pool state from the head; a remaining extrinsic that no longer passes is dropped as failed. */
  private rebuildPool(entries: PoolEntry[], persistDrops = true): void {
    // a rebuild without persisting (a shared pool) re-checks entries whose signatures were verified on admission
    const next = this.exec.validate(new Overlay(this.head.state), entries, this.head.poolNowMs(), this.head.ref.number + 1, !persistDrops, true);
    this.pool.set(next.state, next.pool);
    if (!persistDrops) return;
    for (const d of next.dropped) {
      try {
        this.store.markDropped(d);
      } catch (e) {
        // a start on a full disk: the drop is recorded at a later start (the transaction stays out of the pool)
        this.options.onError?.(e);
      }
    }
  }

  /** {@link Executor.carry}, counting what ran again ({@link lastPoolRerun}). */
  private carry(...args: Parameters<Executor['carry']>): PoolRun {
    const next = this.exec.carry(...args);
    this.lastRerun = next.rerun;
    return next;
  }

  /** How many pool entries the last carry onto a new head ran again (the rest kept their effects). */
  get lastPoolRerun(): number {
    return this.lastRerun;
  }

  /** A block is due (the pool grew, or a block was made): the producer's timer is set, unless it runs already. */
  schedule(): void {
    if (!this.options.autoProduce || this.stopped || this.timer || this.pool.size === 0) return;
    const delay = Math.max(0, this.lastBlockWallMs + this.options.blockIntervalMs - this.clock.nowMs());
    this.timer = setTimeout(() => {
      this.timer = null;
      try {
        this.produceBlock();
      } catch (e) {
        // a block that could not be stored (a full disk) is tried again one interval later, not at once
        this.lastBlockWallMs = this.clock.nowMs();
        this.options.onError?.(e);
      }
      this.schedule();
    }, delay);
  }

  /** Stops block production at a block boundary (production is synchronous, so no block is half-written). */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** Told of every block this process produced: the seconds from the start of its build to its commit (metrics). */
  onProduced(listener: (seconds: number) => void): () => void {
    this.producedListeners.add(listener);
    return () => this.producedListeners.delete(listener);
  }

  onBlock(listener: (b: BlockRef) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

/** The transaction hashes of `lists`, in order. */
function* hashesOf(...lists: readonly (readonly TxRecord[])[]): Generator<string> {
  for (const l of lists) for (const t of l) yield t.txHash;
}
