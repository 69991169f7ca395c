/**
 * Is this Cache a valid destination for a store? (http-api.md §11.1 step 6). Pure: DID documents, the
 * winning action and this node's `public_urls.cache` are parameters.
 */
import type { DidDocument } from '../protocol/document.js';
import { normalizeEndpoint } from '../protocol/retrieval-proof.js';

/** The published service (and its endpoint) through which a store reached this Cache. */
export interface CacheDestination {
  serviceId: string;
  /** The endpoint as published, one trailing `/` removed. */
  endpoint: string;
}

function firstOwnEndpoint(endpoints: readonly string[], own: ReadonlySet<string>): string | undefined {
  for (const e of endpoints) {
    const n = normalizeEndpoint(e);
    if (own.has(n)) return n;
  }
  return undefined;
}

function ownSet(ownUrls: readonly string[]): Set<string> {
  return new Set(ownUrls.map(normalizeEndpoint));
}

/**
 * The plain-store rule: the first service of `document` of type `serviceType` (the `<P>CacheService`) with an
 * endpoint equal (trailing `/` ignored) to one of `ownUrls`; undefined when there is none.
 */
export function publishedDestination(document: DidDocument | null, serviceType: string, ownUrls: readonly string[]): CacheDestination | undefined {
  const own = ownSet(ownUrls);
  for (const s of document?.service ?? []) {
    if (s.type !== serviceType) continue;
    const endpoint = firstOwnEndpoint(s.serviceEndpoint, own);
    if (endpoint !== undefined) return { serviceId: s.id, endpoint };
  }
  return undefined;
}

/** Service `serviceId` of `document` when it has type `serviceType` and one of `ownUrls` as an endpoint. */
export function targetDestination(
  document: DidDocument | null,
  serviceId: string,
  serviceType: string,
  ownUrls: readonly string[],
): CacheDestination | undefined {
  const s = document?.service?.find((x) => x.id === serviceId && x.type === serviceType);
  if (s === undefined) return undefined;
  const endpoint = firstOwnEndpoint(s.serviceEndpoint, ownSet(ownUrls));
  return endpoint === undefined ? undefined : { serviceId: s.id, endpoint };
}

/** A `(service_did, service_id)` target of a plan step (http-api.md §8.1). */
export interface StepTarget {
  serviceDid: string;
  serviceId: string;
}

/** The Store or Archive step a provenance store names. */
export interface NamedStoreStep {
  operation: 'Store' | 'Archive';
  targets: StepTarget[];
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * The step `stepId` of a `DeliveryPlan/v1` action (JSON form, §8.1) when it is a Store or Archive step;
 * undefined for any other action, step or operation.
 */
export function namedStoreStep(action: Record<string, unknown>, stepId: unknown): NamedStoreStep | undefined {
  if (action.type !== 'DeliveryPlan/v1' || typeof stepId !== 'string' || !Array.isArray(action.steps)) return undefined;
  const step = action.steps.find((s): s is Record<string, unknown> => isRecord(s) && s.id === stepId);
  if (step === undefined || (step.operation !== 'Store' && step.operation !== 'Archive')) return undefined;
  const targets: StepTarget[] = [];
  for (const t of Array.isArray(step.targets) ? step.targets : []) {
    if (isRecord(t) && typeof t.service_did === 'string' && typeof t.service_id === 'string') {
      targets.push({ serviceDid: t.service_did, serviceId: t.service_id });
    }
  }
  return { operation: step.operation, targets };
}
