/**
 * Bytes kept under ASCII string keys, off the JavaScript heap: each value is a record appended to the newest of a
 * ring of large Buffers (segments), found through a {@link HashSlots} index by a hash of its key, whose bytes the
 * record holds beside the value for the comparison. No JavaScript object is made per record: a million records are
 * a few hundred Buffers and a handful of typed arrays to the garbage collector, and a hit sets one byte (no
 * reordering of a recency list).
 *
 * Eviction is a segment at a time, oldest first, with a second chance (a FIFO that approximates LRU, as CLOCK
 * does): when the newest segment is full and the budget allows no other, the oldest is compacted in place — the
 * records read since it was last compacted or written are kept (their mark cleared), the others dropped — and
 * becomes the newest. A record's slot in the index and its id are freed when it is dropped or deleted; its bytes
 * when its segment is next compacted.
 *
 * Memory: the segments allocated (one at a time, as records arrive) and the index's typed arrays, together at most
 * the budget. A record larger than a segment is not kept.
 */
import { randomBytes } from 'node:crypto';
import { HashSlots } from './hash-slots.js';

/** Record header: id, key length, value length (u32 each). */
const HEADER_BYTES = 12;
const MIN_SEGMENT_BYTES = 1024;
const MAX_SEGMENT_BYTES = 8 * 1024 * 1024;
/** Segments a budget is cut into (at most {@link MAX_SEGMENT_BYTES} each). */
const SEGMENTS_PER_BUDGET = 16;

/** The segment size of a budget: a sixteenth, whole KiB, between 1 KiB and 8 MiB. */
export function segmentBytesFor(maxBytes: number): number {
  const bytes = Math.floor(maxBytes / SEGMENTS_PER_BUDGET / 1024) * 1024;
  return Math.min(MAX_SEGMENT_BYTES, Math.max(MIN_SEGMENT_BYTES, bytes));
}

/**
 * A random start for {@link hashKey}, per process: DIDs are chosen by whoever registers them, and keys ground offline
 * to one stretch of the index would make its lookups walk that stretch (the probing is linear).
 */
const HASH_SEED = randomBytes(4).readInt32LE(0);

/** 32-bit FNV-1a of the string's UTF-16 code units, from a per-process seed. */
export function hashKey(key: string): number {
  let h = 0x811c9dc5 ^ HASH_SEED;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return h ^ (h >>> 15);
}

export class BodyArena {
  readonly segmentBytes: number;
  private readonly segments: Buffer[] = [];
  /** Bytes written into each segment. */
  private readonly used: number[] = [];
  /** Segment numbers, oldest first; the last is the one appended to. */
  private readonly ring: number[] = [];
  private readonly index = new HashSlots();
  // per id: where its record is, its lengths, its hash, whether it was read since its segment was last compacted
  private segmentOf = new Int32Array(32).fill(-1);
  private offsetOf = new Int32Array(32);
  private keyLengthOf = new Int32Array(32);
  private valueLengthOf = new Int32Array(32);
  private hashOf = new Int32Array(32);
  private readOf = new Uint8Array(32);
  /** 1 when the value is ASCII (read back as Latin-1 text, a copy; else decoded as UTF-8). */
  private asciiOf = new Uint8Array(32);
  /** The stamp and length of the suffix written after the value ({@link textWith}; -1: none yet). */
  private stampOf = new Int32Array(32);
  private suffixLengthOf = new Int32Array(32);
  /** Ids free for reuse (a stack), and the next never used. */
  private free: number[] = [];
  private nextId = 0;

  constructor(
    private readonly maxBytes: number,
    /** Called with a record's id as it is dropped (evicted, deleted or cleared), before the id is reused. */
    private readonly onDrop: (id: number) => void = () => {},
    segmentBytes = segmentBytesFor(maxBytes),
    /** Room kept after each value for a suffix ({@link textWith}). */
    readonly suffixBytes = 0,
    /** The keys' hash (tests give one that collides). */
    private readonly hash: (key: string) => number = hashKey,
  ) {
    this.segmentBytes = segmentBytes;
  }

  /** Records held. */
  get size(): number {
    return this.index.size;
  }

  /** Memory taken: the segments allocated and the index. */
  get bytes(): number {
    return this.segments.length * this.segmentBytes + this.indexBytes();
  }

  /** The id of `key`'s record (marking it read), or -1. */
  find(key: string): number {
    const id = this.lookup(key, this.hash(key));
    if (id >= 0) this.readOf[id] = 1;
    return id;
  }

  /** The id of `key`'s record, or -1, without marking it read. */
  peek(key: string): number {
    return this.lookup(key, this.hash(key));
  }

