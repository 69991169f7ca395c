/**
 * The one registry of client-visible error codes (http-api.md §1, §10.5, §11.8).
 * Core code throws `DdnError(code, …)`; only the HTTP layer turns the code into a status through `statusOf`.
 */

export const ERROR_STATUS = {
  // generic / transport
  invalid_json: 400,
  invalid_request: 400,
  invalid_path: 400,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  unsupported_media_type: 415,
  expectation_failed: 417,
  payload_too_large: 413,
  headers_too_large: 431,
  rate_limited: 429,
  unauthorized: 401,
  internal_error: 500,
  ledger_unavailable: 503,
  /** `--ledger substrate`: the chain does not answer; the Directory takes no writes until it does. */
  chain_unavailable: 503,
  service_unavailable: 503,
  // directory request syntax
  path_body_mismatch: 400,
  action_mismatch: 400,
  unsupported_action: 400,
  invalid_nonce: 400,
  invalid_valid_until: 400,
  invalid_signature_encoding: 400,
  invalid_canonical_payload: 400,
  canonical_payload_mismatch: 403,
  signer_not_authorized: 403,
  invalid_timestamp_token: 400,
  legacy_registration_unsupported: 400,
  registration_pending: 425,
  transaction_not_found: 404,
  block_not_found: 404,
  too_many_pending: 429,
  chain_submission_rejected: 422,
  forbidden: 403,
  // ledger-mapped codes (§1.1)
  invalid_signature: 403,
  invalid_root_pubkey: 400,
  nonce_mismatch: 409,
  authorization_expired: 400,
  invalid_expiry: 400,
  invalid_did: 400,
  did_already_exists: 409,
  did_not_found: 404,
  did_deactivated: 409,
  did_controls_application: 409,
  did_deleted: 409,
  policy_links_removed: 400,
  invalid_alias: 400,
  alias_taken: 409,
  alias_already_exists: 409,
  too_many_aliases: 409,
  alias_not_found: 404,
  too_many_devices: 409,
  device_not_found: 404,
  device_already_exists: 409,
  invalid_document: 400,
  verification_method_already_exists: 409,
  verification_method_not_found: 404,
  verification_method_in_use: 409,
  authentication_already_exists: 409,
  authentication_not_found: 404,
  key_agreement_already_exists: 409,
  key_agreement_not_found: 404,
  service_already_exists: 409,
  too_many_services: 409,
  service_not_found: 404,
  policy_not_found: 404,
  invalid_delivery_constraints: 400,
  invalid_persona: 400,
  persona_already_exists: 409,
  persona_not_found: 404,
  persona_inactive: 409,
  persona_verification_expired: 409,
  invalid_persona_controller: 403,
  invalid_persona_attestation: 403,
  persona_attestor_not_approved: 403,
  invalid_policy_scope: 403,
  policy_revision_conflict: 409,
  invalid_delivery_policy: 400,
  invalid_application_id: 400,
  application_already_exists: 409,
  application_not_found: 404,
  control_did_not_found: 404,
  nonce_overflow: 409,
  revision_overflow: 409,
  too_many_applications: 409,
  application_tombstoned: 409,
  invalid_status_transition: 409,
  invalid_domain: 400,
  domain_not_controlled: 403,
  linked_did_not_found: 404,
  too_many_linked_dids: 409,
  legacy_policy_deprecated: 410,
  // directory: personas, applications (§1.2)
  application_proof_stale: 409,
  application_inactive: 409,
  persona_not_dns: 400,
  persona_not_deliverable: 422,
  challenge_not_found: 404,
  challenge_expired: 410,
  challenge_not_verified: 409,
  challenge_already_used: 409,
  challenge_mismatch: 403,
  dns_verification_failed: 422,
  // envelopes, relay, cache (§10.5, §11.8)
  envelope_too_large: 413,
  metadata_too_large: 413,
  chunk_too_large: 413,
  unknown_field: 400,
  invalid_message_id: 400,
  invalid_recipient: 400,
  invalid_tag: 400,
  invalid_timestamp: 400,
  invalid_ttl: 400,
  invalid_payload: 400,
  invalid_header: 400,
  invalid_chunk_metadata: 400,
  invalid_envelope: 400,
  client_policy_context_forbidden: 400,
  recipient_mismatch: 400,
  missing_proof_header: 400,
  invalid_proof_header: 400,
  proof_header_mismatch: 400,
  invalid_sender_signature: 403,
  invalid_node_signature: 403,
  policy_rejected: 403,
  cache_service_not_found: 403,
  cache_endpoint_mismatch: 403,
  key_not_authorized: 403,
  proof_timestamp_out_of_window: 403,
  recipient_not_found: 404,
  no_delivery_service: 404,
  chunk_set_not_found: 404,
  message_not_found: 404,
  message_id_conflict: 409,
  chunk_conflict: 409,
  chunk_set_conflict: 409,
  policy_provenance_stale: 409,
  proof_nonce_replayed: 409,
  envelope_expired: 422,
  plan_not_deliverable: 422,
  release_profile_required: 422,
  plaintext_not_allowed: 422,
  policy_applies: 422,
  cache_not_published: 422,
  staging_capacity_full: 429,
  storage_quota_exceeded: 429,
  upstream_unavailable: 502,
  policy_lookup_failed: 503,
  staging_persist_failed: 507,
  insufficient_storage: 507,
  // live sessions at the Relay (GET /ws/{did}/{device}, --relay-live-auth)
  live_proof_required: 401,
  live_service_not_found: 403,
  live_sessions_disabled: 404,
  relay_endpoint_mismatch: 403,
  // the export feed and read-only mirrors (docs/mirrors.md)
  invalid_cursor: 400,
  invalid_count: 400,
  read_only_mirror: 403,
} as const satisfies Record<string, number>;

export type ErrorCode = keyof typeof ERROR_STATUS;

export function statusOf(code: ErrorCode): number {
  return ERROR_STATUS[code];
}

export type ErrorDetails = Record<string, unknown>;

/** A client-visible failure with a stable machine code. */
export class DdnError extends Error {
  readonly code: ErrorCode;
  readonly details: ErrorDetails | undefined;
  constructor(code: ErrorCode, message?: string, details?: ErrorDetails) {
    super(message ?? code.replace(/_/g, ' '));
    this.name = 'DdnError';
    this.code = code;
    this.details = details;
  }
  get status(): number {
    return ERROR_STATUS[this.code];
  }
}

export function isDdnError(e: unknown): e is DdnError {
  return e instanceof DdnError;
}

/** Throws a DdnError with the given code. */
export function fail(code: ErrorCode, message?: string, details?: ErrorDetails): never {
  throw new DdnError(code, message, details);
}
