/**
 * The `DeliveryPlan/v1` executor (http-api.md §10.4.2): walks the winning rule's plan (graph.ts) and runs its
 * Forward, Store, Archive and RequireProfile steps; Send and Call never run during delivery (they belong to
 * event-bound rules, §10.9) and count as Success. A node-signed request with provenance resumes after
 * `policy_context.resume_after` (§10.3 step 10). Outcome: Success → 202 `policy_applied` (`policy_delivery`,
 * or `policy_handoff` when a Forward succeeded); Failure → 422 `release_profile_required` when a RequireProfile
 * step failed, the Caches' own 4xx when every failure was a refusal of the client's envelope itself (e.g. 400
 * `invalid_json`), 502 `upstream_unavailable` when every failure was a downstream error, else 422
 * `plan_not_deliverable`.
 */
import { DdnError } from '../../base/errors.js';
import type { DeliveryView, DirectoryPort, PolicyView } from '../../ports/directory-port.js';
import type { NodeIdentity } from '../../protocol/node-signature.js';
import type { Profile } from '../../protocol/profile.js';
import type { CacheStorer } from '../cache-store-client.js';
import { DeliveryFailure, successResult, type AttemptSummary, type DeliveryResult } from '../delivery-result.js';
import { appendMembers, provenanceDetails, type DeliveryExecutor, type DeliveryJob } from '../executor.js';
import { forwardToEndpoints, type RelayForwarder } from './forward.js';
import { walkPlan, type PlanEdge, type StepOutcome } from '../../protocol/plan-graph.js';
import { PlanRunState } from './run-state.js';
import { runArchiveStep, runStoreStep } from './store.js';
import { priorityOrder, resolveTarget, targetsOf } from './targets.js';

/** What the plan executor is built from. */
export interface PlanExecutorDeps {
  profile: Profile;
  identity: NodeIdentity;
  directory: DirectoryPort;
  /** Cache/Archive stores (one attempt per endpoint, §10.4.2). */
  storer: CacheStorer;
  forwarder: RelayForwarder;
  /** Random source of `Weighted` selection (tests pass a fixed one). */
  random?: () => number;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The plan's steps by id and its transitions (JSON form, §8.1). */
function planOf(action: Record<string, unknown>): { steps: Map<string, Record<string, unknown>>; edges: PlanEdge[]; entry: string } {
  const steps = new Map<string, Record<string, unknown>>();
  for (const s of Array.isArray(action.steps) ? action.steps : []) if (isRecord(s) && typeof s.id === 'string') steps.set(s.id, s);
  const edges: PlanEdge[] = (Array.isArray(action.transitions) ? action.transitions : []).filter(isRecord).map((t) => ({
    from: String(t.from),
    to: String(t.to),
    trigger: t.trigger === 'Failure' || t.trigger === 'Always' ? t.trigger : 'Success',
    mode: t.mode === 'Fork' ? 'Fork' : 'Next',
  }));
  return { steps, edges, entry: String(action.entry_step) };
}

/** The provenance members attached to forwarded and stored envelopes (§10.4.2 last item). */
export function stepProvenance(policy: PolicyView, view: DeliveryView, node: NodeIdentity, stepId: string, resumeAfter?: string): Record<string, unknown> {
  const context: Record<string, unknown> = {
    source: policy.source,
    source_id: policy.sourceId,
    step_id: stepId,
    relay_did: node.did,
    relay_service_id: node.serviceId,
  };
  if (resumeAfter !== undefined) context.resume_after = resumeAfter;
  return {
    policy_id: policy.policyId,
    policy_revision: policy.policyRevision,
    policy_rule_id: policy.ruleId,
    policy_block_hash: view.blockHash,
    policy_block_number: view.blockNumber,
    policy_context: context,
  };
}

/** The executor of `DeliveryPlan/v1` winners. */
export class PlanExecutor implements DeliveryExecutor {
  constructor(private readonly deps: PlanExecutorDeps) {}

