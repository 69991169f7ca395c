/** Signature checks shared by the runtime modules (ledger-rules.md §3.5). */
import { verifyEd25519 } from '../../crypto/ed25519.js';
import { resolveSigningKey } from '../../protocol/keys.js';
import { didExists, getDidRecord, type DidRecord } from '../records.js';
import type { StateReader } from '../state.js';
import type { ExecContext } from './context.js';

/** DID-registry check against a known record: 64-byte signature, resolvable key, valid Ed25519. */
export function verifyRecordSignature(ctx: ExecContext, did: string, rec: DidRecord, signerKeyId: string, message: Uint8Array, signature: Uint8Array): boolean {
  if (ctx.skipSignatures) return true;
  if (signature.length !== 64) return false;
  const key = resolveSigningKey(did, rec.rootPubkey, rec.document, signerKeyId);
  return !!key && verifySignature(ctx, key, message, signature);
}

/** Ed25519 verification, through the context's {@link ExecContext.verified} when it has one. */
export function verifySignature(ctx: ExecContext, publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): boolean {
  return ctx.verified ? ctx.verified.verify(publicKey, message, signature) : verifyEd25519(publicKey, message, signature);
}

/** `verify_did_signature` for the policy, persona and application modules: also requires an active DID. */
export function verifyDidSignature(ctx: ExecContext, s: StateReader, did: string, signerKeyId: string, message: Uint8Array, signature: Uint8Array): boolean {
  if (Buffer.byteLength(did, 'utf8') > 128 || Buffer.byteLength(signerKeyId, 'utf8') > 64) return false;
  if (!didExists(s, did)) return false;
  return verifyRecordSignature(ctx, did, getDidRecord(s, did)!, signerKeyId, message, signature);
}
