/** Document replacement v2 signed bytes (ledger-rules.md §4.6, ddn-defined). */
import { concatBytes, utf8 } from '../../base/bytes.js';
import { ScaleWriter } from '../../codec/scale.js';
import type { Profile } from '../profile.js';

export interface DocumentReplacementV2 {
  did: string;
  documentHash: Uint8Array;
  documentNonce: bigint;
  validUntil: bigint;
  signerKeyId: string;
}

export function documentReplacementSigningBytes(profile: Profile, r: DocumentReplacementV2): Uint8Array {
  const w = new ScaleWriter().str(r.did).raw(r.documentHash).u64(r.documentNonce).u64(r.validUntil).str(r.signerKeyId);
  return concatBytes(utf8(profile.setDocumentPrefix), w.finish());
}

export function documentReplacementToken(nonce: bigint, validUntil: bigint): string {
  return `v2:${nonce.toString()}:${validUntil.toString()}`;
}
