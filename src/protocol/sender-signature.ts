/** Envelope sender signature bytes (http-api.md §10.2, the product spec's "v2 canonical payload"). */
import { concatBytes, utf8 } from '../base/bytes.js';
import { DdnError } from '../base/errors.js';
import { canonicalJson } from '../codec/canonical-json.js';
import { ScaleWriter } from '../codec/scale.js';
import { verifyEd25519 } from '../crypto/ed25519.js';
import { sha256 } from '../crypto/hash.js';
import type { DidDocument } from './document.js';
import { resolveSigningKey } from './keys.js';
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

/** The sender's finalized record as the check needs it (a `DidView` fits). */
export interface SenderRecord {
  deactivated: boolean;
  rootPubkey: Uint8Array;
  document: DidDocument | null;
}

/** Why a sender signature was refused: `details.reason` of 403 `invalid_sender_signature` (§10.2). */
export type SenderSignatureFailure = 'sender_not_found' | 'key_not_found' | 'bad_signature';

/**
 * The §10.2 check shared by the Relay and the Cache: the sender DID is active (`record` is its finalized
 * record, null when it has none), `sender_key_id` resolves (`root` or a VM controlled by the sender,
 * ledger-rules.md §3.5) and the signature verifies over {@link senderSigningBytes} of the client fields.
 * Throws 403 `invalid_sender_signature` with `details.reason`.
 */
export function verifySenderSignature(
  profile: Profile,
  fields: Record<string, unknown>,
  sender: { did: string; keyId: string; signature: Uint8Array },
  record: SenderRecord | null,
): void {
  const refuse = (reason: SenderSignatureFailure) =>
    new DdnError('invalid_sender_signature', `sender signature refused: ${reason.replace(/_/g, ' ')}`, { reason });
  if (record === null || record.deactivated) throw refuse('sender_not_found');
  const key = resolveSigningKey(sender.did, record.rootPubkey, record.document, sender.keyId);
  if (key === undefined) throw refuse('key_not_found');
  if (!verifyEd25519(key, senderSigningBytes(profile, fields), sender.signature)) throw refuse('bad_signature');
}

/** The signature of {@link verifySenderSignature}, for a role that lets its check be replaced (tests count the checks). */
export type SenderSignatureCheck = typeof verifySenderSignature;
