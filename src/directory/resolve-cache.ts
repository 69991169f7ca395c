/**
 * Rendered `GET /resolve/{did}` bodies (http-api.md §3.1), kept across blocks. A resolve body is the DID's part —
 * a pure function of the finalized state keys its render read, rendered only when the DID has no pending pool
 * entries — followed by the finalized block's number and hash, which the cache appends on every answer. What a
 * cached answer depends on:
 *
 * - the finalized state keys its render read (recorded as it reads): the DID's record `did/<did>` — its document,
 *   aliases, devices, root key, deactivation, registration tx — and its `nonce/document_nonce/<did>`;
 * - the DID's pending pool entries (`pending_operations`, the pending document fields): a DID with any is rendered
 *   every time, never cached;
 * - the finalized block (`block_number`, `block_hash`): appended to every answer, never cached.
 *
 * When the finalized block moves, the cache drops exactly the entries that read a key the new blocks wrote
 * ({@link ResolveCacheLedger.touchedKeys}): a DID's own keys (`did/<did>`, `nonce/document_nonce/<did>`, what every
 * answer reads) name it, and only the other keys an answer read are indexed; when the ledger cannot tell (blocks committed before this process
 * started), it drops everything. Failures (unknown DID, registration pending) are rendered each time. Memory is
 * bounded in bytes (`--directory-resolve-cache-bytes`), least recently used first out. Once the budget is full, a
 * DID that misses is admitted only when it missed before ({@link MissFilter}): a read set far larger than the cache
 * would otherwise replace an entry on every miss for no hits.
 */
import { LRUCache } from 'lru-cache';
import type { BlockRef } from '../ledger/types.js';
import type { StateReader, StateValue } from '../ledger/state.js';
import { MissFilter } from './resolve-admission.js';

/** What the cache reads of the ledger. */
export interface ResolveCacheLedger {
  finalizedRefNow(): BlockRef;
  finalizedView(): StateReader;
  /** True when a pooled transaction's subject is `did` (its answer is not kept while one is). */
  hasPendingFor(did: string): boolean;
  /** The state keys written by blocks `after + 1` … `upTo`; undefined when not known. */
  touchedKeys(after: number, upTo: number): ReadonlySet<string> | undefined;
}

/** Renders the DID's part of its resolve body from `view` (throws its coded errors); the cache adds the block. */
export type ResolveRender = (did: string, view: StateReader) => object;

const MIB = 1024 * 1024;

/** The budget of a cache built without one (embedding, tests); a node's default is {@link defaultResolveCacheBytes}. */
export const DEFAULT_RESOLVE_CACHE_BYTES = 64 * MIB;

/** The least default budget (a machine or cgroup of less than 128 MiB). */
export const MIN_DEFAULT_RESOLVE_CACHE_BYTES = 16 * MIB;

/**
 * The node's default `--directory-resolve-cache-bytes`: an eighth of the memory the process may use (`memoryBytes`:
 * the machine's, or its cgroup's limit), at most half the V8 heap's limit (`heapLimitBytes`: the answers are
 * JavaScript strings, and a heap that outgrows its limit ends the process), in whole MiB, at least
 * {@link MIN_DEFAULT_RESOLVE_CACHE_BYTES}. Memory is taken only by answers read (about 1.3 KB counted and 1.2 KB of
 * heap each, a small document): a directory of 20,000 DIDs takes some 25 MiB whatever the budget. On a 24 GiB
 * machine (heap limit ~4 GiB) it is ~2 GiB, which holds a million answers; docs/operations.md, "The resolve cache".
 */
export function defaultResolveCacheBytes(memoryBytes: number, heapLimitBytes: number): number {
  const bytes = Math.min(memoryBytes / 8, heapLimitBytes / 2);
  return Math.max(MIN_DEFAULT_RESOLVE_CACHE_BYTES, Math.floor(bytes / MIB) * MIB);
}

