/**
 * Delivery resolution (ledger-rules.md §7.10, §8.6): pure functions of (state, now, recipient, persona?, tag?),
 * meant to run over the finalized state.
 */
import { to0x, utf8Length } from '../../base/bytes.js';
import { NETWORK_CONSTRAINTS, minConstraints, normalisedConstraints, type DeliveryConstraints } from '../../protocol/constraints.js';
import { canonicalPersona } from '../../protocol/persona-name.js';
import type { DeliveryPolicy, PolicyScopeV2, ResolvedPolicy } from '../../protocol/policy/types.js';
import type { StateReader } from '../state.js';
import { isValidTag, winningRule } from './conditions.js';
import { clampConstraints } from './constraints.js';
import { personaLiveness, type PersonaLiveness } from './persona-state.js';
import { getDidConstraints, getPolicyV2, getPolicyV3 } from './policy-state.js';

export { personaKey, type PersonaLiveness, type PersonaRecord } from './persona-state.js';
export type { ResolvedPolicy } from '../../protocol/policy/types.js';

/**
 * `active_persona(p)` (§8.6) for a name as a client gives it: canonicalised first (§8.1; failure →
 * `InvalidPersona`), then looked up. The ledger modules use the exact-name `personaLiveness` instead.
 */
export function activePersona(s: StateReader, nowMs: number, raw: string): PersonaLiveness {
  const p = canonicalPersona(raw);
  if (!p) return { ok: false, error: 'InvalidPersona' };
  return personaLiveness(s, nowMs, p);
}

/** The recipient DID's stored constraints, normalised (`did_cfg` of §7.10 step 3), or null. */
function didConfig(s: StateReader, recipient: string): DeliveryConstraints | null {
  const stored = getDidConstraints(s, recipient);
  return stored ? normalisedConstraints(stored) : null;
}

/** `min(did_cfg, persona_cfg)` when both exist, else whichever exists, else `network` (§7.10 step 4b). */
function mergeAddressed(didCfg: DeliveryConstraints | null, personaCfg: DeliveryConstraints | null): DeliveryConstraints {
  if (didCfg && personaCfg) return minConstraints(didCfg, personaCfg);
  return didCfg ?? personaCfg ?? { ...NETWORK_CONSTRAINTS };
}

/**
 * The constraints addressed by (recipient, persona?) (§7.10 steps 3–4b): what applies when no rule wins. A persona
 * that is not deliverable contributes nothing (resolution itself returns None for it).
 */
export function addressedConstraints(s: StateReader, nowMs: number, recipient: string, persona: string | null): DeliveryConstraints {
  const didCfg = didConfig(s, recipient);
  if (persona === null) return didCfg ?? { ...NETWORK_CONSTRAINTS };
  const live = activePersona(s, nowMs, persona);
  const personaCfg = live.ok && live.record.deliveryConstraints ? normalisedConstraints(live.record.deliveryConstraints) : null;
  return mergeAddressed(didCfg, personaCfg);
}

/**
 * The policy consulted for a Did/Persona scope: its v3 policy (or v2 mirror), else its v2 record. A v2 write
 * stores a v3 mirror under the v3 id (§7.2); the v2 record beside it (a v3 write removes it) means the policy was
 * written through v2, and it is then reported with the id it was written and signed with — the id
 * `GET /delivery-policies/…` shows — so one policy has one `policy_id` in every answer (a deliberate deviation from
 * §7.10 step 8, which served the mirror's v3 id). State and validation are unchanged.
 */
function policyOf(s: StateReader, scope: PolicyScopeV2): DeliveryPolicy | undefined {
  const v3 = getPolicyV3(s, scope);
  const v2 = getPolicyV2(s, scope);
  if (v3 !== undefined && v2 !== undefined && v2.revision === v3.revision) return { ...v3, policyId: v2.policyId };
  return v3 ?? v2;
}

function evaluate(
  policy: DeliveryPolicy,
  source: ResolvedPolicy['source'],
  sourceId: string,
  recipient: string,
  tag: string | null,
  addressed: DeliveryConstraints,
): ResolvedPolicy | null {
  const rule = winningRule(policy.ruleset, { recipient, tag, event: null });
  if (!rule) return null;
  return {
    source,
    sourceId,
    policyId: to0x(policy.policyId),
    policyRevision: policy.revision,
    ruleId: rule.id,
    rulePriority: rule.priority,
    action: rule.action,
    effectiveConstraints: clampConstraints(addressed, rule.constraintOverrides),
    policyTtlSeconds: policy.policyTtlSeconds,
  };
}

/**
 * `resolve_delivery_policy(recipient, persona?, tag?)` (§7.10). Returns null when the recipient is too long, the
 * tag invalid, the persona invalid or not deliverable (no fallback to the DID then), or no rule wins. The persona's
 * policy is consulted first (v3 before v2); without a winner there, the recipient DID's (v3 before v2; a v3 policy
 * without a winner ends the search). Application-scope policies are never consulted; `EventEquals` never matches.
 */
export function resolveDeliveryPolicy(s: StateReader, nowMs: number, recipient: string, persona: string | null, tag: string | null): ResolvedPolicy | null {
  if (utf8Length(recipient) > 128) return null;
  if (tag !== null && !isValidTag(tag)) return null;
  const didCfg = didConfig(s, recipient);
  let addressed = didCfg ?? { ...NETWORK_CONSTRAINTS };
  if (persona !== null) {
    const p = canonicalPersona(persona);
    if (!p) return null;
    const live = personaLiveness(s, nowMs, p);
    if (!live.ok) return null;
    const personaCfg = live.record.deliveryConstraints ? normalisedConstraints(live.record.deliveryConstraints) : null;
    addressed = mergeAddressed(didCfg, personaCfg);
    const policy = policyOf(s, { kind: 'Persona', id: p });
    const hit = policy ? evaluate(policy, 'persona', p, recipient, tag, addressed) : null;
    if (hit) return hit;
  }
  const policy = policyOf(s, { kind: 'Did', id: recipient });
  return policy ? evaluate(policy, 'did', recipient, recipient, tag, addressed) : null;
}
