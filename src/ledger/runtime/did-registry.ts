/**
 * The DID registry module (ledger-rules.md §5.1–§5.6): validation in the exact order of the spec, then apply.
 * Pure over the state overlay it is given; throws LedgerFailure on the first failed check.
 */
import { bytesEqual, utf8Length } from '../../base/bytes.js';
import { ScaleWriter } from '../../codec/scale.js';
import { didGrammarError } from '../../protocol/did.js';
import { normalizeAlias } from '../../protocol/alias.js';
import {
  checkDocumentStructure,
  decodeDocument,
  DOC,
  emptyDocument,
  isValidService,
  isValidVm,
  writeService,
  writeVm,
  type DidDocument,
} from '../../protocol/document.js';
import { decodeAliasPayload, type AliasPayload } from '../../protocol/payloads/alias.js';
import { decodeControlPayload } from '../../protocol/payloads/control.js';
import { decodeDocumentPatchPayload, documentActionField, type DocumentAction, type DocumentPatchPayload } from '../../protocol/payloads/document-patch.js';
import { documentReplacementSigningBytes } from '../../protocol/payloads/document-replacement.js';
import { registrationSigningBytes } from '../../protocol/payloads/registration.js';
import { decodeRootKeyPayload } from '../../protocol/payloads/root-key.js';
import { blake2_256 } from '../../crypto/hash.js';
import { failer } from '../errors.js';
import type { CallArgs, CallOf } from '../extrinsic.js';
import {
  bumpNonce,
  controlsApplication,
  DID_SCOPED_NONCES,
  getAliasOwner,
  getDidRecord,
  getNonce,
  isDeletedDid,
  keys,
  markDeletedDid,
  policyKeys,
  putAliasOwner,
  putDidRecord,
  type DidRecord,
  type NonceDomain,
} from '../records.js';
import { followsDeployedChain } from '../../protocol/profile.js';
import type { Overlay } from '../state.js';
import type { ExecContext } from './context.js';
import { verifyRecordSignature, verifySignature } from './signatures.js';

const fail = failer('DidRegistry');

function tooLong(s: string, max: number): boolean {
  return utf8Length(s) > max;
}

/** Common tail of every proof call: expiry, record state, nonce, signature (steps 6–9 of §5.1). */
function checkProofTail(
  s: Overlay,
  ctx: ExecContext,
  did: string,
  validUntil: bigint,
  expiredError: string,
  domain: NonceDomain,
  nonce: bigint,
  nonceError: string,
  signerKeyId: string,
  signedPayload: Uint8Array,
  signature: Uint8Array,
): DidRecord {
  if (!(validUntil > BigInt(ctx.nowMs))) fail(expiredError);
  const rec = getDidRecord(s, did);
  if (!rec) return fail('DidNotFound');
  if (rec.deactivated) fail('DidDeactivated');
  if (nonce !== getNonce(s, domain, did)) fail(nonceError);
  if (!verifyRecordSignature(ctx, did, rec, signerKeyId, signedPayload, signature)) fail('InvalidSignature');
  return rec;
}

function touched(rec: DidRecord, ctx: ExecContext, patch: Partial<DidRecord>): DidRecord {
  return { ...rec, ...patch, version: rec.version + 1, updatedAt: ctx.nowMs };
}

// ---- aliases (§5.1) ----

type AliasCall = CallOf<'add_alias'> | CallOf<'update_alias'> | CallOf<'remove_alias'>;

