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
 * bounded in bytes (`--directory-resolve-cache-bytes`): the DIDs' parts are bytes off the JavaScript heap
 * ({@link BodyArena}: a ring of segments, the oldest reused first, its answers read since kept). Once the budget is
 * full, a DID that misses is admitted only when it missed before ({@link MissFilter}): a read set far larger than
 * the cache would otherwise replace an entry on every miss for no hits.
 */
import type { BlockRef } from '../ledger/types.js';
import type { StateReader, StateValue } from '../ledger/state.js';
import { BodyArena } from './body-arena.js';
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
 * the machine's, or its cgroup's limit), in whole MiB, at least {@link MIN_DEFAULT_RESOLVE_CACHE_BYTES}. The answers
 * are kept off the V8 heap, so its limit does not bound them. Memory is taken only as answers are read (about 1.1 KB
 * each, a small document, and some 40 bytes of index): a directory of 20,000 DIDs takes some 25 MiB whatever the
 * budget. On a 24 GiB machine it is 3 GiB, which holds a million answers twice over; docs/operations.md, "The
 * resolve cache".
 */
export function defaultResolveCacheBytes(memoryBytes: number): number {
  return Math.max(MIN_DEFAULT_RESOLVE_CACHE_BYTES, Math.floor(memoryBytes / 8 / MIB) * MIB);
}

