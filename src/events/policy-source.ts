/**
 * Where event processing reads the v3 policies it consults (http-api.md §10.9) — in the JSON form of §8.1, from
 * finalized state: in-process from this node's ledger, or over HTTP from the Directory
 * (src/adapters/http-policy-source.ts). An application's policy is returned only while
 * the application is `Active`. A failed lookup throws (the event is then skipped and logged).
 */
import type { Clock } from '../base/clock.js';
import { TtlAnswers } from '../base/ttl-answers.js';
import type { Ledger } from '../ledger/chain.js';
import { activeControlDid } from '../ledger/runtime/application-state.js';
import { getPolicyV3 } from '../ledger/runtime/policy-state.js';
import { policyToJson } from '../protocol/policy/json-render.js';
import type { PolicyScopeV3 } from '../protocol/policy/types.js';

/** A v3 scope as the events name it. */
export type EventScope = { type: 'DID' | 'PERSONA' | 'APPLICATION'; id: string };

/** Reads v3 policies (JSON form) for event processing. */
export interface EventPolicySource {
  /** The scope's v3 policy, or null when it has none (or, for an application, when it is not `Active`). */
  policy(scope: EventScope): Promise<Record<string, unknown> | null>;
}

const KINDS = { DID: 'Did', PERSONA: 'Persona', APPLICATION: 'Application' } as const;

/** Policies from this node's ledger. */
export class LedgerPolicySource implements EventPolicySource {
  constructor(private readonly ledger: Ledger) {}

  async policy(scope: EventScope): Promise<Record<string, unknown> | null> {
    const view = this.ledger.finalizedView();
    if (scope.type === 'APPLICATION' && activeControlDid(view, scope.id) === null) return null;
    const p = getPolicyV3(view, { kind: KINDS[scope.type], id: scope.id } as PolicyScopeV3);
    return p === undefined ? null : policyToJson(p);
  }
}

/** How long a {@link CachedPolicySource} reuses an answer by default: the window of `--directory-view-ttl-ms`. */
export const EVENT_POLICY_TTL_MS = 2_000;

/**
 * A remote policy source whose answers are reused for {@link EVENT_POLICY_TTL_MS} (at most 10,000 scopes;
 * concurrent lookups share one request; failures are asked again). A Relay in its own process otherwise asks the
 * Directory once per scope for each of its two events of every envelope — more requests than the deliveries
 * themselves. "No policy" answers are reused too (most recipients have none): a new or changed policy drives the
 * events of this node at most that long after the Directory serves it.
 */
export class CachedPolicySource implements EventPolicySource {
  private readonly answers: TtlAnswers;

  constructor(
    private readonly inner: EventPolicySource,
    clock: Clock,
    ttlMs = EVENT_POLICY_TTL_MS,
  ) {
    this.answers = new TtlAnswers(clock, { ttlMs, maxEntries: 10_000, keepNull: true });
  }

  policy(scope: EventScope): Promise<Record<string, unknown> | null> {
    return this.answers.get(`${scope.type}\n${scope.id}`, () => this.inner.policy(scope));
  }
}
