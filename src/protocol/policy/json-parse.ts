/**
 * Parsing the JSON policy object of http-api.md §8.1 into the ledger struct (§7.1). Shape errors are 400
 * `invalid_delivery_policy` with `details.reason` (`unknown_key`, `missing_field`, `invalid_field`, or the
 * snake_case ledger name when the JSON range mirrors a ledger rule) and `details.field`. Everything the wire
 * types cannot carry is refused here; ledger rules (§7.4–§7.9) stay with the ledger.
 */
import { parseHex, utf8 } from '../../base/bytes.js';
import { canonicalPersona } from '../persona-name.js';
import { parseOverridesJson } from './constraints-json.js';
import { FieldReader, has, join, type JsonRecord } from './json-fields.js';
import {
  CACHE_SELECTIONS,
  POLICY_BOUNDS as B,
  POLICY_EVENTS,
  TRANSITION_MODES,
  TRANSITION_TRIGGERS,
  type DeliveryPlanV1,
  type DeliveryPolicy,
  type DeliveryStep,
  type DeliveryTransition,
  type PolicyAction,
  type PolicyCondition,
  type PolicyRule,
  type PolicyScopeV2,
  type PolicyScopeV3,
  type RouteTarget,
} from './types.js';

const r = new FieldReader('invalid_delivery_policy');

/** `policy_ttl_seconds` of a v2 policy that does not give it (the ledger's v2 struct carries one). */
export const DEFAULT_V2_POLICY_TTL_SECONDS = 60;

/** A parsed policy; `policyId` and `revision` are null when the JSON omits them (prepare routes fill them). */
export interface PolicyDraft<S extends PolicyScopeV3 = PolicyScopeV3> {
  policyId: Uint8Array | null;
  scope: S;
  revision: bigint | null;
  operatorDid: string;
  ruleset: PolicyRule[];
  policyTtlSeconds: number;
}

const POLICY_KEYS = ['policy_id', 'scope', 'revision', 'operator_did', 'policy_ttl_seconds', 'ruleset'] as const;

function required(o: JsonRecord, key: string, field: string): unknown {
  if (!has(o, key)) r.fail(join(field, key), 'missing_field', `${join(field, key)} is required`);
  return o[key];
}

const SCOPE_TYPES = { DID: 'Did', PERSONA: 'Persona', APPLICATION: 'Application' } as const;

/**
 * `{type, id}` with `type` `DID`, `PERSONA` or (v3) `APPLICATION`. Persona ids are canonicalised (§8.1 of
 * ledger-rules.md; `invalid_persona`); ids must fit their wire bounds.
 */
export function parseScopeJson(v: unknown, field: string, version: 2 | 3): PolicyScopeV3 {
  const o = r.object(v, field, ['type', 'id']);
  const allowed = version === 2 ? (['DID', 'PERSONA'] as const) : (['DID', 'PERSONA', 'APPLICATION'] as const);
  const type = r.oneOf(required(o, 'type', field), join(field, 'type'), allowed);
  const kind = SCOPE_TYPES[type];
  const idField = join(field, 'id');
  const raw = r.string(required(o, 'id', field), idField, 1024);
  if (kind === 'Persona') {
    const p = canonicalPersona(raw) ?? r.fail(idField, 'invalid_persona', `${idField} is not a valid persona name`);
    return { kind, id: p };
  }
  return { kind, id: r.string(raw, idField, kind === 'Did' ? B.didBytes : B.applicationIdBytes) };
}

function parsePolicy(v: unknown, field: string, version: 2 | 3, v2Ttl = false): PolicyDraft {
  const o = r.object(v, field, POLICY_KEYS);
  let policyId: Uint8Array | null = null;
  if (has(o, 'policy_id') && o.policy_id !== null) {
    const f = join(field, 'policy_id');
    const s = r.string(o.policy_id, f, 66);
    policyId = (/^0x[0-9a-fA-F]{64}$/.test(s) ? parseHex(s) : undefined) ?? r.fail(f, 'invalid_policy_id', `${f} must be 0x + 64 hex digits`);
  }
  const scope = parseScopeJson(required(o, 'scope', field), join(field, 'scope'), version);
  const revision = has(o, 'revision') && o.revision !== null ? r.u64(o.revision, join(field, 'revision')) : null;
  const operatorDid = r.string(required(o, 'operator_did', field), join(field, 'operator_did'), B.didBytes);
  const ttlField = join(field, 'policy_ttl_seconds');
  if (version === 2 && !v2Ttl && has(o, 'policy_ttl_seconds')) {
    r.fail(ttlField, 'policy_ttl_v3_only', `${ttlField} is a version 3 field; a version 2 policy always has ${DEFAULT_V2_POLICY_TTL_SECONDS}`);
  }
  const policyTtlSeconds =
    version === 2 && !has(o, 'policy_ttl_seconds')
      ? DEFAULT_V2_POLICY_TTL_SECONDS
      : r.integer(required(o, 'policy_ttl_seconds', field), ttlField, B.minPolicyTtlSeconds, B.maxPolicyTtlSeconds, 'invalid_policy_ttl');
  const rulesField = join(field, 'ruleset');
  const rules = r.array(required(o, 'ruleset', field), rulesField, B.rules);
  if (rules.length === 0) r.fail(rulesField, 'empty_ruleset', `${rulesField} must hold at least one rule`);
  const ruleset = rules.map((x, i) => parseRuleJson(x, join(rulesField, i)));
  return { policyId, scope, revision, operatorDid, ruleset, policyTtlSeconds };
}

