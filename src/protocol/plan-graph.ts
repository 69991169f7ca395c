/**
 * The transition semantics of a `DeliveryPlan/v1` (http-api.md §10.4.2, first item): start at `entry_step` (or
 * after a named step when resuming, §10.3 step 10); each step ends in Success or Failure; the matching outgoing
 * transitions (trigger equal to the outcome, or `Always`) are followed — the single `Next` edge and every `Fork`
 * edge, in transition order. A step reached twice runs once (later arrivals reuse its outcome). A branch ends at a
 * step with no matching edge — or at a step that handed the rest of the plan to another node (a successful
 * Forward) — and the plan succeeds iff every branch ends in Success. Pure: steps run through a callback.
 */

/** A transition in the JSON form of http-api.md §8.1. */
export interface PlanEdge {
  from: string;
  to: string;
  trigger: 'Success' | 'Failure' | 'Always';
  mode: 'Next' | 'Fork';
}

/** What running one step gave. */
export interface StepOutcome {
  ok: boolean;
  /** The rest of the plan continues elsewhere (a Forward accepted by another Relay): no edge is followed. */
  handedOff?: boolean;
}

/** The outcome of a whole plan walk. */
export interface PlanWalk {
  ok: boolean;
  /** Ids of the steps at which a branch ended in Failure, in the order the branches ended. */
  failedLeaves: string[];
  /** Ids of the steps that ran, in order. */
  ran: string[];
}

/** The edges leaving `stepId` that match `ok` (§10.4.2), in transition order. */
export function matchingEdges(edges: readonly PlanEdge[], stepId: string, ok: boolean): PlanEdge[] {
  const outcome = ok ? 'Success' : 'Failure';
  return edges.filter((e) => e.from === stepId && (e.trigger === outcome || e.trigger === 'Always'));
}

/**
 * Walks the plan from `start` (a step id to run, or `{after}`: continue as if that step had succeeded) and runs
 * each reached step once through `run`. Branches run sequentially in transition order.
 */
export async function walkPlan(
  edges: readonly PlanEdge[],
  start: string | { after: string },
  run: (stepId: string) => Promise<StepOutcome>,
): Promise<PlanWalk> {
  const outcomes = new Map<string, Promise<StepOutcome>>();
  const visiting = new Set<string>();
  const failedLeaves: string[] = [];
  const ran: string[] = [];
  const runOnce = (id: string): Promise<StepOutcome> => {
    let p = outcomes.get(id);
    if (p === undefined) {
      ran.push(id);
      p = run(id);
      outcomes.set(id, p);
    }
    return p;
  };
  const follow = async (from: string, outcome: StepOutcome): Promise<boolean> => {
    const next = outcome.handedOff === true ? [] : matchingEdges(edges, from, outcome.ok);
    if (next.length === 0) {
      if (!outcome.ok) failedLeaves.push(from);
      return outcome.ok;
    }
    let all = true;
    for (const e of next) {
      // every branch runs, even after one failed: each step's downstream effects are independent
      if (!(await walk(e.to))) all = false;
    }
    return all;
  };
  const walk = async (id: string): Promise<boolean> => {
    const outcome = await runOnce(id);
    // validation forbids cycles (ledger-rules.md §7.5); a re-entry only reuses the outcome
    if (visiting.has(id)) return outcome.ok;
    visiting.add(id);
    try {
      return await follow(id, outcome);
    } finally {
      visiting.delete(id);
    }
  };
  const ok = typeof start === 'string' ? await walk(start) : await follow(start.after, { ok: true });
  return { ok, failedLeaves, ran };
}
