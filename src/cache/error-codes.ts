/** The codes each error status of the Cache's routes carries (http-api.md §11.8), for the OpenAPI document. */
import type { ErrorCode } from '../base/errors.js';
import { ENVELOPE_FIELD_CODES } from '../protocol/envelope-codes.js';

export const CACHE_ERRORS: Readonly<Record<number, readonly ErrorCode[]>> = {
  400: [
    ...ENVELOPE_FIELD_CODES,
    'invalid_request',
    'missing_proof_header',
    'invalid_proof_header',
    'proof_header_mismatch',
    'invalid_did',
    'recipient_mismatch',
  ],
  403: [
    'invalid_sender_signature',
    'invalid_node_signature',
    'cache_service_not_found',
    'cache_endpoint_mismatch',
    'key_not_authorized',
    'proof_timestamp_out_of_window',
    'invalid_signature',
  ],
  404: ['recipient_not_found', 'did_not_found', 'chunk_set_not_found', 'message_not_found'],
  409: ['message_id_conflict', 'chunk_conflict', 'chunk_set_conflict', 'policy_provenance_stale', 'proof_nonce_replayed', 'did_deactivated'],
  413: ['envelope_too_large', 'metadata_too_large', 'payload_too_large'],
  422: ['envelope_expired', 'policy_applies', 'cache_not_published', 'plaintext_not_allowed'],
  429: ['rate_limited', 'storage_quota_exceeded'],
  503: ['policy_lookup_failed', 'ledger_unavailable'],
  507: ['insufficient_storage'],
};

/** What a retrieval's proof (§11.4) can be refused with, and the state it is checked against (§11.5, §11.6). */
export const CACHE_RETRIEVAL_ERRORS: readonly ErrorCode[] = [
  'invalid_request',
  'missing_proof_header',
  'invalid_proof_header',
  'proof_header_mismatch',
  'invalid_did',
  'cache_service_not_found',
  'cache_endpoint_mismatch',
  'key_not_authorized',
  'proof_timestamp_out_of_window',
  'invalid_signature',
  'recipient_not_found',
  'did_not_found',
  'proof_nonce_replayed',
  'did_deactivated',
  'cache_not_published',
  'policy_lookup_failed',
  'ledger_unavailable',
  // the proof's nonce is recorded (step 9) before the answer: a disk that cannot take it is 507
  'insufficient_storage',
];

/** What a store (§11.1) can be refused with: every code of the table but the retrieval proof's own. */
export const CACHE_STORE_ERRORS: readonly ErrorCode[] = Object.values(CACHE_ERRORS)
  .flat()
  .filter(
    (c) =>
      !['missing_proof_header', 'invalid_proof_header', 'proof_header_mismatch', 'proof_nonce_replayed', 'chunk_set_not_found', 'message_not_found'].includes(
        c,
      ),
  );
