/**
 * Raw request-target handling (http-api.md §0.4): split the raw path on `/` first, then percent-decode each
 * segment exactly once (fastify's router does the same for routes; the WebSocket upgrade path uses this);
 * query strings use form decoding (first occurrence wins, bad encoding is 400) as fastify's query parser.
 */
import { DdnError, type ErrorCode } from '../base/errors.js';

const fatalUtf8 = new TextDecoder('utf-8', { fatal: true });

/** The raw path and raw query of a request target, undecoded. */
export interface RawTarget {
  /** Raw path, always starting with `/`. */
  path: string;
  /** Raw query without the `?`; empty when absent. */
  query: string;
}

/** Splits a raw request target (`/a/b?x=1`, or absolute-form `http://host/a?x`) into path and query. */
export function splitTarget(rawUrl: string): RawTarget {
  let target = rawUrl;
  if (!target.startsWith('/')) {
    // absolute-form (RFC 9112 §3.2.2): drop scheme and authority
    const scheme = target.indexOf('://');
    if (scheme >= 0) {
      const slash = target.indexOf('/', scheme + 3);
      const q = target.indexOf('?', scheme + 3);
      if (slash < 0 || (q >= 0 && q < slash)) target = '/' + (q >= 0 ? target.slice(q) : '');
      else target = target.slice(slash);
    } else {
      target = '/' + target;
    }
  }
  const hash = target.indexOf('#');
  if (hash >= 0) target = target.slice(0, hash);
  const q = target.indexOf('?');
  return q < 0 ? { path: target, query: '' } : { path: target.slice(0, q), query: target.slice(q + 1) };
}

/** True when `path` has an empty segment (`/a//b`, `//a`), one trailing `/` aside (not significant, §0.4). */
export function hasEmptySegment(path: string): boolean {
  return (path.endsWith('/') ? path.slice(0, -1) : path).includes('//');
}

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  return -1;
}

/**
 * Percent-decodes `s` exactly once and validates the result as UTF-8; `undefined` when an escape is malformed
 * or the bytes are not UTF-8. Characters above U+007F in the input (Node hands raw octets over as Latin-1) are
 * taken as octets. `+` is left alone.
 */
export function percentDecode(s: string): string | undefined {
  let ascii = true;
  let escaped = false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x25) escaped = true;
    else if (c > 0x7f) ascii = false;
  }
  if (!escaped && ascii) return s;
  // ASCII input (the usual `%3A` of a DID): the engine's own decoder applies the same rules, UTF-8 included
  if (ascii) {
    try {
      return decodeURIComponent(s);
    } catch {
      return undefined;
    }
  }
  const bytes = Buffer.allocUnsafe(s.length);
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x25) {
      if (i + 2 >= s.length) return undefined;
      const hi = hexValue(s.charCodeAt(i + 1));
      const lo = hexValue(s.charCodeAt(i + 2));
      if (hi < 0 || lo < 0) return undefined;
      bytes[n++] = (hi << 4) | lo;
      i += 2;
    } else if (c > 0xff) {
      return undefined;
    } else {
      bytes[n++] = c;
    }
  }
  try {
    return fatalUtf8.decode(bytes.subarray(0, n));
  } catch {
    return undefined;
  }
}

/** The `invalid_path` error (http-api.md §1.2). */
export function invalidPath(): DdnError {
  return new DdnError('invalid_path', 'path segment has invalid percent-encoding or is not UTF-8');
}

/**
 * Splits a raw path on `/` and decodes each segment once (http-api.md §0.4). One trailing `/` is not
 * significant; `/` alone yields no segments. Throws `invalid_path` on bad percent-encoding or non-UTF-8.
 */
export function decodePathSegments(rawPath: string): string[] {
  const start = rawPath.startsWith('/') ? 1 : 0;
  const end = rawPath.length > start && rawPath.endsWith('/') ? rawPath.length - 1 : rawPath.length;
  if (end <= start) return [];
  const raw = rawPath.slice(start, end).split('/');
  const out = new Array<string>(raw.length);
  for (let i = 0; i < raw.length; i++) {
    const decoded = percentDecode(raw[i]);
    if (decoded === undefined) throw invalidPath();
    out[i] = decoded;
  }
  return out;
}

/** The query of a request without one, shared: a prototype-less object created once, frozen. */
const NO_QUERY: Record<string, string> = Object.freeze(Object.create(null) as Record<string, string>);

/**
 * Form-decodes a raw query string (`+` is a space, then percent-decoding). The first occurrence of a repeated
 * key wins. Throws `code` (default `invalid_request`) with `details.field = "query"` on bad encoding.
 */
export function parseQuery(rawQuery: string, code: ErrorCode = 'invalid_request'): Record<string, string> {
  if (rawQuery.length === 0) return NO_QUERY;
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const part of rawQuery.split('&')) {
    if (part.length === 0) continue;
    const eq = part.indexOf('=');
    const rawKey = eq < 0 ? part : part.slice(0, eq);
    const rawValue = eq < 0 ? '' : part.slice(eq + 1);
    const key = percentDecode(rawKey.replace(/\+/g, ' '));
    const value = percentDecode(rawValue.replace(/\+/g, ' '));
    if (key === undefined || value === undefined) {
      throw new DdnError(code, 'query string has invalid percent-encoding or is not UTF-8', { field: 'query' });
    }
    if (!(key in out)) out[key] = value;
  }
  return out;
}
