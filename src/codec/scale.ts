/**
 * SCALE primitives (ledger-rules.md §1.3) with strict, canonical-only decoding (§1.4).
 * Integers up to u32 are JS numbers; u64 is a bigint.
 */
import { bytesEqual, fromUtf8, utf8 } from '../base/bytes.js';

export class ScaleDecodeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ScaleDecodeError';
  }
}

const U64_MAX = (1n << 64n) - 1n;

/**
 * Writes SCALE into one growing buffer: every write copies its bytes in place (a write of a ledger transaction
 * encodes its extrinsic, payload and document several times, and a small array per field was most of their cost).
 */
export class ScaleWriter {
  private buf = new Uint8Array(256);
  private size = 0;

  /** Room for `n` more bytes. */
  private reserve(n: number): this {
    const need = this.size + n;
    if (need <= this.buf.length) return this;
    const grown = new Uint8Array(Math.max(need, this.buf.length * 2));
    grown.set(this.buf.subarray(0, this.size));
    this.buf = grown;
    return this;
  }

  raw(b: Uint8Array): this {
    this.reserve(b.length);
    this.buf.set(b, this.size);
    this.size += b.length;
    return this;
  }
  u8(n: number): this {
    if (!Number.isInteger(n) || n < 0 || n > 0xff) throw new RangeError(`u8 out of range: ${n}`);
    this.reserve(1);
    this.buf[this.size++] = n;
    return this;
  }
  u16(n: number): this {
    if (!Number.isInteger(n) || n < 0 || n > 0xffff) throw new RangeError(`u16 out of range: ${n}`);
    return this.le(n, 2);
  }
  u32(n: number): this {
    if (!Number.isInteger(n) || n < 0 || n > 0xffffffff) throw new RangeError(`u32 out of range: ${n}`);
    return this.le(n, 4);
  }
  u64(n: bigint): this {
    if (n < 0n || n > U64_MAX) throw new RangeError(`u64 out of range: ${n}`);
    this.le(Number(n & 0xffffffffn), 4);
    return this.le(Number(n >> 32n), 4);
  }
  /** `n` (a non-negative integer below 2^32) as `bytes` little-endian bytes. */
  private le(n: number, bytes: number): this {
    this.reserve(bytes);
    for (let i = 0; i < bytes; i++) this.buf[this.size++] = (n >>> (8 * i)) & 0xff;
    return this;
  }
  bool(v: boolean): this {
    return this.u8(v ? 1 : 0);
  }
  compact(n: number | bigint): this {
    // the single-, two- and four-byte modes of a length, without encodeCompact's bigint arithmetic
    if (typeof n === 'number' && Number.isInteger(n) && n >= 0 && n < 2 ** 30) {
      if (n < 1 << 6) return this.le(n << 2, 1);
      if (n < 1 << 14) return this.le((n << 2) | 1, 2);
      return this.le(((n << 2) | 2) >>> 0, 4);
    }
    return this.raw(encodeCompact(n));
  }
  /** `Bytes`: compact length ‖ raw bytes. */
  bytes(b: Uint8Array): this {
    return this.compact(b.length).raw(b);
  }
  /** `Bytes` holding UTF-8 text. */
  str(s: string): this {
    const n = s.length;
    for (let i = 0; i < n; i++) if (s.charCodeAt(i) > 0x7f) return this.bytes(utf8(s));
    // ASCII (ids, DIDs, URLs): its UTF-8 is one byte per code unit, copied without an encoder's array
    this.compact(n).reserve(n);
    for (let i = 0; i < n; i++) this.buf[this.size++] = s.charCodeAt(i);
    return this;
  }
  option<T>(v: T | null | undefined, write: (w: this, v: T) => void): this {
    if (v === null || v === undefined) return this.u8(0);
    this.u8(1);
    write(this, v);
    return this;
  }
  vec<T>(items: readonly T[], write: (w: this, v: T) => void): this {
    this.compact(items.length);
    for (const it of items) write(this, it);
    return this;
  }
  /** The bytes written (a copy: the writer may go on). */
  finish(): Uint8Array {
    return this.buf.slice(0, this.size);
  }
  get length(): number {
    return this.size;
  }
}

export function encodeCompact(n: number | bigint): Uint8Array {
  const v = BigInt(n);
  if (v < 0n) throw new RangeError('compact must be non-negative');
  if (v < 1n << 6n) return Uint8Array.of(Number(v << 2n));
  if (v < 1n << 14n) {
    const x = Number((v << 2n) | 1n);
    return Uint8Array.of(x & 0xff, x >>> 8);
  }
  if (v < 1n << 30n) {
    const x = Number((v << 2n) | 2n);
    const b = new Uint8Array(4);
    new DataView(b.buffer).setUint32(0, x >>> 0, true);
    return b;
  }
  const bytes: number[] = [];
  let t = v;
  while (t > 0n) {
    bytes.push(Number(t & 0xffn));
    t >>= 8n;
  }
  while (bytes.length < 4) bytes.push(0);
  if (bytes.length > 67) throw new RangeError('compact too large');
  return Uint8Array.of(((bytes.length - 4) << 2) | 3, ...bytes);
}