  /**
   * The value of record `id` followed by `suffix` (ASCII), as text: one copy out of the segment into a flat string.
   * The suffix is written into the room kept after the value ({@link suffixBytes}) when `stamp` differs from the
   * one it was written for, so a suffix that changes seldom (the resolve cache's block fields) is written once per
   * record and change, not per read.
   */
  textWith(id: number, suffix: string, stamp: number): string {
    const start = this.offsetOf[id]! + HEADER_BYTES + this.keyLengthOf[id]!;
    const end = start + this.valueLengthOf[id]!;
    const buf = this.segments[this.segmentOf[id]!]!;
    if (suffix.length > this.suffixBytes) return buf.toString('utf8', start, end) + suffix;
    if (this.stampOf[id] !== stamp || this.suffixLengthOf[id] !== suffix.length) {
      buf.write(suffix, end, 'latin1');
      this.stampOf[id] = stamp;
      this.suffixLengthOf[id] = suffix.length;
    }
    return buf.toString(this.asciiOf[id] === 1 ? 'latin1' : 'utf8', start, end + suffix.length);
  }

  /** True when a record of `keyLength` and `valueLength` bytes would be kept without dropping another. */
  fits(keyLength: number, valueLength: number): boolean {
    const n = this.recordBytes(keyLength, valueLength);
    if (n > this.segmentBytes) return false;
    return this.roomInNewest() >= n || this.canAllocate();
  }

  /**
   * Keeps `value` (UTF-8 text, or bytes) under `key` in place of any record it had; the new record's id, or -1 when
   * it is not kept (larger than a segment, a key not ASCII, a budget too small for one segment).
   */
  set(key: string, value: string | Buffer): number {
    this.delete(key);
    const valueLength = typeof value === 'string' ? Buffer.byteLength(value) : value.length;
    const n = this.recordBytes(key.length, valueLength);
    if (n > this.segmentBytes || key.length === 0 || !isAscii(key) || !this.makeRoom(n)) return -1;
    const id = this.newId();
    const seg = this.ring[this.ring.length - 1]!;
    const buf = this.segments[seg]!;
    const at = this.used[seg]!;
    buf.writeUInt32LE(id, at);
    buf.writeUInt32LE(key.length, at + 4);
    buf.writeUInt32LE(valueLength, at + 8);
    buf.write(key, at + HEADER_BYTES, 'latin1');
    const valueAt = at + HEADER_BYTES + key.length;
    if (typeof value === 'string') buf.write(value, valueAt, 'utf8');
    else value.copy(buf, valueAt);
    this.used[seg] = at + n;
    const hash = this.hash(key);
    this.segmentOf[id] = seg;
    this.offsetOf[id] = at;
    this.keyLengthOf[id] = key.length;
    this.valueLengthOf[id] = valueLength;
    this.hashOf[id] = hash;
    this.readOf[id] = 0;
    this.asciiOf[id] = typeof value === 'string' && valueLength === value.length ? 1 : 0;
    this.stampOf[id] = -1;
    this.index.add(hash, id);
    this.trim();
    return this.segmentOf[id] === -1 ? -1 : id;
  }

  /** Drops `key`'s record; false when none is held. */
  delete(key: string): boolean {
    const id = this.lookup(key, this.hash(key));
    if (id < 0) return false;
    this.drop(id);
    return true;
  }

  /** Drops every record; the segments are kept for reuse. */
  clear(): void {
    for (let id = 0; id < this.nextId; id++) if (this.segmentOf[id]! >= 0) this.onDrop(id);
    this.index.clear();
    this.segmentOf.fill(-1);
    this.free = [];
    this.nextId = 0;
    this.used.fill(0);
  }

  private lookup(key: string, hash: number): number {
    for (let s = this.index.first(hash); s >= 0; s = this.index.next(s, hash)) {
      const id = this.index.idAt(s);
      if (this.keyIs(id, key)) return id;
    }
    return -1;
  }

  private keyIs(id: number, key: string): boolean {
    const length = this.keyLengthOf[id]!;
    if (length !== key.length) return false;
    const buf = this.segments[this.segmentOf[id]!]!;
    const at = this.offsetOf[id]! + HEADER_BYTES;
    for (let i = 0; i < length; i++) if (buf[at + i] !== key.charCodeAt(i)) return false;
    return true;
  }

  private drop(id: number): void {
    this.onDrop(id);
    this.index.remove(this.hashOf[id]!, id);
    this.segmentOf[id] = -1;
    this.free.push(id);
  }

  private newId(): number {
    const reused = this.free.pop();
    if (reused !== undefined) return reused;
    const id = this.nextId++;
    if (id === this.segmentOf.length) this.growIds();
    return id;
  }