/** The keys every answer reads, each naming its DID: dropped by name, never indexed ({@link ownKeyDid}). */
const OWN_KEY_PREFIXES = ['did/', 'nonce/document_nonce/'] as const;
/** Room for the block's fields after each cached DID part: `,"block_number":` and 16 digits, `,"block_hash":"0x…"}`. */
const TAIL_ROOM = 128;
/** Answers kept as text for a DID read again while its block stands (a power of two; ~1 KB each). */
const HOT_SLOTS = 1024;
/** Bytes of budget per slot of the doorkeeper: about one answer's (a resolve body is ~1 KiB). */
const BYTES_PER_FILTER_SLOT = 1024;

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
  /** `,"block_number":…,"block_hash":"…"}` of the current finalized block. */
  private tail = '';
  /** Counts the finalized blocks seen: the stamp of the tail an answer's record holds ({@link BodyArena.textWith}). */
  private blocks = 0;
  /**
   * The DIDs' parts (JSON text without the closing brace), as bytes off the JavaScript heap (bench/HISTORY.md,
   * session 27): a million answers kept as strings and entry objects made the collector mark them all on every full
   * collection, and an LRU moved one of them on every hit.
   */
  private readonly bodies: BodyArena | null;
  /** DIDs that missed while the budget was full: admitted on their next miss (made when the budget first fills). */
  private admission: MissFilter | undefined;
  /** State key → the DIDs whose cached body read it. */
  private readonly dependents = new Map<string, string | Set<string>>();
  /** Arena id → the DID and the keys it read besides its own, for the (few) answers that read any. */
  private readonly dependencies = new Map<number, { did: string; keys: readonly string[] }>();
  private renderCount = 0;
  private answerCount = 0;
  /** The last answers made, by arena id modulo {@link HOT_SLOTS}: their text, id and block stamp ({@link answer}). */
  private readonly hot = new Array<string | undefined>(HOT_SLOTS);
  private readonly hotIds = new Int32Array(HOT_SLOTS).fill(-1);
  private readonly hotBlocks = new Int32Array(HOT_SLOTS);

  constructor(
    private readonly ledger: ResolveCacheLedger,
    private readonly render: ResolveRender,
    /** Memory for cached bodies and their index (0: none are kept). */
    private readonly maxBytes = DEFAULT_RESOLVE_CACHE_BYTES,
  ) {
    this.bodies = maxBytes > 0 ? new BodyArena(maxBytes, (id) => this.unindex(id), undefined, TAIL_ROOM) : null;
  }

  /** DIDs held (observability, tests). */
  get size(): number {
    return this.bodies?.size ?? 0;
  }

  /** Memory taken: the arena's segments and its index (observability, tests). */
  get bytes(): number {
    return this.bodies?.bytes ?? 0;
  }

  /** Renders since start: a cached answer renders nothing (tests prove what survives a block by counting them). */
  get renders(): number {
    return this.renderCount;
  }

  /** Answers since start, rendered or cached (`ddn_directory_resolve_answers_total`: answers − renders were cached). */
  get answers(): number {
    return this.answerCount;
  }

  /**
   * The JSON body of `did`'s resolve: the cached DID part when nothing it read changed, and the current block. A
   * cached answer is one flat string copied out of the arena: its record holds the block's fields after the DID's
   * part, written there on its first answer at each block (text, not bytes: Node writes a string body together with
   * the headers, where a Buffer body costs a second chunk of a `writev`; bench/HISTORY.md, session 27).
   */
  body(did: string): string {
    this.answerCount++;
    this.follow();
    const pending = this.ledger.hasPendingFor(did);
    if (!pending && this.bodies !== null) {
      const id = this.bodies.find(did);
      if (id >= 0) return this.answer(id);
    }
    const reads = new ReadKeys(this.ledger.finalizedView());
    this.renderCount++;
    const json = JSON.stringify(this.render(did, reads));
    const head = json.slice(0, -1);
    if (head.length <= 1) return `{${this.tail.slice(1)}`;
    if (!pending) this.keep(did, head, reads.keys);
    return head + this.tail;
  }

  /** Brings the cache to the current finalized block: drops the entries that read a key the new blocks wrote. */
  private follow(): void {
    const block = this.ledger.finalizedRefNow();
    if (block === this.block) return;
    const before = this.block;
    this.block = block;
    this.tail = `,"block_number":${block.number},"block_hash":${JSON.stringify(block.hash)}}`;
    this.blocks++;
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

  private keep(did: string, head: string, read: readonly string[]): void {
    if (this.bodies === null) return;
    // full: only a DID that missed before displaces another
    if (!this.bodies.fits(did.length, Buffer.byteLength(head))) {
      this.admission ??= new MissFilter(this.maxBytes / BYTES_PER_FILTER_SLOT);
      if (!this.admission.seenBefore(did)) return;
    }
    const id = this.bodies.set(did, head);
    // a body larger than a segment is not kept (and indexes nothing)
    if (id < 0) return;
    const keys = otherKeys(did, read);
    if (keys.length === 0) return;
    this.dependencies.set(id, { did, keys });
    for (const key of keys) {
      const dids = this.dependents.get(key);
      if (dids === undefined) this.dependents.set(key, did);
      else if (typeof dids === 'string') {
        if (dids !== did) this.dependents.set(key, new Set([dids, did]));
      } else dids.add(did);
    }
  }

  /**
   * A cached answer: the last text made for the record in its slot of {@link hot} while the block stands, else one
   * copied out of the arena. Keeps a DID read again and again (a hot DID) from being copied on every answer, as the
   * strings of the cache before did (bench/HISTORY.md, session 27); a read spread over a million DIDs leaves each
   * text a few milliseconds, young garbage.
   */
  private answer(id: number): string {
    const slot = id & (HOT_SLOTS - 1);
    if (this.hotIds[slot] === id && this.hotBlocks[slot] === this.blocks) return this.hot[slot]!;
    const text = this.bodies!.textWith(id, this.tail, this.blocks);
    this.hot[slot] = text;
    this.hotIds[slot] = id;
    this.hotBlocks[slot] = this.blocks;
    return text;
  }

  /** Called by the arena as it drops record `id`. */
  private unindex(id: number): void {
    const slot = id & (HOT_SLOTS - 1);
    if (this.hotIds[slot] === id) {
      this.hotIds[slot] = -1;
      this.hot[slot] = undefined;
    }
    const entry = this.dependencies.get(id);
    if (entry === undefined) return;
    this.dependencies.delete(id);
    const { did } = entry;
    for (const key of entry.keys) {
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
  return other ?? [];
}
