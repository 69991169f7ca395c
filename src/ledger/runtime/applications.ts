/**
 * Applications (ledger-rules.md §5.10, §9): DID-signed proof calls of module 13. The signed tuple (§4.10) is
 * rebuilt with the control DID's current `application_nonce`; every success advances that nonce (checked
 * addition) and stamps `updated_at` with the block number.
 */
import {
  APPLICATION_STATUSES,
  encodeApplicationAuthorization,
  isApplicationDomain,
  isApplicationId,
  type ApplicationAuthorization,
} from '../../protocol/payloads/application.js';
import { failer, LedgerFailure } from '../errors.js';
import type { CallOf } from '../extrinsic.js';
import { didExists, getNonce, putNonce } from '../records.js';
import type { Overlay, StateReader } from '../state.js';
import {
  applicationsOfControlDid,
  controlledDomain,
  getApplication,
  MAX_APPLICATIONS_PER_CONTROL_DID,
  MAX_LINKED_DIDS,
  putApplication,
  setApplicationsOfControlDid,
  type ApplicationRecord,
} from './application-state.js';
import type { ExecContext } from './context.js';
import { deletePolicyV3 } from './policy-state.js';
import { verifyDidSignature } from './signatures.js';

const fail = failer('ApplicationRegistry');
const U64_MAX = (1n << 64n) - 1n;

/** "Signature check" of §5.10: `verify_did_signature` of `did` over the tuple, else `InvalidAuthorization`. */
function checkAuthorization(s: StateReader, ctx: ExecContext, did: string, signerKeyId: string, signature: Uint8Array, auth: ApplicationAuthorization): void {
  const msg = encodeApplicationAuthorization(ctx.profile, auth);
  if (!verifyDidSignature(ctx, s, did, signerKeyId, msg, signature)) fail('InvalidAuthorization');
}

/** Application nonce of `did` := nonce + 1, or `AuthorizationNonceOverflow`. */
function advanceNonce(s: Overlay, did: string, used: bigint): void {
  if (used >= U64_MAX) fail('AuthorizationNonceOverflow');
  putNonce(s, 'application_nonce', did, used + 1n);
}

function nextRevision(app: ApplicationRecord): bigint {
  if (app.revision >= U64_MAX) fail('RevisionOverflow');
  return app.revision + 1n;
}

/** An existing, non-tombstoned application (`ApplicationNotFound`, `ApplicationTombstoned`). */
function liveApplication(s: StateReader, id: string): ApplicationRecord {
  const app = getApplication(s, id) ?? fail('ApplicationNotFound');
  if (app.status === 'Tombstoned') fail('ApplicationTombstoned');
  return app;
}

function addToIndex(s: Overlay, did: string, id: string): void {
  const ids = applicationsOfControlDid(s, did);
  if (ids.includes(id)) return;
  if (ids.length >= MAX_APPLICATIONS_PER_CONTROL_DID) fail('TooManyApplicationsForControlDid');
  setApplicationsOfControlDid(s, did, [...ids, id]);
}

function removeFromIndex(s: Overlay, did: string, id: string): void {
  setApplicationsOfControlDid(
    s,
    did,
    applicationsOfControlDid(s, did).filter((x) => x !== id),
  );
}

/** Clears what belongs to the current control of an application: domain, linked DIDs, the v3 policy. */
function released(s: Overlay, id: string, app: ApplicationRecord): ApplicationRecord {
  deletePolicyV3(s, { kind: 'Application', id });
  return { ...app, domain: null, linkedDids: [] };
}

export function executeRegisterApplication(s: Overlay, ctx: ExecContext, call: CallOf<'register_application'>): void {
  const { applicationId: id, controlDid, signerKeyId, signature } = call.args;
  if (!isApplicationId(id)) fail('InvalidApplicationId');
  if (getApplication(s, id)) fail('ApplicationAlreadyExists');
  if (!didExists(s, controlDid)) fail('ControlDidNotFound');
  const nonce = getNonce(s, 'application_nonce', controlDid);
  checkAuthorization(s, ctx, controlDid, signerKeyId, signature, {
    action: 'register',
    applicationId: id,
    controlDid,
    status: 'Active',
    nonce,
  });
  addToIndex(s, controlDid, id);
  putApplication(s, id, {
    controlDid,
    status: 'Active',
    revision: 1n,
    registeredAt: ctx.blockNumber,
    updatedAt: ctx.blockNumber,
    domain: null,
    linkedDids: [],
  });
  advanceNonce(s, controlDid, nonce);
}

