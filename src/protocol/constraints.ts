/** Delivery constraints (ledger-rules.md §7.3). */

export interface DeliveryConstraints {
  requestedCacheSeconds: number;
  effectiveTtlSeconds: number;
  maxHttpEnvelopeBytes: number;
  maxUnchunkedMessageBytes: number;
  maxChunkBytes: number;
  /** Deprecated, always 4 294 967 295; never an admission limit. */
  maxMessageBytes: number;
  /** Deprecated, always 65 535; never an admission limit. */
  maxChunks: number;
  maxReplicas: number;
}

export const NETWORK_CONSTRAINTS: Readonly<DeliveryConstraints> = Object.freeze({
  requestedCacheSeconds: 172_800,
  effectiveTtlSeconds: 172_800,
  maxHttpEnvelopeBytes: 26_214_400,
  maxUnchunkedMessageBytes: 16_777_216,
  maxChunkBytes: 2_097_152,
  maxMessageBytes: 4_294_967_295,
  maxChunks: 65_535,
  maxReplicas: 4,
});

/** Constraints as responses render them (http-api.md §6, §8.1). */
export type ConstraintsJson = {
  requested_cache_seconds: number;
  effective_ttl_seconds: number;
  max_http_envelope_bytes: number;
  max_unchunked_message_bytes: number;
  max_chunk_bytes: number;
  max_replicas: number;
};

/** The JSON form of responses (http-api.md §6): deprecated fields never emitted. */
export function constraintsToJson(c: DeliveryConstraints): ConstraintsJson {
  return {
    requested_cache_seconds: c.requestedCacheSeconds,
    effective_ttl_seconds: c.effectiveTtlSeconds,
    max_http_envelope_bytes: c.maxHttpEnvelopeBytes,
    max_unchunked_message_bytes: c.maxUnchunkedMessageBytes,
    max_chunk_bytes: c.maxChunkBytes,
    max_replicas: c.maxReplicas,
  };
}

/** `normalised(c)`: deprecated fields at their maxima. */
export function normalisedConstraints(c: DeliveryConstraints): DeliveryConstraints {
  return { ...c, maxMessageBytes: NETWORK_CONSTRAINTS.maxMessageBytes, maxChunks: NETWORK_CONSTRAINTS.maxChunks };
}

/** `min(a, b)` (§7.3): resolution-time intersection. */
export function minConstraints(a: DeliveryConstraints, b: DeliveryConstraints): DeliveryConstraints {
  const envelope = Math.min(a.maxHttpEnvelopeBytes, b.maxHttpEnvelopeBytes);
  const unchunked = Math.min(a.maxUnchunkedMessageBytes, b.maxUnchunkedMessageBytes, envelope);
  return {
    requestedCacheSeconds: Math.min(a.requestedCacheSeconds, b.requestedCacheSeconds),
    effectiveTtlSeconds: Math.min(a.effectiveTtlSeconds, b.effectiveTtlSeconds),
    maxHttpEnvelopeBytes: envelope,
    maxUnchunkedMessageBytes: unchunked,
    maxChunkBytes: Math.min(a.maxChunkBytes, b.maxChunkBytes, unchunked),
    maxMessageBytes: NETWORK_CONSTRAINTS.maxMessageBytes,
    maxChunks: NETWORK_CONSTRAINTS.maxChunks,
    maxReplicas: Math.min(a.maxReplicas, b.maxReplicas),
  };
}
