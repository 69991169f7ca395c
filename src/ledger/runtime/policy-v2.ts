/**
 * Delivery policy v2 (ledger-rules.md §5.7, §7.8): `apply_policy_v2_with_proof`. Checks run in spec order; every
 * v2 policy write also stores a v3 mirror under the v3 `policy_id` (§7.2).
 */
import { bytesEqual, utf8Length } from '../../base/bytes.js';
import { NETWORK_CONSTRAINTS, type DeliveryConstraints } from '../../protocol/constraints.js';
import { decodePolicyV2Payload, type PolicyV2Operation } from '../../protocol/payloads/policy-v2.js';
import { policyIdV2, policyIdV3 } from '../../protocol/policy/policy-id.js';
import { POLICY_BOUNDS as B, type DeliveryPolicyV2, type PolicyRule } from '../../protocol/policy/types.js';
import { failer, withDetail } from '../errors.js';
import type { CallOf } from '../extrinsic.js';
import { bumpNonce, didExists, getNonce } from '../records.js';
import type { Overlay } from '../state.js';
import { validateCondition } from './conditions.js';
import { narrowConstraints, validatedConstraints } from './constraints.js';
import type { ExecContext } from './context.js';
import { getPersona, personaLiveness, putPersona } from './persona-state.js';
import { validateAction } from './plan.js';
import { deletePolicyV2, deletePolicyV3, getDidConstraints, getPolicyV2, getPolicyV3, putDidConstraints, putPolicyV2, putPolicyV3 } from './policy-state.js';
import { didUnavailableCause, OWNER_MISMATCH, scopeUnavailable } from './scope-owner.js';
import { verifyDidSignature } from './signatures.js';

const fail = failer('DeliveryPolicy');

/** The persona whose controllers gate the operation (§5.7 step 7), or null. */
function gatedPersona(op: PolicyV2Operation): string | null {
  switch (op.kind) {
    case 'SetPolicy':
      return op.policy.scope.kind === 'Persona' ? op.policy.scope.id : null;
    case 'ClearPolicy':
      return op.scope.kind === 'Persona' ? op.scope.id : null;
    case 'SetPersonaConstraints':
      return op.persona;
    case 'SetDidConstraints':
      return null;
  }
}

export function executePolicyV2(s: Overlay, ctx: ExecContext, call: CallOf<'apply_policy_v2_with_proof'>): void {
  const a = call.args;
  if (utf8Length(a.signerKeyId) > B.signerKeyIdBytes) fail('InvalidPolicyV2Payload');
  const p = decodePolicyV2Payload(a.signedPayload) ?? fail('InvalidPolicyV2Payload');
  if (p.signerKeyId !== a.signerKeyId) fail('InvalidPolicyV2Payload');
  if (!(p.validUntil > BigInt(ctx.nowMs))) fail('PolicyAuthorizationExpired');
  if (!didExists(s, p.operatorDid)) fail('DidNotFound');
  if (p.nonce !== getNonce(s, 'policy_nonce', p.operatorDid)) fail('InvalidPolicyV2Nonce');
  const persona = gatedPersona(p.operation);
  if (persona !== null) {
    const rec = getPersona(s, persona) ?? fail('PersonaNotFound');
    if (rec.operatorDid !== p.operatorDid || rec.controllerThreshold !== 1 || !rec.controllerKeyIds.includes(p.signerKeyId)) {
      fail('InvalidPersonaController');
    }
  }
  if (!verifyDidSignature(ctx, s, p.operatorDid, a.signerKeyId, a.signedPayload, a.signature)) fail('InvalidSignature');
  applyPolicyV2Operation(s, ctx, p.operatorDid, p.operation);
  bumpNonce(s, 'policy_nonce', p.operatorDid, p.nonce);
}

/** The apply step (§7.8). */
function applyPolicyV2Operation(s: Overlay, ctx: ExecContext, operator: string, op: PolicyV2Operation): void {
  switch (op.kind) {
    case 'SetPolicy': {
      const policy = op.policy;
      if (policy.operatorDid !== operator) fail('InvalidPolicyScope', OWNER_MISMATCH);
      if (policy.scope.kind === 'Did') {
        if (policy.scope.id !== operator) fail('InvalidPolicyScope', OWNER_MISMATCH);
      } else {
        const live = personaLiveness(s, ctx.nowMs, policy.scope.id);
        if (!live.ok) return fail(live.error);
        if (live.record.operatorDid !== operator) fail('InvalidPolicyScope', OWNER_MISMATCH);
      }
      validatePolicyV2(s, ctx, policy);
      storePolicyV2(s, ctx, policy);
      return;
    }
    case 'ClearPolicy': {
      const scope = op.scope;
      if (scope.kind === 'Did') {
        if (scope.id !== operator) fail('InvalidPolicyScope', OWNER_MISMATCH);
      } else {
        const rec = getPersona(s, scope.id) ?? fail('PersonaNotFound');
        if (rec.operatorDid !== operator) fail('InvalidPolicyScope', OWNER_MISMATCH);
      }
      if (!getPolicyV2(s, scope)) fail('PolicyNotFound');
      deletePolicyV2(s, scope);
      deletePolicyV3(s, scope);
      return;
    }
    case 'SetDidConstraints':
      if (op.did !== operator) fail('InvalidPolicyScope', OWNER_MISMATCH);
      putDidConstraints(s, op.did, validatedConstraints(op.constraints));
      return;
    case 'SetPersonaConstraints': {
      const rec = getPersona(s, op.persona) ?? fail('PersonaNotFound');
      if (!rec.active) fail('PersonaInactive');
      if (rec.operatorDid !== operator) fail('InvalidPolicyScope', OWNER_MISMATCH);
      putPersona(s, op.persona, { ...rec, deliveryConstraints: validatedConstraints(op.constraints), revision: rec.revision + 1 });
      return;
    }
  }
}

