/**
 * Application records (ledger-rules.md §9.1), the per-control-DID index the retirement guard reads
 * (`records.ts` `policyKeys.applicationsOfControlDid`), and the derived predicates of §9.3.
 */
import type { ApplicationStatus } from '../../protocol/payloads/application.js';
import { applicationIndex, didExists } from '../records.js';
import type { Overlay, StateReader } from '../state.js';
import { stateSlot } from '../state-slot.js';
import { getPersona } from './persona-state.js';

export const MAX_APPLICATIONS_PER_CONTROL_DID = 16;
export const MAX_LINKED_DIDS = 16;

export interface ApplicationRecord {
  controlDid: string;
  status: ApplicationStatus;
  /** u64. */
  revision: bigint;
  /** Block numbers. */
  registeredAt: number;
  updatedAt: number;
  /** The optional domain (≤ 253 bytes), as stored; whether it is still verified is `verifiedDomain`. */
  domain: string | null;
  linkedDids: string[];
}

export const applicationKey = (id: string) => `app/${id}`;

/** Application records by id (state-slot.ts). */
const applications = stateSlot<string, ApplicationRecord>(applicationKey);

export function getApplication(s: StateReader, id: string): ApplicationRecord | undefined {
  return applications.read(s, id);
}

export function putApplication(s: Overlay, id: string, rec: ApplicationRecord): void {
  applications.write(s, id, rec);
}

/** Ids of the non-tombstoned applications controlled by `did`, in insertion order. */
export function applicationsOfControlDid(s: StateReader, did: string): string[] {
  return applicationIndex.read(s, did) ?? [];
}

export function setApplicationsOfControlDid(s: Overlay, did: string, ids: string[]): void {
  applicationIndex.write(s, did, ids.length > 0 ? ids : undefined);
}

/** `active_control_did(id)` (§9.3): the control DID of an `Active` application. */
export function activeControlDid(s: StateReader, id: string): string | null {
  const app = getApplication(s, id);
  return app && app.status === 'Active' ? app.controlDid : null;
}

/**
 * `controlled_domain(d, control_did)` (§9.3): a persona record for `d` exists, is active, is operated by
 * `control_did` and its DNS verification has not expired (named personas, with expiry 0, never qualify).
 */
export function controlledDomain(s: StateReader, nowMs: number, domain: string, controlDid: string): boolean {
  const rec = getPersona(s, domain);
  return !!rec && rec.active && rec.operatorDid === controlDid && rec.verificationExpiresAt > nowMs;
}

/** `verified_domain(id)` (§9.3): the stored domain while the application is `Active` and still controls it. */
export function verifiedDomain(s: StateReader, nowMs: number, id: string): string | null {
  const app = getApplication(s, id);
  if (!app || app.status !== 'Active' || app.domain === null) return null;
  return controlledDomain(s, nowMs, app.domain, app.controlDid) ? app.domain : null;
}

/** `authorized_send_target(id, target)` (§9.3): the control DID, or an active linked DID, of an `Active` application. */
export function authorizedSendTarget(s: StateReader, id: string, target: string): boolean {
  const app = getApplication(s, id);
  if (!app || app.status !== 'Active') return false;
  return target === app.controlDid || (app.linkedDids.includes(target) && didExists(s, target));
}
