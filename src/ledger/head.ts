/**
 * Where a ledger stands (ledger-rules.md §2.6): its head block and the state as of it, the finalized block
 * `finalityDepth` behind and its state, and the one way a block is committed — stored, the keys it wrote recorded,
 * then made the head. Admission reads it; block production and following advance it.
 */
import { to0x } from '../base/bytes.js';
import type { Clock } from '../base/clock.js';
import { BlockTouches } from './block-touches.js';
import type { StateValue } from './state.js';
import { StateAt } from './state-at.js';
import type { BlockExtras, LedgerStore, StoredBlock, TxRecord } from './store.js';
import type { BlockRef } from './types.js';

export const refOf = (b: StoredBlock): BlockRef => ({ number: b.header.number, hash: to0x(b.hash), timestampMs: b.header.timestampMs });

export class ChainHead {
  private head!: BlockRef;
  private headState!: StateAt;
  private finalized!: BlockRef;
  private finalizedAt!: StateAt;
  /** The state keys of recent blocks, recorded by {@link advance} for every path that commits one. */
  private readonly touches = new BlockTouches();

  constructor(
    private readonly store: LedgerStore,
    private readonly finalityDepth: number,
    private readonly clock: Clock,
  ) {
    this.load();
  }

  get ref(): BlockRef {
    return this.head;
  }

  get state(): StateAt {
    return this.headState;
  }

  get finalizedRef(): BlockRef {
    return this.finalized;
  }

  get finalizedState(): StateAt {
    return this.finalizedAt;
  }

  /** "now" for pool validation (§1.2): max(head timestamp, wall clock). */
  poolNowMs(): number {
    return Math.max(this.head.timestampMs, this.clock.nowMs());
  }

  /** Stores `block` (extending the head) with what it wrote and finished, records the keys it wrote, makes it the head. */
  advance(block: StoredBlock, writes: Map<string, StateValue | undefined>, txs: TxRecord[], extras?: BlockExtras): void {
    this.store.commitBlock(block, writes, txs, extras);
    this.touches.record(block.header.number, writes.keys());
    this.load({ number: block.header.number, writes });
  }

  /**
   * The state keys written by blocks `after + 1` … `upTo` (what a cache of block `after`'s answers must drop to
   * serve block `upTo`); undefined when this process does not know them all (committed before it started).
   */
  touchedKeys(after: number, upTo: number): ReadonlySet<string> | undefined {
    return this.touches.between(after, upTo);
  }

  private load(committed?: { number: number; writes: ReadonlyMap<string, StateValue | undefined> }): void {
    const n = this.store.headNumber();
    this.head = refOf(this.store.getBlock(n)!);
    // the block just committed on the old head: its state carries what the old head's read
    const carried = committed !== undefined && committed.number === n && this.headState?.block === n - 1;
    this.headState = carried ? this.headState.successor(committed.writes) : new StateAt(this.store, n);
    const fin = Math.max(0, n - this.finalityDepth);
    this.finalized = fin === n ? this.head : refOf(this.store.getBlock(fin)!);
    this.finalizedAt = fin === n ? this.headState : new StateAt(this.store, fin);
  }
}