export class ScaleReader {
  private off = 0;
  constructor(private readonly buf: Uint8Array) {}

  get remaining(): number {
    return this.buf.length - this.off;
  }
  get offset(): number {
    return this.off;
  }
  private take(n: number): Uint8Array {
    if (n > this.remaining) throw new ScaleDecodeError(`unexpected end of input (need ${n}, have ${this.remaining})`);
    const out = this.buf.subarray(this.off, this.off + n);
    this.off += n;
    return out;
  }
  raw(n: number): Uint8Array {
    return this.take(n).slice();
  }
  u8(): number {
    return this.take(1)[0]!;
  }
  u16(): number {
    const b = this.take(2);
    return b[0]! | (b[1]! << 8);
  }
  u32(): number {
    const b = this.take(4);
    return new DataView(b.buffer, b.byteOffset, 4).getUint32(0, true);
  }
  u64(): bigint {
    const b = this.take(8);
    return new DataView(b.buffer, b.byteOffset, 8).getBigUint64(0, true);
  }
  bool(): boolean {
    const v = this.u8();
    if (v > 1) throw new ScaleDecodeError(`invalid bool tag ${v}`);
    return v === 1;
  }
  /** Compact length; rejects non-minimal encodings and values above `Number.MAX_SAFE_INTEGER`. */
  compact(): number {
    const first = this.u8();
    const mode = first & 3;
    if (mode === 0) return first >>> 2;
    if (mode === 1) {
      const v = (first | (this.u8() << 8)) >>> 2;
      if (v < 1 << 6) throw new ScaleDecodeError('non-canonical compact');
      return v;
    }
    if (mode === 2) {
      const rest = this.take(3);
      const v = (first | (rest[0]! << 8) | (rest[1]! << 16) | (rest[2]! << 24)) >>> 2;
      if (v < 1 << 14) throw new ScaleDecodeError('non-canonical compact');
      return v;
    }
    const k = (first >>> 2) + 4;
    const b = this.take(k);
    if (b[k - 1] === 0) throw new ScaleDecodeError('non-canonical compact');
    let v = 0n;
    for (let i = k - 1; i >= 0; i--) v = (v << 8n) | BigInt(b[i]!);
    if (v < 1n << 30n) throw new ScaleDecodeError('non-canonical compact');
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new ScaleDecodeError('compact too large');
    return Number(v);
  }
  /** `Bytes≤max`. */
  bytes(max = Number.MAX_SAFE_INTEGER): Uint8Array {
    const n = this.compact();
    if (n > max) throw new ScaleDecodeError(`byte vector longer than ${max}`);
    return this.raw(n);
  }
  /** `Bytes≤max` holding UTF-8 text (invalid UTF-8 fails). */
  str(max = Number.MAX_SAFE_INTEGER): string {
    const b = this.bytes(max);
    try {
      return fromUtf8(b);
    } catch {
      throw new ScaleDecodeError('invalid UTF-8');
    }
  }
  option<T>(read: (r: this) => T): T | null {
    const tag = this.u8();
    if (tag === 0) return null;
    if (tag === 1) return read(this);
    throw new ScaleDecodeError(`invalid option tag ${tag}`);
  }
  vec<T>(max: number, read: (r: this) => T): T[] {
    const n = this.compact();
    if (n > max) throw new ScaleDecodeError(`vector longer than ${max}`);
    const out: T[] = [];
    for (let i = 0; i < n; i++) out.push(read(this));
    return out;
  }
  /** Enum variant index, checked against the number of declared variants. */
  variant(count: number): number {
    const v = this.u8();
    if (v >= count) throw new ScaleDecodeError(`enum index ${v} out of range`);
    return v;
  }
  end(): void {
    if (this.remaining !== 0) throw new ScaleDecodeError(`${this.remaining} trailing bytes`);
  }
}

/**
 * Strict decoding (ledger-rules.md §1.4): decode, require no trailing bytes, re-encode and compare.
 * Throws ScaleDecodeError on any failure.
 */
export function decodeStrict<T>(bytes: Uint8Array, decode: (r: ScaleReader) => T, encode: (v: T) => Uint8Array): T {
  const r = new ScaleReader(bytes);
  const v = decode(r);
  r.end();
  if (!bytesEqual(encode(v), bytes)) throw new ScaleDecodeError('non-canonical encoding');
  return v;
}

/** Runs a decoder that must consume everything; returns undefined on any decode error. */
export function tryDecodeStrict<T>(bytes: Uint8Array, decode: (r: ScaleReader) => T, encode: (v: T) => Uint8Array): T | undefined {
  try {
    return decodeStrict(bytes, decode, encode);
  } catch (e) {
    if (e instanceof ScaleDecodeError || e instanceof RangeError) return undefined;
    throw e;
  }
}
