/**
 * Route targets of plan steps (http-api.md §8.1, §10.4.2): their order — `Priority` (ascending `priority`, then
 * descending `weight`, then list order) or `Weighted` (repeated weighted random draws without replacement) — and
 * their resolution to a published service's endpoints.
 */
import type { DirectoryPort } from '../../ports/directory-port.js';

/** A Forward/Store/Archive target in the JSON form of §8.1. */
export interface PlanTarget {
  serviceDid: string;
  serviceId: string;
  priority: number;
  weight: number;
}

/** A target whose service resolved: its endpoints in listed order. */
export interface ResolvedTarget extends PlanTarget {
  endpoints: string[];
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The targets of a step's JSON (`targets` array); malformed entries are dropped (the ledger validated them). */
export function targetsOf(step: Record<string, unknown>): PlanTarget[] {
  const list = Array.isArray(step.targets) ? step.targets : [];
  return list.filter(isRecord).flatMap((t) =>
    typeof t.service_did === 'string' && typeof t.service_id === 'string'
      ? [
          {
            serviceDid: t.service_did,
            serviceId: t.service_id,
            priority: typeof t.priority === 'number' ? t.priority : 0,
            weight: typeof t.weight === 'number' && t.weight > 0 ? t.weight : 1,
          },
        ]
      : [],
  );
}

/** `Priority` order: ascending priority, then descending weight, then list order (decision of §10.4.2). */
export function priorityOrder<T extends PlanTarget>(targets: readonly T[]): T[] {
  return targets
    .map((t, i) => ({ t, i }))
    .sort((a, b) => a.t.priority - b.t.priority || b.t.weight - a.t.weight || a.i - b.i)
    .map(({ t }) => t);
}

/** `Weighted` order: each position drawn at random with probability proportional to weight, without replacement. */
export function weightedOrder<T extends PlanTarget>(targets: readonly T[], random: () => number = Math.random): T[] {
  const left = [...targets];
  const out: T[] = [];
  while (left.length > 0) {
    const total = left.reduce((s, t) => s + t.weight, 0);
    let r = random() * total;
    let pick = left.length - 1;
    for (let i = 0; i < left.length; i++) {
      r -= left[i]!.weight;
      if (r < 0) {
        pick = i;
        break;
      }
    }
    out.push(left.splice(pick, 1)[0]!);
  }
  return out;
}

/** Why a target could not be used. */
export type TargetProblem = 'service_did_not_found' | 'service_not_found';

/**
 * The target's service in the finalized state: `(service_did, service_id)` of `serviceType` with at least one
 * endpoint, else the problem (a plan whose targets no longer resolve is not deliverable, §10.4.2). `requestId`: the
 * request the plan runs for.
 */
export async function resolveTarget(
  directory: DirectoryPort,
  target: PlanTarget,
  serviceType: string,
  requestId?: string,
): Promise<ResolvedTarget | TargetProblem> {
  const rec = await directory.getDid(target.serviceDid, requestId);
  if (rec === null || rec.deactivated) return 'service_did_not_found';
  const service = rec.document?.service?.find((s) => s.id === target.serviceId && s.type === serviceType);
  if (service === undefined || service.serviceEndpoint.length === 0) return 'service_not_found';
  return { ...target, endpoints: [...service.serviceEndpoint] };
}
