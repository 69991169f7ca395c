/**
 * The stored envelope is the request body's JSON text as received — never re-serialised, so a 25 MiB
 * payload is not parsed into a response object again (http-api.md §11.5: "client fields exactly as
 * received, plus `expires_at`").
 */

function isJsonSpace(b: number): boolean {
  return b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d;
}

/**
 * The JSON object text of a parsed request body, without a UTF-8 BOM or surrounding whitespace: a view of
 * `raw`, not a copy. `raw` must hold one JSON object (the body parser accepted it).
 */
export function trimJsonObject(raw: Buffer): Buffer {
  let start = raw.length >= 3 && raw[0] === 0xef && raw[1] === 0xbb && raw[2] === 0xbf ? 3 : 0;
  let end = raw.length;
  while (start < end && isJsonSpace(raw[start])) start++;
  while (end > start && isJsonSpace(raw[end - 1])) end--;
  if (end - start < 2 || raw[start] !== 0x7b || raw[end - 1] !== 0x7d) throw new TypeError('not a JSON object text');
  return raw.subarray(start, end);
}

/**
 * The stored envelope with `"expires_at": "<iso>"` added as its last member, as buffers to concatenate: the
 * text up to its closing brace, then the new member and the brace. An envelope never carries `expires_at`
 * itself (closed field set, §10.1).
 */
export function envelopeWithExpiry(envelope: Uint8Array, expiresAtIso: string): Buffer[] {
  const b = Buffer.from(envelope.buffer, envelope.byteOffset, envelope.byteLength);
  return [b.subarray(0, b.length - 1), Buffer.from(`,"expires_at":${JSON.stringify(expiresAtIso)}}`)];
}
