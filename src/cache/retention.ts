/** Retention of a stored copy (http-api.md §11.2). Pure. */
import { DdnError } from '../base/errors.js';

/** How long a copy is kept. */
export interface Retention {
  /** min(effective `effective_ttl_seconds`, `cache.max_retention_seconds`). */
  maxTtlSeconds: number;
  /** min(requested expiry, now + max_ttl). */
  expiresAtMs: number;
  /** `expires_at − now` in whole seconds. */
  appliedTtlSeconds: number;
}

/**
 * `requestedExpiryMs` = envelope time + ttl. Already passed (≤ now) → 422 `envelope_expired`.
 */
export function computeRetention(requestedExpiryMs: number, effectiveTtlSeconds: number, maxRetentionSeconds: number, nowMs: number): Retention {
  if (requestedExpiryMs <= nowMs) {
    throw new DdnError('envelope_expired', 'the envelope expired before it could be stored', {
      expired_at: new Date(requestedExpiryMs).toISOString(),
    });
  }
  const maxTtlSeconds = Math.min(effectiveTtlSeconds, maxRetentionSeconds);
  const expiresAtMs = Math.min(requestedExpiryMs, nowMs + maxTtlSeconds * 1000);
  return { maxTtlSeconds, expiresAtMs, appliedTtlSeconds: Math.floor((expiresAtMs - nowMs) / 1000) };
}
