/** `PolicyV3AuthorizationPayload` (ledger-rules.md §4.8): signed by a key of the scope owner. */
import { ScaleReader, ScaleWriter, tryDecodeStrict } from '../../codec/scale.js';
import { readPolicyV3, readScopeV3, writePolicy, writeScope } from '../policy/codec.js';
import { POLICY_BOUNDS as B, type DeliveryPolicyV3, type PolicyScopeV3 } from '../policy/types.js';

export type PolicyV3Operation =
  | { kind: 'SetPolicy'; policy: DeliveryPolicyV3 }
  | { kind: 'ClearPolicy'; scope: PolicyScopeV3 };

export interface PolicyV3Payload {
  operatorDid: string;
  operation: PolicyV3Operation;
  /** The owner's `policy_v3_nonce`. */
  nonce: bigint;
  validUntil: bigint;
  signerKeyId: string;
}

export function encodePolicyV3Payload(p: PolicyV3Payload): Uint8Array {
  const w = new ScaleWriter().str(p.operatorDid);
  if (p.operation.kind === 'SetPolicy') writePolicy(w.u8(0), p.operation.policy);
  else writeScope(w.u8(1), p.operation.scope);
  return w.u64(p.nonce).u64(p.validUntil).str(p.signerKeyId).finish();
}

function read(r: ScaleReader): PolicyV3Payload {
  const operatorDid = r.str(B.didBytes);
  const operation: PolicyV3Operation =
    r.variant(2) === 0 ? { kind: 'SetPolicy', policy: readPolicyV3(r) } : { kind: 'ClearPolicy', scope: readScopeV3(r) };
  return { operatorDid, operation, nonce: r.u64(), validUntil: r.u64(), signerKeyId: r.str(B.signerKeyIdBytes) };
}

/** Strict decode (§1.4); undefined on any failure (`InvalidPolicyV3Payload`). */
export function decodePolicyV3Payload(b: Uint8Array): PolicyV3Payload | undefined {
  return tryDecodeStrict(b, read, encodePolicyV3Payload);
}

/** The scope a v3 operation addresses. */
export function policyV3ScopeOf(op: PolicyV3Operation): PolicyScopeV3 {
  return op.kind === 'SetPolicy' ? op.policy.scope : op.scope;
}
