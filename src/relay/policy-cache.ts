/**
 * The Relay's policy lookups (http-api.md §10.3 step 9): every envelope is resolved against finalized state,
 * and a lookup whose rule won is reused for that policy's `policy_ttl_seconds` (the freshness the policy owner
 * chose; the Directory's `/delivery-resolution` advertises the same `max-age`). Lookups without a winning rule
 * are not kept, so a newly written policy applies from the next envelope on. A failed lookup is never cached
 * and never becomes "no policy" (it propagates as `policy_lookup_failed`). A node-signed request whose
 * provenance names another revision or rule than the cached winner re-resolves once before being judged stale.
 */
import type { Clock } from '../base/clock.js';
import type { DeliveryView, DidView, DirectoryPort } from '../ports/directory-port.js';

/** Bound on remembered lookups; the oldest is dropped first. */
const MAX_ENTRIES = 10_000;

/** A DirectoryPort whose `resolveDelivery` answers from a TTL cache; the other methods pass through. */
export class PolicyCachingDirectory implements DirectoryPort {
  private readonly entries = new Map<string, { view: DeliveryView; expiresAtMs: number }>();

  constructor(
    private readonly inner: DirectoryPort,
    private readonly clock: Clock,
  ) {}

  getDid(did: string): Promise<DidView | null> {
    return this.inner.getDid(did);
  }

  lookupAlias(alias: string): Promise<string | null> {
    return this.inner.lookupAlias(alias);
  }

  async resolveDelivery(did: string, persona: string | null, tag: string | null): Promise<DeliveryView | null> {
    const key = JSON.stringify([did, persona, tag]);
    const now = this.clock.nowMs();
    const hit = this.entries.get(key);
    if (hit !== undefined && hit.expiresAtMs > now) return hit.view;
    this.entries.delete(key);
    const view = await this.inner.resolveDelivery(did, persona, tag);
    if (view?.policy != null && view.policy.policyTtlSeconds > 0) {
      if (this.entries.size >= MAX_ENTRIES) {
        const oldest = this.entries.keys().next();
        if (oldest.done !== true) this.entries.delete(oldest.value);
      }
      this.entries.set(key, { view, expiresAtMs: now + view.policy.policyTtlSeconds * 1000 });
    }
    return view;
  }

  /** Forgets the cached lookup of (did, persona, tag) here and below, e.g. before re-checking a newer provenance. */
  forget(did: string, persona: string | null, tag: string | null): void {
    this.entries.delete(JSON.stringify([did, persona, tag]));
    this.inner.forget?.(did, persona, tag);
  }
}
