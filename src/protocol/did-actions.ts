/**
 * The DID mutation actions of http-api.md §5.1–§5.2, shared by the Directory and the SDK: each action's ledger
 * call, nonce domain and submit route, how its request fields are read and normalised, and the exact bytes its
 * signer signs (ledger-rules.md §4.1–§4.4, §4.6). One implementation, used on both sides of the wire.
 */
import { to0x, utf8Length } from '../base/bytes.js';
import { DdnError } from '../base/errors.js';
import { normalizeAlias } from './alias.js';
import { documentHash, type DidDocument, type KeyAgreement, type Service, type VerificationMethod } from './document.js';
import { parseDidDocument, parseService, parseVerificationMethod } from './document-json.js';
import { parseRootPubkey } from './keys.js';
import { encodeAliasPayload, type AliasAction } from './payloads/alias.js';
import { encodeControlPayload, type ControlAction } from './payloads/control.js';
import { documentActionField, encodeDocumentPatchPayload, type DocumentAction } from './payloads/document-patch.js';
import { documentReplacementSigningBytes } from './payloads/document-replacement.js';
import { encodeRootKeyPayload } from './payloads/root-key.js';
import type { Profile } from './profile.js';

export type DidActionNonceDomain = 'alias_nonce' | 'document_nonce' | 'root_pubkey_nonce' | 'control_nonce';
export type SubmitMethod = 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** What the §5.1/§5.2 tables say about one action. */
export interface DidActionRoute {
  /** Which payload layout the action signs. */
  readonly payload: 'alias' | 'control' | 'root' | 'patch' | 'replace';
  /** Ledger call name (the 202 `extrinsic`). */
  readonly extrinsic: string;
  readonly nonceDomain: DidActionNonceDomain;
  readonly method: SubmitMethod;
  /** Submit route pattern relative to the Directory base URL, e.g. `/dids/:did/aliases/:old_alias`. */
  readonly pattern: string;
  /** A path parameter the body repeats: `body[field]` (or `body[field][sub]`) must equal it. */
  readonly pathField?: { readonly param: string; readonly field: string; readonly sub?: string };
}

const D = '/dids/:did';
const DOC = `${D}/document`;
const CONTROL = 'apply_control_with_proof';
const id = (param: string, field: string, sub?: string) => ({ pathField: sub ? { param, field, sub } : { param, field } });

/** The §5.1 table; action names exactly as deployed clients send them (mixed case). */
export const DID_ACTION_ROUTES = {
  add_alias: { payload: 'alias', extrinsic: 'add_alias', nonceDomain: 'alias_nonce', method: 'POST', pattern: `${D}/aliases` },
  update_alias: {
    payload: 'alias',
    extrinsic: 'update_alias',
    nonceDomain: 'alias_nonce',
    method: 'PATCH',
    pattern: `${D}/aliases/:old_alias`,
    ...id('old_alias', 'old_alias'),
  },
  remove_alias: {
    payload: 'alias',
    extrinsic: 'remove_alias',
    nonceDomain: 'alias_nonce',
    method: 'DELETE',
    pattern: `${D}/aliases/:alias`,
    ...id('alias', 'alias'),
  },
  add_device: { payload: 'control', extrinsic: CONTROL, nonceDomain: 'control_nonce', method: 'POST', pattern: `${D}/devices` },
  update_device: {
    payload: 'control',
    extrinsic: CONTROL,
    nonceDomain: 'control_nonce',
    method: 'PATCH',
    pattern: `${D}/devices/:device_id`,
    ...id('device_id', 'device_id'),
  },
  remove_device: {
    payload: 'control',
    extrinsic: CONTROL,
    nonceDomain: 'control_nonce',
    method: 'DELETE',
    pattern: `${D}/devices/:device_id`,
    ...id('device_id', 'device_id'),
  },
  tombstone_device: {
    payload: 'control',
    extrinsic: CONTROL,
    nonceDomain: 'control_nonce',
    method: 'POST',
    pattern: `${D}/devices/:device_id/tombstone`,
    ...id('device_id', 'device_id'),
  },
  deactivate_did: { payload: 'control', extrinsic: CONTROL, nonceDomain: 'control_nonce', method: 'POST', pattern: `${D}/deactivate` },
  delete_did: { payload: 'control', extrinsic: CONTROL, nonceDomain: 'control_nonce', method: 'DELETE', pattern: D },
  UpdateRootPubkey: { payload: 'root', extrinsic: 'update_root_pubkey', nonceDomain: 'root_pubkey_nonce', method: 'PUT', pattern: `${D}/root-pubkey` },
  AddVerificationMethod: {
    payload: 'patch',
    extrinsic: 'add_verification_method',
    nonceDomain: 'document_nonce',
    method: 'POST',
    pattern: `${DOC}/verification-methods`,
  },
  UpdateVerificationMethod: {
    payload: 'patch',
    extrinsic: 'update_verification_method',
    nonceDomain: 'document_nonce',
    method: 'PUT',
    pattern: `${DOC}/verification-methods/:id`,
    ...id('id', 'verification_method', 'id'),
  },
  RemoveVerificationMethod: {
    payload: 'patch',
    extrinsic: 'remove_verification_method',
    nonceDomain: 'document_nonce',
    method: 'DELETE',
    pattern: `${DOC}/verification-methods/:id`,
    ...id('id', 'id'),
  },
  AddAuthentication: { payload: 'patch', extrinsic: 'add_authentication', nonceDomain: 'document_nonce', method: 'POST', pattern: `${DOC}/authentication` },
  RemoveAuthentication: {
    payload: 'patch',
    extrinsic: 'remove_authentication',
    nonceDomain: 'document_nonce',
    method: 'DELETE',
    pattern: `${DOC}/authentication/:id`,
    ...id('id', 'id'),
  },
  AddKeyAgreement: { payload: 'patch', extrinsic: 'add_key_agreement', nonceDomain: 'document_nonce', method: 'POST', pattern: `${DOC}/key-agreements` },
  UpdateKeyAgreement: {
    payload: 'patch',
    extrinsic: 'update_key_agreement',
    nonceDomain: 'document_nonce',
    method: 'PUT',
    pattern: `${DOC}/key-agreements/:id`,
    ...id('id', 'key_agreement', 'id'),
  },
  RemoveKeyAgreement: {
    payload: 'patch',
    extrinsic: 'remove_key_agreement',
    nonceDomain: 'document_nonce',
    method: 'DELETE',
    pattern: `${DOC}/key-agreements/:id`,
    ...id('id', 'id'),
  },
  AddService: { payload: 'patch', extrinsic: 'add_service', nonceDomain: 'document_nonce', method: 'POST', pattern: `${DOC}/services` },
  UpdateService: {
    payload: 'patch',
    extrinsic: 'update_service',
    nonceDomain: 'document_nonce',
    method: 'PUT',
    pattern: `${DOC}/services/:serviceId`,
    ...id('serviceId', 'service', 'id'),
  },
  RemoveService: {
    payload: 'patch',
    extrinsic: 'remove_service',
    nonceDomain: 'document_nonce',
    method: 'DELETE',
    pattern: `${DOC}/services/:id`,
    ...id('id', 'id'),
  },
  replace_document: { payload: 'replace', extrinsic: 'set_document_with_proof_v2', nonceDomain: 'document_nonce', method: 'PUT', pattern: `${DOC}/proof` },
} as const satisfies Record<string, DidActionRoute>;

