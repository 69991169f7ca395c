/** Envelope sender signature bytes (http-api.md §10.2, the product spec's "v2 canonical payload"). */
import { concatBytes, utf8 } from '../base/bytes.js';
import { canonicalJson } from '../codec/canonical-json.js';
import { ScaleWriter } from '../codec/scale.js';
import { sha256 } from '../crypto/hash.js';
import type { Profile } from './profile.js';

/** `<p>:envelope-signature:v2|` ‖ SCALE(message_id, to, tag?, application_id?, timestamp, payload_sha256, group?, seq?, total?). */
export function senderSigningBytes(profile: Profile, fields: Record<string, unknown>): Uint8Array {
  const str = (v: unknown) => (typeof v === 'number' ? String(v) : String(v));
  const opt = (v: unknown) => (v === undefined || v === null ? null : String(v));
  const optNum = (v: unknown) => (typeof v === 'number' ? v : null);
  const w = new ScaleWriter()
    .str(str(fields.message_id))
    .str(str(fields.to ?? fields.recipient))
    .option(opt(fields.tag), (x, s) => x.str(s))
    .option(opt(fields.application_id), (x, s) => x.str(s))
    .str(str(fields.timestamp ?? fields.created_at))
    .raw(sha256(canonicalJson(fields.payload)))
    .option(opt(fields.message_group_id), (x, s) => x.str(s))
    .option(optNum(fields.sequence_number), (x, n) => x.u32(n))
    .option(optNum(fields.total_chunks), (x, n) => x.u32(n));
  return concatBytes(utf8(profile.envelopeSignaturePrefix), w.finish());
}
