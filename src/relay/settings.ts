/** What the Relay role is configured with (http-api.md §0.1, §10). */
import type { RelayLimitsResponse } from '../wire/relay.js';
import { MAX_METADATA_BYTES } from '../protocol/envelope.js';
import type { Profile } from '../protocol/profile.js';

/**
 * Chunk staging's bounds by default (docs/public-node.md, "Chunk staging"): the node's bytes; per set, recipient and
 * sender half of them, so no one set, recipient or sender holds all; a set idle for 5 minutes gives its room to
 * others when staging is full (the window is an hour).
 */
export const STAGING_DEFAULTS = Object.freeze({
  maxBytes: 1024 * 1024 * 1024,
  maxSetsPerRecipient: 64,
  maxSetBytes: 512 * 1024 * 1024,
  maxBytesPerRecipient: 512 * 1024 * 1024,
  maxBytesPerSender: 512 * 1024 * 1024,
  idleSeconds: 300,
});

/** The Relay's settings, read once from the node configuration. */
export interface RelaySettings {
  readonly profile: Profile;
  /** `public_urls.relay` (a function: the default, the listening URL, is known only once the server listens). */
  publicRelayUrls(): readonly string[];
  /** `relay.max_http_envelope_bytes`: the body limit and the advertised envelope limit. */
  readonly maxHttpEnvelopeBytes: number;
  /** Advertised payload limit of unchunked envelopes. */
  readonly maxUnchunkedMessageBytes: number;
  /** Advertised payload limit of one chunk. */
  readonly maxChunkBytes: number;
  /** `relay.staging_window_seconds`: `retry_until` of a staged set = creation + this. */
  readonly stagingWindowSeconds: number;
  /** Staging capacity in envelope bytes. */
  readonly stagingMaxBytes: number;
  /** Staged sets per recipient. */
  readonly stagingMaxSetsPerRecipient: number;
  /** Envelope bytes of one staged set (judged from its announced total at its first chunk). */
  readonly stagingMaxSetBytes: number;
  /** Envelope bytes staged for one recipient. */
  readonly stagingMaxBytesPerRecipient: number;
  /** Envelope bytes staged by one sender (a sender DID, else a client address). */
  readonly stagingMaxBytesPerSender: number;
  /** A set that got no chunk for this long is dropped when a stage needs its room. */
  readonly stagingIdleSeconds: number;
  /** `proof_clock_skew_seconds` (envelope timestamps, node requests). */
  readonly proofClockSkewSeconds: number;
  /** `cache.allow_plaintext`: plaintext (`cbor_b64`) payloads are accepted. */
  readonly allowPlaintext: boolean;
}

/** `GET /relay/limits` (§10.5). */
export function limitsBody(s: RelaySettings): RelayLimitsResponse {
  return {
    max_http_envelope_bytes: s.maxHttpEnvelopeBytes,
    max_unchunked_message_bytes: s.maxUnchunkedMessageBytes,
    max_chunk_bytes: s.maxChunkBytes,
    max_metadata_bytes: MAX_METADATA_BYTES,
    max_chunks_per_set: 65_535,
    staging_window_seconds: s.stagingWindowSeconds,
    proof_clock_skew_seconds: s.proofClockSkewSeconds,
  };
}
