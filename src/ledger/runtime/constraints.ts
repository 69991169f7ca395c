/** Scope constraints at write and resolution time (ledger-rules.md §7.3): `validated`, `narrow`, `clamp`. */
import { NETWORK_CONSTRAINTS as N, minConstraints, type DeliveryConstraints } from '../../protocol/constraints.js';
import type { DeliveryConstraintOverrides, RequestedDeliveryConstraints } from '../../protocol/policy/types.js';
import { failer } from '../errors.js';

const fail = failer('DeliveryPolicy');

/**
 * `validated(requested)` — `SetDidConstraints`, `SetPersonaConstraints` and persona constraints. Throws
 * `InvalidConstraints`. The deprecated inputs are ignored (even 0) and set to their maxima.
 */
export function validatedConstraints(c: RequestedDeliveryConstraints): DeliveryConstraints {
  const within = (v: number, max: number) => v > 0 && v <= max;
  if (
    !(c.requestedCacheSeconds > 0) ||
    !within(c.maxHttpEnvelopeBytes, N.maxHttpEnvelopeBytes) ||
    !within(c.maxUnchunkedMessageBytes, N.maxUnchunkedMessageBytes) ||
    !within(c.maxChunkBytes, N.maxChunkBytes) ||
    !within(c.maxReplicas, N.maxReplicas)
  ) {
    fail('InvalidConstraints');
  }
  if (c.maxUnchunkedMessageBytes > c.maxHttpEnvelopeBytes || c.maxChunkBytes > c.maxUnchunkedMessageBytes) {
    fail('InvalidConstraints');
  }
  return {
    requestedCacheSeconds: c.requestedCacheSeconds,
    effectiveTtlSeconds: Math.min(c.requestedCacheSeconds, N.effectiveTtlSeconds),
    maxHttpEnvelopeBytes: c.maxHttpEnvelopeBytes,
    maxUnchunkedMessageBytes: c.maxUnchunkedMessageBytes,
    maxChunkBytes: c.maxChunkBytes,
    maxMessageBytes: N.maxMessageBytes,
    maxChunks: N.maxChunks,
    maxReplicas: c.maxReplicas,
  };
}

/**
 * `narrow(base, overrides)` — write time: each Some override must satisfy `0 < v ≤ base` (in the order
 * requested, envelope, unchunked, chunk, replicas; `ConstraintOverrideExceedsScope`), then the size chain must
 * hold (`InvalidConstraints`). The ignored overrides are not checked.
 */
export function narrowConstraints(base: DeliveryConstraints, o: DeliveryConstraintOverrides | null): DeliveryConstraints {
  if (o === null) return base;
  const pick = (v: number | null, b: number): number => {
    if (v === null) return b;
    if (!(v > 0 && v <= b)) fail('ConstraintOverrideExceedsScope');
    return v;
  };
  const requested = pick(o.requestedCacheSeconds, base.requestedCacheSeconds);
  const envelope = pick(o.maxHttpEnvelopeBytes, base.maxHttpEnvelopeBytes);
  const unchunked = pick(o.maxUnchunkedMessageBytes, base.maxUnchunkedMessageBytes);
  const chunk = pick(o.maxChunkBytes, base.maxChunkBytes);
  const replicas = pick(o.maxReplicas, base.maxReplicas);
  if (unchunked > envelope || chunk > unchunked) fail('InvalidConstraints');
  return {
    requestedCacheSeconds: requested,
    effectiveTtlSeconds: Math.min(requested, base.effectiveTtlSeconds),
    maxHttpEnvelopeBytes: envelope,
    maxUnchunkedMessageBytes: unchunked,
    maxChunkBytes: chunk,
    maxMessageBytes: N.maxMessageBytes,
    maxChunks: N.maxChunks,
    maxReplicas: replicas,
  };
}

/**
 * `clamp(base, overrides)` — resolution time, never fails: each override is capped by `base`, and the result is
 * `min(base, ceiling)`, so a recipient limit tighter than a rule clamps the rule instead of invalidating it.
 */
export function clampConstraints(base: DeliveryConstraints, o: DeliveryConstraintOverrides | null): DeliveryConstraints {
  if (o === null) return base;
  const v = (x: number | null, b: number) => Math.min(x ?? b, b);
  const requested = v(o.requestedCacheSeconds, base.requestedCacheSeconds);
  const ceiling: DeliveryConstraints = {
    requestedCacheSeconds: requested,
    effectiveTtlSeconds: Math.min(requested, base.effectiveTtlSeconds),
    maxHttpEnvelopeBytes: v(o.maxHttpEnvelopeBytes, base.maxHttpEnvelopeBytes),
    maxUnchunkedMessageBytes: v(o.maxUnchunkedMessageBytes, base.maxUnchunkedMessageBytes),
    maxChunkBytes: v(o.maxChunkBytes, base.maxChunkBytes),
    maxMessageBytes: N.maxMessageBytes,
    maxChunks: N.maxChunks,
    maxReplicas: v(o.maxReplicas, base.maxReplicas),
  };
  return minConstraints(base, ceiling);
}
