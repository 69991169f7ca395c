/**
 * SCALE codecs of the delivery-policy types (ledger-rules.md §4.7, §4.8, §7.1). Readers enforce every bound of
 * §7.1 (`Bytes≤N`, `Vec≤N`, enum indices) so strict decoding (§1.4) rejects anything the chain would not decode.
 */
import { type ScaleReader, ScaleWriter, decodeStrict } from '../../codec/scale.js';
import {
  ACTION_KINDS,
  CACHE_SELECTIONS,
  CONDITION_KINDS,
  POLICY_BOUNDS as B,
  POLICY_EVENTS,
  STEP_KINDS,
  TRANSITION_MODES,
  TRANSITION_TRIGGERS,
  type DeliveryConstraintOverrides,
  type DeliveryPlanV1,
  type DeliveryPolicy,
  type DeliveryStep,
  type DeliveryStepOperation,
  type DeliveryTransition,
  type PolicyAction,
  type PolicyCondition,
  type PolicyRule,
  type PolicyScopeV2,
  type PolicyScopeV3,
  type RequestedDeliveryConstraints,
  type RouteTarget,
} from './types.js';

// ---- scopes ----

const SCOPE_KINDS = ['Did', 'Persona', 'Application'] as const;
const SCOPE_BOUNDS = [B.didBytes, B.personaBytes, B.applicationIdBytes] as const;

export function writeScope(w: ScaleWriter, s: PolicyScopeV3): void {
  w.u8(SCOPE_KINDS.indexOf(s.kind)).str(s.id);
}

export function readScopeV2(r: ScaleReader): PolicyScopeV2 {
  const i = r.variant(2);
  return { kind: SCOPE_KINDS[i] as 'Did' | 'Persona', id: r.str(SCOPE_BOUNDS[i]) };
}

export function readScopeV3(r: ScaleReader): PolicyScopeV3 {
  const i = r.variant(3);
  return { kind: SCOPE_KINDS[i]!, id: r.str(SCOPE_BOUNDS[i]) };
}

/** SCALE(scope): variant byte ‖ compact-prefixed id (§7.2). */
export function encodeScope(s: PolicyScopeV3): Uint8Array {
  const w = new ScaleWriter();
  writeScope(w, s);
  return w.finish();
}

// ---- constraints ----

export function writeRequestedConstraints(w: ScaleWriter, c: RequestedDeliveryConstraints): void {
  w.u32(c.requestedCacheSeconds)
    .u32(c.maxHttpEnvelopeBytes)
    .u32(c.maxUnchunkedMessageBytes)
    .u32(c.maxChunkBytes)
    .u32(c.maxMessageBytes)
    .u16(c.maxChunks)
    .u8(c.maxReplicas);
}

export function readRequestedConstraints(r: ScaleReader): RequestedDeliveryConstraints {
  return {
    requestedCacheSeconds: r.u32(),
    maxHttpEnvelopeBytes: r.u32(),
    maxUnchunkedMessageBytes: r.u32(),
    maxChunkBytes: r.u32(),
    maxMessageBytes: r.u32(),
    maxChunks: r.u16(),
    maxReplicas: r.u8(),
  };
}

function writeOverrides(w: ScaleWriter, o: DeliveryConstraintOverrides): void {
  const u32 = (v: number | null) => w.option(v, (x, n) => x.u32(n));
  u32(o.requestedCacheSeconds);
  u32(o.maxHttpEnvelopeBytes);
  u32(o.maxUnchunkedMessageBytes);
  u32(o.maxChunkBytes);
  u32(o.maxMessageBytes);
  w.option(o.maxChunks, (x, n) => x.u16(n));
  w.option(o.maxReplicas, (x, n) => x.u8(n));
}

function readOverrides(r: ScaleReader): DeliveryConstraintOverrides {
  const u32 = () => r.option((x) => x.u32());
  return {
    requestedCacheSeconds: u32(),
    maxHttpEnvelopeBytes: u32(),
    maxUnchunkedMessageBytes: u32(),
    maxChunkBytes: u32(),
    maxMessageBytes: u32(),
    maxChunks: r.option((x) => x.u16()),
    maxReplicas: r.option((x) => x.u8()),
  };
}

