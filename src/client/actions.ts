/**
 * The DID mutation actions of http-api.md §5.1: their request fields, ledger call, nonce domain and submit
 * route (§5.2). Action names are matched exactly as the table spells them (mixed case).
 */
import { encodePath, type HttpMethod } from './http.js';
import type { DidDocumentJson, DidNonceDomain, KeyAgreementJson, ServiceJson, VerificationMethodJson } from './types.js';

/** The action fields of each action, as sent in the prepare request and the submit body (§5.1). */
export interface ActionFields {
  add_alias: { alias: string };
  update_alias: { old_alias: string; new_alias: string };
  remove_alias: { alias: string };
  add_device: { device_id: string };
  update_device: { device_id: string; new_device_id: string };
  remove_device: { device_id: string };
  tombstone_device: { device_id: string };
  deactivate_did: Record<string, never>;
  delete_did: Record<string, never>;
  /** Any §0.3 key form; requests carry it as `0x` + lowercase hex. */
  UpdateRootPubkey: { new_root_pubkey: string };
  AddVerificationMethod: { verification_method: VerificationMethodJson };
  UpdateVerificationMethod: { verification_method: VerificationMethodJson };
  RemoveVerificationMethod: { id: string };
  AddAuthentication: { id: string };
  RemoveAuthentication: { id: string };
  AddKeyAgreement: { key_agreement: KeyAgreementJson };
  UpdateKeyAgreement: { key_agreement: KeyAgreementJson };
  RemoveKeyAgreement: { id: string };
  AddService: { service: ServiceJson };
  UpdateService: { service: ServiceJson };
  RemoveService: { id: string };
  replace_document: { document: DidDocumentJson };
}

/** A DID registry action name of the §5.1 table. */
export type DidAction = keyof ActionFields;

/** Loosely typed action fields, as read back from a server's prepared `request`. */
export type FieldBag = Readonly<Record<string, unknown>>;

/** A field that is missing or has the wrong type. */
export class ActionFieldError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ActionFieldError';
  }
}

/** Reads a string field of a bag, throwing {@link ActionFieldError} when absent or not a string. */
export function stringField(f: FieldBag, key: string): string {
  const v = f[key];
  if (typeof v !== 'string') throw new ActionFieldError(`${key} must be a string`);
  return v;
}

/** Reads `f[key].id` (the id of a verification method, key agreement or service). */
export function objectIdField(f: FieldBag, key: string): string {
  const v = f[key];
  if (typeof v !== 'object' || v === null || typeof (v as FieldBag).id !== 'string') {
    throw new ActionFieldError(`${key}.id must be a string`);
  }
  return (v as FieldBag).id as string;
}

/** What the §5.1 table says about one action. */
export interface ActionSpec {
  /** Ledger call name (the 202 `extrinsic`). */
  readonly extrinsic: string;
  /** The `GET /dids/{did}/nonces` key this action advances. */
  readonly nonceDomain: DidNonceDomain;
  /** Submit route method. */
  readonly method: HttpMethod;
  /** Submit route path, ids percent-encoded, built from the DID and the (normalised) request fields. */
  path(did: string, fields: FieldBag): string;
}

const CONTROL = 'apply_control_with_proof';
const docs = (did: string): string => encodePath`/dids/${did}/document`;

