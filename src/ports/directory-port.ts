/**
 * What the Relay and the Cache ask of the Directory (DESIGN.md: roles never import each other). Wired
 * in-process (src/directory/local-port.ts) or over HTTP (src/adapters/directory-port-http.ts). Every method
 * reads finalized state. A lookup that cannot be answered throws DdnError `policy_lookup_failed` — never
 * "not found", never "no policy".
 *
 * Each lookup takes the id of the request it is made for (`requestId`, absent outside a request): a port that asks
 * another process passes it on as `X-Request-Id`, so the Directory's lines about the lookup carry the same id.
 */
import type { DeliveryConstraints } from '../protocol/constraints.js';
import type { DidDocument } from '../protocol/document.js';

export interface DidView {
  did: string;
  deactivated: boolean;
  document: DidDocument | null;
  rootPubkey: Uint8Array;
}

export interface PolicyView {
  source: 'did' | 'persona';
  sourceId: string;
  policyId: string;
  policyRevision: number;
  ruleId: string;
  rulePriority: number;
  /** The winning action in its JSON form (http-api.md §8.1). */
  action: Record<string, unknown>;
  effectiveConstraints: DeliveryConstraints;
  policyTtlSeconds: number;
}

export type PersonaState = 'ok' | 'persona_not_found' | 'persona_inactive' | 'persona_verification_expired';

export interface DeliveryView {
  recipient: DidView;
  persona: string | null;
  /** Liveness of the addressed persona; null when none was addressed. */
  personaState: PersonaState | null;
  policy: PolicyView | null;
  /** The winner's effective constraints, or the addressed constraints when no rule wins. */
  effectiveConstraints: DeliveryConstraints;
  blockNumber: number;
  blockHash: string;
}

export interface DirectoryPort {
  /** A DID's finalized record, or null when it has none. */
  getDid(did: string, requestId?: string): Promise<DidView | null>;
  /** The DID an alias (already normalised) points to, or null. */
  lookupAlias(alias: string, requestId?: string): Promise<string | null>;
  /**
   * Resolution for delivering to `did` (optionally addressed through `persona`, with `tag`): the record, persona
   * liveness, the winning policy rule and the effective constraints. Null when the DID has no record.
   */
  resolveDelivery(did: string, persona: string | null, tag: string | null, requestId?: string): Promise<DeliveryView | null>;
  /**
   * Drops a resolution of (did, persona, tag) a port reuses (src/adapters/directory-view-cache.ts,
   * src/relay/policy-cache.ts), so the next one is asked anew; absent where nothing is reused.
   */
  forget?(did: string, persona: string | null, tag: string | null): void;
}
