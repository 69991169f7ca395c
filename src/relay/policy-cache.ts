/**
 * The Relay's policy lookups (http-api.md §10.3 step 9): every envelope is resolved against finalized state,
 * and a lookup whose rule won is reused for that policy's `policy_ttl_seconds` (the freshness the policy owner
 * chose; the Directory's `/delivery-resolution` advertises the same `max-age`). Lookups without a winning rule
 * are not kept, so a newly written policy applies from the next envelope on. A failed lookup is never cached
 * and never becomes "no policy" (it propagates as `policy_lookup_failed`). A node-signed request whose
 * provenance names another revision or rule than the cached winner re-resolves once before being judged stale.
 * A lookup asks with its asker's request id; one shared by concurrent askers carries the first asker's id.
 */
import type { Clock } from '../base/clock.js';
import { TtlAnswers } from '../base/ttl-answers.js';
import type { DeliveryView, DidView, DirectoryPort } from '../ports/directory-port.js';

/** Bound on remembered lookups; the least recently used is dropped first. */
const MAX_ENTRIES = 10_000;
/** The longest a policy may ask its lookups to be reused (a day; its own `policy_ttl_seconds` decides within it). */
const MAX_POLICY_TTL_MS = 86_400_000;

/** A DirectoryPort whose `resolveDelivery` answers from a TTL cache; the other methods pass through. */
export class PolicyCachingDirectory implements DirectoryPort {
  private readonly answers: TtlAnswers;

  constructor(
    private readonly inner: DirectoryPort,
    clock: Clock,
  ) {
    this.answers = new TtlAnswers(clock, { ttlMs: MAX_POLICY_TTL_MS, maxEntries: MAX_ENTRIES });
  }

  getDid(did: string, requestId?: string): Promise<DidView | null> {
    return this.inner.getDid(did, requestId);
  }

  lookupAlias(alias: string, requestId?: string): Promise<string | null> {
    return this.inner.lookupAlias(alias, requestId);
  }

  resolveDelivery(did: string, persona: string | null, tag: string | null, requestId?: string): Promise<DeliveryView | null> {
    return this.answers.get(
      JSON.stringify([did, persona, tag]),
      // concurrent askers share this lookup: it carries the first asker's id
      () => this.inner.resolveDelivery(did, persona, tag, requestId),
      (view) => (view.policy === null ? 0 : view.policy.policyTtlSeconds * 1000),
    );
  }

  /** Forgets the cached lookup of (did, persona, tag) here and below, e.g. before re-checking a newer provenance. */
  forget(did: string, persona: string | null, tag: string | null): void {
    this.answers.delete(JSON.stringify([did, persona, tag]));
    this.inner.forget?.(did, persona, tag);
  }
}
