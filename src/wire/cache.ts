/**
 * Wire shapes of the Cache (http-api.md §11.1, §11.5, §11.6) as TypeBox schemas: the routes declare them
 * (OpenAPI), the Cache builds its answers as their static types (or, for bodies around stored envelopes, as text
 * checked against them by the OpenAPI suite) and the SDK reads them as the same types.
 */
import { Type, type Static } from 'typebox';

const Iso = (description?: string) => Type.String(description === undefined ? {} : { description });
const JsonObject = Type.Record(Type.String(), Type.Unknown());

/** The `proof` of a store (`delivery`) or a retrieved item (`retrieval`). */
export const CacheProofSchema = Type.Object({
  event_type: Type.Enum(['delivery', 'retrieval']),
  message_id: Type.String(),
  recipient_did: Type.String(),
  timestamp: Iso(),
});

/** `POST /cache/store` 202 (§11.1). */
export const CacheStoreResponseSchema = Type.Object(
  {
    accepted: Type.Literal(true),
    deduped: Type.Boolean(),
    message_id: Type.String(),
    recipient: Type.String(),
    expires_at: Iso(),
    max_ttl: Type.String({ description: 'ISO 8601 duration' }),
    applied_ttl: Type.String({ description: 'ISO 8601 duration' }),
    chunked: Type.Boolean(),
    code: Type.Optional(Type.Enum(['chunk_set_complete', 'chunk_staged'])),
    complete: Type.Optional(Type.Boolean()),
    received_chunks: Type.Optional(Type.Integer()),
    expected_chunks: Type.Optional(Type.Integer()),
    retry_until: Type.Optional(Iso()),
    proof: CacheProofSchema,
    policy_id: Type.Optional(Type.String()),
    policy_revision: Type.Optional(Type.Integer()),
    rule_id: Type.Optional(Type.String()),
    policy_block_hash: Type.Optional(Type.String()),
  },
  { title: 'CacheStoreResponse' },
);
export type CacheStoreResponse = Static<typeof CacheStoreResponseSchema>;

/** `GET /cache/limits` 200. */
export const CacheLimitsSchema = Type.Object(
  {
    max_http_envelope_bytes: Type.Integer(),
    max_metadata_bytes: Type.Integer(),
    max_retention_seconds: Type.Integer(),
    chunk_staging_window_seconds: Type.Integer(),
    proof_clock_skew_seconds: Type.Integer(),
    allow_plaintext: Type.Boolean(),
  },
  { title: 'CacheLimits' },
);
export type CacheLimitsResponse = Static<typeof CacheLimitsSchema>;

/** One item of `GET /cache/summary/{did}` (§11.5). */
export const CacheSummaryItemSchema = Type.Object({
  message_id: Type.String(),
  chunked: Type.Boolean(),
  message_group_id: Type.Optional(Type.String()),
  sequence_number: Type.Optional(Type.Integer()),
  total_chunks: Type.Optional(Type.Integer()),
  expires_at: Iso(),
  stored_at: Iso(),
  size_bytes: Type.Integer(),
  tag: Type.Optional(Type.String()),
  application_id: Type.Optional(Type.String()),
});
export type CacheSummaryItem = Static<typeof CacheSummaryItemSchema>;

/** `GET /cache/summary/{did}[/{device}]` 200. */
export const CacheSummaryResponseSchema = Type.Object(
  { did: Type.String(), count: Type.Integer(), messages: Type.Array(CacheSummaryItemSchema) },
  { title: 'CacheSummaryResponse' },
);
export type CacheSummaryResponse = Static<typeof CacheSummaryResponseSchema>;

/** A message item of the retrieval routes (§11.5). */
export const CacheMessageItemSchema = Type.Object({
  message_id: Type.String(),
  recipient: Type.String(),
  expires_at: Iso(),
  chunked: Type.Boolean(),
  message_group_id: Type.Optional(Type.String()),
  sequence_number: Type.Optional(Type.Integer()),
  total_chunks: Type.Optional(Type.Integer()),
  envelope: JsonObject,
  proof: JsonObject,
});
export type CacheMessageItem = Static<typeof CacheMessageItemSchema>;

/** `GET /cache/messages/{did}` 200. */
export const CacheMessagesResponseSchema = Type.Object(
  { did: Type.String(), count: Type.Integer(), messages: Type.Array(CacheMessageItemSchema), truncated: Type.Boolean() },
  { title: 'CacheMessagesResponse' },
);
export type CacheMessagesResponse = Static<typeof CacheMessagesResponseSchema>;

/** `GET /cache/chunks/{did}/{group}` 200. */
export const CacheChunksResponseSchema = Type.Object(
  {
    did: Type.String(),
    message_group_id: Type.String(),
    complete: Type.Boolean(),
    total_chunks: Type.Integer(),
    count: Type.Integer(),
    chunks: Type.Array(Type.Object({ message_id: Type.String(), sequence_number: Type.Integer(), expires_at: Iso(), envelope: JsonObject, proof: JsonObject })),
  },
  { title: 'CacheChunksResponse' },
);
export type CacheChunksResponse = Static<typeof CacheChunksResponseSchema>;

/** `GET /cache/message/{did}/{id}` 200. */
export const CacheMessageResponseSchema = Type.Object({ state: Type.String(), message: CacheMessageItemSchema }, { title: 'CacheMessageResponse' });
export type CacheMessageResponse = Static<typeof CacheMessageResponseSchema>;

/**
 * `POST /cache/ack` body (§11.6): the retrieval proof's fields (operation `ack`) and the ids to acknowledge. The
 * same `X-…` headers may also be sent and must then agree (400 `proof_header_mismatch`).
 */
export const CacheAckBodySchema = Type.Object(
  {
    did: Type.String({ description: 'the recipient DID' }),
    device_id: Type.Optional(Type.String({ description: "the device, '' (the default) for none" })),
    service_id: Type.String({ description: "the recipient's Cache service id (a DID URL)" }),
    cache_endpoint: Type.String({ description: 'this Cache as the service publishes it' }),
    key_id: Type.String({ description: "a verification method listed in the service's `authorization`" }),
    timestamp: Type.String({ description: 'ISO-8601, Unix ms or Unix s, within the clock skew' }),
    nonce: Type.String({ description: 'unique per operation, DID and key' }),
    signature_b64: Type.String({ description: 'Base64 Ed25519 signature of the proof text' }),
    message_ids: Type.Array(Type.String({ maxLength: 128 }), { minItems: 1, maxItems: 1000 }),
  },
  { title: 'CacheAckBody' },
);
export type CacheAckBody = Static<typeof CacheAckBodySchema>;

/** `POST /cache/ack` 200 (§11.6). */
export const CacheAckResponseSchema = Type.Object({ acked: Type.Integer(), message_ids: Type.Array(Type.String()) }, { title: 'CacheAckResponse' });
export type CacheAckResponse = Static<typeof CacheAckResponseSchema>;
