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

/** The Relay's answers (§10.5): the same types the Relay builds them as. */
export type { DeliveryMode, DeliveryResult, RelayLimitsResponse } from '../wire/relay.js';

/** The Cache's answers (§11.5, §11.6): the same types the Cache's routes declare. */
export type {
  CacheAckResponse,
  CacheChunksResponse,
  CacheMessageItem,
  CacheMessageResponse,
  CacheMessagesResponse,
  CacheSummaryItem,
  CacheSummaryResponse,
} from '../wire/cache.js';
