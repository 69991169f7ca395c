/**
 * `GET /delivery-resolution/{did}` (http-api.md §6): the recipient's key agreement and the winning delivery rule
 * over finalized state, through the ledger's `resolve_delivery_policy` (ledger-rules.md §7.10).
 */
import { DdnError } from '../base/errors.js';
import { getDidRecord } from '../ledger/records.js';
import { isValidTag } from '../ledger/runtime/conditions.js';
import { activePersona, addressedConstraints, resolveDeliveryPolicy } from '../ledger/runtime/resolution.js';
import { constraintsToJson } from '../protocol/constraints.js';
import type { KeyAgreement } from '../protocol/document.js';
import { decodeX25519Multibase } from '../protocol/keys.js';
import { canonicalPersona } from '../protocol/persona-name.js';
import { resolvedPolicyToJson } from '../protocol/policy/json-render.js';
import type { ResolvedPolicy } from '../protocol/policy/types.js';
import type { DirectoryDeps } from './deps.js';
import { assertDid } from './submission.js';
import type { DeliveryResolutionResponse } from '../wire/directory.js';

const KEY_AGREEMENT_TYPES = new Set(['X25519KeyAgreementKey2020', 'X25519KeyAgreementKey2019', 'Multikey']);
/** `Cache-Control` max-age when no rule wins (§6). */
const NO_POLICY_TTL_SECONDS = 60;

const NOT_DELIVERABLE: Record<string, string> = {
  PersonaNotFound: 'persona_not_found',
  InvalidPersona: 'persona_not_found',
  PersonaInactive: 'persona_inactive',
  PersonaVerificationExpired: 'persona_verification_expired',
};

/** Step 3: the first usable X25519 key agreement in document order. */
export function recipientKeyAgreement(keyAgreements: readonly KeyAgreement[]): KeyAgreement | undefined {
  return keyAgreements.find((k) => KEY_AGREEMENT_TYPES.has(k.type) && decodeX25519Multibase(k.publicKeyMultibase) !== undefined);
}

/** `direct`, or the persona-release profile when the winning plan's entry step is `RequireProfile`. */
function encryptionProfileOf(deps: DirectoryDeps, won: ResolvedPolicy | null): string {
  if (won?.action.kind !== 'DeliveryPlanV1') return 'direct';
  const plan = won.action.plan;
  const entry = plan.steps.find((s) => s.id === plan.entryStep);
  return entry?.operation.kind === 'RequireProfile' ? deps.profile.personaReleaseProfile : 'direct';
}

export interface DeliveryResolution {
  body: DeliveryResolutionResponse;
  cacheControl: string;
}

export function resolveDelivery(deps: DirectoryDeps, did: string, query: Record<string, string>): DeliveryResolution {
  assertDid(did);
  const tag = query.tag ?? null;
  if (tag !== null && !isValidTag(tag)) throw new DdnError('invalid_request', 'tag is not a valid tag', { field: 'tag' });
  let persona: string | null = null;
  if (query.persona !== undefined) {
    persona = canonicalPersona(query.persona) ?? null;
    if (persona === null) throw new DdnError('invalid_persona', 'persona is not a valid persona name', { field: 'persona' });
  }
  const view = deps.ledger.finalizedView();
  const block = deps.ledger.finalizedRefNow();
  const now = deps.clock.nowMs();
  const rec = getDidRecord(view, did);
  if (!rec) throw new DdnError('did_not_found', 'DID not found', { did });
  if (rec.deactivated) throw new DdnError('did_deactivated', 'DID is deactivated', { did });
  if (persona !== null) {
    const live = activePersona(view, now, persona);
    if (!live.ok) {
      throw new DdnError('persona_not_deliverable', `persona ${persona} is not deliverable`, { reason: NOT_DELIVERABLE[live.error], persona });
    }
  }
  const ka = recipientKeyAgreement(rec.document?.keyAgreement ?? []);
  if (!ka) throw new DdnError('key_agreement_not_found', 'the recipient has no usable X25519 key agreement', { did });
  const won = resolveDeliveryPolicy(view, now, did, persona, tag);
  const policy = won ? resolvedPolicyToJson(won) : null;
  const effective = won ? won.effectiveConstraints : addressedConstraints(view, now, did, persona);
  return {
    body: {
      target: did,
      encryption_profile: encryptionProfileOf(deps, won),
      recipient_key_id: ka.id,
      recipient_public_key_multibase: ka.publicKeyMultibase,
      policy,
      effective_constraints: constraintsToJson(effective),
      block_number: block.number,
      block_hash: block.hash,
    },
    cacheControl: `max-age=${won ? won.policyTtlSeconds : NO_POLICY_TTL_SECONDS}`,
  };
}
