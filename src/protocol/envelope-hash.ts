/**
 * The envelope content hash (http-api.md §10.2, §11.1 step 10): SHA-256 of the canonical JSON of the client
 * fields, fed to the hash piece by piece instead of building the canonical text first, so a 25 MiB payload is
 * not copied into one more string (and then into its UTF-8 bytes) just to be hashed. The bytes hashed are
 * exactly `canonicalJson(value)`'s; the tests check both agree.
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

/** Lower-case hex SHA-256 of `canonicalJson(value)`. */
export function canonicalJsonSha256Hex(value: unknown): string {
  const h = new CanonicalHasher();
  h.value(value);
  return h.digestHex();
}