/** Bytes counted per entry beyond its strings: the LRU's node, the entry object, the dependency index. */
const ENTRY_OVERHEAD_BYTES = 200;
const KEY_OVERHEAD_BYTES = 64;
/** The block fields an answer ends with (`,"block_number":…,"block_hash":"0x…"}`), counted with each entry as before. */
const TAIL_BYTES = 100;
/** The keys every answer reads, each naming its DID: dropped by name, never indexed ({@link ownKeyDid}). */
const OWN_KEY_PREFIXES = ['did/', 'nonce/document_nonce/'] as const;
const NO_KEYS: readonly string[] = [];
/** How long a block must have stood before an answer's whole body is kept for it (see {@link Entry}). */
const KEEP_BODY_AFTER_MS = 1000;
/** Bytes of budget per slot of the doorkeeper: about one answer's (a resolve body is ~1 KiB). */
const BYTES_PER_FILTER_SLOT = 1024;

interface Entry {
  /**
   * The DID's part of the JSON body without its closing brace (`block` undefined), or the whole body of `block`
   * (the DID's part is its first `headLength` characters). A body is kept only for a block that has stood
   * {@link KEEP_BODY_AFTER_MS}: under writes (a block every ~100 ms) a body kept per block lives one block, long
   * enough to survive the young generation's collections at resolve's allocation rate, so every DID read in a block
   * left a ~1 KiB string for the old generation's collector (bench/HISTORY.md, session 26); such answers are the
   * DID's part joined to the block's fields per request. On an idle ledger a body is answered again without a copy.
   */
  text: string;
  block: BlockRef | undefined;
  readonly headLength: number;
  /** The finalized state keys the render read besides the DID's own (usually none: a shared empty array). */
  readonly deps: readonly string[];
}

/** Records the keys read through it. */
class ReadKeys implements StateReader {
  readonly keys: string[] = [];
  constructor(private readonly base: StateReader) {}
  get(key: string): StateValue | undefined {
    this.keys.push(key);
    return this.base.get(key);
  }
}

export class ResolveCache {
  private block: BlockRef | undefined;
  /** When this process first saw the current finalized block ({@link nowMs}). */
  private blockSinceMs = 0;
  /** `,"block_number":…,"block_hash":"…"}` of the current finalized block. */
  private tail = '';
  /** JSON text, not bytes: Node writes a string body together with the headers (no separate chunk for the body). */
  private readonly bodies: LRUCache<string, Entry> | null;
  /** DIDs that missed while the budget was full: admitted on their next miss (made when the budget first fills). */
  private admission: MissFilter | undefined;
  /** State key → the DIDs whose cached body read it. */
  private readonly dependents = new Map<string, string | Set<string>>();
  private renderCount = 0;
  private answerCount = 0;

  constructor(
    private readonly ledger: ResolveCacheLedger,
    private readonly render: ResolveRender,
    /** Memory for cached bodies (0: none are kept). */
    private readonly maxBytes = DEFAULT_RESOLVE_CACHE_BYTES,
    /** Milliseconds, monotonic: how long a block has stood ({@link KEEP_BODY_AFTER_MS}). */
    private readonly nowMs: () => number = () => performance.now(),
  ) {
    this.bodies =
      maxBytes > 0
        ? new LRUCache<string, Entry>({
            maxSize: maxBytes,
            sizeCalculation: entrySize,
            dispose: (entry, did) => this.unindex(did, entry),
          })
        : null;
  }

  /** DIDs held (observability, tests). */
  get size(): number {
    return this.bodies?.size ?? 0;
  }

  /** Bytes counted for what is held (observability, tests). */
  get bytes(): number {
    return this.bodies?.calculatedSize ?? 0;
  }

  /** Renders since start: a cached answer renders nothing (tests prove what survives a block by counting them). */
  get renders(): number {
    return this.renderCount;
  }

  /** Answers since start, rendered or cached (`ddn_directory_resolve_answers_total`: answers − renders were cached). */
  get answers(): number {
    return this.answerCount;
  }