export type DidAction = keyof typeof DID_ACTION_ROUTES;

export function isDidAction(s: unknown): s is DidAction {
  return typeof s === 'string' && Object.hasOwn(DID_ACTION_ROUTES, s);
}

export function routeOf(action: DidAction): DidActionRoute {
  return DID_ACTION_ROUTES[action];
}

/** The submit path of `action`: the pattern with `did` and the repeated id filled in, each percent-encoded. */
export function submitPath(action: DidAction, did: string, request: Record<string, unknown>): string {
  const r = routeOf(action);
  return r.pattern.replace(/:([a-z_A-Z]+)/g, (_m, name: string) => {
    if (name === 'did') return encodeURIComponent(did);
    const pf = r.pathField!;
    const holder = pf.sub ? (request[pf.field] as Record<string, unknown> | undefined) : request;
    const v = holder?.[pf.sub ?? pf.field];
    if (typeof v !== 'string') throw new DdnError('invalid_request', `${pf.field} is required for the submit path`, { field: pf.field });
    return encodeURIComponent(v);
  });
}

/** The parsed, typed value an action's fields stand for. */
export type DidActionOperand =
  | { kind: 'alias'; action: AliasAction; alias: string | null; oldAlias: string | null; newAlias: string | null }
  | { kind: 'control'; action: ControlAction }
  | { kind: 'root'; newRootPubkey: Uint8Array }
  | {
      kind: 'patch';
      action: DocumentAction;
      verificationMethod: VerificationMethod | null;
      keyAgreement: KeyAgreement | null;
      service: Service | null;
      id: string | null;
    }
  | { kind: 'replace'; document: DidDocument };

type Fields = Readonly<Record<string, unknown>>;

function text(f: Fields, field: string, maxBytes = 64): string {
  const v = f[field];
  if (typeof v !== 'string' || v.length === 0 || utf8Length(v) > maxBytes) {
    throw new DdnError('invalid_request', `${field} must be a non-empty string of at most ${maxBytes} bytes`, { field });
  }
  return v;
}

function alias(f: Fields, field: string): string {
  const v = f[field];
  if (typeof v !== 'string') throw new DdnError('invalid_request', `${field} is required`, { field });
  const r = normalizeAlias(v);
  if (!r.ok) throw new DdnError('invalid_alias', `${field} is not a valid alias`, { field, ledger_error: r.error });
  return r.alias;
}

