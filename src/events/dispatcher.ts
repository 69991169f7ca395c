/**
 * Event processing (http-api.md §10.9) for `CacheStored` (a Cache stored a new entry), `RelayAccepted` (a Relay
 * answered 202 for an unchunked envelope or a completed set) and `RelayDelivered` (that delivery succeeded): the
 * policies consulted are the v3 policy of `Application(application_id)` (when the envelope names an `Active`
 * application), the recipient's v3 `Did` policy, and the addressed persona's v3 policy (when deliverable). In
 * each, the eligible rules are those with an `EventEquals` condition for the event whose conditions all match
 * (tag and recipient as in resolution); the highest priority wins (first on ties), and its plan's Send and Call
 * steps run with the transition rules of §10.4.2 (any other step counts as a Failure). At most once per (event,
 * message_id, policy_id, rule_id), durably; skipped for `<p>:control` envelopes (loop guard); asynchronous
 * (events are queued; up to {@link MAX_ACTIVE_EVENTS} are processed at once, each owner's rules one run at a time:
 * turns.ts), best-effort, never changing a Cache response.
 *
 * Bounded (limits.ts): at most {@link MAX_STEP_RUNS_PER_EVENT} Send/Call runs per event, a per-owner budget of
 * events per minute, and in profile `platform` a Did/Persona rule's Send reaches only its owner; what is dropped
 * is counted ({@link EventDispatcher.drops}) and logged at warn at most once a minute per kind.
 */
import type { Logger } from 'pino';
import type { Clock } from '../base/clock.js';
import { ruleMatches } from '../ledger/runtime/conditions.js';
import type { DirectoryPort } from '../ports/directory-port.js';
import type { NodeEvent } from '../ports/node-events.js';
import type { NodeIdentity } from '../protocol/node-signature.js';
import { parseRuleJson } from '../protocol/policy/json-parse.js';
import type { Profile } from '../protocol/profile.js';
import type { OutboundHttp } from '../outbound/outbound-http.js';
import { walkPlan, type PlanEdge } from '../protocol/plan-graph.js';
import { runCall } from './call.js';
import {
  DEFAULT_EVENT_BUDGET_PER_OWNER,
  DropCounters,
  MAX_STEP_RUNS_PER_EVENT,
  MemoryOwnerBudget,
  sendTargetConsented,
  type EventDropCounters,
  type OwnerBudget,
} from './limits.js';
import type { EventPolicySource, EventScope } from './policy-source.js';
import type { EventRunStore } from '../ports/event-run-store.js';
import { runSend } from './send.js';
import { OwnerLanes, Slots } from './turns.js';
import { renderTemplate, type TemplateContext } from './templates.js';

/** What the dispatcher is built from. */
export interface EventDispatcherDeps {
  profile: Profile;
  clock: Clock;
  identity: NodeIdentity;
  directory: DirectoryPort;
  policies: EventPolicySource;
  runs: EventRunStore;
  outbound: OutboundHttp;
  /** Relays Send steps post to (see send.ts). */
  relayUrls(): readonly string[];
  /** This node's public Relay URL (`/node/endpoint` of Relay events), when it runs the Relay. */
  relayEndpoint(): string | null;
  /** Events one policy owner's rules may run per minute (default {@link DEFAULT_EVENT_BUDGET_PER_OWNER}), counted here. */
  budgetPerOwnerPerMinute?: number;
  /** The per-owner budget counted elsewhere (shared by processes on PostgreSQL); replaces the one above. */
  budget?: OwnerBudget;
  logger?: Logger;
}

type Json = Record<string, unknown>;

