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

  /**
   * Makes `entries` the pool, `state` its state, where `entries` are what remains of the pool once the transactions
   * `finished` (their hashes: a block's, the drops) left it, in its order — some run again, so new objects. In work
   * bounded by what left, not by the pool's size (the maps are not built again); {@link set} when `entries` are
   * not that.
   */
  carry(state: Overlay, entries: readonly PoolEntry[], finished: Iterable<string>): void {
    for (const h of finished) {
      const e = this.index.get(h);
      if (e === undefined) continue;
      this.index.delete(h);
      this.count(e, -1);
    }
    let known = true;
    for (const e of entries) {
      const had = this.index.get(e.tx.txHash);
      if (had === e) continue;
      if (had === undefined) known = false;
      else this.index.set(e.tx.txHash, e);
    }
    if (!known || this.index.size !== entries.length) return this.set(state, entries);
    this.current = state;
    this.list = entries.slice();
  }

  private count(e: PoolEntry, by = 1): void {
    const { limitKey, subject } = e.tx.meta;
    bump(this.perLimitKey, limitKey, by);
    bump(this.perSubject, subject, by);
  }

  /** Under a chain: `entries` are what waits for the chain's order. */
  awaitOrder(entries: PoolEntry[]): void {
    this.unordered = entries;
    this.unorderedIndex.clear();
    for (const e of entries) this.unorderedIndex.set(e.tx.txHash, e);
  }
}

/** Adds `by` to `key`'s count, which leaves the map at 0. */
function bump(counts: Map<string, number>, key: string, by: number): void {
  const n = (counts.get(key) ?? 0) + by;
  if (n > 0) counts.set(key, n);
  else counts.delete(key);
}
