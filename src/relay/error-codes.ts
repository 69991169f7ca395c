/** The codes each error status of `POST /relay[/{recipientDid}]` carries (http-api.md §10.5), for the OpenAPI document. */
import type { ErrorCode } from '../base/errors.js';
import type { Profile } from '../protocol/profile.js';
import { ENVELOPE_FIELD_CODES } from '../protocol/envelope-codes.js';

export const RELAY_POST_ERRORS: Readonly<Record<number, readonly ErrorCode[]>> = {
  400: [...ENVELOPE_FIELD_CODES, 'recipient_mismatch', 'invalid_did'],
  403: ['invalid_sender_signature', 'invalid_node_signature', 'policy_rejected'],
  404: ['recipient_not_found', 'no_delivery_service'],
  408: ['request_timeout'],
  409: ['message_id_conflict', 'chunk_conflict', 'chunk_set_conflict', 'policy_provenance_stale'],
  413: ['envelope_too_large', 'payload_too_large', 'chunk_too_large', 'metadata_too_large'],
  415: ['unsupported_media_type'],
  417: ['expectation_failed'],
  422: ['envelope_expired', 'persona_not_deliverable', 'plan_not_deliverable', 'release_profile_required', 'plaintext_not_allowed'],
  429: ['rate_limited', 'staging_capacity_full'],
  500: ['internal_error'],
  502: ['upstream_unavailable'],
  503: ['policy_lookup_failed', 'service_unavailable'],
  507: ['staging_persist_failed'],
};

/**
 * Whether a delivery every Cache refused for want of storage is answered 507 `insufficient_storage` (profile
 * `platform`, service-spec.md's status list) rather than the 502 of http-api.md §10.5's DeliveryResult table, which
 * `openpayload`'s deployed senders retry (docs/api.md).
 */
export const everyCacheFullIs507 = (profile: Profile): boolean => profile.p === 'platform';

/** The codes `POST /relay[/{recipientDid}]` can answer on `profile`: its OpenAPI document is the profile's. */
export function relayPostErrors(profile: Profile): ErrorCode[] {
  const codes = Object.values(RELAY_POST_ERRORS).flat();
  return everyCacheFullIs507(profile) ? [...codes, 'insufficient_storage'] : codes;
}