/** Validation units of a v2 policy (§7.8 step 4). */
export function policyV2Units(ruleset: readonly PolicyRule[]): number {
  let units = ruleset.length;
  for (const rule of ruleset) {
    units += rule.conditions.length;
    for (const c of rule.conditions) if (c.kind === 'RecipientIn') units += c.dids.length;
    if (rule.action.kind !== 'DeliveryPlanV1') continue;
    const plan = rule.action.plan;
    units += plan.steps.length + plan.transitions.length;
    for (const st of plan.steps) {
      const op = st.operation;
      if (op.kind === 'Forward' || op.kind === 'Store' || op.kind === 'Archive') units += op.targets.length;
    }
  }
  return units;
}

const V2_FORBIDDEN_STEPS = new Set(['Send', 'Call', 'RequireProfile']);

/** `validate_v2(policy)` (§7.8), in order. */
function validatePolicyV2(s: Overlay, ctx: ExecContext, policy: DeliveryPolicyV2): void {
  const scope = policy.scope;
  if (!bytesEqual(policy.policyId, policyIdV2(ctx.profile, scope))) fail('InvalidPolicyId');
  if (policy.ruleset.length === 0) fail('EmptyRuleset');
  if (!(policy.policyTtlSeconds >= B.minPolicyTtlSeconds && policy.policyTtlSeconds <= B.maxPolicyTtlSeconds)) {
    fail('InvalidPolicyTtl');
  }
  if (policyV2Units(policy.ruleset) > B.maxValidationUnits) fail('PolicyTooComplex');

  let scopeConstraints: DeliveryConstraints;
  if (scope.kind === 'Did') {
    if (!didExists(s, scope.id)) fail('InvalidPolicyScope', scopeUnavailable(didUnavailableCause(s, scope.id)));
    if (policy.operatorDid !== scope.id) fail('InvalidPolicyScope', OWNER_MISMATCH);
    scopeConstraints = getDidConstraints(s, scope.id) ?? NETWORK_CONSTRAINTS;
  } else {
    const live = personaLiveness(s, ctx.nowMs, scope.id);
    if (!live.ok) return fail(live.error);
    if (live.record.operatorDid !== policy.operatorDid) fail('InvalidPolicyScope', OWNER_MISMATCH);
    scopeConstraints = live.record.deliveryConstraints ?? NETWORK_CONSTRAINTS;
  }
  const stored = getPolicyV2(s, scope);
  if (policy.revision !== (stored ? stored.revision + 1n : 1n)) fail('InvalidPolicyRevision');

  const ids = new Set<string>();
  for (const rule of policy.ruleset) {
    withDetail({ ruleId: rule.id }, () => {
      if (rule.id.length === 0) fail('DuplicateRuleId');
      if (rule.priority > B.maxRulePriority) fail('InvalidRulePriority');
      if (ids.has(rule.id)) fail('DuplicateRuleId');
      ids.add(rule.id);
      for (const c of rule.conditions) {
        if (c.kind === 'EventEquals') fail('InvalidCondition');
        validateCondition(s, c, false);
      }
      const effective = narrowConstraints(scopeConstraints, rule.constraintOverrides);
      validateAction(s, ctx, rule.action, effective.maxReplicas);
      if (rule.action.kind === 'DeliveryPlanV1') {
        const bad = rule.action.plan.steps.find((st) => V2_FORBIDDEN_STEPS.has(st.operation.kind));
        if (bad) withDetail({ stepId: bad.id }, () => fail('InvalidDeliveryPlan'));
      }
    });
  }
}

/** `store_v2(policy)`: the revision must also follow the scope's v3 revision; writes the record and its v3 mirror. */
function storePolicyV2(s: Overlay, ctx: ExecContext, policy: DeliveryPolicyV2): void {
  const v3 = getPolicyV3(s, policy.scope);
  if (policy.revision !== (v3 ? v3.revision + 1n : 1n)) fail('InvalidPolicyRevision');
  putPolicyV2(s, policy);
  putPolicyV3(s, { ...policy, policyId: policyIdV3(ctx.profile, policy.scope) });
}