// ---- conditions ----

function writeCondition(w: ScaleWriter, c: PolicyCondition): void {
  w.u8(CONDITION_KINDS.indexOf(c.kind));
  switch (c.kind) {
    case 'TagEquals':
    case 'TagPrefix':
      w.str(c.tag);
      break;
    case 'RecipientEquals':
      w.str(c.did);
      break;
    case 'RecipientIn':
      w.vec(c.dids, (x, d) => x.str(d));
      break;
    case 'EventEquals':
      w.u8(POLICY_EVENTS.indexOf(c.event));
      break;
    case 'TagAbsent':
      break;
  }
}

function readCondition(r: ScaleReader): PolicyCondition {
  const kind = CONDITION_KINDS[r.variant(CONDITION_KINDS.length)]!;
  switch (kind) {
    case 'TagEquals':
    case 'TagPrefix':
      return { kind, tag: r.str(B.tagBytes) };
    case 'TagAbsent':
      return { kind };
    case 'RecipientEquals':
      return { kind, did: r.str(B.didBytes) };
    case 'RecipientIn':
      return { kind, dids: r.vec(B.recipientIn, (x) => x.str(B.didBytes)) };
    case 'EventEquals':
      return { kind, event: POLICY_EVENTS[r.variant(POLICY_EVENTS.length)]! };
  }
}

// ---- plans ----

function writeTarget(w: ScaleWriter, t: RouteTarget): void {
  w.str(t.serviceDid).str(t.serviceId).u16(t.priority).u16(t.weight);
}

function readTarget(r: ScaleReader): RouteTarget {
  return { serviceDid: r.str(B.didBytes), serviceId: r.str(B.serviceIdBytes), priority: r.u16(), weight: r.u16() };
}

function writeOperation(w: ScaleWriter, op: DeliveryStepOperation): void {
  w.u8(STEP_KINDS.indexOf(op.kind));
  switch (op.kind) {
    case 'Forward':
    case 'Archive':
      w.vec(op.targets, writeTarget);
      break;
    case 'Store':
      w.vec(op.targets, writeTarget).u8(op.desiredReplicas).u8(op.requiredReplicas).u8(CACHE_SELECTIONS.indexOf(op.selection));
      break;
    case 'Send':
      w.str(op.recipientDid).bytes(op.payloadTemplate);
      break;
    case 'Call':
      w.str(op.serviceDid).str(op.serviceId).str(op.registeredDomain).bytes(op.payloadTemplate);
      break;
    case 'RequireProfile':
      break;
  }
}

function readOperation(r: ScaleReader): DeliveryStepOperation {
  const kind = STEP_KINDS[r.variant(STEP_KINDS.length)]!;
  const targets = () => r.vec(B.targets, readTarget);
  switch (kind) {
    case 'Forward':
    case 'Archive':
      return { kind, targets: targets() };
    case 'Store':
      return {
        kind,
        targets: targets(),
        desiredReplicas: r.u8(),
        requiredReplicas: r.u8(),
        selection: CACHE_SELECTIONS[r.variant(CACHE_SELECTIONS.length)]!,
      };
    case 'Send':
      return { kind, recipientDid: r.str(B.didBytes), payloadTemplate: r.bytes(B.templateBytes) };
    case 'Call':
      return {
        kind,
        serviceDid: r.str(B.didBytes),
        serviceId: r.str(B.serviceIdBytes),
        registeredDomain: r.str(B.domainBytes),
        payloadTemplate: r.bytes(B.templateBytes),
      };
    case 'RequireProfile':
      return { kind };
  }
}

function writeStep(w: ScaleWriter, s: DeliveryStep): void {
  w.str(s.id);
  writeOperation(w, s.operation);
}

function readStep(r: ScaleReader): DeliveryStep {
  return { id: r.str(B.stepIdBytes), operation: readOperation(r) };
}

function writeTransition(w: ScaleWriter, t: DeliveryTransition): void {
  w.str(t.from).str(t.to).u8(TRANSITION_TRIGGERS.indexOf(t.trigger)).u8(TRANSITION_MODES.indexOf(t.mode));
}

