/**
 * Storage of delivery policies and scope constraints (ledger-rules.md §7). DID scopes use the keys of
 * `records.ts` `policyKeys`, which `DeleteDid` clears; persona and application scopes have their own keys.
 */
import type { DeliveryConstraints } from '../../protocol/constraints.js';
import type { DeliveryPolicyV2, DeliveryPolicyV3, PolicyScopeV2, PolicyScopeV3 } from '../../protocol/policy/types.js';
import { policyKeys } from '../records.js';
import type { Overlay, StateReader } from '../state.js';
import { stateSlot } from '../state-slot.js';

/** Key of the v2 record of a scope. */
export function policyV2Key(scope: PolicyScopeV2): string {
  return scope.kind === 'Did' ? policyKeys.policyV2Did(scope.id) : `policy2/persona/${scope.id}`;
}

/** Key of the v3 policy of a scope (v3 writes and v2 mirrors). */
export function policyV3Key(scope: PolicyScopeV3): string {
  switch (scope.kind) {
    case 'Did':
      return policyKeys.policyV3Did(scope.id);
    case 'Persona':
      return `policy3/persona/${scope.id}`;
    case 'Application':
      return `policy3/app/${scope.id}`;
  }
}

/** The typed slots of these keys (state-slot.ts). */
const policiesV2 = stateSlot<PolicyScopeV2, DeliveryPolicyV2>(policyV2Key);
const policiesV3 = stateSlot<PolicyScopeV3, DeliveryPolicyV3>(policyV3Key);
const didConstraints = stateSlot<string, DeliveryConstraints>(policyKeys.didConstraints);

/** The v2 record of a scope (what v2 wrote; v3 writes remove it). */
export function getPolicyV2(s: StateReader, scope: PolicyScopeV2): DeliveryPolicyV2 | undefined {
  return policiesV2.read(s, scope);
}

/** The v3 policy of a scope: a v3 write, or the mirror of a v2 write (carrying the v3 `policy_id`). */
export function getPolicyV3(s: StateReader, scope: PolicyScopeV3): DeliveryPolicyV3 | undefined {
  return policiesV3.read(s, scope);
}

export function putPolicyV2(s: Overlay, policy: DeliveryPolicyV2): void {
  policiesV2.write(s, policy.scope, policy);
}

export function putPolicyV3(s: Overlay, policy: DeliveryPolicyV3): void {
  policiesV3.write(s, policy.scope, policy);
}

/** Removes the v2 record of a Did/Persona scope (no-op for Application scopes, which have none). */
export function deletePolicyV2(s: Overlay, scope: PolicyScopeV3): void {
  if (scope.kind !== 'Application') s.delete(policyV2Key(scope));
}

export function deletePolicyV3(s: Overlay, scope: PolicyScopeV3): void {
  s.delete(policyV3Key(scope));
}

/** The DID's stored scope constraints (`SetDidConstraints`), already `validated`. */
export function getDidConstraints(s: StateReader, did: string): DeliveryConstraints | undefined {
  return didConstraints.read(s, did);
}

export function putDidConstraints(s: Overlay, did: string, c: DeliveryConstraints): void {
  didConstraints.write(s, did, c);
}