  private growIds(): void {
    const n = this.segmentOf.length * 2;
    const grown = <T extends Int32Array | Uint8Array>(a: T, make: (n: number) => T): T => {
      const b = make(n);
      b.set(a);
      return b;
    };
    this.segmentOf = grown(this.segmentOf, (k) => new Int32Array(k).fill(-1));
    this.offsetOf = grown(this.offsetOf, (k) => new Int32Array(k));
    this.keyLengthOf = grown(this.keyLengthOf, (k) => new Int32Array(k));
    this.valueLengthOf = grown(this.valueLengthOf, (k) => new Int32Array(k));
    this.hashOf = grown(this.hashOf, (k) => new Int32Array(k));
    this.readOf = grown(this.readOf, (k) => new Uint8Array(k));
    this.asciiOf = grown(this.asciiOf, (k) => new Uint8Array(k));
    this.stampOf = grown(this.stampOf, (k) => new Int32Array(k));
    this.suffixLengthOf = grown(this.suffixLengthOf, (k) => new Int32Array(k));
  }

  /** The bytes a record of these lengths takes in a segment: its header, key, value and the suffix's room. */
  private recordBytes(keyLength: number, valueLength: number): number {
    return HEADER_BYTES + keyLength + valueLength + this.suffixBytes;
  }

  /** The bytes of the record written at `at` of `buf` ({@link recordBytes}, its lengths read from its header). */
  private recordBytesAt(buf: Buffer, at: number): number {
    return this.recordBytes(buf.readUInt32LE(at + 4), buf.readUInt32LE(at + 8));
  }

  private indexBytes(): number {
    return this.index.byteLength + this.segmentOf.length * 30;
  }

  private canAllocate(): boolean {
    return (this.segments.length + 1) * this.segmentBytes + this.indexBytes() <= this.maxBytes;
  }

  /** Makes the newest segment hold `n` more bytes: a new segment while the budget allows, else the oldest compacted. */
  private makeRoom(n: number): boolean {
    if (this.roomInNewest() >= n) return true;
    if (this.canAllocate()) {
      this.segments.push(Buffer.allocUnsafeSlow(this.segmentBytes));
      this.used.push(0);
      this.ring.push(this.segments.length - 1);
      return true;
    }
    if (this.ring.length === 0) return false;
    // each pass clears the marks of the records it keeps: after one turn of the ring every record is unmarked
    for (let pass = 0; pass <= this.ring.length; pass++) {
      this.compactOldest(pass === this.ring.length);
      if (this.roomInNewest() >= n) return true;
    }
    return false;
  }

  private roomInNewest(): number {
    return this.ring.length === 0 ? 0 : this.segmentBytes - this.used[this.ring[this.ring.length - 1]!]!;
  }

  /** Compacts the oldest segment in place (keeping the records read since, unless `dropAll`) and makes it the newest. */
  private compactOldest(dropAll: boolean): void {
    const seg = this.ring.shift()!;
    const buf = this.segments[seg]!;
    const end = this.used[seg]!;
    let write = 0;
    for (let at = 0; at < end;) {
      const id = buf.readUInt32LE(at);
      const n = this.recordBytesAt(buf, at);
      const live = this.segmentOf[id] === seg && this.offsetOf[id] === at;
      if (live && this.readOf[id] === 1 && !dropAll) {
        if (write !== at) buf.copy(buf, write, at, at + n);
        this.offsetOf[id] = write;
        this.readOf[id] = 0;
        write += n;
      } else if (live) this.drop(id);
      at += n;
    }
    this.used[seg] = write;
    this.ring.push(seg);
  }

  /** Gives back segments while the index's growth has taken the memory past the budget (their records dropped). */
  private trim(): void {
    while (this.bytes > this.maxBytes && this.ring.length > 1) {
      const seg = this.ring.shift()!;
      const buf = this.segments[seg]!;
      for (let at = 0; at < this.used[seg]!;) {
        const id = buf.readUInt32LE(at);
        if (this.segmentOf[id] === seg && this.offsetOf[id] === at) this.drop(id);
        at += this.recordBytesAt(buf, at);
      }
      // the last segment allocated takes the freed one's number
      const last = this.segments.length - 1;
      if (seg !== last) {
        this.segments[seg] = this.segments[last]!;
        this.used[seg] = this.used[last]!;
        for (let id = 0; id < this.nextId; id++) if (this.segmentOf[id] === last) this.segmentOf[id] = seg;
        this.ring[this.ring.indexOf(last)] = seg;
      }
      this.segments.pop();
      this.used.pop();
    }
  }
}

function isAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return false;
  return true;
}
