/**
 * Rendered `GET /resolve/{did}` bodies (http-api.md §3.1), kept per finalized block. A resolve body is a pure
 * function of the finalized state, the finalized block and the DID's pending pool entries, so a DID without
 * pending entries keeps its rendered JSON until the finalized block changes; then every entry is dropped at
 * once. DIDs with pending entries, and failures, are rendered each time.
 */
import type { BlockRef, PoolEntry } from '../ledger/chain.js';

/** What the cache reads of the ledger. */
export interface ResolveCacheLedger {
  finalizedRefNow(): BlockRef;
  pendingEntries(): readonly PoolEntry[];
}

/** Default bound on the DIDs kept per finalized block. */
export const RESOLVE_CACHE_MAX_ENTRIES = 10_000;

/** Caches the serialised resolve bodies of the current finalized block. */
export class ResolveCache {
  private block: BlockRef | undefined;
  /** JSON text, not bytes: Node sends a string body in the same write as the headers (one syscall, no writev). */
  private readonly bodies = new Map<string, string>();

  constructor(
    private readonly ledger: ResolveCacheLedger,
    /** Renders the resolve body of a DID (throws its coded errors). */
    private readonly render: (did: string) => object,
    private readonly maxEntries = RESOLVE_CACHE_MAX_ENTRIES,
  ) {}

  /** Entries held for the current finalized block (observability, tests). */
  get size(): number {
    return this.bodies.size;
  }

  /** The JSON body of `did`'s resolve, from the cache when the finalized block has not changed since. */
  body(did: string): string {
    const block = this.ledger.finalizedRefNow();
    if (block !== this.block && (this.block === undefined || block.hash !== this.block.hash)) {
      this.bodies.clear();
      this.block = block;
    }
    const pending = hasPending(this.ledger.pendingEntries(), did);
    if (!pending) {
      const cached = this.bodies.get(did);
      if (cached !== undefined) return cached;
    }
    const body = JSON.stringify(this.render(did));
    if (!pending && this.bodies.size < this.maxEntries) this.bodies.set(did, body);
    return body;
  }
}

function hasPending(entries: readonly PoolEntry[], did: string): boolean {
  for (const e of entries) if (e.tx.meta.subject === did) return true;
  return false;
}
