/** Delivery-plan validation `validate_plan` / `validate_action` (ledger-rules.md §7.5). */
import type { DeliveryPlanV1, PolicyAction, RouteTarget, TransitionTrigger } from '../../protocol/policy/types.js';
import { failer, withDetail } from '../errors.js';
import { didExists } from '../records.js';
import type { StateReader } from '../state.js';
import type { ExecContext } from './context.js';
import { isDeliveryService, type ServiceKind } from './service-typing.js';
import { isValidPayloadTemplate } from './templates.js';

const fail = failer('DeliveryPolicy');

/** "Targets valid for a kind": non-empty; each with a non-empty service id, of the kind, weight > 0; no repeats. */
function validateTargets(s: StateReader, ctx: ExecContext, targets: readonly RouteTarget[], kind: ServiceKind): void {
  if (targets.length === 0) fail('InvalidRouteTarget');
  const seen = new Set<string>();
  for (const t of targets) {
    if (t.serviceId.length === 0 || !isDeliveryService(s, ctx.profile, t.serviceDid, t.serviceId, kind) || t.weight === 0) {
      fail('InvalidRouteTarget');
    }
    const key = JSON.stringify([t.serviceDid, t.serviceId]);
    if (seen.has(key)) fail('InvalidRouteTarget');
    seen.add(key);
  }
}

const overlaps = (a: TransitionTrigger, b: TransitionTrigger) => a === b || a === 'Always' || b === 'Always';

/**
 * `validate_plan(plan, max_replicas)`, checks in the order of §7.5. Throws the first failure; step-level failures
 * carry the step id as detail.
 */
// eslint-disable-next-line max-lines-per-function -- a table: the checks of §7.5 in the spec's order, one case per step kind
export function validatePlan(s: StateReader, ctx: ExecContext, plan: DeliveryPlanV1, maxReplicas: number): void {
  if (plan.steps.length === 0) fail('InvalidDeliveryPlan');
  if (!plan.steps.some((st) => st.id === plan.entryStep)) fail('InvalidDeliveryPlan');

  const ids = new Set<string>();
  let forwards = 0;
  for (const step of plan.steps) {
    withDetail({ stepId: step.id }, () => {
      if (step.id.length === 0 || ids.has(step.id)) fail('DuplicateStepId');
      ids.add(step.id);
      const op = step.operation;
      switch (op.kind) {
        case 'Forward':
          if (++forwards > 1) fail('MultipleForwardSteps');
          validateTargets(s, ctx, op.targets, 'Relay');
          break;
        case 'Store':
          validateTargets(s, ctx, op.targets, 'Cache');
          if (
            !(op.desiredReplicas >= 1 && op.desiredReplicas <= maxReplicas) ||
            !(op.requiredReplicas >= 1 && op.requiredReplicas <= op.desiredReplicas) ||
            op.desiredReplicas > op.targets.length
          ) {
            fail('InvalidDeliveryPlan');
          }
          break;
        case 'Archive':
          validateTargets(s, ctx, op.targets, 'Archive');
          break;
        case 'Send':
          if (!didExists(s, op.recipientDid) || !isValidPayloadTemplate(op.payloadTemplate)) fail('InvalidPayloadTemplate');
          break;
        case 'Call':
          if (!isDeliveryService(s, ctx.profile, op.serviceDid, op.serviceId, 'ApplicationControl')) fail('InvalidRouteTarget');
          if (!op.registeredDomain.includes('.')) fail('InvalidCallDomain');
          if (!isValidPayloadTemplate(op.payloadTemplate)) fail('InvalidPayloadTemplate');
          break;
        case 'RequireProfile':
          break;
      }
    });
  }

  const outgoing = new Map<string, string[]>();
  const nextTriggers = new Map<string, TransitionTrigger[]>();
  const edges = new Set<string>();
  for (const t of plan.transitions) {
    if (!ids.has(t.from) || !ids.has(t.to)) fail('InvalidDeliveryPlan');
    if (t.from === t.to) fail('DeliveryPlanCycle');
    if (t.mode === 'Next') {
      const prior = nextTriggers.get(t.from) ?? [];
      if (prior.some((p) => overlaps(p, t.trigger))) fail('InvalidDeliveryPlan');
      nextTriggers.set(t.from, [...prior, t.trigger]);
    }
    const edge = JSON.stringify([t.from, t.to]);
    if (edges.has(edge)) fail('InvalidDeliveryPlan');
    edges.add(edge);
    outgoing.set(t.from, [...(outgoing.get(t.from) ?? []), t.to]);
  }

  // Reachability from the entry step.
  const reached = new Set<string>([plan.entryStep]);
  const queue = [plan.entryStep];
  while (queue.length > 0) {
    for (const to of outgoing.get(queue.shift()!) ?? []) {
      if (!reached.has(to)) {
        reached.add(to);
        queue.push(to);
      }
    }
  }
  if (reached.size !== ids.size) fail('InvalidDeliveryPlan');

  // Kahn's algorithm: every step visited iff acyclic.
  const indegree = new Map<string, number>([...ids].map((id) => [id, 0]));
  for (const tos of outgoing.values()) for (const to of tos) indegree.set(to, indegree.get(to)! + 1);
  const ready = [...ids].filter((id) => indegree.get(id) === 0);
  let visited = 0;
  while (ready.length > 0) {
    const id = ready.shift()!;
    visited++;
    for (const to of outgoing.get(id) ?? []) {
      const d = indegree.get(to)! - 1;
      indegree.set(to, d);
      if (d === 0) ready.push(to);
    }
  }
  if (visited !== ids.size) fail('DeliveryPlanCycle');

  if (![...ids].some((id) => !outgoing.has(id))) fail('InvalidDeliveryPlan');
}

/** `validate_action(action, max_replicas)`: plans are validated; `RejectV1` and `BaseDidDeliveryV1` always pass. */
export function validateAction(s: StateReader, ctx: ExecContext, action: PolicyAction, maxReplicas: number): void {
  if (action.kind === 'DeliveryPlanV1') validatePlan(s, ctx, action.plan, maxReplicas);
}
