/**
 * The delivery seam of the Relay pipeline (http-api.md §10.3 step 14): the winning action picks a
 * {@link DeliveryExecutor}. No winning rule or `BaseDidDelivery/v1` → base-DID delivery (§10.4.1);
 * `DeliveryPlan/v1` → a plan executor (§10.4.2). `Reject/v1` never gets here (step 12).
 */
import type { RequestTrace } from '../base/request-trace.js';
import type { DeliveryView, PolicyView } from '../ports/directory-port.js';
import type { Envelope } from '../protocol/envelope.js';
import type { NodeIdentity } from '../protocol/node-signature.js';
import type { Profile } from '../protocol/profile.js';
import { cacheServicesOf, envelopeFaultOf, everyCacheFull, failureDetails, isLivePushEligible, retentionDetails, storeInCaches } from './base-delivery.js';
import type { CacheStorer, StoreItem } from './cache-store-client.js';
import { DeliveryFailure, successResult, type AttemptSummary, type DeliveryResult } from './delivery-result.js';
import { everyCacheFullIs507 } from './error-codes.js';
import { NO_REACH, type LiveReach } from './live-sessions.js';

/** One delivery to run: a single envelope, or a complete chunk set in sequence order. */
export interface DeliveryJob {
  /** The envelope of the request that triggered the delivery (for a set: the completing chunk). */
  env: Envelope;
  /** The client envelope texts (JSON objects as submitted, no provenance), in sequence order. */
  envelopes: readonly Buffer[];
  chunked: boolean;
  /** The resolution (recipient, persona, winning rule, effective constraints) the delivery runs under. */
  view: DeliveryView;
  /** The request the delivery runs for: its id is passed on to the Caches and Relays called, its logger logs. */
  trace?: RequestTrace;
}

/** Runs a delivery and reports it; throws a coded error (a {@link DeliveryFailure} when downstream was tried). */
export interface DeliveryExecutor {
  execute(job: DeliveryJob): Promise<DeliveryResult>;
}

/**
 * Sends an envelope to live sessions of a DID; returns what it reached on this process (a
 * {@link import('./live-fanout.js').LiveFanout} also reaches other Relay processes sharing the database, unseen).
 */
export interface LivePush {
  push(did: string, envelopeJson: string): LiveReach | Promise<LiveReach>;
  /** Open sessions of `did` on this process. */
  count(did: string): number;
  /** Pushes to the sessions of `did` held by other Relay processes, and what they say they reached (none without such processes). */
  pushElsewhere(did: string, envelopeJson: string): Promise<LiveReach>;
}

/** The provenance details of a winning rule (§10.5 `details`). */
export function provenanceDetails(policy: PolicyView, view: DeliveryView): Record<string, unknown> {
  return {
    policy_id: policy.policyId,
    policy_revision: policy.policyRevision,
    rule_id: policy.ruleId,
    policy_source: policy.source,
    block_hash: view.blockHash,
    block_number: view.blockNumber,
  };
}

/** The provenance fields attached to stored envelopes (§10.4.2 last item; base delivery has no step). */
export function provenanceFields(policy: PolicyView, view: DeliveryView, node: NodeIdentity): Record<string, unknown> {
  return {
    policy_id: policy.policyId,
    policy_revision: policy.policyRevision,
    policy_rule_id: policy.ruleId,
    policy_block_hash: view.blockHash,
    policy_block_number: view.blockNumber,
    policy_context: { source: policy.source, source_id: policy.sourceId, relay_did: node.did, relay_service_id: node.serviceId },
  };
}

/** `text` (a JSON object) with `extra`'s members appended; the client's bytes are kept as they are. */
export function appendMembers(text: Buffer, extra: Record<string, unknown>): Buffer {
  const members = JSON.stringify(extra).slice(1, -1);
  if (members === '') return text;
  return Buffer.concat([text.subarray(0, text.length - 1), Buffer.from(`,${members}}`, 'utf8')]);
}

/**
 * The envelopes of `job` to store, with `provenance` appended when a rule won. An unchunked envelope stored without
 * provenance carries the Relay's parse and resolution along (this node's own Cache takes them instead of the text;
 * `cache-store-client.ts`); a chunk set's other chunks were parsed by earlier requests, so its chunks carry none.
 */
export function storeItems(job: DeliveryJob, provenance: Record<string, unknown> | null): StoreItem[] {
  if (provenance !== null) return job.envelopes.map((e) => ({ bytes: appendMembers(e, provenance) }));
  const only = job.envelopes[0];
  if (!job.chunked && only !== undefined && job.envelopes.length === 1) return [{ bytes: only, admitted: { env: job.env, view: job.view } }];
  return job.envelopes.map((bytes) => ({ bytes }));
}

/** Nothing was stored: the recipient publishes no Cache service. */
const NO_CACHE: AttemptSummary = Object.freeze({ retryCount: 0, cacheAttempted: false, cacheResult: 'no_cache_endpoints' });

