/**
 * Delivery policy v3 (ledger-rules.md §5.8, §7.9): `apply_policy_v3_with_proof`, owned per scope (§7.7).
 * A v3 write replaces the v2 record of the same Did/Persona scope.
 */
import { bytesEqual, utf8Length } from '../../base/bytes.js';
import { NETWORK_CONSTRAINTS, type DeliveryConstraints } from '../../protocol/constraints.js';
import { decodePolicyV3Payload, policyV3ScopeOf } from '../../protocol/payloads/policy-v3.js';
import { policyIdV3 } from '../../protocol/policy/policy-id.js';
import { followsDeployedChain } from '../../protocol/profile.js';
import { POLICY_BOUNDS as B, type DeliveryPlanV1, type DeliveryPolicyV3, type PolicyRule } from '../../protocol/policy/types.js';
import { failer, withDetail } from '../errors.js';
import type { CallOf } from '../extrinsic.js';
import { bumpNonce, getNonce } from '../records.js';
import type { Overlay, StateReader } from '../state.js';
import { authorizedSendTarget, verifiedDomain } from './application-state.js';
import { validateCondition } from './conditions.js';
import { narrowConstraints } from './constraints.js';
import type { ExecContext } from './context.js';
import { personaLiveness } from './persona-state.js';
import { validateAction } from './plan.js';
import { deletePolicyV2, deletePolicyV3, getDidConstraints, getPolicyV3, putPolicyV3 } from './policy-state.js';
import { APPLICATION_RULE_FORBIDDEN, OWNER_MISMATCH, scopeOwner, scopeUnavailable, SEND_TARGET_NOT_CONSENTED } from './scope-owner.js';
import { verifyDidSignature } from './signatures.js';

const fail = failer('DeliveryPolicy');

export function executePolicyV3(s: Overlay, ctx: ExecContext, call: CallOf<'apply_policy_v3_with_proof'>): void {
  const a = call.args;
  if (utf8Length(a.signerKeyId) > B.signerKeyIdBytes) fail('InvalidPolicyV3Payload');
  const p = decodePolicyV3Payload(a.signedPayload) ?? fail('InvalidPolicyV3Payload');
  if (p.signerKeyId !== a.signerKeyId) fail('InvalidPolicyV3Payload');
  if (!(p.validUntil > BigInt(ctx.nowMs))) fail('PolicyAuthorizationExpired');
  if (p.nonce !== getNonce(s, 'policy_v3_nonce', p.operatorDid)) fail('InvalidPolicyV3Nonce');
  const scope = policyV3ScopeOf(p.operation);
  const owner = scopeOwner(s, ctx.nowMs, scope);
  if (!owner.ok) return fail('InvalidPolicyScope', scopeUnavailable(owner.cause));
  if (owner.owner !== p.operatorDid) fail('InvalidPolicyScope', OWNER_MISMATCH);
  if (scope.kind === 'Persona') {
    const live = personaLiveness(s, ctx.nowMs, scope.id);
    if (!live.ok) return fail('PersonaInactive');
    if (!live.record.controllerKeyIds.includes(p.signerKeyId)) fail('InvalidPersonaController');
  }
  if (!verifyDidSignature(ctx, s, p.operatorDid, a.signerKeyId, a.signedPayload, a.signature)) fail('InvalidSignature');
  if (p.operation.kind === 'SetPolicy') {
    validatePolicyV3(s, ctx, p.operation.policy);
    deletePolicyV2(s, scope);
    putPolicyV3(s, p.operation.policy);
  } else {
    requireOwner(s, ctx, scope, p.operatorDid);
    if (!getPolicyV3(s, scope)) fail('PolicyNotFound');
    deletePolicyV2(s, scope);
    deletePolicyV3(s, scope);
  }
  bumpNonce(s, 'policy_v3_nonce', p.operatorDid, p.nonce);
}

/** `owner(scope) == expected`, owner errors as they are (§7.7), mismatch `InvalidPolicyScope`. */
function requireOwner(s: StateReader, ctx: ExecContext, scope: DeliveryPolicyV3['scope'], expected: string): void {
  const owner = scopeOwner(s, ctx.nowMs, scope);
  if (!owner.ok) return fail(owner.error, owner.error === 'InvalidPolicyScope' ? scopeUnavailable(owner.cause) : undefined);
  if (owner.owner !== expected) fail('InvalidPolicyScope', OWNER_MISMATCH);
}

const CONTROL_STEPS = new Set(['Send', 'Call']);

/** RequireProfile shape (§7.9 step 7g): Persona scope, one step, the entry step, a Forward/Store step, Success exits. */
function requireProfileShapeOk(plan: DeliveryPlanV1, personaScope: boolean): boolean {
  const rp = plan.steps.filter((st) => st.operation.kind === 'RequireProfile');
  if (rp.length === 0) return true;
  return (
    personaScope &&
    rp.length === 1 &&
    rp[0]!.id === plan.entryStep &&
    plan.steps.some((st) => st.operation.kind === 'Forward' || st.operation.kind === 'Store') &&
    plan.transitions.filter((t) => t.from === rp[0]!.id).every((t) => t.trigger === 'Success')
  );
}

