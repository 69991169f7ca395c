/**
 * The envelope content hash (http-api.md §10.2, §11.1 step 10): SHA-256 of the canonical JSON of the client
 * fields, fed to the hash piece by piece instead of building the canonical text first, so a 25 MiB payload is
 * not copied into one more string (and then into its UTF-8 bytes) just to be hashed. The bytes hashed are
 * exactly `canonicalJson(value)`'s; the tests check both agree.
 *
 * A small value (an envelope of up to {@link SMALL_TEXT_CHARS} characters of strings, most of them) is copied with
 * every object's members in sorted order and written by one `JSON.stringify`, which makes the same text in a
 * sixth less time than the pieces (a 1 KiB envelope: 4.2 → 3.5 µs, bench/HISTORY.md session 38); a value whose
 * copy `JSON.stringify` would not write in that order (an array-index key comes first in any object) or would
 * write otherwise (a function or symbol member) is hashed piece by piece.
 */
import { createHash, hash as oneShotHash, type Hash } from 'node:crypto';

/** Text gathered before one `update` (most envelopes hash in a single call). */
const FLUSH_CHARS = 16 * 1024;
/** Long strings are hashed in slices of this many characters, never encoded whole. */
const SLICE_CHARS = 1024 * 1024;
/** Characters `JSON.stringify` escapes: `"`, `\`, controls, and (well-formed stringify) surrogates. */
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

class CanonicalHasher {
  /** Created once the text outgrows one piece; most envelopes are hashed in one call without it. */
  private hash: Hash | undefined;
  private text = '';

  put(piece: string): void {
    this.text += piece;
    if (this.text.length >= FLUSH_CHARS) this.flush();
  }

  private stream(): Hash {
    this.hash ??= createHash('sha256');
    return this.hash;
  }

  /** A JSON string value: long ones without escapes go to the hash in slices. */
  putString(s: string): void {
    if (s.length < FLUSH_CHARS || NEEDS_ESCAPE.test(s)) {
      this.put(JSON.stringify(s));
      return;
    }
    this.put('"');
    this.flush();
    for (let i = 0; i < s.length; i += SLICE_CHARS) this.stream().update(s.slice(i, i + SLICE_CHARS), 'utf8');
    this.put('"');
  }

  value(v: unknown): void {
    if (typeof v === 'string') {
      this.putString(v);
    } else if (Array.isArray(v)) {
      this.put('[');
      for (let i = 0; i < v.length; i++) {
        if (i > 0) this.put(',');
        const item: unknown = v[i];
        if (item === undefined) this.put('null');
        else this.value(item);
      }
      this.put(']');
    } else if (v !== null && typeof v === 'object') {
      const o = v as Record<string, unknown>;
      this.put('{');
      let first = true;
      for (const k of Object.keys(o).sort()) {
        if (o[k] === undefined) continue;
        this.put(first ? '' : ',');
        first = false;
        this.putString(k);
        this.put(':');
        this.value(o[k]);
      }
      this.put('}');
    } else {
      this.put(JSON.stringify(v) ?? 'null');
    }
  }

  flush(): void {
    if (this.text.length === 0) return;
    this.stream().update(this.text, 'utf8');
    this.text = '';
  }

  digestHex(): string {
    if (this.hash === undefined) return oneShotHash('sha256', this.text, 'hex');
    this.flush();
    return this.hash.digest('hex');
  }
}

/** Characters of strings up to which a value is hashed through one `JSON.stringify` of a sorted copy. */
const SMALL_TEXT_CHARS = 64 * 1024;
/** Keys a sorted copy cannot hold in its order: array indices (and all other keys starting with a digit), `__proto__`. */
const UNORDERED_KEY = /^(?:\d|__proto__$)/;
/** The copy cannot be made (see {@link sortedCopy}). */
const NO_COPY = Symbol('no copy');

/**
 * `v` with every object's members inserted in sorted key order (members whose value is undefined left out, as
 * canonical JSON leaves them out), so that `JSON.stringify` of it is `canonicalJson(v)`; {@link NO_COPY} when it
 * would not be — a key listed in {@link UNORDERED_KEY}, a function or symbol — or
 * when its strings pass `room.chars` characters.
 */
function sortedCopy(v: unknown, room: { chars: number }): unknown {
  if (typeof v === 'string') {
    room.chars -= v.length;
    return room.chars < 0 ? NO_COPY : v;
  }
  if (typeof v !== 'object' || v === null) return typeof v === 'function' || typeof v === 'symbol' ? NO_COPY : v;
  if (Array.isArray(v)) {
    const out: unknown[] = new Array<unknown>(v.length);
    for (let i = 0; i < v.length; i++) {
      const item = v[i] === undefined ? null : sortedCopy(v[i], room);
      if (item === NO_COPY) return NO_COPY;
      out[i] = item;
    }
    return out;
  }
  // own enumerable members only, as canonical JSON reads any object (a Date or a Map is `{}`): the copy is plain
  const o = v as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(o).sort()) {
    if (o[k] === undefined) continue;
    room.chars -= k.length;
    if (room.chars < 0 || UNORDERED_KEY.test(k)) return NO_COPY;
    const item = sortedCopy(o[k], room);
    if (item === NO_COPY) return NO_COPY;
    out[k] = item;
  }
  return out;
}

/** Lower-case hex SHA-256 of `canonicalJson(value)`. */
export function canonicalJsonSha256Hex(value: unknown): string {
  const copy = sortedCopy(value, { chars: SMALL_TEXT_CHARS });
  if (copy !== NO_COPY) return oneShotHash('sha256', JSON.stringify(copy) ?? 'null', 'hex');
  const h = new CanonicalHasher();
  h.value(value);
  return h.digestHex();
}
