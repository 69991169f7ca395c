/** `PolicyV3AuthorizationPayload` (ledger-rules.md §4.8): signed by a key of the scope owner. */
import { tryDecodeStrict, type ScaleReader } from '../../codec/scale.js';
import { encodeOperatorSigned, readOperatorSigned } from './operator-signed.js';
import { readPolicyV3, readScopeV3, writePolicy, writeScope } from '../policy/codec.js';
import type { DeliveryPolicyV3, PolicyScopeV3 } from '../policy/types.js';

export type PolicyV3Operation = { kind: 'SetPolicy'; policy: DeliveryPolicyV3 } | { kind: 'ClearPolicy'; scope: PolicyScopeV3 };

export interface PolicyV3Payload {
  operatorDid: string;
  operation: PolicyV3Operation;
  /** The owner's `policy_v3_nonce`. */
  nonce: bigint;
  validUntil: bigint;
  signerKeyId: string;
}

export function encodePolicyV3Payload(p: PolicyV3Payload): Uint8Array {
  return encodeOperatorSigned(p, (w, op) => {
    if (op.kind === 'SetPolicy') writePolicy(w.u8(0), op.policy);
    else writeScope(w.u8(1), op.scope);
  });
}

const read = (r: ScaleReader): PolicyV3Payload =>
  readOperatorSigned<PolicyV3Operation>(r, (x) =>
    x.variant(2) === 0 ? { kind: 'SetPolicy', policy: readPolicyV3(x) } : { kind: 'ClearPolicy', scope: readScopeV3(x) },
  );

/** Strict decode (§1.4); undefined on any failure (`InvalidPolicyV3Payload`). */
export function decodePolicyV3Payload(b: Uint8Array): PolicyV3Payload | undefined {
  return tryDecodeStrict(b, read, encodePolicyV3Payload);
}

/** The scope a v3 operation addresses. */
export function policyV3ScopeOf(op: PolicyV3Operation): PolicyScopeV3 {
  return op.kind === 'SetPolicy' ? op.policy.scope : op.scope;
}