export function executeAliasCall(s: Overlay, ctx: ExecContext, call: AliasCall): void {
  const a = call.args;
  if (tooLong(a.did, 128)) fail('DidTooLong');
  const norm = (raw: string): string => {
    const r = normalizeAlias(raw);
    return r.ok ? r.alias : fail(r.error);
  };
  let alias: string | null = null;
  let oldAlias: string | null = null;
  let newAlias: string | null = null;
  if (call.name === 'update_alias') {
    oldAlias = norm(call.args.oldAlias);
    newAlias = norm(call.args.newAlias);
  } else {
    alias = norm(call.args.alias);
  }
  if (tooLong(a.signerKeyId, 64)) fail('InvalidAliasPayload');
  const p = decodeAliasPayload(a.signedPayload) ?? fail('InvalidAliasPayload');
  const action: AliasPayload['action'] = call.name === 'add_alias' ? 'Add' : call.name === 'update_alias' ? 'Update' : 'Remove';
  if (p.did !== a.did || p.action !== action || p.alias !== alias || p.oldAlias !== oldAlias || p.newAlias !== newAlias || p.signerKeyId !== a.signerKeyId) {
    fail('InvalidAliasPayload');
  }
  const rec = checkProofTail(
    s,
    ctx,
    a.did,
    p.validUntil,
    'AliasAuthorizationExpired',
    'alias_nonce',
    p.nonce,
    'InvalidAliasNonce',
    a.signerKeyId,
    a.signedPayload,
    a.signature,
  );
  const list = rec.aliases ?? [];
  let next: string[];
  if (action === 'Add') {
    const owner = getAliasOwner(s, alias!);
    if (owner !== undefined) fail(owner === a.did ? 'AliasAlreadyExists' : 'AliasTaken');
    if (list.includes(alias!)) fail('AliasAlreadyExists');
    if (list.length >= 8) fail('TooManyAliases');
    next = [...list, alias!];
    putAliasOwner(s, alias!, a.did);
  } else if (action === 'Update') {
    if (oldAlias === newAlias) fail('AliasAlreadyExists');
    const owner = getAliasOwner(s, newAlias!);
    if (owner !== undefined) fail(owner === a.did ? 'AliasAlreadyExists' : 'AliasTaken');
    const i = list.indexOf(oldAlias!);
    if (i < 0) fail('AliasNotFound');
    next = [...list];
    next[i] = newAlias!;
    putAliasOwner(s, oldAlias!, undefined);
    putAliasOwner(s, newAlias!, a.did);
  } else {
    if (!list.includes(alias!)) fail('AliasNotFound');
    next = list.filter((x) => x !== alias);
    putAliasOwner(s, alias!, undefined);
  }
  putDidRecord(s, a.did, touched(rec, ctx, { aliases: next.length ? next : null }));
  bumpNonce(s, 'alias_nonce', a.did, p.nonce);
}

// ---- document patches (§5.2) ----

const PATCH_CALLS = {
  add_verification_method: 'AddVerificationMethod',
  update_verification_method: 'UpdateVerificationMethod',
  remove_verification_method: 'RemoveVerificationMethod',
  add_authentication: 'AddAuthentication',
  remove_authentication: 'RemoveAuthentication',
  add_key_agreement: 'AddKeyAgreement',
  update_key_agreement: 'UpdateKeyAgreement',
  remove_key_agreement: 'RemoveKeyAgreement',
  add_service: 'AddService',
  update_service: 'UpdateService',
  remove_service: 'RemoveService',
} as const satisfies Partial<Record<keyof CallArgs, DocumentAction>>;

export type PatchCallName = keyof typeof PATCH_CALLS;
type PatchCall = CallOf<PatchCallName>;

export function isPatchCall(name: string): name is PatchCallName {
  return Object.hasOwn(PATCH_CALLS, name);
}

export function documentActionOfCall(name: PatchCallName): DocumentAction {
  return PATCH_CALLS[name];
}

/** The payload option fields the call implies (Some(argument) for the action's field, None elsewhere). */
function expectedPatchFields(call: PatchCall): Pick<DocumentPatchPayload, 'verificationMethod' | 'keyAgreement' | 'service' | 'id'> {
  const out: Pick<DocumentPatchPayload, 'verificationMethod' | 'keyAgreement' | 'service' | 'id'> = {
    verificationMethod: null,
    keyAgreement: null,
    service: null,
    id: null,
  };
  const a = call.args as unknown as Record<string, unknown>;
  switch (documentActionField(PATCH_CALLS[call.name])) {
    case 'verificationMethod':
      out.verificationMethod = a.method as DocumentPatchPayload['verificationMethod'];
      break;
    case 'keyAgreement':
      out.keyAgreement = a.keyAgreement as DocumentPatchPayload['keyAgreement'];
      break;
    case 'service':
      out.service = a.service as DocumentPatchPayload['service'];
      break;
    case 'id':
      out.id = (a.methodId ?? a.keyId ?? a.serviceId) as string;
      break;
  }
  return out;
}

