/**
 * Delivery resolution over finalized state (ledger-rules.md §7.10, §8.6). Pure functions of (state, now, …).
 * This first version knows DID scope constraints and persona liveness; policy records are evaluated once the
 * policy module stores them (see the policy issue).
 */
import { NETWORK_CONSTRAINTS, minConstraints, normalisedConstraints, type DeliveryConstraints } from '../../protocol/constraints.js';
import { canonicalPersona } from '../../protocol/persona-name.js';
import { policyKeys } from '../records.js';
import type { StateReader } from '../state.js';

export interface PersonaRecord {
  operatorDid: string;
  controllerKeyIds: string[];
  controllerThreshold: number;
  deliveryConstraints: DeliveryConstraints | null;
  dnsProofHash: Uint8Array;
  verifiedAt: number;
  verificationExpiresAt: number;
  revision: number;
  active: boolean;
  named: boolean;
}

export const personaKey = (p: string) => `persona/${p}`;

export type PersonaLiveness =
  | { ok: true; persona: string; record: PersonaRecord }
  | { ok: false; error: 'PersonaNotFound' | 'PersonaInactive' | 'PersonaVerificationExpired' | 'InvalidPersona' };

/** `active_persona(p)` (§8.6). */
export function activePersona(s: StateReader, nowMs: number, raw: string): PersonaLiveness {
  const p = canonicalPersona(raw);
  if (!p) return { ok: false, error: 'InvalidPersona' };
  const rec = s.get(personaKey(p)) as PersonaRecord | undefined;
  if (!rec) return { ok: false, error: 'PersonaNotFound' };
  if (!rec.active) return { ok: false, error: 'PersonaInactive' };
  if (!rec.named && !(rec.verificationExpiresAt > nowMs)) return { ok: false, error: 'PersonaVerificationExpired' };
  return { ok: true, persona: p, record: rec };
}

/** The constraints addressed by (recipient, persona?) when no rule applies (§7.10 steps 3–4b). */
export function addressedConstraints(s: StateReader, nowMs: number, recipient: string, persona: string | null): DeliveryConstraints {
  const stored = s.get(policyKeys.didConstraints(recipient)) as DeliveryConstraints | undefined;
  const didCfg = stored ? normalisedConstraints(stored) : undefined;
  if (persona === null) return didCfg ?? { ...NETWORK_CONSTRAINTS };
  const live = activePersona(s, nowMs, persona);
  const personaCfg = live.ok && live.record.deliveryConstraints ? normalisedConstraints(live.record.deliveryConstraints) : undefined;
  if (didCfg && personaCfg) return minConstraints(didCfg, personaCfg);
  return didCfg ?? personaCfg ?? { ...NETWORK_CONSTRAINTS };
}
