/**
 * Delivery-policy types (ledger-rules.md §4.7, §4.8, §7.1) and their bounds (§10).
 * Text fields are JS strings carried as UTF-8; `payload_template` stays raw bytes (its UTF-8 validity is a
 * ledger rule, §7.6). u64 values are bigints.
 */
import type { DeliveryConstraints } from '../constraints.js';

/** Type bounds of §7.1 / §10 (byte lengths and item counts). */
export const POLICY_BOUNDS = {
  policyIdBytes: 32,
  didBytes: 128,
  personaBytes: 253,
  applicationIdBytes: 64,
  rules: 32,
  ruleIdBytes: 64,
  conditions: 8,
  tagBytes: 96,
  recipientIn: 16,
  stepIdBytes: 64,
  steps: 32,
  transitions: 64,
  targets: 16,
  serviceIdBytes: 128,
  templateBytes: 4096,
  domainBytes: 253,
  signerKeyIdBytes: 256,
  maxRulePriority: 65_535,
  minPolicyTtlSeconds: 1,
  maxPolicyTtlSeconds: 300,
  maxValidationUnits: 4096,
} as const;

/** `PolicyScopeV2`: `Did` = 0, `Persona` = 1 (§4.7). */
export type PolicyScopeV2 = { kind: 'Did'; id: string } | { kind: 'Persona'; id: string };
/** `PolicyScopeV3`: `Did` = 0, `Persona` = 1, `Application` = 2 (§4.8). */
export type PolicyScopeV3 = PolicyScopeV2 | { kind: 'Application'; id: string };
export type PolicyScopeKind = PolicyScopeV3['kind'];

export const POLICY_EVENTS = ['RelayDelivered', 'CacheStored', 'RelayAccepted'] as const;
export type PolicyEvent = (typeof POLICY_EVENTS)[number];

export type PolicyCondition =
  | { kind: 'TagEquals'; tag: string }
  | { kind: 'TagPrefix'; tag: string }
  | { kind: 'TagAbsent' }
  | { kind: 'RecipientEquals'; did: string }
  | { kind: 'RecipientIn'; dids: string[] }
  | { kind: 'EventEquals'; event: PolicyEvent };

export const CONDITION_KINDS = ['TagEquals', 'TagPrefix', 'TagAbsent', 'RecipientEquals', 'RecipientIn', 'EventEquals'] as const;

export interface RouteTarget {
  serviceDid: string;
  serviceId: string;
  /** u16, unconstrained. */
  priority: number;
  /** u16, ≥ 1 at write time. */
  weight: number;
}

export const CACHE_SELECTIONS = ['Priority', 'Weighted'] as const;
export type CacheSelection = (typeof CACHE_SELECTIONS)[number];

export type DeliveryStepOperation =
  | { kind: 'Forward'; targets: RouteTarget[] }
  | {
      kind: 'Store';
      targets: RouteTarget[];
      desiredReplicas: number;
      requiredReplicas: number;
      selection: CacheSelection;
    }
  | { kind: 'Archive'; targets: RouteTarget[] }
  | { kind: 'Send'; recipientDid: string; payloadTemplate: Uint8Array }
  | { kind: 'Call'; serviceDid: string; serviceId: string; registeredDomain: string; payloadTemplate: Uint8Array }
  | { kind: 'RequireProfile' };

export const STEP_KINDS = ['Forward', 'Store', 'Archive', 'Send', 'Call', 'RequireProfile'] as const;
export type StepKind = (typeof STEP_KINDS)[number];

export interface DeliveryStep {
  id: string;
  operation: DeliveryStepOperation;
}

export const TRANSITION_TRIGGERS = ['Success', 'Failure', 'Always'] as const;
export type TransitionTrigger = (typeof TRANSITION_TRIGGERS)[number];
export const TRANSITION_MODES = ['Next', 'Fork'] as const;
export type TransitionMode = (typeof TRANSITION_MODES)[number];

export interface DeliveryTransition {
  from: string;
  to: string;
  trigger: TransitionTrigger;
  mode: TransitionMode;
}

export interface DeliveryPlanV1 {
  entryStep: string;
  steps: DeliveryStep[];
  transitions: DeliveryTransition[];
}

export type PolicyAction = { kind: 'DeliveryPlanV1'; plan: DeliveryPlanV1 } | { kind: 'RejectV1'; reasonCode: number } | { kind: 'BaseDidDeliveryV1' };

export const ACTION_KINDS = ['DeliveryPlanV1', 'RejectV1', 'BaseDidDeliveryV1'] as const;

/** Rule-level narrowing of the scope constraints; `maxMessageBytes` and `maxChunks` are carried and ignored. */
export interface DeliveryConstraintOverrides {
  requestedCacheSeconds: number | null;
  maxHttpEnvelopeBytes: number | null;
  maxUnchunkedMessageBytes: number | null;
  maxChunkBytes: number | null;
  maxMessageBytes: number | null;
  maxChunks: number | null;
  maxReplicas: number | null;
}

/** Constraints as a writer requests them (§4.7); `maxMessageBytes` and `maxChunks` are ignored. */
export interface RequestedDeliveryConstraints {
  requestedCacheSeconds: number;
  maxHttpEnvelopeBytes: number;
  maxUnchunkedMessageBytes: number;
  maxChunkBytes: number;
  maxMessageBytes: number;
  maxChunks: number;
  maxReplicas: number;
}

export interface PolicyRule {
  id: string;
  /** u32 on the wire; writes accept 0…65 535. */
  priority: number;
  conditions: PolicyCondition[];
  action: PolicyAction;
  constraintOverrides: DeliveryConstraintOverrides | null;
}

/** `DeliveryPolicyV2` / `DeliveryPolicyV3` (§4.7, §4.8): the same struct over the version's scope type. */
export interface DeliveryPolicy<S extends PolicyScopeV3 = PolicyScopeV3> {
  /** `Bytes≤32`; must equal the scope's id (§7.2). */
  policyId: Uint8Array;
  scope: S;
  revision: bigint;
  operatorDid: string;
  ruleset: PolicyRule[];
  policyTtlSeconds: number;
}

export type DeliveryPolicyV2 = DeliveryPolicy<PolicyScopeV2>;
export type DeliveryPolicyV3 = DeliveryPolicy<PolicyScopeV3>;

export function isPersonaScope(s: PolicyScopeV3): s is { kind: 'Persona'; id: string } {
  return s.kind === 'Persona';
}

/**
 * The resolved view of `resolve_delivery_policy` (ledger-rules.md §7.10 step 8). `policyId` is the stored id as
 * `0x` hex (the v3 id when served from a v3 policy or a v2 mirror); `sourceId` is the DID or canonical persona.
 */
export interface ResolvedPolicy {
  source: 'did' | 'persona';
  sourceId: string;
  policyId: string;
  policyRevision: bigint;
  ruleId: string;
  rulePriority: number;
  action: PolicyAction;
  effectiveConstraints: DeliveryConstraints;
  policyTtlSeconds: number;
}
