/**
 * The DirectoryPort answered in-process from the ledger's finalized state (combined node). It takes no request id:
 * nothing leaves the process, and the asker's own lines carry its id.
 */
import type { Clock } from '../base/clock.js';
import type { LedgerReads } from '../ledger/ports.js';
import { getAliasOwner, getDidRecord } from '../ledger/records.js';
import { activePersona, addressedConstraints, resolveDeliveryPolicy } from '../ledger/runtime/resolution.js';
import { actionToJson } from '../protocol/policy/json-render.js';
import type { DeliveryView, DidView, DirectoryPort, PersonaState, PolicyView } from '../ports/directory-port.js';

const PERSONA_STATES: Record<string, PersonaState> = {
  PersonaNotFound: 'persona_not_found',
  InvalidPersona: 'persona_not_found',
  PersonaInactive: 'persona_inactive',
  PersonaVerificationExpired: 'persona_verification_expired',
};

/** Views kept for one finalized block at most (then it starts over). */
const MAX_KEPT_VIEWS = 4_096;

export class LocalDirectoryPort implements DirectoryPort {
  /**
   * The views of recipients addressed without a persona, made from the finalized state `state` (a new state object
   * per finalized block): such a view depends on that state and (did, tag) alone, not on the time, so every store
   * to one recipient within a block shares one. A view is never changed by its readers (the Relay's policy cache
   * shares them too).
   */
  private kept: { state: unknown; views: Map<string, DeliveryView | null> } = { state: undefined, views: new Map() };

  constructor(
    private readonly ledger: Pick<LedgerReads, 'finalizedView' | 'finalizedRefNow'>,
    private readonly clock: Clock,
  ) {}

  async getDid(did: string): Promise<DidView | null> {
    const rec = getDidRecord(this.ledger.finalizedView(), did);
    return rec ? { did, deactivated: rec.deactivated, document: rec.document, rootPubkey: rec.rootPubkey } : null;
  }

  async lookupAlias(alias: string): Promise<string | null> {
    return getAliasOwner(this.ledger.finalizedView(), alias) ?? null;
  }

  async resolveDelivery(did: string, persona: string | null, tag: string | null): Promise<DeliveryView | null> {
    if (persona !== null) return this.render(did, persona, tag);
    const state = this.ledger.finalizedView();
    if (this.kept.state !== state || this.kept.views.size >= MAX_KEPT_VIEWS) this.kept = { state, views: new Map() };
    const key = tag === null ? `-${did}` : `+${did}\n${tag}`;
    let view = this.kept.views.get(key);
    if (view === undefined) {
      view = this.render(did, null, tag);
      this.kept.views.set(key, view);
    }
    return view;
  }

  /** The view of (did, persona, tag) from the finalized state now. */
  private render(did: string, persona: string | null, tag: string | null): DeliveryView | null {
    const view = this.ledger.finalizedView();
    const block = this.ledger.finalizedRefNow();
    const rec = getDidRecord(view, did);
    if (!rec) return null;
    const now = this.clock.nowMs();
    let personaState: PersonaState | null = null;
    if (persona !== null) {
      const live = activePersona(view, now, persona);
      personaState = live.ok ? 'ok' : PERSONA_STATES[live.error]!;
    }
    const won = resolveDeliveryPolicy(view, now, did, persona, tag);
    const policy: PolicyView | null = won
      ? {
          source: won.source,
          sourceId: won.sourceId,
          policyId: won.policyId,
          policyRevision: Number(won.policyRevision),
          ruleId: won.ruleId,
          rulePriority: won.rulePriority,
          action: actionToJson(won.action),
          effectiveConstraints: won.effectiveConstraints,
          policyTtlSeconds: won.policyTtlSeconds,
        }
      : null;
    return {
      recipient: { did, deactivated: rec.deactivated, document: rec.document, rootPubkey: rec.rootPubkey },
      persona,
      personaState,
      policy,
      effectiveConstraints: policy ? policy.effectiveConstraints : addressedConstraints(view, now, did, persona),
      blockNumber: block.number,
      blockHash: block.hash,
    };
  }
}
