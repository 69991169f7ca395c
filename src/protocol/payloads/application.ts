/**
 * Application authorization tuples (ledger-rules.md §4.10). Not carried in the call: the ledger rebuilds them
 * from the call arguments, the current state and the control DID's current `application_nonce`.
 */
import { ScaleDecodeError, type ScaleReader, ScaleWriter, tryDecodeStrict } from '../../codec/scale.js';
import type { Profile } from '../profile.js';

export const APPLICATION_STATUSES = ['Active', 'Suspended', 'Tombstoned'] as const;
export type ApplicationStatus = (typeof APPLICATION_STATUSES)[number];

export const MAX_APPLICATION_ID_BYTES = 64;
export const MAX_APPLICATION_DOMAIN_BYTES = 253;
const DID_BYTES = 128;

export type ApplicationAuthorization =
  | { action: 'register'; applicationId: string; controlDid: string; status: 'Active'; nonce: bigint }
  | { action: 'update'; applicationId: string; newControlDid: string; currentStatus: ApplicationStatus; nonce: bigint }
  | { action: 'status'; applicationId: string; controlDid: string; newStatus: ApplicationStatus; nonce: bigint }
  | { action: 'domain'; applicationId: string; controlDid: string; domain: string | null; nonce: bigint }
  | { action: 'linked_did'; applicationId: string; controlDid: string; linkedDid: string; enabled: boolean; nonce: bigint };

export type ApplicationAction = ApplicationAuthorization['action'];

export interface DecodedApplicationAuthorization {
  /** The domain string found in the tuple (`<p>:application-registry:v1` when well formed). */
  domain: string;
  authorization: ApplicationAuthorization;
}

const statusIndex = (s: ApplicationStatus) => APPLICATION_STATUSES.indexOf(s);
const readStatus = (r: ScaleReader): ApplicationStatus => APPLICATION_STATUSES[r.variant(APPLICATION_STATUSES.length)]!;

function encodeWithDomain(domain: string, a: ApplicationAuthorization): Uint8Array {
  const w = new ScaleWriter().str(domain).str(a.action).str(a.applicationId);
  switch (a.action) {
    case 'register':
      w.str(a.controlDid).u8(statusIndex(a.status));
      break;
    case 'update':
      w.str(a.newControlDid).u8(statusIndex(a.currentStatus));
      break;
    case 'status':
      w.str(a.controlDid).u8(statusIndex(a.newStatus));
      break;
    case 'domain':
      w.str(a.controlDid).option(a.domain, (x, d) => x.str(d));
      break;
    case 'linked_did':
      w.str(a.controlDid).str(a.linkedDid).bool(a.enabled);
      break;
  }
  return w.u64(a.nonce).finish();
}

/** The signed bytes: SCALE tuple (`DOMAIN`, action word, application id, …, nonce). */
export function encodeApplicationAuthorization(profile: Profile, a: ApplicationAuthorization): Uint8Array {
  return encodeWithDomain(profile.applicationDomain, a);
}

function read(r: ScaleReader): DecodedApplicationAuthorization {
  const domain = r.str();
  const action = r.str();
  const applicationId = r.str(MAX_APPLICATION_ID_BYTES);
  let authorization: ApplicationAuthorization;
  switch (action) {
    case 'register': {
      const controlDid = r.str(DID_BYTES);
      const status = readStatus(r);
      if (status !== 'Active') throw new ScaleDecodeError('register carries status Active');
      authorization = { action, applicationId, controlDid, status, nonce: r.u64() };
      break;
    }
    case 'update':
      authorization = { action, applicationId, newControlDid: r.str(DID_BYTES), currentStatus: readStatus(r), nonce: r.u64() };
      break;
    case 'status':
      authorization = { action, applicationId, controlDid: r.str(DID_BYTES), newStatus: readStatus(r), nonce: r.u64() };
      break;
    case 'domain':
      authorization = {
        action,
        applicationId,
        controlDid: r.str(DID_BYTES),
        domain: r.option((x) => x.str(MAX_APPLICATION_DOMAIN_BYTES)),
        nonce: r.u64(),
      };
      break;
    case 'linked_did':
      authorization = {
        action,
        applicationId,
        controlDid: r.str(DID_BYTES),
        linkedDid: r.str(DID_BYTES),
        enabled: r.bool(),
        nonce: r.u64(),
      };
      break;
    default:
      throw new ScaleDecodeError(`unknown application action ${action}`);
  }
  return { domain, authorization };
}

/** Strict decode of an application tuple (any domain string; the caller compares it with the profile's). */
export function decodeApplicationAuthorization(b: Uint8Array): DecodedApplicationAuthorization | undefined {
  return tryDecodeStrict(b, read, (d) => encodeWithDomain(d.domain, d.authorization));
}

/** `[a-z0-9._-]{1,64}` (§9.2). */
export function isApplicationId(id: string): boolean {
  return /^[a-z0-9._-]{1,64}$/.test(id);
}

/**
 * An application id that can be registered: the ledger grammar ({@link isApplicationId}) and a path segment every
 * HTTP client sends as it is. `.` and `..` are dot segments, which URL clients remove before sending
 * (`/applications/../policy` becomes `/policy`), so such an application could never be read or managed; every
 * other id of the grammar survives a path round trip unchanged (none of `[a-z0-9._-]` is percent-encoded).
 */
export function isAddressableApplicationId(id: string): boolean {
  return isApplicationId(id) && id !== '.' && id !== '..';
}

/**
 * Application domain syntax (§5.10 `set_application_domain`): 1–253 bytes, at least two labels, each 1–63 bytes of
 * `[a-z0-9-]` not starting or ending with `-`, the last label containing a letter. No normalisation.
 */
export function isApplicationDomain(d: string): boolean {
  if (d.length < 1 || d.length > MAX_APPLICATION_DOMAIN_BYTES) return false;
  const labels = d.split('.');
  if (labels.length < 2) return false;
  for (const l of labels) {
    if (l.length < 1 || l.length > 63 || !/^[a-z0-9-]+$/.test(l) || l.startsWith('-') || l.endsWith('-')) return false;
  }
  return /[a-z]/.test(labels[labels.length - 1]!);
}