  /** The JSON body of `did`'s resolve: the cached DID part when nothing it read changed, and the current block. */
  body(did: string): string {
    this.answerCount++;
    this.follow();
    const pending = this.ledger.hasPendingFor(did);
    if (!pending) {
      const cached = this.bodies?.get(did);
      if (cached !== undefined) {
        const block = this.block!;
        if (cached.block === block) return cached.text;
        const body = cached.text.slice(0, cached.headLength) + this.tail;
        if (this.nowMs() - this.blockSinceMs >= KEEP_BODY_AFTER_MS) {
          cached.text = body;
          cached.block = block;
        }
        return body;
      }
    }
    const reads = new ReadKeys(this.ledger.finalizedView());
    this.renderCount++;
    const json = JSON.stringify(this.render(did, reads));
    const head = json.slice(0, -1);
    if (head.length <= 1) return `{${this.tail.slice(1)}`;
    if (!pending) this.keep(did, { text: head, block: undefined, headLength: head.length, deps: otherKeys(did, reads.keys) });
    return head + this.tail;
  }

  /** Brings the cache to the current finalized block: drops the entries that read a key the new blocks wrote. */
  private follow(): void {
    const block = this.ledger.finalizedRefNow();
    if (block === this.block) return;
    const before = this.block;
    this.block = block;
    this.blockSinceMs = this.nowMs();
    this.tail = `,"block_number":${block.number},"block_hash":${JSON.stringify(block.hash)}}`;
    if (before === undefined || before.hash === block.hash) return;
    const touched = block.number > before.number ? this.ledger.touchedKeys(before.number, block.number) : undefined;
    if (touched === undefined) {
      this.bodies?.clear();
      return;
    }
    for (const key of touched) {
      const own = ownKeyDid(key);
      if (own !== undefined) this.bodies?.delete(own);
      const dids = this.dependents.get(key);
      if (dids === undefined) continue;
      if (typeof dids === 'string') this.bodies?.delete(dids);
      else for (const did of [...dids]) this.bodies?.delete(did);
    }
  }

  private keep(did: string, entry: Entry): void {
    if (this.bodies === null) return;
    // full: only a DID that missed before displaces another
    if (this.bodies.calculatedSize + entrySize(entry, did) > this.maxBytes) {
      this.admission ??= new MissFilter(this.maxBytes / BYTES_PER_FILTER_SLOT);
      if (!this.admission.seenBefore(did)) return;
    }
    this.bodies.set(did, entry);
    // an entry larger than the whole budget is not kept (and indexes nothing)
    if (this.bodies.peek(did) !== entry) return;
    for (const key of entry.deps) {
      const dids = this.dependents.get(key);
      if (dids === undefined) this.dependents.set(key, did);
      else if (typeof dids === 'string') {
        if (dids !== did) this.dependents.set(key, new Set([dids, did]));
      } else dids.add(did);
    }
  }

  private unindex(did: string, entry: Entry): void {
    for (const key of entry.deps) {
      const dids = this.dependents.get(key);
      if (dids === did) this.dependents.delete(key);
      else if (typeof dids === 'object') {
        dids.delete(did);
        if (dids.size === 0) this.dependents.delete(key);
      }
    }
  }
}

/** The DID a key of {@link OWN_KEY_PREFIXES} names, else undefined. */
function ownKeyDid(key: string): string | undefined {
  for (const prefix of OWN_KEY_PREFIXES) if (key.startsWith(prefix)) return key.slice(prefix.length);
  return undefined;
}

/**
 * The keys of `keys` that are not `did`'s own: what the dependency index must hold for it. A million cached answers
 * otherwise keep two key strings, an array and two index entries each, which the collector marks on every full
 * collection (bench/HISTORY.md, session 26).
 */
function otherKeys(did: string, keys: readonly string[]): readonly string[] {
  let other: string[] | undefined;
  for (const key of keys) if (ownKeyDid(key) !== did) (other ??= []).push(key);
  return other ?? NO_KEYS;
}

/** Bytes an entry holds, roughly: its strings (one byte per character: JSON text is ASCII) and fixed overheads. */
function entrySize(entry: Entry, did: string): number {
  let n = ENTRY_OVERHEAD_BYTES + entry.headLength + TAIL_BYTES + did.length;
  for (const key of entry.deps) n += KEY_OVERHEAD_BYTES + key.length;
  return n;
}
