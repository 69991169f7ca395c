/** The 400 codes of the envelope's fields (http-api.md §10.1), as the Relay's and the Cache's code tables list them. */
import type { ErrorCode } from '../base/errors.js';

export const ENVELOPE_FIELD_CODES: readonly ErrorCode[] = [
  'invalid_json',
  'unknown_field',
  'invalid_message_id',
  'invalid_recipient',
  'invalid_tag',
  'invalid_application_id',
  'invalid_timestamp',
  'invalid_ttl',
  'invalid_payload',
  'invalid_header',
  'invalid_chunk_metadata',
  'invalid_envelope',
  'client_policy_context_forbidden',
];
