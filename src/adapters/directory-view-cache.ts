/**
 * A short-lived cache of Directory answers in front of a remote Directory (`--directory-url`): a Relay or a Cache
 * in a process without the Directory role otherwise asks the Directory over HTTP for every envelope, every node
 * signature and every retrieval proof. Answers are reused for at most `ttlMs` (`--directory-view-ttl-ms`, default
 * 2 s), and a resolution whose policy rule won for no longer than its `policy_ttl_seconds` (ledger-rules §7: how
 * long a client or Cache may reuse the lookup). At most `maxEntries` are held (the oldest is dropped first);
 * concurrent identical lookups share one request. Failures and "no record" answers are never kept, so a lookup
 * that failed is asked again and a newly registered DID is seen at once. The cost is bounded staleness: a
 * Directory change (a new policy, a rotated or removed key, a Cache removed from a document) reaches this process
 * up to `ttlMs` after the Directory serves it.
 *
 * A miss asks with the asker's request id (`X-Request-Id` at the Directory). A lookup shared by concurrent askers
 * carries the first asker's id only; a reused answer asks nothing, so the Directory logs nothing for it.
 */
import type { Clock } from '../base/clock.js';
import { TtlAnswers } from '../base/ttl-answers.js';
import type { DeliveryView, DidView, DirectoryPort } from '../ports/directory-port.js';

/** Bounds of a {@link DirectoryViewCache}. */
export interface DirectoryViewCacheOptions {
  /** How long an answer is reused (default 2 000 ms). */
  ttlMs?: number;
  /** Answers held at most (default 10 000). */
  maxEntries?: number;
}

export const DEFAULT_DIRECTORY_VIEW_TTL_MS = 2_000;
export const DEFAULT_DIRECTORY_VIEW_MAX_ENTRIES = 10_000;

/** Wraps a DirectoryPort; every method answers from the cache while the answer is younger than the TTL. */
export class DirectoryViewCache implements DirectoryPort {
  private readonly answers: TtlAnswers;

  constructor(
    private readonly inner: DirectoryPort,
    clock: Clock,
    options: DirectoryViewCacheOptions = {},
  ) {
    this.answers = new TtlAnswers(clock, {
      ttlMs: options.ttlMs ?? DEFAULT_DIRECTORY_VIEW_TTL_MS,
      maxEntries: options.maxEntries ?? DEFAULT_DIRECTORY_VIEW_MAX_ENTRIES,
    });
  }

  /** Answers held now (observability, tests). */
  get size(): number {
    return this.answers.size;
  }

  /** Lookups answered from a reused answer, and those that asked the Directory, since start (metrics). */
  get lookups(): { hits: number; misses: number } {
    return { hits: this.answers.hits, misses: this.answers.misses };
  }

  // a miss asks with this asker's id; concurrent askers of the same key share that one lookup (the first one's id)
  getDid(did: string, requestId?: string): Promise<DidView | null> {
    return this.answers.get(`did\n${did}`, () => this.inner.getDid(did, requestId));
  }

  lookupAlias(alias: string, requestId?: string): Promise<string | null> {
    return this.answers.get(`alias\n${alias}`, () => this.inner.lookupAlias(alias, requestId));
  }

  resolveDelivery(did: string, persona: string | null, tag: string | null, requestId?: string): Promise<DeliveryView | null> {
    return this.answers.get(
      resolutionKey(did, persona, tag),
      () => this.inner.resolveDelivery(did, persona, tag, requestId),
      (view) => (view.policy === null ? undefined : view.policy.policyTtlSeconds * 1000),
    );
  }

  /** Drops the cached resolution of (did, persona, tag), here and in the wrapped port. */
  forget(did: string, persona: string | null, tag: string | null): void {
    this.answers.delete(resolutionKey(did, persona, tag));
    this.inner.forget?.(did, persona, tag);
  }
}

function resolutionKey(did: string, persona: string | null, tag: string | null): string {
  return `resolve\n${JSON.stringify([did, persona, tag])}`;
}

/**
 * The Cache's view of a remote Directory: delivery resolutions and aliases reused from `cached` (the reuse ledger-rules
 * §7 allows a Cache), DID records always asked of `fresh` — they authenticate retrieval proofs and sender signatures,
 * so a key removed from a document stops working at the Cache as soon as the Directory serves it. (Node requests are
 * checked against the reused records: a Relay's every store would otherwise cost a lookup.)
 */
export class FreshDidRecords implements DirectoryPort {
  constructor(
    private readonly cached: DirectoryPort,
    private readonly fresh: DirectoryPort,
  ) {}

  getDid(did: string, requestId?: string): Promise<DidView | null> {
    return this.fresh.getDid(did, requestId);
  }

  lookupAlias(alias: string, requestId?: string): Promise<string | null> {
    return this.cached.lookupAlias(alias, requestId);
  }

  resolveDelivery(did: string, persona: string | null, tag: string | null, requestId?: string): Promise<DeliveryView | null> {
    return this.cached.resolveDelivery(did, persona, tag, requestId);
  }

  forget(did: string, persona: string | null, tag: string | null): void {
    this.cached.forget?.(did, persona, tag);
  }
}
