/** Typed access to the ledger state (ledger-rules.md §3.2, §6). Keys are strings; values immutable. */
import type { DidDocument } from '../protocol/document.js';
import type { Overlay, StateReader } from './state.js';
import { stateSlot } from './state-slot.js';

export interface DeviceInfo {
  deviceId: string;
  addedAt: number;
  tombstoned: boolean;
}

export interface DidRecord {
  aliases: string[] | null;
  devices: DeviceInfo[] | null;
  document: DidDocument | null;
  version: number;
  updatedAt: number;
  rootPubkey: Uint8Array;
  deactivated: boolean;
  /** Registration tx hash (`0x…`), ddn metadata for `tx_id`; not part of consensus. */
  registrationTx?: string;
}

export type NonceDomain =
  | 'alias_nonce'
  | 'document_nonce'
  | 'root_pubkey_nonce'
  | 'control_nonce'
  | 'policy_nonce'
  | 'policy_v3_nonce'
  | 'operator_nonce'
  | 'persona_nonce'
  | 'application_nonce';

/** Nonce domains `DeleteDid` removes (ledger-rules.md §6). */
export const DID_SCOPED_NONCES: readonly NonceDomain[] = [
  'alias_nonce',
  'document_nonce',
  'root_pubkey_nonce',
  'control_nonce',
  'policy_nonce',
  'policy_v3_nonce',
  'operator_nonce',
];

export const keys = {
  did: (did: string) => `did/${did}`,
  alias: (alias: string) => `alias/${alias}`,
  nonce: (domain: NonceDomain, id: string) => `nonce/${domain}/${id}`,
  meta: (name: string) => `meta/${name}`,
  /** Profile `platform`: a deleted DID's identifier, kept so it is never registered again (value `true`). */
  deletedDid: (did: string) => `deleted/${did}`,
} as const;

/** "Active DID" (§3.2): at most 128 bytes, has a record, not deactivated. */
export function didExists(s: StateReader, did: string): boolean {
  if (Buffer.byteLength(did, 'utf8') > 128) return false;
  const r = getDidRecord(s, did);
  return !!r && !r.deactivated;
}

/** Keys owned by the policy and application modules that DID deletion and the retirement guard touch. */
export const policyKeys = {
  didConstraints: (did: string) => `constraints/did/${did}`,
  policyV2Did: (did: string) => `policy2/did/${did}`,
  policyV3Did: (did: string) => `policy3/did/${did}`,
  applicationsOfControlDid: (did: string) => `appidx/${did}`,
} as const;

/** The typed slots of these keys (state-slot.ts): DID records, nonces, alias owners, deleted DIDs, application index. */
const didRecords = stateSlot<string, DidRecord>(keys.did);
const nonces = stateSlot<readonly [NonceDomain, string], bigint>(([domain, id]) => keys.nonce(domain, id));
const aliasOwners = stateSlot<string, string>(keys.alias);
const deletedDids = stateSlot<string, true>(keys.deletedDid);
/** Ids of the non-tombstoned applications a DID controls (application-state.ts keeps it). */
export const applicationIndex = stateSlot<string, string[]>(policyKeys.applicationsOfControlDid);

export function getDidRecord(s: StateReader, did: string): DidRecord | undefined {
  return didRecords.read(s, did);
}

export function putDidRecord(s: Overlay, did: string, rec: DidRecord | undefined): void {
  didRecords.write(s, did, rec);
}

export function getNonce(s: StateReader, domain: NonceDomain, id: string): bigint {
  return nonces.read(s, [domain, id]) ?? 0n;
}

/** Sets the nonce to `value`. */
export function putNonce(s: Overlay, domain: NonceDomain, id: string, value: bigint): void {
  nonces.write(s, [domain, id], value);
}

const U64_MAX = (1n << 64n) - 1n;

/** Sets the nonce to `used + 1` (saturating at u64::MAX). */
export function bumpNonce(s: Overlay, domain: NonceDomain, id: string, used: bigint): void {
  putNonce(s, domain, id, used >= U64_MAX ? U64_MAX : used + 1n);
}

export function getAliasOwner(s: StateReader, alias: string): string | undefined {
  return aliasOwners.read(s, alias);
}

/** Binds `alias` to `did` (undefined unbinds it). */
export function putAliasOwner(s: Overlay, alias: string, did: string | undefined): void {
  aliasOwners.write(s, alias, did);
}

/** True when `did` was deleted on a profile that never lets it be registered again (see did-registry.ts). */
export function isDeletedDid(s: StateReader, did: string): boolean {
  return deletedDids.read(s, did) === true;
}

/** Keeps a deleted DID's identifier so it is never registered again. */
export function markDeletedDid(s: Overlay, did: string): void {
  deletedDids.write(s, did, true);
}

/** Retirement guard (§5.4): the DID controls at least one application that is not tombstoned. */
export function controlsApplication(s: StateReader, did: string): boolean {
  const ids = applicationIndex.read(s, did);
  return !!ids && ids.length > 0;
}
