/** Byte helpers shared by every layer. */

const textEncoder = new TextEncoder();
// ignoreBOM: a leading U+FEFF is text like any other; dropping it would break byte-for-byte comparison.
const fatalDecoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

export function utf8(s: string): Uint8Array {
  return textEncoder.encode(s);
}

/** Decodes UTF-8 strictly; throws TypeError on invalid input. */
export function fromUtf8(b: Uint8Array): string {
  return fatalDecoder.decode(b);
}

export function utf8Length(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

/** A Buffer over the same memory as `b` (no copy); `b` itself when it is one. */
export function asBuffer(b: Uint8Array): Buffer {
  return Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength);
}

export function toHex(b: Uint8Array): string {
  return asBuffer(b).toString('hex');
}

/** `0x` + lowercase hex. */
export function to0x(b: Uint8Array): string {
  return `0x${toHex(b)}`;
}

const HEX_RE = /^(?:[0-9a-fA-F]{2})*$/;

/** Parses hex with or without `0x`; returns undefined when it is not even-length hex. */
export function parseHex(s: string): Uint8Array | undefined {
  const body = s.startsWith('0x') || s.startsWith('0X') ? s.slice(2) : s;
  if (!HEX_RE.test(body)) return undefined;
  return new Uint8Array(Buffer.from(body, 'hex'));
}

export function concatBytes(...parts: Uint8Array[]): Uint8Array {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export function toBase64(b: Uint8Array): string {
  return asBuffer(b).toString('base64');
}

const B64_RE = /^[A-Za-z0-9+/]*={0,2}$/;
const B64URL_RE = /^[A-Za-z0-9_-]*={0,2}$/;

/** Standard or URL-safe Base64, padding optional. Undefined when malformed. */
export function parseBase64(s: string): Uint8Array | undefined {
  if (s.length === 0) return new Uint8Array(0);
  let body: string;
  if (B64_RE.test(s)) body = s;
  else if (B64URL_RE.test(s)) body = s.replace(/-/g, '+').replace(/_/g, '/');
  else return undefined;
  const stripped = body.replace(/=+$/, '');
  if (stripped.length % 4 === 1) return undefined;
  if (body.includes('=') && body.length % 4 !== 0) return undefined;
  return new Uint8Array(Buffer.from(stripped, 'base64'));
}

/** Strict standard Base64 (with canonical padding), as envelopes require. */
export function parseStdBase64(s: string): Uint8Array | undefined {
  if (!B64_RE.test(s) || s.length % 4 !== 0) return undefined;
  const b = Buffer.from(s, 'base64');
  return b.toString('base64') === s ? new Uint8Array(b) : undefined;
}

/**
 * Binary request values (`canonical_payload`, `signature`): a value beginning `0x` whose remainder is
 * even-length hex is hex; anything else is Base64 (http-api.md §0.3).
 */
export function parseBinary(s: string): Uint8Array | undefined {
  if (s.startsWith('0x')) {
    const h = parseHex(s);
    if (h) return h;
  }
  return parseBase64(s);
}
