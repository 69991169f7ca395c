/**
 * The state keys each recent block wrote (its state diff's keys), recorded once where a block is committed, so
 * that caches of finalized answers drop only what a block changed. Every path that applies a block — the embedded
 * producer, a PostgreSQL replica's catch-up, a Substrate chain's order, a mirror's import — commits it through
 * the ledger, which records it here. Bounded in keys and in blocks: the oldest blocks are forgotten first; a block not known here (one
 * committed before this process started, or forgotten) makes {@link BlockTouches.between} answer undefined, and
 * a cache then drops everything.
 */

/** Keys kept at most over all remembered blocks (a block of 1,000 registrations writes about 2,000). */
export const MAX_TOUCHED_KEYS = 200_000;
/**
 * Blocks remembered at most, however few keys they wrote: a chain that makes a block every few seconds, most of
 * them empty, would otherwise grow this map for as long as the process runs. A cache follows the finalized block
 * at each read, so it asks for the blocks since its last read: a few, not thousands.
 */
export const MAX_TOUCHED_BLOCKS = 4_096;

export class BlockTouches {
  private readonly byBlock = new Map<number, readonly string[]>();
  private held = 0;

  constructor(
    private readonly maxKeys = MAX_TOUCHED_KEYS,
    private readonly maxBlocks = MAX_TOUCHED_BLOCKS,
  ) {}

  /** Records the keys block `number` wrote (deleted ones too). */
  record(number: number, keys: Iterable<string>): void {
    const list = [...keys];
    const previous = this.byBlock.get(number);
    if (previous !== undefined) this.held -= previous.length;
    this.byBlock.delete(number);
    this.byBlock.set(number, list);
    this.held += list.length;
    for (const [n, old] of this.byBlock) {
      if ((this.held <= this.maxKeys && this.byBlock.size <= this.maxBlocks) || n === number) break;
      this.byBlock.delete(n);
      this.held -= old.length;
    }
  }

  /** The keys written by blocks `after + 1` … `upTo`; undefined when one of them is not known here. */
  between(after: number, upTo: number): ReadonlySet<string> | undefined {
    const out = new Set<string>();
    for (let n = after + 1; n <= upTo; n++) {
      const list = this.byBlock.get(n);
      if (list === undefined) return undefined;
      for (const k of list) out.add(k);
    }
    return out;
  }
}