function isRecord(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The winning event-bound rule of `policy` (JSON form) for `event`, or null. */
export function eventWinner(policy: Json, event: 'CacheStored' | 'RelayAccepted' | 'RelayDelivered', recipient: string, tag: string | null): Json | null {
  let winner: { json: Json; priority: number } | null = null;
  const rules = Array.isArray(policy.ruleset) ? policy.ruleset : [];
  for (const [i, json] of rules.entries()) {
    if (!isRecord(json)) continue;
    let rule;
    try {
      rule = parseRuleJson(json, `ruleset[${i}]`);
    } catch {
      continue;
    }
    const bound = rule.conditions.some((c) => c.kind === 'EventEquals' && c.event === event);
    if (!bound || !ruleMatches(rule, { recipient, tag, event })) continue;
    if (winner === null || rule.priority > winner.priority) winner = { json, priority: rule.priority };
  }
  return winner?.json ?? null;
}

/** One rule's run: where it comes from, and the Send/Call runs its event has left (shared by its scopes). */
interface PlanRun {
  scope: EventScope;
  operatorDid: unknown;
  policyId: string;
  ruleId: string;
  steps: { left: number };
}

/** An event of this node's Cache or Relay. */
export type { NodeEvent };

/** Events waiting or in progress at most (each holds its envelope); later ones are dropped while that many are. */
export const MAX_QUEUED_EVENTS = 10_000;

/**
 * Events in progress at once — looking up their policies, or running a rule — each holding at most one outbound
 * request; the others wait in arrival order. An event waiting for its owner's turn ({@link MAX_WAITING_RUNS_PER_OWNER})
 * holds none.
 */
export const MAX_ACTIVE_EVENTS = 32;

/**
 * Rule runs of one policy owner waiting behind its run in progress (an owner's rules run one at a time, in the order
 * they ask for their turn); a run beyond them is dropped and counted as `owner_queue_full`.
 */
export const MAX_WAITING_RUNS_PER_OWNER = 64;

/** The dispatcher's bounds (tests set smaller ones). */
export interface DispatcherLimits {
  maxQueued: number;
  maxActive: number;
  maxWaitingPerOwner: number;
}

/**
 * How long a run's claim is kept after its envelope's requested expiry, from which every Relay and Cache refuses
 * the envelope: the margin covers this node's clock being set back.
 */
export const CLAIM_KEPT_AFTER_EXPIRY_MS = 3_600_000;

/** The `/event/…` and `/envelope/…` template contexts of `e` (§10.9): its fields, without what only the node reads. */
export function eventTemplateContext(e: NodeEvent): Pick<TemplateContext, 'event' | 'envelope'> {
  const { envelope, requested_expiry_ms: _expiry, ...event } = e;
  return { event: { ...event }, envelope: { ...envelope } };
}

/** Runs event-bound rules for the events of this node's roles. */
export class EventDispatcher {
  private queued = 0;
  private stopping = false;
  private readonly idleWaiters: (() => void)[] = [];
  private readonly maxQueued: number;
  private readonly slots: Slots;
  private readonly lanes: OwnerLanes;
  private readonly counters: DropCounters;
  private readonly budget: OwnerBudget;
  private readonly ruleRuns = { ok: 0, failed: 0 };

  constructor(
    private readonly deps: EventDispatcherDeps,
    limits: Partial<DispatcherLimits> = {},
  ) {
    this.maxQueued = limits.maxQueued ?? MAX_QUEUED_EVENTS;
    this.slots = new Slots(limits.maxActive ?? MAX_ACTIVE_EVENTS);
    this.lanes = new OwnerLanes(limits.maxWaitingPerOwner ?? MAX_WAITING_RUNS_PER_OWNER);
    this.counters = new DropCounters(deps.clock, deps.logger);
    this.budget = deps.budget ?? new MemoryOwnerBudget(deps.clock, deps.budgetPerOwnerPerMinute ?? DEFAULT_EVENT_BUDGET_PER_OWNER);
  }

  /** Events dropped so far because the queue was full (observability, tests). */
  get droppedEvents(): number {
    return this.counters.counts.queue_full;
  }

  /** Everything dropped so far, by kind (a copy; `GET /health` reports it). */
  drops(): EventDropCounters {
    return { ...this.counters.counts };
  }

  /**
   * Events in progress (looking up policies or running a rule) and waiting (for a slot, or for their owner's turn):
   * metrics. Together they count against {@link MAX_QUEUED_EVENTS}.
   */
  load(): { readonly active: number; readonly waiting: number } {
    // every slot held is an event's in progress
    return { active: this.slots.taken, waiting: this.queued - this.slots.taken };
  }

  /** Event rules run so far, by outcome: `ok` (the plan ended in success) or `failed` (metrics). */
  runs(): { readonly ok: number; readonly failed: number } {
    return { ...this.ruleRuns };
  }

  /**
   * Queues the event; returns at once (the Cache or Relay response is never delayed or changed). Processing is
   * best-effort: while {@link MAX_QUEUED_EVENTS} wait or are in progress (a Directory that answers slowly or not at
   * all), further events are dropped and counted rather than held in memory without bound.
   */
  onEvent(e: NodeEvent): void {
    if (this.stopping || e.tag === this.deps.profile.controlTag) return;
    if (this.queued >= this.maxQueued) {
      this.counters.count('queue_full', { queued: this.queued });
      return;
    }
    this.queued++;
    void this.handle(e);
  }

  /**
   * Stops taking events and starting runs: the events not started yet and the runs waiting for their owner's turn
   * are dropped (unclaimed); resolves once the runs in progress ended. Shutdown.
   */
  stop(): Promise<void> {
    this.stopping = true;
    this.slots.open();
    return this.idle();
  }

  /** Resolves once every queued event was processed (tests and shutdown). */
  idle(): Promise<void> {
    if (this.queued === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private async handle(e: NodeEvent): Promise<void> {
    try {
      await this.slots.take();
      try {
        if (!this.stopping) await this.process(e);
      } finally {
        this.slots.release();
      }
    } catch (err) {
      this.deps.logger?.warn({ err, message_id: e.message_id }, 'event processing failed');
    } finally {
      if (--this.queued === 0) for (const resolve of this.idleWaiters.splice(0)) resolve();
    }
  }

  /**
   * Waits for `owner`'s turn, stepping aside from the event's slot meanwhile; false (counted) when too many of the
   * owner's runs already wait. A true answer is followed by {@link OwnerLanes.leave} once the run ended.
   */
  private async ownerTurn(owner: string, where: Record<string, unknown>): Promise<boolean> {
    const turn = this.lanes.enter(owner);
    if (turn === null) {
      this.counters.count('owner_queue_full', { owner, ...where });
      return false;
    }
    if (turn !== undefined) {
      this.slots.release();
      await turn;
      await this.slots.take(true);
      if (this.stopping) {
        this.lanes.leave(owner);
        return false;
      }
    }
    return true;
  }

  private async scopes(e: NodeEvent): Promise<EventScope[]> {
    const scopes: EventScope[] = [];
    if (e.application_id !== null) scopes.push({ type: 'APPLICATION', id: e.application_id });
    scopes.push({ type: 'DID', id: e.recipient_did });
    if (e.persona !== null) {
      const view = await this.deps.directory.resolveDelivery(e.recipient_did, e.persona, e.tag);
      if (view?.personaState === 'ok') scopes.push({ type: 'PERSONA', id: e.persona });
    }
    return scopes;
  }

  /** `/node/…`: the Cache's service and endpoint the store came through, or the Relay's own. */
  private nodeContext(e: NodeEvent): Record<string, unknown> {
    const did = this.deps.identity.did;
    if (e.type === 'CacheStored') return { did, role: 'cache', service_id: e.service_id ?? null, endpoint: e.endpoint };
    return { did, role: 'relay', service_id: this.deps.identity.serviceId, endpoint: this.deps.relayEndpoint() };
  }

  private async process(e: NodeEvent): Promise<void> {
    const { deps } = this;
    // Send/Call runs left to this event, over every scope
    const steps = { left: MAX_STEP_RUNS_PER_EVENT };
    for (const scope of await this.scopes(e)) {
      const policy = await deps.policies.policy(scope);
      if (this.stopping) return;
      if (policy === null) continue;
      const rule = eventWinner(policy, e.type, e.recipient_did, e.tag);
      if (rule === null) continue;
      const policyId = String(policy.policy_id);
      const ruleId = String(rule.id);
      const owner = String(policy.operator_did);
      if (!(await this.ownerTurn(owner, { policy_id: policyId, message_id: e.message_id }))) continue;
      try {
        if (!(await this.budget.take(owner))) {
          this.counters.count('owner_budget', { owner, policy_id: policyId, message_id: e.message_id });
          continue;
        }
        const forgetAfterMs = e.requested_expiry_ms + CLAIM_KEPT_AFTER_EXPIRY_MS;
        if (!(await deps.runs.claim(e.type, e.message_id, policyId, ruleId, deps.clock.nowMs(), forgetAfterMs))) continue;
        const context: TemplateContext = {
          ...eventTemplateContext(e),
          policy: { policy_id: policyId, policy_revision: policy.revision, rule_id: ruleId, scope: policy.scope, operator_did: policy.operator_did },
          node: this.nodeContext(e),
        };
        const run: PlanRun = { scope, operatorDid: policy.operator_did, policyId, ruleId, steps };
        const ok = await this.runPlan(isRecord(rule.action) ? rule.action : {}, context, e.application_id, run);
        this.ruleRuns[ok ? 'ok' : 'failed']++;
        deps.logger?.info({ message_id: e.message_id, policy_id: policyId, rule_id: ruleId, ok }, 'event rule ran');
      } finally {
        this.lanes.leave(owner);
      }
    }
  }

  private async runPlan(action: Json, context: TemplateContext, applicationId: string | null, run: PlanRun): Promise<boolean> {
    const steps = new Map<string, Json>();
    for (const s of Array.isArray(action.steps) ? action.steps : []) if (isRecord(s) && typeof s.id === 'string') steps.set(s.id, s);
    const edges: PlanEdge[] = (Array.isArray(action.transitions) ? action.transitions : []).filter(isRecord).map((t) => ({
      from: String(t.from),
      to: String(t.to),
      trigger: t.trigger === 'Failure' || t.trigger === 'Always' ? t.trigger : 'Success',
      mode: t.mode === 'Fork' ? 'Fork' : 'Next',
    }));
    const walk = await walkPlan(edges, String(action.entry_step), async (id) => {
      const step = steps.get(id);
      if (step === undefined || (step.operation !== 'Send' && step.operation !== 'Call')) return { ok: false };
      const where = { policy_id: run.policyId, rule_id: run.ruleId, step_id: id };
      const target = String(step.recipient_did);
      if (step.operation === 'Send' && !sendTargetConsented(this.deps.profile, run.scope, run.operatorDid, target)) {
        this.counters.count('send_not_consented', { ...where, scope: run.scope, recipient_did: target });
        return { ok: false };
      }
      if (run.steps.left <= 0) {
        this.counters.count('step_cap', where);
        return { ok: false };
      }
      run.steps.left--;
      const rendered = renderTemplate(step.payload_template ?? {}, context);
      if (step.operation === 'Send') return { ok: await runSend(this.deps, target, rendered, applicationId) };
      const call = { serviceDid: String(step.service_did), serviceId: String(step.service_id), registeredDomain: String(step.registered_domain) };
      return { ok: await runCall(this.deps, call, rendered) };
    });
    return walk.ok;
  }
}
