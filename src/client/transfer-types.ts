/** Wire shapes of delivery resolution (http-api.md §6), the Relay (§10.3, §10.5) and Cache retrieval (§11.5, §11.6). */

/** Effective constraints (§6): positive integers. */
export interface EffectiveConstraintsJson {
  requested_cache_seconds: number;
  effective_ttl_seconds: number;
  max_http_envelope_bytes: number;
  max_unchunked_message_bytes: number;
  max_chunk_bytes: number;
  max_replicas: number;
}

/** `GET /delivery-resolution/{did}` 200 (§6). */
export interface DeliveryResolutionResponse {
  target: string;
  encryption_profile: string;
  recipient_key_id: string;
  recipient_public_key_multibase: string;
  policy: {
    source: string;
    source_id: string;
    policy_id: string;
    policy_revision: number;
    rule_id: string;
    rule_priority: number;
    action: Record<string, unknown>;
    effective_constraints: EffectiveConstraintsJson;
    policy_ttl_seconds: number;
  } | null;
  effective_constraints: EffectiveConstraintsJson;
  block_number: number;
  block_hash: string;
}

/** A Relay's answer to `POST /relay` (§10.5). */
export interface DeliveryResult {
  success: boolean;
  delivery_mode: string;
  http_status: number;
  code: string;
  message: string;
  retry_count: number;
  cache_attempted: boolean;
  cache_result: string | null;
  details: Record<string, unknown>;
}

/** `GET /relay/limits` 200 (§10.5). */
export interface RelayLimitsResponse {
  max_http_envelope_bytes: number;
  max_unchunked_message_bytes: number;
  max_chunk_bytes: number;
  max_metadata_bytes: number;
  max_chunks_per_set: number;
  staging_window_seconds: number;
  proof_clock_skew_seconds: number;
}

/** One item of `GET /cache/summary/{did}` (§11.5). */
export interface CacheSummaryItem {
  message_id: string;
  chunked: boolean;
  message_group_id?: string;
  sequence_number?: number;
  total_chunks?: number;
  expires_at: string;
  stored_at: string;
  size_bytes: number;
  tag?: string;
  application_id?: string;
}

/** `GET /cache/summary/{did}[/{device}]` 200. */
export interface CacheSummaryResponse {
  did: string;
  count: number;
  messages: CacheSummaryItem[];
}

/** A message item of the retrieval routes (§11.5). */
export interface CacheMessageItem {
  message_id: string;
  recipient: string;
  expires_at: string;
  chunked: boolean;
  message_group_id?: string;
  sequence_number?: number;
  total_chunks?: number;
  envelope: Record<string, unknown>;
  proof: Record<string, unknown>;
}

/** `GET /cache/messages/{did}` 200. */
export interface CacheMessagesResponse {
  did: string;
  count: number;
  messages: CacheMessageItem[];
  truncated: boolean;
}

/** `GET /cache/chunks/{did}/{group}` 200. */
export interface CacheChunksResponse {
  did: string;
  message_group_id: string;
  complete: boolean;
  total_chunks: number;
  count: number;
  chunks: { message_id: string; sequence_number: number; expires_at: string; envelope: Record<string, unknown>; proof: Record<string, unknown> }[];
}

/** `GET /cache/message/{did}/{id}` 200. */
export interface CacheMessageResponse {
  state: string;
  message: CacheMessageItem;
}

/** `POST /cache/ack` 200 (§11.6). */
export interface CacheAckResponse {
  acked: number;
  message_ids: string[];
}