  async execute(job: DeliveryJob): Promise<DeliveryResult> {
    const { view } = job;
    const policy = view.policy;
    if (policy === null || policy.action.type !== 'DeliveryPlan/v1') {
      throw new DdnError('plan_not_deliverable', 'the winning action is not a delivery plan', { reason: 'not_a_plan' });
    }
    const plan = planOf(policy.action);
    const base = provenanceDetails(policy, view);
    const resume = job.env.provenance?.context.resume_after;
    if (resume !== undefined && (typeof resume !== 'string' || !plan.steps.has(resume))) {
      throw new DdnError('plan_not_deliverable', 'policy_context.resume_after names no step of the plan', { ...base, reason: 'unknown_resume_step' });
    }
    if (resume === undefined && !plan.steps.has(plan.entry)) {
      throw new DdnError('plan_not_deliverable', 'the plan has no entry step', { ...base, reason: 'invalid_plan' });
    }
    const state = new PlanRunState();
    state.trace = job.trace;
    let handedOff = false;
    const run = async (stepId: string): Promise<StepOutcome> => {
      const step = plan.steps.get(stepId);
      if (step === undefined) return state.fail(stepId, 'not_deliverable', 'unknown step');
      const outcome = await this.runStep(step, job, policy, state);
      if (outcome.handedOff === true) handedOff = true;
      return outcome;
    };
    const walk = await walkPlan(plan.edges, typeof resume === 'string' ? { after: resume } : plan.entry, run);
    const attempts: AttemptSummary = { retryCount: state.attempts, cacheAttempted: state.cacheAttempted, cacheResult: state.cacheResult() };
    const details = { ...base, ...state.details() };
    if (walk.ok) {
      const message = handedOff ? 'handed off to another Relay by policy' : 'delivered by policy';
      return successResult('policy_applied', handedOff ? 'policy_handoff' : 'policy_delivery', message, attempts, details);
    }
    const failures = walk.failedLeaves.map((id) => ({ step_id: id, ...(state.failures.get(id) ?? { kind: 'not_deliverable', reason: 'failed' }) }));
    const failed = { ...details, failed_steps: failures.map((f) => ({ step_id: f.step_id, reason: f.reason })) };
    if (failures.some((f) => f.kind === 'release_profile')) {
      throw new DeliveryFailure('release_profile_required', 'the plan requires the persona release profile', failed, attempts);
    }
    const refusal = state.envelopeRefusal;
    if (refusal !== null && failures.length > 0 && failures.every((f) => f.kind === 'rejected_envelope')) {
      // the client's envelope is at fault downstream: its 4xx, not a 502 senders would retry
      throw new DeliveryFailure(refusal.code, refusal.message, { ...refusal.details, ...failed }, attempts);
    }
    if (failures.length > 0 && failures.every((f) => f.kind === 'downstream')) {
      throw new DeliveryFailure('upstream_unavailable', 'every downstream destination of the plan failed', failed, attempts);
    }
    throw new DeliveryFailure('plan_not_deliverable', 'the delivery plan could not be carried out', failed, attempts);
  }

  private async runStep(step: Record<string, unknown>, job: DeliveryJob, policy: PolicyView, state: PlanRunState): Promise<StepOutcome> {
    const { profile, identity } = this.deps;
    const id = String(step.id);
    const withProvenance = (resumeAfter?: string) => {
      const extra = stepProvenance(policy, job.view, identity, id, resumeAfter);
      return job.envelopes.map((e) => appendMembers(e, extra));
    };
    switch (step.operation) {
      case 'Forward':
        return this.forward(step, withProvenance(id), state);
      case 'Store':
        return runStoreStep(this.deps, step, withProvenance(), job.view.effectiveConstraints.maxReplicas, profile.cacheServiceType, state);
      case 'Archive':
        return runArchiveStep(this.deps, step, withProvenance(), profile.archiveServiceType, state);
      case 'RequireProfile': {
        const payload = job.env.fields.payload;
        const ok = isRecord(payload) && payload.profile === profile.personaReleaseProfile;
        return ok ? { ok: true } : state.fail(id, 'release_profile', `payload.profile is not ${profile.personaReleaseProfile}`);
      }
      default:
        // Send and Call run only for events (§10.9)
        return { ok: true };
    }
  }

  private async forward(step: Record<string, unknown>, bodies: Buffer[], state: PlanRunState): Promise<StepOutcome> {
    const id = String(step.id);
    const problems: string[] = [];
    let tried = 0;
    for (const t of priorityOrder(targetsOf(step))) {
      const r = await resolveTarget(this.deps.directory, t, this.deps.profile.relayServiceType, state.trace?.id);
      if (typeof r === 'string') {
        problems.push(`${t.serviceDid} ${t.serviceId}: ${r}`);
        continue;
      }
      const report = await forwardToEndpoints(r.endpoints, bodies, this.deps.forwarder, state.trace);
      state.attempts += report.attempts;
      tried += report.attempts;
      if (report.accepted !== null) {
        PlanRunState.addAll(state.forwardedEndpoints, [report.accepted]);
        return { ok: true, handedOff: true };
      }
    }
    const reason = `no Relay accepted${problems.length > 0 ? `; ${problems.join('; ')}` : ''}`;
    return state.fail(id, tried > 0 ? 'downstream' : 'not_deliverable', reason);
  }
}