/** Full v3 validation (§7.9), in order. Errors are reported as they are. */
export function validatePolicyV3(s: StateReader, ctx: ExecContext, policy: DeliveryPolicyV3): void {
  const scope = policy.scope;
  const app = scope.kind === 'Application' ? scope.id : null;
  if (!bytesEqual(policy.policyId, policyIdV3(ctx.profile, scope))) fail('InvalidPolicyId');
  requireOwner(s, ctx, scope, policy.operatorDid);
  if (policy.ruleset.length === 0) fail('EmptyRuleset');
  if (!(policy.policyTtlSeconds >= B.minPolicyTtlSeconds && policy.policyTtlSeconds <= B.maxPolicyTtlSeconds)) {
    fail('InvalidPolicyTtl');
  }
  const stored = getPolicyV3(s, scope);
  if (policy.revision !== (stored ? stored.revision + 1n : 1n)) fail('InvalidPolicyRevision');

  let units = policy.ruleset.length;
  let scopeConstraints: DeliveryConstraints = NETWORK_CONSTRAINTS;
  if (scope.kind === 'Did') scopeConstraints = getDidConstraints(s, scope.id) ?? NETWORK_CONSTRAINTS;
  if (scope.kind === 'Persona') {
    const live = personaLiveness(s, ctx.nowMs, scope.id);
    scopeConstraints = (live.ok ? live.record.deliveryConstraints : null) ?? NETWORK_CONSTRAINTS;
  }

  const ids = new Set<string>();
  for (const rule of policy.ruleset) {
    units += withDetail({ ruleId: rule.id }, () => validateRuleV3(s, ctx, policy, rule, app, scopeConstraints, ids));
  }
  if (units > B.maxValidationUnits) fail('PolicyTooComplex');
}

/** §7.9 step 7 for one rule; returns the units it adds beyond the rule itself. */
function validateRuleV3(
  s: StateReader,
  ctx: ExecContext,
  policy: DeliveryPolicyV3,
  rule: PolicyRule,
  app: string | null,
  scopeConstraints: DeliveryConstraints,
  ids: Set<string>,
): number {
  if (rule.id.length === 0 || rule.priority > B.maxRulePriority || ids.has(rule.id)) fail('DuplicateRuleId');
  ids.add(rule.id);
  let units = rule.conditions.length;
  for (const c of rule.conditions) validateCondition(s, c, true);
  if (app !== null && rule.constraintOverrides !== null) fail('InvalidPolicyScope', APPLICATION_RULE_FORBIDDEN);
  const effective = narrowConstraints(scopeConstraints, rule.constraintOverrides);
  if (app !== null && rule.action.kind !== 'DeliveryPlanV1') fail('InvalidPolicyScope', APPLICATION_RULE_FORBIDDEN);
  validateAction(s, ctx, rule.action, effective.maxReplicas);
  if (rule.action.kind !== 'DeliveryPlanV1') return units;

  const plan = rule.action.plan;
  if (!requireProfileShapeOk(plan, policy.scope.kind === 'Persona')) fail('InvalidDeliveryPlan');
  units += plan.steps.length + plan.transitions.length;
  const eventBound = rule.conditions.some((c) => c.kind === 'EventEquals');
  const control = plan.steps.some((st) => CONTROL_STEPS.has(st.operation.kind));
  if (control && !eventBound) fail('InvalidDeliveryPlan');
  if (eventBound && !plan.steps.every((st) => CONTROL_STEPS.has(st.operation.kind))) fail('InvalidDeliveryPlan');

  for (const step of plan.steps) {
    withDetail({ stepId: step.id }, () => {
      const op = step.operation;
      if (op.kind === 'Forward' || op.kind === 'Store' || op.kind === 'Archive') {
        if (app !== null) fail('InvalidPolicyScope', APPLICATION_RULE_FORBIDDEN);
        units += op.targets.length;
      } else if (op.kind === 'Call') {
        if (app !== null) {
          if (verifiedDomain(s, ctx.nowMs, app) !== op.registeredDomain) fail('InvalidCallDomain');
        } else {
          const live = personaLiveness(s, ctx.nowMs, op.registeredDomain);
          if (!live.ok) return fail(live.error);
          if (live.record.operatorDid !== policy.operatorDid) fail('InvalidCallDomain');
        }
      } else if (op.kind === 'Send') {
        if (app !== null && !authorizedSendTarget(s, app, op.recipientDid)) fail('InvalidPolicyScope', APPLICATION_RULE_FORBIDDEN);
        // ddn hardening (docs/public-node.md): outside `openpayload` a Did/Persona rule sends only to its owner
        if (app === null && !followsDeployedChain(ctx.profile) && op.recipientDid !== policy.operatorDid) {
          fail('InvalidPolicyScope', SEND_TARGET_NOT_CONSENTED);
        }
      } else if (eventBound || app !== null) {
        fail('InvalidDeliveryPlan');
      }
    });
  }
  return units;
}