function rootKey(f: Fields): Uint8Array {
  const raw = f.new_root_pubkey;
  const key = typeof raw === 'string' ? parseRootPubkey(raw) : undefined;
  if (!key) throw new DdnError('invalid_root_pubkey', 'new_root_pubkey is not a 32-byte key', { field: 'new_root_pubkey' });
  return key;
}

/** The operand and the normalised `request` fields of an action (http-api.md §5.1 normalisations). */
export interface ParsedDidAction {
  operand: DidActionOperand;
  /** Action fields as they appear in `request`: aliases normalised, root key as 0x-hex, objects as sent. */
  request: Record<string, unknown>;
}

/** Reads an action's fields; failures are DdnErrors with the codes of http-api.md §5.1. */
export function parseDidAction(action: DidAction, did: string, f: Fields): ParsedDidAction {
  switch (action) {
    case 'add_alias':
    case 'remove_alias': {
      const a = alias(f, 'alias');
      return { operand: { kind: 'alias', action: action === 'add_alias' ? 'Add' : 'Remove', alias: a, oldAlias: null, newAlias: null }, request: { alias: a } };
    }
    case 'update_alias': {
      const o = alias(f, 'old_alias');
      const n = alias(f, 'new_alias');
      return { operand: { kind: 'alias', action: 'Update', alias: null, oldAlias: o, newAlias: n }, request: { old_alias: o, new_alias: n } };
    }
    case 'add_device':
    case 'remove_device':
    case 'tombstone_device': {
      const d = text(f, 'device_id');
      const kind = action === 'add_device' ? 'AddDevice' : action === 'remove_device' ? 'RemoveDevice' : 'TombstoneDevice';
      return { operand: { kind: 'control', action: { kind, deviceId: d } }, request: { device_id: d } };
    }
    case 'update_device': {
      const d = text(f, 'device_id');
      const n = text(f, 'new_device_id');
      return {
        operand: { kind: 'control', action: { kind: 'UpdateDevice', oldDeviceId: d, newDeviceId: n } },
        request: { device_id: d, new_device_id: n },
      };
    }
    case 'deactivate_did':
      return { operand: { kind: 'control', action: { kind: 'DeactivateDid' } }, request: {} };
    case 'delete_did':
      return { operand: { kind: 'control', action: { kind: 'DeleteDid' } }, request: {} };
    case 'UpdateRootPubkey': {
      const k = rootKey(f);
      return { operand: { kind: 'root', newRootPubkey: k }, request: { new_root_pubkey: to0x(k) } };
    }
    case 'replace_document':
      return { operand: { kind: 'replace', document: parseDidDocument(f.document, did, 'document') }, request: { document: f.document } };
    default:
      return parsePatch(action, did, f);
  }
}

function parsePatch(action: DocumentAction, did: string, f: Fields): ParsedDidAction {
  const operand: Extract<DidActionOperand, { kind: 'patch' }> = {
    kind: 'patch',
    action,
    verificationMethod: null,
    keyAgreement: null,
    service: null,
    id: null,
  };
  switch (documentActionField(action)) {
    case 'verificationMethod':
      operand.verificationMethod = parseVerificationMethod(f.verification_method, did, 'verification_method');
      return { operand, request: { verification_method: f.verification_method } };
    case 'keyAgreement':
      operand.keyAgreement = parseVerificationMethod(f.key_agreement, did, 'key_agreement');
      return { operand, request: { key_agreement: f.key_agreement } };
    case 'service':
      operand.service = parseService(f.service, 'service');
      return { operand, request: { service: f.service } };
    case 'id':
      operand.id = text(f, 'id');
      return { operand, request: { id: operand.id } };
  }
}

export interface DidActionAuth {
  nonce: bigint;
  validUntil: bigint;
  signerKeyId: string;
}

/** The exact bytes the signer signs (the `canonical_payload`). */
export function encodeDidActionPayload(profile: Profile, did: string, op: DidActionOperand, auth: DidActionAuth): Uint8Array {
  const tail = { nonce: auth.nonce, validUntil: auth.validUntil, signerKeyId: auth.signerKeyId };
  switch (op.kind) {
    case 'alias':
      return encodeAliasPayload({ did, action: op.action, alias: op.alias, oldAlias: op.oldAlias, newAlias: op.newAlias, ...tail });
    case 'control':
      return encodeControlPayload({ did, action: op.action, ...tail });
    case 'root':
      return encodeRootKeyPayload({ did, newRootPubkey: op.newRootPubkey, ...tail });
    case 'patch':
      return encodeDocumentPatchPayload({
        did,
        action: op.action,
        verificationMethod: op.verificationMethod,
        keyAgreement: op.keyAgreement,
        service: op.service,
        id: op.id,
        ...tail,
      });
    case 'replace':
      return documentReplacementSigningBytes(profile, {
        did,
        documentHash: documentHash(op.document),
        documentNonce: auth.nonce,
        validUntil: auth.validUntil,
        signerKeyId: auth.signerKeyId,
      });
  }
}
