/**
 * Strict standard Base64 of envelope fields (http-api.md §10.1), checked without decoding: the alphabet and
 * padding by one scan, the length, and the unused bits of the last character before padding (zero in the
 * canonical encoding). Accepts exactly what decoding and re-encoding to the same text accepts, without the
 * two copies that costs on a 25 MiB payload.
 */
const STD_B64_RE = /^[A-Za-z0-9+/]*={0,2}$/;
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/** The decoded length of `s` when it is canonical standard Base64 with padding, else `undefined`. */
export function stdBase64DecodedLength(s: string): number | undefined {
  if (s.length % 4 !== 0 || !STD_B64_RE.test(s)) return undefined;
  if (s.length === 0) return 0;
  const pad = s.endsWith('==') ? 2 : s.endsWith('=') ? 1 : 0;
  if (pad > 0) {
    const last = ALPHABET.indexOf(s[s.length - pad - 1]);
    const unusedBits = pad === 2 ? 0b1111 : 0b11;
    if ((last & unusedBits) !== 0) return undefined;
  }
  return (s.length / 4) * 3 - pad;
}

/** True iff `s` is canonical standard Base64 with padding. */
export function isStdBase64(s: string): boolean {
  return stdBase64DecodedLength(s) !== undefined;
}