/** What base-DID delivery needs. */
export interface BaseDeliveryDeps {
  profile: Profile;
  identity: NodeIdentity;
  storer: CacheStorer;
  live?: LivePush;
}

/**
 * Base-DID delivery (§10.4.1), plain (no winning rule) or under a `BaseDidDelivery/v1` winner (provenance
 * attached to the stores, reported as `policy_delivery` / `policy_applied`).
 */
export class BaseDidDeliveryExecutor implements DeliveryExecutor {
  constructor(private readonly deps: BaseDeliveryDeps) {}

  async execute(job: DeliveryJob): Promise<DeliveryResult> {
    const { view } = job;
    const policy = view.policy;
    const services = cacheServicesOf(view.recipient.document, this.deps.profile.cacheServiceType);
    const first = job.envelopes[0];
    const live = this.deps.live;
    const eligible = !job.chunked && first !== undefined && live !== undefined && isLivePushEligible(job.env.fields, view.recipient.did);
    if (services.length === 0) {
      // A Relay-only recipient: an open session is the delivery — on this process, or else on another Relay process
      // sharing the database that says it pushed it (PostgreSQL). Without one nothing is pushed anywhere.
      if (eligible) {
        const did = view.recipient.did;
        const here = live.count(did) > 0;
        const reach = here ? await live.push(did, first.toString('utf8')) : await live.pushElsewhere(did, first.toString('utf8'));
        if (reach.sessions > 0) {
          const where = here ? 'a live session' : 'a live session of another Relay process';
          return this.result(job, NO_CACHE, { live_sessions: reach.sessions }, true, `pushed to ${where}; the recipient publishes no Cache service`);
        }
      }
      throw new DeliveryFailure('no_delivery_service', 'the recipient publishes no Cache service', { recipient: view.recipient.did }, NO_CACHE);
    }
    const items = storeItems(job, policy === null ? null : provenanceFields(policy, view, this.deps.identity));
    // One copy: base delivery stores until the first 202. `max_replicas` bounds the copies a rule's Store steps ask
    // for (`desired_replicas`); base delivery asks for none beyond the one the recipient retrieves.
    const report = await storeInCaches(services, items, 1, this.deps.storer, job.trace);
    const attempted = { attempted_caches: report.attempted };
    if (report.accepted.length === 0) {
      const failedAttempts = { retryCount: report.attempts, cacheAttempted: report.attempts > 0, cacheResult: report.lastFailure ?? 'failed' };
      const fault = envelopeFaultOf(report);
      if (fault !== undefined) throw new DeliveryFailure(fault.code, fault.message, { ...fault.details, ...attempted }, failedAttempts);
      const why = failureDetails(report);
      // Every Cache is full: 507 says so (deployed senders retry 502 eight times). The profile openpayload keeps the
      // spec's 502, whose DeliveryResult table names no Cache code under 507 (docs/api.md).
      if (everyCacheFull(report) && everyCacheFullIs507(this.deps.profile)) {
        throw new DeliveryFailure(
          'insufficient_storage',
          `every Cache endpoint of the recipient is out of storage: ${why.summary}`,
          { ...attempted, failures: why.failures },
          failedAttempts,
        );
      }
      throw new DeliveryFailure(
        'upstream_unavailable',
        `every Cache endpoint of the recipient failed: ${why.summary}`,
        { ...attempted, failures: why.failures },
        failedAttempts,
      );
    }
    const attempts = { retryCount: report.attempts, cacheAttempted: true, cacheResult: 'accepted' };
    const details: Record<string, unknown> = { accepted_caches: report.accepted, ...attempted, ...retentionDetails(report.retention) };
    // §10.7: the live push is a duplicate sent only after the durable store; never for chunks.
    const reach: LiveReach = eligible ? await live.push(view.recipient.did, first.toString('utf8')) : NO_REACH;
    // live_sessions counts the sessions of this process only (other Relay processes push to theirs unseen).
    if (reach.sessions > 0) details.live_sessions = reach.sessions;
    // Only a session that proved control of the DID makes a delivery: a proof-less one (--relay-live-auth open)
    // may be anyone's.
    return this.result(job, attempts, details, reach.authenticated > 0, 'stored in a recipient Cache and pushed live');
  }

  private result(job: DeliveryJob, attempts: AttemptSummary, details: Record<string, unknown>, live: boolean, liveMessage: string): DeliveryResult {
    const { policy } = job.view;
    if (policy !== null) {
      return successResult('policy_applied', 'policy_delivery', 'delivered by the winning BaseDidDelivery/v1 rule', attempts, {
        ...provenanceDetails(policy, job.view),
        ...details,
      });
    }
    return live
      ? successResult('delivered', 'direct', liveMessage, attempts, details)
      : successResult('cached', 'cache_fallback', 'stored in a recipient Cache', attempts, details);
  }
}
