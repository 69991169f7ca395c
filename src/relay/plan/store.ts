/**
 * Store and Archive steps (http-api.md §10.4.2). Store: candidates in selection order, stored (provenance and
 * node signature) until `desired_replicas` Caches accepted or the candidates are exhausted; Success iff at least
 * `required_replicas` accepted. Both are capped by the winner's effective `max_replicas` (the constraints bound
 * replication, §10.3 step 11). Archive: every target; Success iff at least one accepted. Each target's endpoints
 * are alternatives (one replica per target); a chunk set goes whole to one endpoint.
 */
import type { DirectoryPort } from '../../ports/directory-port.js';
import { storeInCaches, type StoreReport } from '../base-delivery.js';
import type { CacheStorer } from '../cache-store-client.js';
import { PlanRunState, type StepFailureKind } from './run-state.js';
import { priorityOrder, resolveTarget, targetsOf, weightedOrder, type ResolvedTarget } from './targets.js';
import type { StepOutcome } from '../../protocol/plan-graph.js';

/** What a Store/Archive step reads. */
export interface StoreStepDeps {
  directory: DirectoryPort;
  storer: CacheStorer;
  random?: () => number;
}

/** Resolves the targets of `step` in order (for request `requestId`); unresolvable ones are reported through `problems`. */
async function resolvedTargets(
  deps: StoreStepDeps,
  step: Record<string, unknown>,
  serviceType: string,
  problems: string[],
  requestId: string | undefined,
): Promise<ResolvedTarget[]> {
  const targets = targetsOf(step);
  const ordered = step.selection === 'Weighted' ? weightedOrder(targets, deps.random) : priorityOrder(targets);
  const out: ResolvedTarget[] = [];
  for (const t of ordered) {
    const r = await resolveTarget(deps.directory, t, serviceType, requestId);
    if (typeof r === 'string') problems.push(`${t.serviceDid} ${t.serviceId}: ${r}`);
    else out.push(r);
  }
  return out;
}

/** How a step that stored too few copies failed: the Caches refused the envelope itself, or downstream failed. */
function failureKind(report: StoreReport, problems: readonly string[], state: PlanRunState): StepFailureKind {
  if (report.attempts === 0) return 'not_deliverable';
  if (report.envelopeRefusal !== null && report.otherFailures === 0 && problems.length === 0) {
    state.envelopeRefusal = report.envelopeRefusal;
    return 'rejected_envelope';
  }
  return 'downstream';
}

/** `; <endpoint>: <why>; <target problem>…` for a failed step's reason (empty when there is nothing to say). */
function withWhy(report: StoreReport, problems: readonly string[]): string {
  const all = [...report.failures.map((f) => `${f.endpoint}: ${f.reason}`), ...problems];
  return all.length > 0 ? `; ${all.join('; ')}` : '';
}

const toServices = (targets: readonly ResolvedTarget[]) => targets.map((t) => ({ serviceId: t.serviceId, endpoints: t.endpoints }));

/** Runs a Store step with `bodies` (the envelopes with this step's provenance). */
export async function runStoreStep(
  deps: StoreStepDeps,
  step: Record<string, unknown>,
  bodies: readonly Buffer[],
  maxReplicas: number,
  cacheServiceType: string,
  state: PlanRunState,
): Promise<StepOutcome> {
  const id = String(step.id);
  const problems: string[] = [];
  const targets = await resolvedTargets(deps, step, cacheServiceType, problems, state.trace?.id);
  const desired = Math.max(1, Math.min(Number(step.desired_replicas ?? 1), maxReplicas));
  const required = Math.max(1, Math.min(Number(step.required_replicas ?? 1), desired));
  const report = await storeInCaches(
    toServices(targets),
    bodies.map((bytes) => ({ bytes })),
    desired,
    deps.storer,
    state.trace,
  );
  state.attempts += report.attempts;
  if (report.attempts > 0) state.cacheAttempted = true;
  if (report.lastFailure !== null) state.lastCacheFailure = report.lastFailure;
  PlanRunState.addAll(state.attemptedCaches, report.attempted);
  PlanRunState.addAll(state.acceptedCaches, report.accepted);
  state.addRetention(report.retention);
  if (report.accepted.length >= required) return { ok: true };
  const reason = `${report.accepted.length} of ${required} required replicas accepted${withWhy(report, problems)}`;
  return state.fail(id, failureKind(report, problems, state), reason);
}

/** Runs an Archive step: every target; Success iff one accepted. */
export async function runArchiveStep(
  deps: StoreStepDeps,
  step: Record<string, unknown>,
  bodies: readonly Buffer[],
  archiveServiceType: string,
  state: PlanRunState,
): Promise<StepOutcome> {
  const id = String(step.id);
  const problems: string[] = [];
  const targets = await resolvedTargets(deps, { ...step, selection: 'Priority' }, archiveServiceType, problems, state.trace?.id);
  const report = await storeInCaches(
    toServices(targets),
    bodies.map((bytes) => ({ bytes })),
    targets.length,
    deps.storer,
    state.trace,
  );
  state.attempts += report.attempts;
  if (report.attempts > 0) state.cacheAttempted = true;
  if (report.lastFailure !== null) state.lastCacheFailure = report.lastFailure;
  PlanRunState.addAll(state.acceptedArchives, report.accepted);
  state.addRetention(report.retention);
  if (report.accepted.length > 0) return { ok: true };
  const reason = `no Archive accepted${withWhy(report, problems)}`;
  return state.fail(id, failureKind(report, problems, state), reason);
}
