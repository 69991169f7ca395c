/** `PolicyV2AuthorizationPayload` (ledger-rules.md §4.7): signed by a key of the operator DID. */
import { type ScaleReader, type ScaleWriter, tryDecodeStrict } from '../../codec/scale.js';
import { readPolicyV2, readRequestedConstraints, readScopeV2, writePolicy, writeRequestedConstraints, writeScope } from '../policy/codec.js';
import { encodeOperatorSigned, readOperatorSigned } from './operator-signed.js';
import { POLICY_BOUNDS as B, type DeliveryPolicyV2, type PolicyScopeV2, type RequestedDeliveryConstraints } from '../policy/types.js';

export type PolicyV2Operation =
  | { kind: 'SetPolicy'; policy: DeliveryPolicyV2 }
  | { kind: 'ClearPolicy'; scope: PolicyScopeV2 }
  | { kind: 'SetDidConstraints'; did: string; constraints: RequestedDeliveryConstraints }
  | { kind: 'SetPersonaConstraints'; persona: string; constraints: RequestedDeliveryConstraints };

const KINDS = ['SetPolicy', 'ClearPolicy', 'SetDidConstraints', 'SetPersonaConstraints'] as const;

export interface PolicyV2Payload {
  operatorDid: string;
  operation: PolicyV2Operation;
  /** The operator's `policy_nonce`. */
  nonce: bigint;
  validUntil: bigint;
  signerKeyId: string;
}

function writeOperation(w: ScaleWriter, op: PolicyV2Operation): void {
  w.u8(KINDS.indexOf(op.kind));
  switch (op.kind) {
    case 'SetPolicy':
      writePolicy(w, op.policy);
      break;
    case 'ClearPolicy':
      writeScope(w, op.scope);
      break;
    case 'SetDidConstraints':
      w.str(op.did);
      writeRequestedConstraints(w, op.constraints);
      break;
    case 'SetPersonaConstraints':
      w.str(op.persona);
      writeRequestedConstraints(w, op.constraints);
      break;
  }
}

function readOperation(r: ScaleReader): PolicyV2Operation {
  const kind = KINDS[r.variant(KINDS.length)]!;
  switch (kind) {
    case 'SetPolicy':
      return { kind, policy: readPolicyV2(r) };
    case 'ClearPolicy':
      return { kind, scope: readScopeV2(r) };
    case 'SetDidConstraints':
      return { kind, did: r.str(B.didBytes), constraints: readRequestedConstraints(r) };
    case 'SetPersonaConstraints':
      return { kind, persona: r.str(B.personaBytes), constraints: readRequestedConstraints(r) };
  }
}

export function encodePolicyV2Payload(p: PolicyV2Payload): Uint8Array {
  return encodeOperatorSigned(p, writeOperation);
}

const read = (r: ScaleReader): PolicyV2Payload => readOperatorSigned(r, readOperation);

/** Strict decode (§1.4); undefined on any failure (`InvalidPolicyV2Payload`). */
export function decodePolicyV2Payload(b: Uint8Array): PolicyV2Payload | undefined {
  return tryDecodeStrict(b, read, encodePolicyV2Payload);
}