/**
 * A v2 policy object (scope `DID` or `PERSONA`; `policy_ttl_seconds` is 60). The product spec makes
 * `policy_ttl_seconds` a version 3 field, so a v2 object carrying it is refused (`policy_ttl_v3_only`) unless
 * `acceptTtl` (profiles accepting deployed clients' forms, http-api.md §12): then it is optional, default 60.
 */
export function parsePolicyJsonV2(v: unknown, acceptTtl: boolean, field = 'policy'): PolicyDraft<PolicyScopeV2> {
  return parsePolicy(v, field, 2, acceptTtl) as PolicyDraft<PolicyScopeV2>;
}

/** A v3 policy object (scope `DID`, `PERSONA` or `APPLICATION`; `policy_ttl_seconds` required). */
export function parsePolicyJsonV3(v: unknown, field = 'policy'): PolicyDraft<PolicyScopeV3> {
  return parsePolicy(v, field, 3);
}

/** The struct to sign: the draft with `policy_id` / `revision` filled where the JSON omitted them. */
export function completePolicy<S extends PolicyScopeV3>(draft: PolicyDraft<S>, fill: { policyId: Uint8Array; revision: bigint }): DeliveryPolicy<S> {
  return { ...draft, policyId: draft.policyId ?? fill.policyId, revision: draft.revision ?? fill.revision };
}

const RULE_KEYS = ['id', 'priority', 'conditions', 'action', 'constraint_overrides'] as const;

export function parseRuleJson(v: unknown, field: string): PolicyRule {
  const o = r.object(v, field, RULE_KEYS);
  const id = r.string(required(o, 'id', field), join(field, 'id'), B.ruleIdBytes);
  const priority = r.integer(required(o, 'priority', field), join(field, 'priority'), 0, B.maxRulePriority, 'invalid_rule_priority');
  const condField = join(field, 'conditions');
  const conds = has(o, 'conditions') && o.conditions !== null ? r.array(o.conditions, condField, B.conditions) : [];
  return {
    id,
    priority,
    conditions: conds.map((c, i) => parseConditionJson(c, join(condField, i))),
    action: parseActionJson(required(o, 'action', field), join(field, 'action')),
    constraintOverrides: parseOverridesJson(o.constraint_overrides, join(field, 'constraint_overrides')),
  };
}

export function parseConditionJson(v: unknown, field: string): PolicyCondition {
  const o = r.object(v, field);
  const type = r.oneOf(required(o, 'type', field), join(field, 'type'), [
    'TagEquals',
    'TagPrefix',
    'TagAbsent',
    'RecipientEquals',
    'RecipientIn',
    'EventEquals',
  ] as const);
  const keys = (...extra: string[]) => r.object(o, field, ['type', ...extra]);
  const value = () => required(o, 'value', field);
  switch (type) {
    case 'TagEquals':
    case 'TagPrefix':
      keys('value');
      return { kind: type, tag: r.string(value(), join(field, 'value'), B.tagBytes, 'invalid_tag') };
    case 'TagAbsent':
      keys();
      return { kind: type };
    case 'RecipientEquals':
      keys('value');
      return { kind: type, did: r.string(value(), join(field, 'value'), B.didBytes) };
    case 'RecipientIn': {
      keys('values');
      const f = join(field, 'values');
      const list = r.array(required(o, 'values', field), f, B.recipientIn);
      if (list.length === 0) r.fail(f, 'invalid_condition', `${f} must hold at least one DID`);
      return { kind: type, dids: list.map((d, i) => r.string(d, join(f, i), B.didBytes)) };
    }
    case 'EventEquals':
      keys('value');
      return { kind: type, event: r.oneOf(value(), join(field, 'value'), POLICY_EVENTS) };
  }
}

export function parseActionJson(v: unknown, field: string): PolicyAction {
  const o = r.object(v, field);
  const type = r.oneOf(required(o, 'type', field), join(field, 'type'), ['DeliveryPlan/v1', 'Reject/v1', 'BaseDidDelivery/v1'] as const);
  switch (type) {
    case 'DeliveryPlan/v1':
      r.object(o, field, ['type', 'entry_step', 'steps', 'transitions']);
      return { kind: 'DeliveryPlanV1', plan: parsePlanJson(o, field) };
    case 'Reject/v1':
      r.object(o, field, ['type', 'reason_code']);
      return {
        kind: 'RejectV1',
        reasonCode: has(o, 'reason_code') ? r.integer(o.reason_code, join(field, 'reason_code'), 0, 65_535) : 0,
      };
    case 'BaseDidDelivery/v1':
      r.object(o, field, ['type']);
      return { kind: 'BaseDidDeliveryV1' };
  }
}

