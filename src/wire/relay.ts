/**
 * Wire shapes of the Relay (http-api.md §10.3, §10.5) as TypeBox schemas: the routes declare them (OpenAPI), the
 * Relay builds its answers as their static types and the SDK reads them as the same types.
 */
import { Type, type Static } from 'typebox';

/** `delivery_mode` values (§10.5). */
export const DeliveryModeSchema = Type.Enum(['direct', 'cache_fallback', 'policy_delivery', 'policy_handoff', 'staged', 'failed']);
export type DeliveryMode = Static<typeof DeliveryModeSchema>;

/** The Relay's response body (§10.5), success and failure alike; `http_status` equals the HTTP status. */
export const DeliveryResultSchema = Type.Object(
  {
    success: Type.Boolean(),
    delivery_mode: DeliveryModeSchema,
    http_status: Type.Integer(),
    code: Type.String(),
    message: Type.String(),
    retry_count: Type.Integer({ minimum: 0, description: 'Downstream attempts represented, including the first; 0 when none was made' }),
    cache_attempted: Type.Boolean({ description: 'An actual Cache store attempt was made' }),
    cache_result: Type.Union([Type.String(), Type.Null()], {
      description: "`accepted`, `attempted`, `failed`, `no_cache_endpoints`, a failing Cache's error text, or null",
    }),
    details: Type.Record(Type.String(), Type.Unknown()),
  },
  { title: 'DeliveryResult' },
);
export type DeliveryResult = Static<typeof DeliveryResultSchema>;

/** `GET /relay/limits` 200 (§10.5). */
export const RelayLimitsSchema = Type.Object(
  {
    max_http_envelope_bytes: Type.Integer(),
    max_unchunked_message_bytes: Type.Integer(),
    max_chunk_bytes: Type.Integer(),
    max_metadata_bytes: Type.Integer(),
    max_chunks_per_set: Type.Integer(),
    staging_window_seconds: Type.Integer(),
    proof_clock_skew_seconds: Type.Integer(),
  },
  { title: 'RelayLimits' },
);
export type RelayLimitsResponse = Static<typeof RelayLimitsSchema>;
