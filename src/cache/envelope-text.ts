/**
 * The stored envelope is the request body's JSON text as received — never re-serialised, so a 25 MiB
 * payload is not parsed into a response object again (http-api.md §11.5: "client fields exactly as
 * received, plus `expires_at`").
 */

import { asBuffer } from '../base/bytes.js';
import type { EnvelopeBytes } from './mailbox-store.js';

export { trimJsonObject } from '../base/json-text.js';

/**
 * A stored envelope gets `"expires_at": "<iso>"` as its last member in retrieval answers: its text up to the
 * closing brace ({@link openEnvelope}), then the new member and the brace ({@link expiryMember}). An envelope
 * never carries `expires_at` itself (closed field set, §10.1). (An envelope read as text is opened as text.)
 */
export function openEnvelope(envelope: Exclude<EnvelopeBytes, string>): Buffer[] {
  const parts = (envelope instanceof Uint8Array ? [envelope] : envelope).filter((p) => p.byteLength > 0).map((p) => asBuffer(p));
  const last = parts.length - 1;
  parts[last] = parts[last].subarray(0, parts[last].length - 1);
  return parts;
}

/** The text that closes an {@link openEnvelope} with its `expires_at` member. */
export function expiryMember(expiresAtIso: string): string {
  return `,"expires_at":${JSON.stringify(expiresAtIso)}}`;
}

/** The envelope bytes as one buffer (a copy only when they are in parts or text). */
export function envelopeBuffer(envelope: EnvelopeBytes): Buffer {
  if (typeof envelope === 'string') return Buffer.from(envelope, 'utf8');
  if (envelope instanceof Uint8Array) return asBuffer(envelope);
  return Buffer.concat(envelope);
}