function readTransition(r: ScaleReader): DeliveryTransition {
  return {
    from: r.str(B.stepIdBytes),
    to: r.str(B.stepIdBytes),
    trigger: TRANSITION_TRIGGERS[r.variant(TRANSITION_TRIGGERS.length)]!,
    mode: TRANSITION_MODES[r.variant(TRANSITION_MODES.length)]!,
  };
}

export function writePlan(w: ScaleWriter, p: DeliveryPlanV1): void {
  w.str(p.entryStep).vec(p.steps, writeStep).vec(p.transitions, writeTransition);
}

export function readPlan(r: ScaleReader): DeliveryPlanV1 {
  return {
    entryStep: r.str(B.stepIdBytes),
    steps: r.vec(B.steps, readStep),
    transitions: r.vec(B.transitions, readTransition),
  };
}

// ---- actions and rules ----

export function writeAction(w: ScaleWriter, a: PolicyAction): void {
  w.u8(ACTION_KINDS.indexOf(a.kind));
  if (a.kind === 'DeliveryPlanV1') writePlan(w, a.plan);
  else if (a.kind === 'RejectV1') w.u16(a.reasonCode);
}

export function readAction(r: ScaleReader): PolicyAction {
  const kind = ACTION_KINDS[r.variant(ACTION_KINDS.length)]!;
  if (kind === 'DeliveryPlanV1') return { kind, plan: readPlan(r) };
  if (kind === 'RejectV1') return { kind, reasonCode: r.u16() };
  return { kind };
}

/** SCALE(`PolicyAction`), the encoding the resolved view's `action` uses (§7.10 step 8). */
export function encodeAction(a: PolicyAction): Uint8Array {
  const w = new ScaleWriter();
  writeAction(w, a);
  return w.finish();
}

export function writeRule(w: ScaleWriter, rule: PolicyRule): void {
  w.str(rule.id).u32(rule.priority).vec(rule.conditions, writeCondition);
  writeAction(w, rule.action);
  w.option(rule.constraintOverrides, writeOverrides);
}

export function readRule(r: ScaleReader): PolicyRule {
  return {
    id: r.str(B.ruleIdBytes),
    priority: r.u32(),
    conditions: r.vec(B.conditions, readCondition),
    action: readAction(r),
    constraintOverrides: r.option(readOverrides),
  };
}

// ---- policies ----

export function writePolicy(w: ScaleWriter, p: DeliveryPolicy): void {
  w.bytes(p.policyId);
  writeScope(w, p.scope);
  w.u64(p.revision).str(p.operatorDid).vec(p.ruleset, writeRule).u32(p.policyTtlSeconds);
}

function readPolicyWith<S extends PolicyScopeV3>(r: ScaleReader, readScope: (r: ScaleReader) => S): DeliveryPolicy<S> {
  return {
    policyId: r.bytes(B.policyIdBytes),
    scope: readScope(r),
    revision: r.u64(),
    operatorDid: r.str(B.didBytes),
    ruleset: r.vec(B.rules, readRule),
    policyTtlSeconds: r.u32(),
  };
}

export function readPolicyV2(r: ScaleReader): DeliveryPolicy<PolicyScopeV2> {
  return readPolicyWith(r, readScopeV2);
}

export function readPolicyV3(r: ScaleReader): DeliveryPolicy<PolicyScopeV3> {
  return readPolicyWith(r, readScopeV3);
}

export function encodePolicy(p: DeliveryPolicy): Uint8Array {
  const w = new ScaleWriter();
  writePolicy(w, p);
  return w.finish();
}

/** Strict decode of a `DeliveryPolicyV2` (throws ScaleDecodeError). */
export function decodePolicyV2(b: Uint8Array): DeliveryPolicy<PolicyScopeV2> {
  return decodeStrict(b, readPolicyV2, encodePolicy);
}

/** Strict decode of a `DeliveryPolicyV3` (throws ScaleDecodeError). */
export function decodePolicyV3(b: Uint8Array): DeliveryPolicy<PolicyScopeV3> {
  return decodeStrict(b, readPolicyV3, encodePolicy);
}
