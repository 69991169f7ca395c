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
  // the Relay's own storage failing (its node-request nonce, a result it reads) is 507 insufficient_storage on
  // either profile, as on every route (src/http/error-body.ts); on `platform` also every Cache full
  507: ['staging_persist_failed', 'insufficient_storage'],
};

/**
 * Whether a delivery every Cache refused for want of storage is answered 507 `insufficient_storage` (profile
 * `platform`, service-spec.md's status list) rather than the 502 of http-api.md §10.5's DeliveryResult table, which
 * `openpayload`'s deployed senders retry (docs/api.md).
 */
export const everyCacheFullIs507 = (profile: Profile): boolean => profile.p === 'platform';

/**
 * The codes `POST /relay[/{recipientDid}]` can answer: the same on both profiles (docs/api.md, "A full Cache through
 * the Relay"), since either answers its own storage failure with 507 `insufficient_storage`.
 */
export function relayPostErrors(): ErrorCode[] {
  return Object.values(RELAY_POST_ERRORS).flat();
}