/** Byte equality of two optional structs under their SCALE encoding (§5.2 step 5 compares values, not JS objects). */
function sameEncoded<T>(a: T | null, b: T | null, write: (w: ScaleWriter, v: T) => void): boolean {
  const enc = (v: T | null) => new ScaleWriter().option(v, write).finish();
  return bytesEqual(enc(a), enc(b));
}

/**
 * Payloads of patch calls that passed {@link checkedPatchPayload}, by call object. Its checks read nothing but the
 * call, and a call is not changed once built (src/ledger/extrinsic.ts): the block that includes a pool entry runs the
 * entry's call again and finds its payload decoded and compared by the admission.
 */
const checkedPatches = new WeakMap<PatchCall, DocumentPatchPayload>();

/** §5.2 steps 1–5 (lengths, the payload's decoding, its fields against the call's): the payload, or a LedgerFailure. */
function checkedPatchPayload(call: PatchCall): DocumentPatchPayload {
  const known = checkedPatches.get(call);
  if (known !== undefined) return known;
  const a = call.args;
  const expected = expectedPatchFields(call);
  if (expected.id !== null && tooLong(expected.id, 64)) fail('InvalidDocumentPayload');
  if (tooLong(a.did, 128)) fail('DidTooLong');
  if (tooLong(a.signerKeyId, 64)) fail('InvalidDocumentPayload');
  const p = decodeDocumentPatchPayload(a.signedPayload) ?? fail('InvalidDocumentPayload');
  if (
    p.did !== a.did ||
    p.action !== PATCH_CALLS[call.name] ||
    !sameEncoded(p.verificationMethod, expected.verificationMethod, writeVm) ||
    !sameEncoded(p.keyAgreement, expected.keyAgreement, writeVm) ||
    !sameEncoded(p.service, expected.service, writeService) ||
    p.id !== expected.id ||
    p.signerKeyId !== a.signerKeyId
  ) {
    fail('InvalidDocumentPayload');
  }
  checkedPatches.set(call, p);
  return p;
}

export function executePatchCall(s: Overlay, ctx: ExecContext, call: PatchCall): void {
  const a = call.args;
  const p = checkedPatchPayload(call);
  const rec = checkProofTail(
    s,
    ctx,
    a.did,
    p.validUntil,
    'DocumentAuthorizationExpired',
    'document_nonce',
    p.nonce,
    'InvalidDocumentNonce',
    a.signerKeyId,
    a.signedPayload,
    a.signature,
  );
  const doc = applyPatch(rec.document, a.did, p);
  putDidRecord(s, a.did, touched(rec, ctx, { document: doc }));
  bumpNonce(s, 'document_nonce', a.did, p.nonce);
}