/** The §5.1 / §5.2 table. */
export const DID_ACTIONS: { readonly [A in DidAction]: ActionSpec } = {
  add_alias: { extrinsic: 'add_alias', nonceDomain: 'alias_nonce', method: 'POST', path: (d) => encodePath`/dids/${d}/aliases` },
  update_alias: {
    extrinsic: 'update_alias',
    nonceDomain: 'alias_nonce',
    method: 'PATCH',
    path: (d, f) => encodePath`/dids/${d}/aliases/${stringField(f, 'old_alias')}`,
  },
  remove_alias: {
    extrinsic: 'remove_alias',
    nonceDomain: 'alias_nonce',
    method: 'DELETE',
    path: (d, f) => encodePath`/dids/${d}/aliases/${stringField(f, 'alias')}`,
  },
  add_device: { extrinsic: CONTROL, nonceDomain: 'control_nonce', method: 'POST', path: (d) => encodePath`/dids/${d}/devices` },
  update_device: {
    extrinsic: CONTROL,
    nonceDomain: 'control_nonce',
    method: 'PATCH',
    path: (d, f) => encodePath`/dids/${d}/devices/${stringField(f, 'device_id')}`,
  },
  remove_device: {
    extrinsic: CONTROL,
    nonceDomain: 'control_nonce',
    method: 'DELETE',
    path: (d, f) => encodePath`/dids/${d}/devices/${stringField(f, 'device_id')}`,
  },
  tombstone_device: {
    extrinsic: CONTROL,
    nonceDomain: 'control_nonce',
    method: 'POST',
    path: (d, f) => encodePath`/dids/${d}/devices/${stringField(f, 'device_id')}/tombstone`,
  },
  deactivate_did: { extrinsic: CONTROL, nonceDomain: 'control_nonce', method: 'POST', path: (d) => encodePath`/dids/${d}/deactivate` },
  delete_did: { extrinsic: CONTROL, nonceDomain: 'control_nonce', method: 'DELETE', path: (d) => encodePath`/dids/${d}` },
  UpdateRootPubkey: {
    extrinsic: 'update_root_pubkey',
    nonceDomain: 'root_pubkey_nonce',
    method: 'PUT',
    path: (d) => encodePath`/dids/${d}/root-pubkey`,
  },
  AddVerificationMethod: {
    extrinsic: 'add_verification_method',
    nonceDomain: 'document_nonce',
    method: 'POST',
    path: (d) => `${docs(d)}/verification-methods`,
  },
  UpdateVerificationMethod: {
    extrinsic: 'update_verification_method',
    nonceDomain: 'document_nonce',
    method: 'PUT',
    path: (d, f) => `${docs(d)}${encodePath`/verification-methods/${objectIdField(f, 'verification_method')}`}`,
  },
  RemoveVerificationMethod: {
    extrinsic: 'remove_verification_method',
    nonceDomain: 'document_nonce',
    method: 'DELETE',
    path: (d, f) => `${docs(d)}${encodePath`/verification-methods/${stringField(f, 'id')}`}`,
  },
  AddAuthentication: {
    extrinsic: 'add_authentication',
    nonceDomain: 'document_nonce',
    method: 'POST',
    path: (d) => `${docs(d)}/authentication`,
  },
  RemoveAuthentication: {
    extrinsic: 'remove_authentication',
    nonceDomain: 'document_nonce',
    method: 'DELETE',
    path: (d, f) => `${docs(d)}${encodePath`/authentication/${stringField(f, 'id')}`}`,
  },
  AddKeyAgreement: {
    extrinsic: 'add_key_agreement',
    nonceDomain: 'document_nonce',
    method: 'POST',
    path: (d) => `${docs(d)}/key-agreements`,
  },
  UpdateKeyAgreement: {
    extrinsic: 'update_key_agreement',
    nonceDomain: 'document_nonce',
    method: 'PUT',
    path: (d, f) => `${docs(d)}${encodePath`/key-agreements/${objectIdField(f, 'key_agreement')}`}`,
  },
  RemoveKeyAgreement: {
    extrinsic: 'remove_key_agreement',
    nonceDomain: 'document_nonce',
    method: 'DELETE',
    path: (d, f) => `${docs(d)}${encodePath`/key-agreements/${stringField(f, 'id')}`}`,
  },
  AddService: { extrinsic: 'add_service', nonceDomain: 'document_nonce', method: 'POST', path: (d) => `${docs(d)}/services` },
  UpdateService: {
    extrinsic: 'update_service',
    nonceDomain: 'document_nonce',
    method: 'PUT',
    path: (d, f) => `${docs(d)}${encodePath`/services/${objectIdField(f, 'service')}`}`,
  },
  RemoveService: {
    extrinsic: 'remove_service',
    nonceDomain: 'document_nonce',
    method: 'DELETE',
    path: (d, f) => `${docs(d)}${encodePath`/services/${stringField(f, 'id')}`}`,
  },
  replace_document: {
    extrinsic: 'set_document_with_proof_v2',
    nonceDomain: 'document_nonce',
    method: 'PUT',
    path: (d) => `${docs(d)}/proof`,
  },
};

/** True iff `s` is an action name of the §5.1 table (case-sensitive). */
export function isDidAction(s: unknown): s is DidAction {
  return typeof s === 'string' && Object.prototype.hasOwnProperty.call(DID_ACTIONS, s);
}

/** The submit route (§5.2) of a request body: method and encoded path. */
export function submitRoute(did: string, action: DidAction, fields: FieldBag): { method: HttpMethod; path: string } {
  const spec = DID_ACTIONS[action];
  return { method: spec.method, path: spec.path(did, fields) };
}
