/** What the Cache role is configured with (http-api.md §0.1, §11). */
import type { Profile } from '../protocol/profile.js';

/** At most this many envelope bytes per `GET /cache/messages` response (§11.5). */
export const MAX_RESPONSE_ENVELOPE_BYTES = 64 * 1024 * 1024;

/** The Cache's settings, read once from the node configuration. */
export interface CacheSettings {
  readonly profile: Profile;
  /**
   * `public_urls.cache`: the endpoints DID documents publish for this Cache. A function because the default
   * (the listening URL) is known only once the server listens.
   */
  publicCacheUrls(): readonly string[];
  /** `relay.max_http_envelope_bytes` — the body limit (§0.3) and the advertised envelope limit. */
  readonly maxEnvelopeBytes: number;
  /** `cache.max_retention_seconds`. */
  readonly maxRetentionSeconds: number;
  /** `cache.chunk_staging_window_seconds`. */
  readonly chunkStagingWindowSeconds: number;
  /** `cache.allow_plaintext`. */
  readonly allowPlaintext: boolean;
  /** `proof_clock_skew_seconds`. */
  readonly proofClockSkewSeconds: number;
  /** Envelope bytes per messages response (default {@link MAX_RESPONSE_ENVELOPE_BYTES}). */
  readonly maxResponseEnvelopeBytes: number;
  /** Unexpired envelope bytes held per recipient DID; null: no quota (429 `storage_quota_exceeded`, §11.4 step 12). */
  readonly maxBytesPerRecipient: number | null;
  /** Storage the whole mailbox may take; null: none but the disk (507 `insufficient_storage` beyond). */
  readonly storageBudgetBytes?: number | null;
}
