/**
 * Ledger state the Relay tests need that the Directory's HTTP routes do not offer yet: a v3 DID policy and a
 * single-label persona, submitted as signed ledger calls (ledger-rules.md §4.8, §8) straight into a Ledger.
 */
import assert from 'node:assert/strict';
import type { Ed25519KeyPair } from '../../src/crypto/ed25519.js';
import type { Ledger } from '../../src/ledger/chain.js';
import type { Call } from '../../src/ledger/extrinsic.js';
import { getNonce } from '../../src/ledger/records.js';
import { encodePersonaPayload } from '../../src/protocol/payloads/persona.js';
import { encodePolicyV3Payload } from '../../src/protocol/payloads/policy-v3.js';
import { policyIdV3 } from '../../src/protocol/policy/policy-id.js';
import type { DeliveryPlanV1, PolicyAction, PolicyRule, PolicyScopeV3 } from '../../src/protocol/policy/types.js';
import type { Profile } from '../../src/protocol/profile.js';

/** Far enough ahead that no test clock reaches it. */
const VALID_UNTIL = 4_102_444_800_000n;

export interface Owner {
  did: string;
  /** The root key. */
  key: Ed25519KeyPair;
}

function submit(ledger: Ledger, call: Call, subject: string): string {
  const r = ledger.submit(call, { subject, action: call.name, limitKey: `${subject}|${call.name}` });
  assert.equal(r.duplicate, false);
  return r.txHash;
}

/** A rule with no conditions. */
export function ruleOf(id: string, action: PolicyAction, priority = 10): PolicyRule {
  return { id, priority, conditions: [], action, constraintOverrides: null };
}

export const BASE_ACTION: PolicyAction = { kind: 'BaseDidDeliveryV1' };
export const rejectAction = (reasonCode: number): PolicyAction => ({ kind: 'RejectV1', reasonCode });
/** A one-step plan storing at `target` (a `(service_did, service_id)` of type `<P>CacheService`). */
export function storePlan(serviceDid: string, serviceId: string): PolicyAction {
  const plan: DeliveryPlanV1 = {
    entryStep: 'store',
    steps: [
      {
        id: 'store',
        operation: {
          kind: 'Store',
          targets: [{ serviceDid, serviceId, priority: 0, weight: 1 }],
          desiredReplicas: 1,
          requiredReplicas: 1,
          selection: 'Priority',
        },
      },
    ],
    transitions: [],
  };
  return { kind: 'DeliveryPlanV1', plan };
}

/** A persona plan: `RequireProfile` (entry) → on Success → Store at `target`. */
export function releasePlan(serviceDid: string, serviceId: string): PolicyAction {
  const store = storePlan(serviceDid, serviceId) as { kind: 'DeliveryPlanV1'; plan: DeliveryPlanV1 };
  const plan: DeliveryPlanV1 = {
    entryStep: 'profile',
    steps: [{ id: 'profile', operation: { kind: 'RequireProfile' } }, ...store.plan.steps],
    transitions: [{ from: 'profile', to: 'store', trigger: 'Success', mode: 'Next' }],
  };
  return { kind: 'DeliveryPlanV1', plan };
}

/** Submits a v3 policy on the owner's DID scope (revision 1); the caller produces the block. Returns the policy id. */
export function setDidPolicy(ledger: Ledger, profile: Profile, owner: Owner, rules: PolicyRule[]): string {
  return setScopePolicy(ledger, profile, owner, { kind: 'Did', id: owner.did }, rules);
}

/** Submits a v3 policy (revision 1) on a scope `owner` owns (its DID, or a persona it operates with `root`). */
export function setScopePolicy(ledger: Ledger, profile: Profile, owner: Owner, scope: PolicyScopeV3, rules: PolicyRule[]): string {
  const policyId = policyIdV3(profile, scope);
  const payload = encodePolicyV3Payload({
    operatorDid: owner.did,
    operation: { kind: 'SetPolicy', policy: { policyId, scope, revision: 1n, operatorDid: owner.did, ruleset: rules, policyTtlSeconds: 60 } },
    nonce: getNonce(ledger.poolView(), 'policy_v3_nonce', owner.did),
    validUntil: VALID_UNTIL,
    signerKeyId: 'root',
  });
  submit(
    ledger,
    { name: 'apply_policy_v3_with_proof', args: { signedPayload: payload, signature: owner.key.sign(payload), signerKeyId: 'root' } } as Call,
    owner.did,
  );
  return `0x${Buffer.from(policyId).toString('hex')}`;
}

/** Submits a single-label persona operated by `owner` (controller `root`); the caller produces the block. */
export function registerNamedPersona(ledger: Ledger, owner: Owner, persona: string): void {
  const payload = encodePersonaPayload({
    operatorDid: owner.did,
    operation: { kind: 'RegisterNamed', persona, controllerKeyIds: ['root'], controllerThreshold: 1, constraints: null },
    nonce: getNonce(ledger.poolView(), 'operator_nonce', owner.did),
    validUntil: VALID_UNTIL,
    signerKeyId: 'root',
  });
  submit(
    ledger,
    { name: 'apply_persona_with_proof', args: { signedPayload: payload, signature: owner.key.sign(payload), signerKeyId: 'root' } } as Call,
    owner.did,
  );
}