function parsePlanJson(o: JsonRecord, field: string): DeliveryPlanV1 {
  const entryStep = r.string(required(o, 'entry_step', field), join(field, 'entry_step'), B.stepIdBytes);
  const stepsField = join(field, 'steps');
  const steps = r.array(required(o, 'steps', field), stepsField, B.steps);
  const trField = join(field, 'transitions');
  const transitions = has(o, 'transitions') ? r.array(o.transitions, trField, B.transitions) : [];
  return {
    entryStep,
    steps: steps.map((s, i) => parseStepJson(s, join(stepsField, i))),
    transitions: transitions.map((t, i) => parseTransitionJson(t, join(trField, i))),
  };
}

/**
 * `payload_template` bytes: the compact JSON of the object (JSON.stringify: no whitespace, members in the
 * object's own order, JSON.stringify escaping). Must be an object and fit 4096 bytes.
 */
export function templateFromJson(v: unknown, field: string): Uint8Array {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    r.fail(field, 'invalid_payload_template', `${field} must be a JSON object`);
  }
  const bytes = utf8(JSON.stringify(v));
  if (bytes.length > B.templateBytes) r.fail(field, 'invalid_payload_template', `${field} is longer than ${B.templateBytes} bytes`);
  return bytes;
}

const STEP_EXTRA_KEYS = {
  Forward: ['targets'],
  Store: ['targets', 'desired_replicas', 'required_replicas', 'selection'],
  Archive: ['targets'],
  Send: ['recipient_did', 'payload_template'],
  Call: ['service_did', 'service_id', 'registered_domain', 'payload_template'],
  RequireProfile: [],
} as const;

export function parseStepJson(v: unknown, field: string): DeliveryStep {
  const o = r.object(v, field);
  const op = r.oneOf(required(o, 'operation', field), join(field, 'operation'), Object.keys(STEP_EXTRA_KEYS) as Array<keyof typeof STEP_EXTRA_KEYS>);
  r.object(o, field, ['id', 'operation', ...STEP_EXTRA_KEYS[op]]);
  const id = r.string(required(o, 'id', field), join(field, 'id'), B.stepIdBytes);
  const str = (key: string, max: number) => r.string(required(o, key, field), join(field, key), max);
  const targets = () => {
    const f = join(field, 'targets');
    return r.array(required(o, 'targets', field), f, B.targets).map((t, i) => parseTargetJson(t, join(f, i)));
  };
  switch (op) {
    case 'Forward':
    case 'Archive':
      return { id, operation: { kind: op, targets: targets() } };
    case 'Store':
      return {
        id,
        operation: {
          kind: op,
          targets: targets(),
          desiredReplicas: r.integer(required(o, 'desired_replicas', field), join(field, 'desired_replicas'), 1, 255, 'invalid_delivery_plan'),
          requiredReplicas: r.integer(required(o, 'required_replicas', field), join(field, 'required_replicas'), 1, 255, 'invalid_delivery_plan'),
          selection: has(o, 'selection') ? r.oneOf(o.selection, join(field, 'selection'), CACHE_SELECTIONS) : 'Priority',
        },
      };
    case 'Send':
      return {
        id,
        operation: {
          kind: op,
          recipientDid: str('recipient_did', B.didBytes),
          payloadTemplate: templateFromJson(required(o, 'payload_template', field), join(field, 'payload_template')),
        },
      };
    case 'Call':
      return {
        id,
        operation: {
          kind: op,
          serviceDid: str('service_did', B.didBytes),
          serviceId: str('service_id', B.serviceIdBytes),
          registeredDomain: str('registered_domain', B.domainBytes),
          payloadTemplate: templateFromJson(required(o, 'payload_template', field), join(field, 'payload_template')),
        },
      };
    case 'RequireProfile':
      return { id, operation: { kind: op } };
  }
}

export function parseTargetJson(v: unknown, field: string): RouteTarget {
  const o = r.object(v, field, ['service_did', 'service_id', 'priority', 'weight']);
  return {
    serviceDid: r.string(required(o, 'service_did', field), join(field, 'service_did'), B.didBytes),
    serviceId: r.string(required(o, 'service_id', field), join(field, 'service_id'), B.serviceIdBytes),
    priority: has(o, 'priority') ? r.integer(o.priority, join(field, 'priority'), 0, 65_535) : 0,
    weight: has(o, 'weight') ? r.integer(o.weight, join(field, 'weight'), 1, 65_535, 'invalid_route_target') : 1,
  };
}

export function parseTransitionJson(v: unknown, field: string): DeliveryTransition {
  const o = r.object(v, field, ['from', 'to', 'trigger', 'mode']);
  return {
    from: r.string(required(o, 'from', field), join(field, 'from'), B.stepIdBytes),
    to: r.string(required(o, 'to', field), join(field, 'to'), B.stepIdBytes),
    trigger: r.oneOf(required(o, 'trigger', field), join(field, 'trigger'), TRANSITION_TRIGGERS),
    mode: has(o, 'mode') ? r.oneOf(o.mode, join(field, 'mode'), TRANSITION_MODES) : 'Next',
  };
}
