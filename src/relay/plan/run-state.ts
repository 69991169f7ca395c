/**
 * What one plan execution observed (http-api.md §10.5 `details` and attempt fields): downstream attempts, the
 * Caches, Archives and Relays that accepted, and why each failed step failed.
 */

import type { DdnError } from '../../base/errors.js';
import type { RequestTrace } from '../../base/request-trace.js';
import { retentionDetails, shorterRetention } from '../base-delivery.js';
import type { AppliedRetention } from '../cache-store-client.js';

/**
 * Why a step failed: a downstream error, a plan that cannot be delivered, a missing release profile, or every
 * Cache refusing the client's envelope itself.
 */
export type StepFailureKind = 'downstream' | 'not_deliverable' | 'release_profile' | 'rejected_envelope';

/** Mutable record of one plan run. */
export class PlanRunState {
  /** The request the plan runs for: its id is passed on to the Caches and Relays called, its logger logs. */
  trace: RequestTrace | undefined;

  attempts = 0;
  cacheAttempted = false;
  /** `cache_result` of the last Cache failure. */
  lastCacheFailure: string | null = null;
  /** The last refusal of the client's envelope itself by a Cache or Archive. */
  envelopeRefusal: DdnError | null = null;
  readonly acceptedCaches: string[] = [];
  readonly attemptedCaches: string[] = [];
  readonly acceptedArchives: string[] = [];
  readonly forwardedEndpoints: string[] = [];
  readonly failures = new Map<string, { kind: StepFailureKind; reason: string }>();
  /** The shortest retention an accepting Cache or Archive applied. */
  private retention: AppliedRetention | null = null;

  /** Records the retention a Store or Archive step's accepts applied. */
  addRetention(r: AppliedRetention | null): void {
    this.retention = shorterRetention(this.retention, r);
  }

  fail(stepId: string, kind: StepFailureKind, reason: string): { ok: false } {
    this.failures.set(stepId, { kind, reason });
    return { ok: false };
  }

  /** Adds `items` to `list` once each, keeping order. */
  static addAll(list: string[], items: readonly string[]): void {
    for (const i of items) if (!list.includes(i)) list.push(i);
  }

  /** The §10.5 detail members observed so far (empty lists left out). */
  details(): Record<string, unknown> {
    const d: Record<string, unknown> = {};
    if (this.forwardedEndpoints.length > 0) d.forwarded_endpoints = [...this.forwardedEndpoints];
    if (this.acceptedCaches.length > 0 || this.attemptedCaches.length > 0) d.accepted_caches = [...this.acceptedCaches];
    if (this.attemptedCaches.length > 0) d.attempted_caches = [...this.attemptedCaches];
    if (this.acceptedArchives.length > 0) d.accepted_archives = [...this.acceptedArchives];
    return { ...d, ...retentionDetails(this.retention) };
  }

  /** `cache_result` (§10.5): accepted when any Cache accepted, else the last failure, else null. */
  cacheResult(): string | null {
    if (!this.cacheAttempted) return null;
    if (this.acceptedCaches.length > 0 || this.acceptedArchives.length > 0) return 'accepted';
    return this.lastCacheFailure ?? 'failed';
  }
}