// eslint-disable-next-line max-lines-per-function -- a table: one short case per document action of ledger-rules, side by side
function applyPatch(current: DidDocument | null, did: string, p: DocumentPatchPayload): DidDocument {
  const need = (): DidDocument => current ?? fail('InvalidDocument');
  const vm = p.verificationMethod;
  const ka = p.keyAgreement;
  const svc = p.service;
  const id = p.id!;
  switch (p.action) {
    case 'AddVerificationMethod': {
      if (!isValidVm(vm!, did)) fail('InvalidDocument');
      const d = current ?? emptyDocument(did);
      if (d.verificationMethod.some((v) => v.id === vm!.id)) fail('VerificationMethodAlreadyExists');
      if (d.verificationMethod.length >= DOC.maxVms) fail('InvalidDocument');
      return { ...d, verificationMethod: [...d.verificationMethod, vm!] };
    }
    case 'UpdateVerificationMethod': {
      if (!isValidVm(vm!, did)) fail('InvalidDocument');
      const d = need();
      const i = d.verificationMethod.findIndex((v) => v.id === vm!.id);
      if (i < 0) fail('VerificationMethodNotFound');
      return { ...d, verificationMethod: d.verificationMethod.map((v, j) => (j === i ? vm! : v)) };
    }
    case 'RemoveVerificationMethod': {
      const d = need();
      if ((d.authentication ?? []).includes(id)) fail('VerificationMethodInUse');
      if (!d.verificationMethod.some((v) => v.id === id)) fail('VerificationMethodNotFound');
      const i = d.verificationMethod.findIndex((v) => v.id === id);
      return { ...d, verificationMethod: d.verificationMethod.filter((_v, j) => j !== i) };
    }
    case 'AddAuthentication': {
      const d = need();
      if (!d.verificationMethod.some((v) => v.id === id)) fail('VerificationMethodNotFound');
      const auth = d.authentication ?? [];
      if (auth.includes(id)) fail('AuthenticationAlreadyExists');
      if (auth.length >= DOC.maxAuth) fail('InvalidDocument');
      return { ...d, authentication: [...auth, id] };
    }
    case 'RemoveAuthentication': {
      const d = need();
      const auth = d.authentication ?? [];
      if (!auth.includes(id)) fail('AuthenticationNotFound');
      const next = auth.filter((x) => x !== id);
      return { ...d, authentication: next.length ? next : null };
    }
    case 'AddKeyAgreement': {
      if (!isValidVm(ka!, did)) fail('InvalidDocument');
      const d = current ?? emptyDocument(did);
      if (d.keyAgreement.some((v) => v.id === ka!.id)) fail('KeyAgreementAlreadyExists');
      if (d.keyAgreement.length >= DOC.maxKas) fail('InvalidDocument');
      return { ...d, keyAgreement: [...d.keyAgreement, ka!] };
    }
    case 'UpdateKeyAgreement': {
      if (!isValidVm(ka!, did)) fail('InvalidDocument');
      const d = need();
      const i = d.keyAgreement.findIndex((v) => v.id === ka!.id);
      if (i < 0) fail('KeyAgreementNotFound');
      return { ...d, keyAgreement: d.keyAgreement.map((v, j) => (j === i ? ka! : v)) };
    }
    case 'RemoveKeyAgreement': {
      const d = need();
      const i = d.keyAgreement.findIndex((v) => v.id === id);
      if (i < 0) fail('KeyAgreementNotFound');
      return { ...d, keyAgreement: d.keyAgreement.filter((_v, j) => j !== i) };
    }
    case 'AddService': {
      if (!isValidService(svc!)) fail('InvalidDocument');
      const d = current ?? emptyDocument(did);
      const list = d.service ?? [];
      if (list.some((x) => x.id === svc!.id)) fail('ServiceAlreadyExists');
      if (list.length >= DOC.maxServices) fail('ServiceTooLong');
      return { ...d, service: [...list, svc!] };
    }
    case 'UpdateService': {
      if (!isValidService(svc!)) fail('InvalidDocument');
      const d = need();
      const list = d.service ?? [];
      const i = list.findIndex((x) => x.id === svc!.id);
      if (i < 0) fail('ServiceNotFound');
      return { ...d, service: list.map((x, j) => (j === i ? svc! : x)) };
    }
    case 'RemoveService': {
      const d = need();
      const list = d.service ?? [];
      const i = list.findIndex((x) => x.id === id);
      if (i < 0) fail('ServiceNotFound');
      const next = list.filter((_x, j) => j !== i);
      return { ...d, service: next.length ? next : null };
    }
  }
}

// ---- root key (§5.3) ----

export function executeRootKeyCall(s: Overlay, ctx: ExecContext, call: CallOf<'update_root_pubkey'>): void {
  const a = call.args;
  if (a.newRootPubkey.length !== 32) fail('InvalidRootPubkey');
  if (tooLong(a.did, 128)) fail('DidTooLong');
  if (tooLong(a.signerKeyId, 64)) fail('InvalidRootPubkeyPayload');
  const p = decodeRootKeyPayload(a.signedPayload) ?? fail('InvalidRootPubkeyPayload');
  if (p.did !== a.did || !bytesEqual(p.newRootPubkey, a.newRootPubkey) || p.signerKeyId !== a.signerKeyId) {
    fail('InvalidRootPubkeyPayload');
  }
  const rec = checkProofTail(
    s,
    ctx,
    a.did,
    p.validUntil,
    'RootPubkeyAuthorizationExpired',
    'root_pubkey_nonce',
    p.nonce,
    'InvalidRootPubkeyNonce',
    a.signerKeyId,
    a.signedPayload,
    a.signature,
  );
  putDidRecord(s, a.did, touched(rec, ctx, { rootPubkey: a.newRootPubkey.slice() }));
  bumpNonce(s, 'root_pubkey_nonce', a.did, p.nonce);
}

