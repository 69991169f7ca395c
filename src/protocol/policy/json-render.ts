/**
 * Rendering ledger policy structs as the JSON of http-api.md §8.1 (responses). Templates are rendered by
 * parsing their bytes, so parse → render → parse is stable.
 */
import { fromUtf8, to0x } from '../../base/bytes.js';
import { constraintsToJson, type ConstraintsJson } from '../constraints.js';
import { overridesToJson } from './constraints-json.js';
import type { JsonRecord } from './json-fields.js';
import type {
  DeliveryPlanV1,
  DeliveryPolicy,
  DeliveryStep,
  PolicyAction,
  PolicyCondition,
  PolicyRule,
  PolicyScopeV3,
  ResolvedPolicy,
  RouteTarget,
} from './types.js';

const SCOPE_TYPES = { Did: 'DID', Persona: 'PERSONA', Application: 'APPLICATION' } as const;

/** A u64 as a JSON number when safe, else its decimal string. */
function u64Json(v: bigint): number | string {
  return v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v.toString();
}

export function scopeToJson(scope: PolicyScopeV3): { type: (typeof SCOPE_TYPES)[PolicyScopeV3['kind']]; id: string } {
  return { type: SCOPE_TYPES[scope.kind], id: scope.id };
}

/** The template object (or, for bytes that are not JSON, their text as a string). */
export function templateToJson(template: Uint8Array): unknown {
  try {
    return JSON.parse(fromUtf8(template)) as unknown;
  } catch {
    return Buffer.from(template).toString('utf8');
  }
}

function targetToJson(t: RouteTarget): JsonRecord {
  return { service_did: t.serviceDid, service_id: t.serviceId, priority: t.priority, weight: t.weight };
}

function stepToJson(step: DeliveryStep): JsonRecord {
  const op = step.operation;
  const base = { id: step.id, operation: op.kind };
  switch (op.kind) {
    case 'Forward':
    case 'Archive':
      return { ...base, targets: op.targets.map(targetToJson) };
    case 'Store':
      return {
        ...base,
        targets: op.targets.map(targetToJson),
        desired_replicas: op.desiredReplicas,
        required_replicas: op.requiredReplicas,
        selection: op.selection,
      };
    case 'Send':
      return { ...base, recipient_did: op.recipientDid, payload_template: templateToJson(op.payloadTemplate) };
    case 'Call':
      return {
        ...base,
        service_did: op.serviceDid,
        service_id: op.serviceId,
        registered_domain: op.registeredDomain,
        payload_template: templateToJson(op.payloadTemplate),
      };
    case 'RequireProfile':
      return base;
  }
}

function planToJson(plan: DeliveryPlanV1): JsonRecord {
  return {
    entry_step: plan.entryStep,
    steps: plan.steps.map(stepToJson),
    transitions: plan.transitions.map((t) => ({ from: t.from, to: t.to, trigger: t.trigger, mode: t.mode })),
  };
}

export function actionToJson(a: PolicyAction): JsonRecord {
  switch (a.kind) {
    case 'DeliveryPlanV1':
      return { type: 'DeliveryPlan/v1', ...planToJson(a.plan) };
    case 'RejectV1':
      return { type: 'Reject/v1', reason_code: a.reasonCode };
    case 'BaseDidDeliveryV1':
      return { type: 'BaseDidDelivery/v1' };
  }
}

export function conditionToJson(c: PolicyCondition): JsonRecord {
  switch (c.kind) {
    case 'TagEquals':
    case 'TagPrefix':
      return { type: c.kind, value: c.tag };
    case 'TagAbsent':
      return { type: c.kind };
    case 'RecipientEquals':
      return { type: c.kind, value: c.did };
    case 'RecipientIn':
      return { type: c.kind, values: [...c.dids] };
    case 'EventEquals':
      return { type: c.kind, value: c.event };
  }
}

/** A rule as responses render it (§8.1). */
export type RuleJson = { id: string; priority: number; conditions: JsonRecord[]; action: JsonRecord; constraint_overrides?: JsonRecord };

export function ruleToJson(rule: PolicyRule): RuleJson {
  const out: RuleJson = {
    id: rule.id,
    priority: rule.priority,
    conditions: rule.conditions.map(conditionToJson),
    action: actionToJson(rule.action),
  };
  if (rule.constraintOverrides !== null) out.constraint_overrides = overridesToJson(rule.constraintOverrides);
  return out;
}

/** A policy as responses render it (§8.1); `revision` a decimal string only beyond 2^53. */
export type PolicyJson = {
  policy_id: string;
  scope: ReturnType<typeof scopeToJson>;
  revision: number | string;
  operator_did: string;
  /** Absent only from a v2 preparation's echo for clients that refuse it. */
  policy_ttl_seconds?: number;
  ruleset: RuleJson[];
};

/** The policy object of §8.1 (v2 and v3 share it). */
export function policyToJson(p: DeliveryPolicy): PolicyJson {
  return {
    policy_id: to0x(p.policyId),
    scope: scopeToJson(p.scope),
    revision: u64Json(p.revision),
    operator_did: p.operatorDid,
    policy_ttl_seconds: p.policyTtlSeconds,
    ruleset: p.ruleset.map(ruleToJson),
  };
}

/** `policy` of `GET /delivery-resolution/{did}` (http-api.md §6); deprecated constraint fields never emitted. */
export type ResolvedPolicyJson = {
  source: ResolvedPolicy['source'];
  source_id: string;
  policy_id: string;
  policy_revision: number | string;
  rule_id: string;
  rule_priority: number;
  action: JsonRecord;
  effective_constraints: ConstraintsJson;
  policy_ttl_seconds: number;
};

/** `policy` of `GET /delivery-resolution/{did}` (http-api.md §6); deprecated constraint fields never emitted. */
export function resolvedPolicyToJson(r: ResolvedPolicy): ResolvedPolicyJson {
  return {
    source: r.source,
    source_id: r.sourceId,
    policy_id: r.policyId,
    policy_revision: u64Json(r.policyRevision),
    rule_id: r.ruleId,
    rule_priority: r.rulePriority,
    action: actionToJson(r.action),
    effective_constraints: constraintsToJson(r.effectiveConstraints),
    policy_ttl_seconds: r.policyTtlSeconds,
  };
}
