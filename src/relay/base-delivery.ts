/**
 * Base-DID delivery (http-api.md §10.4.1): the recipient's `<P>CacheService` services by `priority` (absent
 * last) then document order, their endpoints in listed order; stored until the first Cache accepted (one copy)
 * or every endpoint was tried; live push after the durable store. The store loop is shared with the plan's Store
 * and Archive steps, which ask for more copies.
 */
import type { DidDocument } from '../protocol/document.js';
import { normalizeEndpoint } from '../protocol/retrieval-proof.js';
import type { DdnError } from '../base/errors.js';
import type { RequestTrace } from '../base/request-trace.js';
import type { AppliedRetention, CacheStorer, StoreItem } from './cache-store-client.js';

/** A Cache service of the recipient and its endpoints, in delivery order. */
export interface CacheServiceTarget {
  serviceId: string;
  endpoints: readonly string[];
}

/** §10.4.1 step 1: the `<P>CacheService` services ordered by `priority` ascending (absent last), then document order. */
export function cacheServicesOf(document: DidDocument | null, cacheServiceType: string): CacheServiceTarget[] {
  const services = (document?.service ?? []).map((s, index) => ({ s, index })).filter(({ s }) => s.type === cacheServiceType && s.serviceEndpoint.length > 0);
  services.sort((a, b) => {
    const pa = a.s.priority ?? Number.POSITIVE_INFINITY;
    const pb = b.s.priority ?? Number.POSITIVE_INFINITY;
    return pa === pb ? a.index - b.index : pa - pb;
  });
  return services.map(({ s }) => ({ serviceId: s.id, endpoints: [...s.serviceEndpoint] }));
}

/** What the store loop did. Endpoints are reported as published, one trailing `/` removed. */
export interface StoreReport {
  /** Endpoints that accepted every envelope (one per service at most). */
  accepted: string[];
  /** Endpoints tried, in order, each once. */
  attempted: string[];
  /** Downstream requests made (every attempt counts). */
  attempts: number;
  /** `cache_result` of the last failure (null when nothing failed). */
  lastFailure: string | null;
  /** The shortest retention an accepting Cache applied to a copy (null when none said). */
  retention: AppliedRetention | null;
  /** The last refusal of the client's envelope itself by a Cache. */
  envelopeRefusal: DdnError | null;
  /** Failed stores that were not such a refusal (timeouts, 5xx, other refusals). */
  otherFailures: number;
  /** Of those, the ones a Cache answered 507 (out of storage). */
  storageFullFailures: number;
  /** Each failed endpoint and why (its last failure), in the order tried. */
  failures: { endpoint: string; reason: string }[];
}

/** The earlier-expiring of two retentions (ISO-8601 UTC times of one format compare as text; parsed to be safe). */
export function shorterRetention(a: AppliedRetention | null, b: AppliedRetention | null): AppliedRetention | null {
  if (a === null || b === null) return a ?? b;
  return Date.parse(b.expiresAt) < Date.parse(a.expiresAt) ? b : a;
}

/** `details.applied_ttl` and `details.expires_at` of a DeliveryResult (§10.5, ddn's addition); empty when unknown. */
export function retentionDetails(r: AppliedRetention | null): Record<string, string> {
  return r === null ? {} : { applied_ttl: r.appliedTtl, expires_at: r.expiresAt };
}

/**
 * What a 502 says about the failed endpoints: `details.failures` (§0.6 lets `details` carry more than the listed
 * members; the DeliveryResult shape is unchanged) and one line naming the first failure for the message.
 */
export function failureDetails(report: StoreReport): { failures: { endpoint: string; reason: string }[]; summary: string } {
  const first = report.failures[0];
  const more = report.failures.length > 1 ? ` (and ${report.failures.length - 1} more)` : '';
  return { failures: report.failures, summary: first === undefined ? 'no endpoint was tried' : `${first.endpoint}: ${first.reason}${more}` };
}

/**
 * True when nothing was stored and every Cache tried answered 507 (out of storage): the Relay then answers 507
 * `insufficient_storage` on profile `platform` instead of 502 (docs/api.md, "A full Cache through the Relay").
 */
export function everyCacheFull(report: StoreReport): boolean {
  return report.accepted.length === 0 && report.envelopeRefusal === null && report.otherFailures > 0 && report.storageFullFailures === report.otherFailures;
}

/**
 * The client's error when nothing was stored and every failure was a Cache refusing the envelope itself (e.g.
 * 400 `invalid_json` for nesting the Relay's parse let through): answered as that 4xx, never as 502.
 */
export function envelopeFaultOf(report: StoreReport): DdnError | undefined {
  if (report.accepted.length > 0 || report.otherFailures > 0) return undefined;
  return report.envelopeRefusal ?? undefined;
}

/**
 * §10.4.1 step 2. Each service is one Cache: its endpoints are alternatives tried in order until one accepts,
 * which counts as one replica; services are used in order until `maxReplicas` accepted (base delivery: 1). `items` are the
 * envelopes to store — one, or a chunk set in sequence order: the whole set goes to the same endpoint, and a
 * failure at any chunk moves to the next endpoint, starting again at sequence 0.
 */
export async function storeInCaches(
  services: readonly CacheServiceTarget[],
  items: readonly StoreItem[],
  maxReplicas: number,
  storer: CacheStorer,
  trace?: RequestTrace,
): Promise<StoreReport> {
  const report: StoreReport = {
    accepted: [],
    attempted: [],
    attempts: 0,
    lastFailure: null,
    retention: null,
    envelopeRefusal: null,
    otherFailures: 0,
    storageFullFailures: 0,
    failures: [],
  };
  const wanted = Math.max(1, maxReplicas);
  for (const service of services) {
    if (report.accepted.length >= wanted) break;
    for (const endpoint of service.endpoints) {
      const shown = normalizeEndpoint(endpoint);
      if (!report.attempted.includes(shown)) report.attempted.push(shown);
      let ok = true;
      let retention: AppliedRetention | null = null;
      for (const item of items) {
        const outcome = await storer.store(endpoint, item, trace);
        report.attempts += outcome.attempts;
        if (!outcome.ok) {
          report.lastFailure = outcome.cacheResult;
          if (outcome.envelopeRefusal === undefined) report.otherFailures++;
          else report.envelopeRefusal = outcome.envelopeRefusal;
          if (outcome.storageFull === true) report.storageFullFailures++;
          const reason = outcome.reason ?? outcome.cacheResult;
          const seen = report.failures.find((f) => f.endpoint === shown);
          if (seen === undefined) report.failures.push({ endpoint: shown, reason });
          else seen.reason = reason;
          ok = false;
          break;
        }
        retention = shorterRetention(retention, outcome.retention);
      }
      if (ok) {
        if (!report.accepted.includes(shown)) report.accepted.push(shown);
        report.retention = shorterRetention(report.retention, retention);
        break;
      }
    }
  }
  return report;
}

/**
 * §10.8: an envelope is pushed live only when unchunked and its `to` field (not `recipient`) equals the
 * recipient DID byte for byte — anything else would make the deployed receiver exit.
 */
export function isLivePushEligible(fields: Record<string, unknown>, recipientDid: string): boolean {
  return fields.message_group_id === undefined && typeof fields.to === 'string' && fields.to === recipientDid;
}
