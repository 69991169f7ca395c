/**
 * V3 scope owner `owner(scope)` (ledger-rules.md §7.7), and the reasons `InvalidPolicyScope` carries (§11,
 * http-api.md §1.1): `owner_mismatch`, `application_rule_forbidden`, `send_target_not_consented`, or `scope_unavailable:<cause>` where the
 * cause names the Directory code (`did_not_found`, `persona_inactive`, `application_inactive`, …).
 */
import { isApplicationId } from '../../protocol/payloads/application.js';
import type { PolicyScopeV3 } from '../../protocol/policy/types.js';
import { didExists, getDidRecord } from '../records.js';
import type { StateReader } from '../state.js';
import { getApplication } from './application-state.js';
import { personaLiveness, type PersonaError } from './persona-state.js';

/** Why a scope has no owner: each cause is also the Directory code a read of the scope answers. */
export const SCOPE_UNAVAILABLE_CAUSES = [
  'did_not_found',
  'did_deactivated',
  'persona_not_found',
  'persona_inactive',
  'persona_verification_expired',
  'application_not_found',
  'application_inactive',
] as const;
export type ScopeUnavailableCause = (typeof SCOPE_UNAVAILABLE_CAUSES)[number];

export const OWNER_MISMATCH = 'owner_mismatch';
export const APPLICATION_RULE_FORBIDDEN = 'application_rule_forbidden';
/** Profile `platform`: an event rule's Send step names a DID that is not the Did/Persona policy's owner. */
export const SEND_TARGET_NOT_CONSENTED = 'send_target_not_consented';

/** `scope_unavailable:<cause>` — the `InvalidPolicyScope` reason when the scope has no owner. */
export function scopeUnavailable(cause: ScopeUnavailableCause): string {
  return `scope_unavailable:${cause}`;
}

export type ScopeOwner = { ok: true; owner: string } | { ok: false; error: 'DidNotFound' | PersonaError | 'InvalidPolicyScope'; cause: ScopeUnavailableCause };

const PERSONA_CAUSES: Record<PersonaError, ScopeUnavailableCause> = {
  PersonaNotFound: 'persona_not_found',
  PersonaInactive: 'persona_inactive',
  PersonaVerificationExpired: 'persona_verification_expired',
};

/** The cause for a DID that is not active (§3.2): deactivated when a record exists, else not found. */
export function didUnavailableCause(s: StateReader, did: string): ScopeUnavailableCause {
  return getDidRecord(s, did)?.deactivated ? 'did_deactivated' : 'did_not_found';
}

/**
 * `owner(scope)`: `Did(d)` → `d` when active (`DidNotFound`); `Persona(p)` → the operator of the active persona
 * (`active_persona` errors; `p` is the exact lookup key); `Application(id)` → the control DID of the `Active`
 * application (`InvalidPolicyScope`, also for an id outside `[a-z0-9._-]`).
 */
export function scopeOwner(s: StateReader, nowMs: number, scope: PolicyScopeV3): ScopeOwner {
  switch (scope.kind) {
    case 'Did':
      return didExists(s, scope.id) ? { ok: true, owner: scope.id } : { ok: false, error: 'DidNotFound', cause: didUnavailableCause(s, scope.id) };
    case 'Persona': {
      const live = personaLiveness(s, nowMs, scope.id);
      if (live.ok) return { ok: true, owner: live.record.operatorDid };
      const error = live.error === 'InvalidPersona' ? 'PersonaNotFound' : live.error;
      return { ok: false, error, cause: PERSONA_CAUSES[error] };
    }
    case 'Application': {
      const app = scope.id.length > 0 && isApplicationId(scope.id) ? getApplication(s, scope.id) : undefined;
      if (!app) return { ok: false, error: 'InvalidPolicyScope', cause: 'application_not_found' };
      if (app.status !== 'Active') return { ok: false, error: 'InvalidPolicyScope', cause: 'application_inactive' };
      return { ok: true, owner: app.controlDid };
    }
  }
}