export function executeUpdateApplication(s: Overlay, ctx: ExecContext, call: CallOf<'update_application'>): void {
  const { applicationId: id, newControlDid, signerKeyId, signature } = call.args;
  const app = liveApplication(s, id);
  if (!didExists(s, newControlDid)) fail('ControlDidNotFound');
  const nonce = getNonce(s, 'application_nonce', app.controlDid);
  checkAuthorization(s, ctx, app.controlDid, signerKeyId, signature, {
    action: 'update',
    applicationId: id,
    newControlDid,
    currentStatus: app.status,
    nonce,
  });
  const revision = nextRevision(app);
  if (newControlDid !== app.controlDid) {
    addToIndex(s, newControlDid, id);
    removeFromIndex(s, app.controlDid, id);
    putApplication(s, id, { ...released(s, id, app), controlDid: newControlDid, revision, updatedAt: ctx.blockNumber });
  } else {
    putApplication(s, id, { ...app, revision, updatedAt: ctx.blockNumber });
  }
  advanceNonce(s, app.controlDid, nonce);
}

export function executeSetApplicationStatus(s: Overlay, ctx: ExecContext, call: CallOf<'set_application_status'>): void {
  const { applicationId: id, signerKeyId, signature } = call.args;
  const status = APPLICATION_STATUSES[call.args.status];
  if (status === undefined) throw new LedgerFailure('MalformedExtrinsic', 'Ledger');
  const app = liveApplication(s, id);
  if (status === app.status) fail('InvalidStatusTransition');
  const nonce = getNonce(s, 'application_nonce', app.controlDid);
  checkAuthorization(s, ctx, app.controlDid, signerKeyId, signature, {
    action: 'status',
    applicationId: id,
    controlDid: app.controlDid,
    newStatus: status,
    nonce,
  });
  const revision = nextRevision(app);
  if (status === 'Tombstoned') {
    removeFromIndex(s, app.controlDid, id);
    putApplication(s, id, { ...released(s, id, app), status, revision, updatedAt: ctx.blockNumber });
  } else {
    putApplication(s, id, { ...app, status, revision, updatedAt: ctx.blockNumber });
  }
  advanceNonce(s, app.controlDid, nonce);
}

export function executeSetApplicationDomain(s: Overlay, ctx: ExecContext, call: CallOf<'set_application_domain'>): void {
  const { applicationId: id, domain, signerKeyId, signature } = call.args;
  const app = liveApplication(s, id);
  if (domain !== null) {
    if (!isApplicationDomain(domain)) fail('InvalidDomain');
    if (!controlledDomain(s, ctx.nowMs, domain, app.controlDid)) fail('DomainNotControlled');
  }
  const nonce = getNonce(s, 'application_nonce', app.controlDid);
  checkAuthorization(s, ctx, app.controlDid, signerKeyId, signature, {
    action: 'domain',
    applicationId: id,
    controlDid: app.controlDid,
    domain,
    nonce,
  });
  putApplication(s, id, { ...app, domain, revision: nextRevision(app), updatedAt: ctx.blockNumber });
  advanceNonce(s, app.controlDid, nonce);
}

export function executeSetApplicationLinkedDid(s: Overlay, ctx: ExecContext, call: CallOf<'set_application_linked_did'>): void {
  const a = call.args;
  const id = a.applicationId;
  const app = liveApplication(s, id);
  if (!didExists(s, a.linkedDid)) fail('LinkedDidNotFound');
  const nonce = getNonce(s, 'application_nonce', app.controlDid);
  const auth: ApplicationAuthorization = {
    action: 'linked_did',
    applicationId: id,
    controlDid: app.controlDid,
    linkedDid: a.linkedDid,
    enabled: a.enabled,
    nonce,
  };
  checkAuthorization(s, ctx, app.controlDid, a.controlSignerKeyId, a.controlSignature, auth);
  checkAuthorization(s, ctx, a.linkedDid, a.linkedSignerKeyId, a.linkedSignature, auth);
  const revision = nextRevision(app);
  let linkedDids = app.linkedDids;
  if (a.enabled && !linkedDids.includes(a.linkedDid)) {
    if (linkedDids.length >= MAX_LINKED_DIDS) fail('TooManyLinkedDids');
    linkedDids = [...linkedDids, a.linkedDid];
  } else if (!a.enabled) {
    linkedDids = linkedDids.filter((d) => d !== a.linkedDid);
  }
  putApplication(s, id, { ...app, linkedDids, revision, updatedAt: ctx.blockNumber });
  advanceNonce(s, app.controlDid, nonce);
}
