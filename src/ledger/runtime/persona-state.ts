/** Persona records (ledger-rules.md §8.2) and `active_persona` over exact names (§8.6). */
import type { DeliveryConstraints } from '../../protocol/constraints.js';
import type { Overlay, StateReader } from '../state.js';
import { stateSlot } from '../state-slot.js';

/** §8.2. Times are Unix ms; `named` is the named-persona marker (set by `RegisterNamed`, never cleared). */
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

/** State key of a persona record; `p` is the exact (canonical) name. */
export const personaKey = (p: string) => `persona/${p}`;

/** Persona records by exact name (state-slot.ts). */
const personas = stateSlot<string, PersonaRecord>(personaKey);

export function getPersona(s: StateReader, p: string): PersonaRecord | undefined {
  return personas.read(s, p);
}

export function putPersona(s: Overlay, p: string, rec: PersonaRecord): void {
  personas.write(s, p, rec);
}

export type PersonaError = 'PersonaNotFound' | 'PersonaInactive' | 'PersonaVerificationExpired';

export type PersonaLiveness = { ok: true; persona: string; record: PersonaRecord } | { ok: false; error: PersonaError | 'InvalidPersona' };

/**
 * `active_persona(p)` (§8.6) with `p` used as the lookup key byte for byte, as the ledger modules do
 * (a non-canonical name is simply not found). Never reports `InvalidPersona`.
 */
export function personaLiveness(s: StateReader, nowMs: number, p: string): PersonaLiveness {
  const rec = getPersona(s, p);
  if (!rec) return { ok: false, error: 'PersonaNotFound' };
  if (!rec.active) return { ok: false, error: 'PersonaInactive' };
  if (!rec.named && !(rec.verificationExpiresAt > nowMs)) return { ok: false, error: 'PersonaVerificationExpired' };
  return { ok: true, persona: p, record: rec };
}

/** Controller-set rule (§8.2): 1–8 non-empty, distinct ids and threshold exactly 1. */
export function isValidControllerSet(ids: readonly string[], threshold: number): boolean {
  return ids.length >= 1 && ids.length <= 8 && threshold === 1 && ids.every((k) => k.length > 0) && new Set(ids).size === ids.length;
}
