/**
 * The frame shared by the operator-signed payloads (ledger-rules.md §4.6–§4.8: persona, policy v2, policy v3):
 * `operator_did`, the operation, then the authorization tail `nonce: u64, valid_until: u64, signer_key_id`.
 */
import { ScaleWriter, type ScaleReader } from '../../codec/scale.js';
import { POLICY_BOUNDS as B } from '../policy/types.js';

export interface OperatorSigned<O> {
  operatorDid: string;
  operation: O;
  nonce: bigint;
  validUntil: bigint;
  signerKeyId: string;
}

export function encodeOperatorSigned<O>(p: OperatorSigned<O>, writeOperation: (w: ScaleWriter, op: O) => void): Uint8Array {
  const w = new ScaleWriter().str(p.operatorDid);
  writeOperation(w, p.operation);
  return w.u64(p.nonce).u64(p.validUntil).str(p.signerKeyId).finish();
}

export function readOperatorSigned<O>(r: ScaleReader, readOperation: (r: ScaleReader) => O): OperatorSigned<O> {
  const operatorDid = r.str(B.didBytes);
  const operation = readOperation(r);
  return { operatorDid, operation, nonce: r.u64(), validUntil: r.u64(), signerKeyId: r.str(B.signerKeyIdBytes) };
}
