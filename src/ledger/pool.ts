/**
 * The transaction pool of one process (ledger-rules.md §2.5): its entries in admission order, by hash and by limit
 * key, the state they leave on the head, and — under a chain — every admitted transaction still waiting for the
 * chain's order. Bookkeeping only: what passes is decided by the ledger that fills it.
 */
import type { Overlay } from './state.js';
import type { PoolEntry } from './types.js';

export class TxPool {
  private list: PoolEntry[] = [];
  private readonly index = new Map<string, PoolEntry>();
  /** Pooled transactions by limit key (the `max_pending_per_key` check). */
  private readonly perLimitKey = new Map<string, number>();
  /** Pooled transactions by subject DID (a resolve asks, per request, whether its DID has one). */
  private readonly perSubject = new Map<string, number>();
  /**
   * Under a chain (`LedgerOptions.ordering`): every admitted transaction not yet in a block, in admission order —
   * the pool's entries and those that no longer pass on the head but are still the chain's to decide.
   */
  private unordered: PoolEntry[] = [];
  private readonly unorderedIndex = new Map<string, PoolEntry>();

  constructor(
    /** Head state plus every pooled extrinsic. */
    private current: Overlay,
    private readonly chainOrdered: boolean,
  ) {}

  get state(): Overlay {
    return this.current;
  }

  get entries(): readonly PoolEntry[] {
    return this.list;
  }

  get size(): number {
    return this.list.length;
  }

  get(txHash: string): PoolEntry | undefined {
    return this.index.get(txHash);
  }

  has(txHash: string): boolean {
    return this.index.has(txHash);
  }

  /** True when the transaction is pooled or, under a chain, waits for the chain's order. */
  holds(txHash: string): boolean {
    return this.index.has(txHash) || this.unorderedIndex.has(txHash);
  }

  /** What counts against the pool's size: under a chain, what waits for its order (entries that no longer pass too). */
  get waiting(): number {
    return Math.max(this.list.length, this.unordered.length);
  }

  /** Pooled transactions of `limitKey`. */
  pendingFor(limitKey: string): number {
    return this.perLimitKey.get(limitKey) ?? 0;
  }

  /** Pooled transactions whose subject is `did`. */
  pendingForSubject(did: string): number {
    return this.perSubject.get(did) ?? 0;
  }

  /** Under a chain: every admitted transaction the chain has not ordered yet, in admission order. */
  get awaitingOrder(): readonly PoolEntry[] {
    return this.unordered;
  }

  /** An admitted transaction waiting for the chain's order. */
  awaiting(txHash: string): PoolEntry | undefined {
    return this.unorderedIndex.get(txHash);
  }

  /** Adds an entry after the others (its writes are in {@link state} already). */
  add(entry: PoolEntry): void {
    this.list.push(entry);
    this.index.set(entry.tx.txHash, entry);
    this.count(entry);
    if (this.chainOrdered && !this.unorderedIndex.has(entry.tx.txHash)) {
      this.unordered.push(entry);
      this.unorderedIndex.set(entry.tx.txHash, entry);
    }
  }

  /** Makes `entries` the pool, `state` its state. */
  set(state: Overlay, entries: readonly PoolEntry[]): void {
    this.current = state;
    this.list = [];
    this.index.clear();
    this.perLimitKey.clear();
    this.perSubject.clear();
    for (const e of entries) {
      this.list.push(e);
      this.index.set(e.tx.txHash, e);
      this.count(e);
    }
  }

  private count(e: PoolEntry): void {
    const { limitKey, subject } = e.tx.meta;
    this.perLimitKey.set(limitKey, this.pendingFor(limitKey) + 1);
    this.perSubject.set(subject, this.pendingForSubject(subject) + 1);
  }

  /** Under a chain: `entries` are what waits for the chain's order. */
  awaitOrder(entries: PoolEntry[]): void {
    this.unordered = entries;
    this.unorderedIndex.clear();
    for (const e of entries) this.unorderedIndex.set(e.tx.txHash, e);
  }
}
