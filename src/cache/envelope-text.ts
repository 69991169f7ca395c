/**
 * The stored envelope is the request body's JSON text as received — never re-serialised, so a 25 MiB
 * payload is not parsed into a response object again (http-api.md §11.5: "client fields exactly as
 * received, plus `expires_at`").
 */

export { trimJsonObject } from '../base/json-text.js';

/**
 * The stored envelope with `"expires_at": "<iso>"` added as its last member, as buffers to concatenate: the
 * text up to its closing brace, then the new member and the brace. An envelope never carries `expires_at`
 * itself (closed field set, §10.1).
 */
export function envelopeWithExpiry(envelope: Uint8Array, expiresAtIso: string): Buffer[] {
  const b = Buffer.from(envelope.buffer, envelope.byteOffset, envelope.byteLength);
  return [b.subarray(0, b.length - 1), Buffer.from(`,"expires_at":${JSON.stringify(expiresAtIso)}}`)];
}
