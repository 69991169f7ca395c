import type { LedgerStore } from './store.js';
import type { StateReader, StateValue } from './state.js';

/**
 * Decoded values a {@link StateAt} keeps at most (then it starts over): enough for a block's writes and the pool
 * run again on a new head; a resolve at scale reads through it uniformly, and a memo of whole decoded records that
 * size of a million DIDs cost ~300 MiB for few hits (the rendered answers have their own, byte-bounded cache).
 */
const MAX_STATE_MEMO = 10_000;

/** Reads state as of one block, memoising what it read (blocks are immutable once committed). */
export class StateAt implements StateReader {
  constructor(
    private readonly store: LedgerStore,
    readonly block: number,
    private cache = new Map<string, StateValue | undefined>(),
  ) {}

  /**
   * The state of the next block, which wrote `writes`: it takes over what this one read (decoded values of keys
   * the block did not write are the same there) and the values the block wrote (what reading them back from the
   * store would decode: state values are immutable, and the pool's state serves the same values before the block),
   * so a head change reads and decodes nothing again — a write's DID record and nonce, the pool's entries run again
   * on the new head, a resolve re-rendering what the block changed. This one starts over with nothing read.
   */
  successor(writes: ReadonlyMap<string, StateValue | undefined>): StateAt {
    const cache = this.cache;
    this.cache = new Map();
    if (cache.size + writes.size > MAX_STATE_MEMO) cache.clear();
    for (const [k, v] of writes) cache.set(k, v);
    return new StateAt(this.store, this.block + 1, cache);
  }

  get(key: string): StateValue | undefined {
    if (this.cache.has(key)) return this.cache.get(key);
    const v = this.store.readState(key, this.block);
    if (this.cache.size >= MAX_STATE_MEMO) this.cache.clear();
    this.cache.set(key, v);
    return v;
  }
}
