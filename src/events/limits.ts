/**
 * What bounds the work event rules make a node do (docs/public-node.md, "Event rules and amplification"): a fixed
 * number of Send/Call runs per event, a per-owner budget of events per minute, the Send targets profile `platform`
 * lets a Did/Persona rule reach, and the counters of what was dropped, logged at warn at most once a minute each.
 */
import type { Logger } from 'pino';
import type { Clock } from '../base/clock.js';
import { followsDeployedChain, type Profile } from '../protocol/profile.js';

/**
 * Send and Call steps one event runs at most, over every policy it consults (Application, Did, Persona): enough
 * for a Send and a Call in two of them. A step beyond it is not run and counts as a Failure.
 */
export const MAX_STEP_RUNS_PER_EVENT = 4;

/** Events one policy owner's rules may run per minute on a node, unless `--event-budget-per-owner` says otherwise. */
export const DEFAULT_EVENT_BUDGET_PER_OWNER = 600;

const MINUTE_MS = 60_000;

/**
 * The per-owner budget: each event a rule of `owner` (the policy's `operator_did`) runs for takes one; in a minute
 * an owner gets what `--event-budget-per-owner` says. One process counts it in memory ({@link MemoryOwnerBudget});
 * processes sharing a PostgreSQL database count it together (src/app/event-budget.ts).
 */
export interface OwnerBudget {
  /** Takes one event for `owner`; false (nothing taken) once it used its budget this minute. */
  take(owner: string): boolean | Promise<boolean>;
}

/**
 * The per-owner budget of one process: in a minute (fixed windows on this node's clock) an owner gets
 * `perMinute`. Holds one counter per owner seen in the current minute.
 */
export class MemoryOwnerBudget implements OwnerBudget {
  private windowStart = Number.NEGATIVE_INFINITY;
  private readonly used = new Map<string, number>();

  constructor(
    private readonly clock: Clock,
    private readonly perMinute: number,
  ) {}

  /** Takes one event for `owner`; false (nothing taken) once it used its budget this minute. */
  take(owner: string): boolean {
    const now = this.clock.nowMs();
    if (now - this.windowStart >= MINUTE_MS || now < this.windowStart) {
      this.windowStart = now;
      this.used.clear();
    }
    const n = this.used.get(owner) ?? 0;
    if (n >= this.perMinute) return false;
    this.used.set(owner, n + 1);
    return true;
  }
}

/** A v3 scope as the events name it, and the fields of its policy a Send check reads. */
export interface SendScope {
  type: 'DID' | 'PERSONA' | 'APPLICATION';
  id: string;
}

/**
 * Whether a Send step of a rule of `scope`'s policy (owned by `operatorDid`) may address `target` when it runs.
 * Profile `openpayload`: any DID (the deployed chain's rule). Elsewhere a Did/Persona rule reaches only its owner
 * — the same rule the ledger applies to writes, checked again here because a policy may predate it. An
 * Application rule's targets were checked at write time in every profile (control DID or a linked DID, which
 * signed its link).
 */
export function sendTargetConsented(profile: Profile, scope: SendScope, operatorDid: unknown, target: string): boolean {
  if (followsDeployedChain(profile) || scope.type === 'APPLICATION') return true;
  if (target !== operatorDid) return false;
  return scope.type !== 'DID' || operatorDid === scope.id;
}

/** What event processing dropped, since the process started (`GET /health` → `events`). */
export interface EventDropCounters {
  /** Events not queued because {@link MAX_QUEUED_EVENTS} were waiting. */
  queue_full: number;
  /** Rule runs dropped because the policy's owner had used its budget for the minute. */
  owner_budget: number;
  /** Rule runs dropped because the most of the owner's runs already waited behind its run in progress. */
  owner_queue_full: number;
  /** Send/Call steps not run because the event had run {@link MAX_STEP_RUNS_PER_EVENT}. */
  step_cap: number;
  /** Send steps not run because the target is not the rule's owner (profile `platform`). */
  send_not_consented: number;
}

export type DropKind = keyof EventDropCounters;

const MESSAGES: Record<DropKind, string> = {
  queue_full: 'event queue full: events dropped',
  owner_budget: 'event budget of a policy owner used up: events dropped',
  owner_queue_full: 'event rule runs of a policy owner waiting at most: runs dropped',
  step_cap: 'event ran its most Send/Call steps: further steps not run',
  send_not_consented: 'event rule Send to a DID other than its owner: not run',
};

/** The counters, with a warn log per kind at most once a minute (carrying the total and the latest context). */
export class DropCounters {
  readonly counts: EventDropCounters = { queue_full: 0, owner_budget: 0, owner_queue_full: 0, step_cap: 0, send_not_consented: 0 };
  private readonly lastLog = new Map<DropKind, number>();

  constructor(
    private readonly clock: Clock,
    private readonly logger?: Logger,
  ) {}

  count(kind: DropKind, context: Record<string, unknown>): void {
    this.counts[kind]++;
    const now = this.clock.nowMs();
    const last = this.lastLog.get(kind);
    if (last !== undefined && now - last < MINUTE_MS && now >= last) return;
    this.lastLog.set(kind, now);
    this.logger?.warn({ ...context, [kind]: this.counts[kind] }, MESSAGES[kind]);
  }
}
