/** `RootPubkeyAuthorizationPayload` (ledger-rules.md §4.3). */
import { type ScaleReader, ScaleWriter, tryDecodeStrict } from '../../codec/scale.js';

export interface RootKeyPayload {
  did: string;
  newRootPubkey: Uint8Array;
  nonce: bigint;
  validUntil: bigint;
  signerKeyId: string;
}

export function encodeRootKeyPayload(p: RootKeyPayload): Uint8Array {
  return new ScaleWriter().str(p.did).bytes(p.newRootPubkey).u64(p.nonce).u64(p.validUntil).str(p.signerKeyId).finish();
}

function read(r: ScaleReader): RootKeyPayload {
  return { did: r.str(128), newRootPubkey: r.bytes(32), nonce: r.u64(), validUntil: r.u64(), signerKeyId: r.str(64) };
}

export function decodeRootKeyPayload(b: Uint8Array): RootKeyPayload | undefined {
  return tryDecodeStrict(b, read, encodeRootKeyPayload);
}