// ---- control (§5.4) ----

export function executeControlCall(s: Overlay, ctx: ExecContext, call: CallOf<'apply_control_with_proof'>): void {
  const a = call.args;
  if (tooLong(a.signerKeyId, 64)) fail('InvalidControlPayload');
  const p = decodeControlPayload(a.signedPayload) ?? fail('InvalidControlPayload');
  if (p.signerKeyId !== a.signerKeyId) fail('InvalidControlPayload');
  if (p.action.kind === 'SetDeliveryPolicyLinks' || p.action.kind === 'ClearDeliveryPolicyLinks') fail('PolicyLinksRemoved');
  const did = p.did;
  const rec = checkProofTail(
    s,
    ctx,
    did,
    p.validUntil,
    'ControlAuthorizationExpired',
    'control_nonce',
    p.nonce,
    'InvalidControlNonce',
    a.signerKeyId,
    a.signedPayload,
    a.signature,
  );
  const devices = rec.devices ?? [];
  const act = p.action;
  switch (act.kind) {
    case 'AddDevice': {
      const i = devices.findIndex((d) => d.deviceId === act.deviceId);
      let next;
      if (i >= 0) next = devices.map((d, j) => (j === i ? { ...d, tombstoned: false } : d));
      else {
        if (devices.length >= 10) fail('TooManyDevices');
        next = [...devices, { deviceId: act.deviceId, addedAt: ctx.nowMs, tombstoned: false }];
      }
      putDidRecord(s, did, touched(rec, ctx, { devices: next }));
      break;
    }
    case 'TombstoneDevice': {
      const i = devices.findIndex((d) => d.deviceId === act.deviceId);
      if (i < 0) fail('DeviceNotFound');
      putDidRecord(s, did, touched(rec, ctx, { devices: devices.map((d, j) => (j === i ? { ...d, tombstoned: true } : d)) }));
      break;
    }
    case 'UpdateDevice': {
      if (act.oldDeviceId === act.newDeviceId) fail('DeviceAlreadyExists');
      if (!rec.devices) fail('DeviceNotFound');
      if (devices.some((d) => d.deviceId === act.newDeviceId)) fail('DeviceAlreadyExists');
      const i = devices.findIndex((d) => d.deviceId === act.oldDeviceId);
      if (i < 0) fail('DeviceNotFound');
      const next = devices.map((d, j) => (j === i ? { ...d, deviceId: act.newDeviceId } : d));
      putDidRecord(s, did, touched(rec, ctx, { devices: next }));
      break;
    }
    case 'RemoveDevice': {
      const i = devices.findIndex((d) => d.deviceId === act.deviceId);
      if (i < 0) fail('DeviceNotFound');
      const next = devices.filter((_d, j) => j !== i);
      putDidRecord(s, did, touched(rec, ctx, { devices: next.length ? next : null }));
      break;
    }
    case 'DeactivateDid':
      if (controlsApplication(s, did)) fail('DidControlsApplication');
      putDidRecord(s, did, touched(rec, ctx, { deactivated: true }));
      break;
    case 'DeleteDid':
      if (controlsApplication(s, did)) fail('DidControlsApplication');
      deleteDid(s, ctx, did, rec);
      return; // no further nonce bump: deleteDid settled them
    default:
      fail('PolicyLinksRemoved');
  }
  bumpNonce(s, 'control_nonce', did, p.nonce);
}

/**
 * `DeleteDid` (§5.4). Profile `openpayload` keeps the deployed chain's rule that the identifier may be registered
 * again, but not its hazard (§13 item 3: the nonces restarting at 0, so a payload signed before the deletion would
 * verify again): every DID-scoped nonce is kept and moved one past its value, so the re-registered DID's nonces
 * continue above every nonce a pre-deletion payload can carry — also one prepared and signed but never submitted.
 * The wire is unchanged (clients take nonces from the Directory). Every other profile removes the nonces as the
 * spec says and remembers the identifier instead (`keys.deletedDid`): it can never be registered again.
 */
function deleteDid(s: Overlay, ctx: ExecContext, did: string, rec: DidRecord): void {
  putDidRecord(s, did, undefined);
  for (const alias of rec.aliases ?? []) putAliasOwner(s, alias, undefined);
  if (followsDeployedChain(ctx.profile)) {
    for (const domain of DID_SCOPED_NONCES) bumpNonce(s, domain, did, getNonce(s, domain, did));
  } else {
    for (const domain of DID_SCOPED_NONCES) s.delete(keys.nonce(domain, did));
    markDeletedDid(s, did);
  }
  s.delete(policyKeys.didConstraints(did));
  s.delete(policyKeys.policyV2Did(did));
  s.delete(policyKeys.policyV3Did(did));
}

// ---- registration v2 (§5.5) ----

export function executeRegistration(s: Overlay, ctx: ExecContext, call: CallOf<'register_with_proof_v2'>): void {
  const a = call.args;
  if (a.rootPubkey.length !== 32) fail('InvalidRootPubkey');
  if (a.signature.length !== 64) fail('InvalidSignature');
  const grammar = didGrammarError(a.did);
  if (grammar) fail(grammar);
  let alias: string | null = null;
  if (a.alias !== null) {
    const r = normalizeAlias(a.alias);
    alias = r.ok ? r.alias : fail(r.error);
  }
  const now = BigInt(ctx.nowMs);
  if (!(a.expiryMs > now)) fail('RegistrationExpired');
  if (a.expiryMs > now + 3_600_000n) fail('RegistrationExpiryTooFar');
  const doc = decodeDocBlob(a.docBlob);
  const structural = checkDocumentStructure(doc, a.did);
  if (structural) fail(structural);
  if (getDidRecord(s, a.did)) fail('DidAlreadyExists');
  if (isDeletedDid(s, a.did)) fail('DidDeleted');
  const msg = registrationSigningBytes(ctx.profile, {
    did: a.did,
    rootPubkey: a.rootPubkey,
    alias,
    documentHash: blake2_256(a.docBlob),
    expiryMs: a.expiryMs,
  });
  if (!ctx.skipSignatures && !verifySignature(ctx, a.rootPubkey, msg, a.signature)) fail('InvalidSignature');
  let aliases: string[] | null = null;
  if (alias !== null && getAliasOwner(s, alias) === undefined) {
    putAliasOwner(s, alias, a.did);
    aliases = [alias];
  }
  putDidRecord(s, a.did, {
    aliases,
    devices: null,
    document: doc,
    version: 1,
    updatedAt: ctx.nowMs,
    rootPubkey: a.rootPubkey.slice(),
    deactivated: false,
    registrationTx: ctx.txHash,
  });
}

function decodeDocBlob(blob: Uint8Array): DidDocument {
  if (blob.length > DOC.maxDocBlobBytes) fail('InvalidDocument');
  try {
    return decodeDocument(blob);
  } catch {
    return fail('InvalidDocument');
  }
}

// ---- document replacement v2 (§5.6) ----

export function executeDocumentReplacement(s: Overlay, ctx: ExecContext, call: CallOf<'set_document_with_proof_v2'>): void {
  const a = call.args;
  if (tooLong(a.did, 128)) fail('DidTooLong');
  if (tooLong(a.signerKeyId, 64)) fail('InvalidDocumentPayload');
  const doc = decodeDocBlob(a.docBlob);
  const structural = checkDocumentStructure(doc, a.did);
  if (structural) fail(structural);
  if (!(a.validUntil > BigInt(ctx.nowMs))) fail('DocumentAuthorizationExpired');
  const rec = getDidRecord(s, a.did) ?? fail('DidNotFound');
  if (rec.deactivated) fail('DidDeactivated');
  if (a.documentNonce !== getNonce(s, 'document_nonce', a.did)) fail('InvalidDocumentNonce');
  const msg = documentReplacementSigningBytes(ctx.profile, {
    did: a.did,
    documentHash: blake2_256(a.docBlob),
    documentNonce: a.documentNonce,
    validUntil: a.validUntil,
    signerKeyId: a.signerKeyId,
  });
  if (!verifyRecordSignature(ctx, a.did, rec, a.signerKeyId, msg, a.signature)) fail('InvalidSignature');
  putDidRecord(s, a.did, touched(rec, ctx, { document: doc }));
  bumpNonce(s, 'document_nonce', a.did, a.documentNonce);
}
