/**
 * The DID mutation actions of http-api.md §5.1: for each, its ledger call, nonce domain, submit route, how its
 * fields are read and normalised, and how its signed bytes and extrinsic are built with the shared codec.
 */
import { to0x, utf8Length } from '../base/bytes.js';
import { DdnError } from '../base/errors.js';
import { ScaleReader } from '../codec/scale.js';
import type { Call, CallName } from '../ledger/extrinsic.js';
import type { NonceDomain } from '../ledger/records.js';
import { normalizeAlias } from '../protocol/alias.js';
import { documentHash, encodeDocument, type DidDocument } from '../protocol/document.js';
import { parseDidDocument, parseService, parseVerificationMethod } from '../protocol/document-json.js';
import { parseRootPubkey } from '../protocol/keys.js';
import { decodeAliasPayload, encodeAliasPayload } from '../protocol/payloads/alias.js';
import { decodeControlPayload, encodeControlPayload, type ControlAction } from '../protocol/payloads/control.js';
import {
  decodeDocumentPatchPayload,
  encodeDocumentPatchPayload,
  type DocumentAction,
  type DocumentPatchPayload,
} from '../protocol/payloads/document-patch.js';
import {
  documentReplacementSigningBytes,
  documentReplacementToken,
} from '../protocol/payloads/document-replacement.js';
import { decodeRootKeyPayload, encodeRootKeyPayload } from '../protocol/payloads/root-key.js';
import type { Profile } from '../protocol/profile.js';

type Body = Record<string, unknown>;

export interface SignParams {
  nonce: bigint;
  validUntil: bigint;
  signerKeyId: string;
}

/** An action's fields, parsed and normalised, able to build its signed bytes and its extrinsic. */
export interface ParsedAction {
  /** The action fields as they appear in `request` (normalised). */
  request: Body;
  /** The exact bytes the signer signs. */
  payload(p: SignParams): Uint8Array;
  /** The extrinsic carrying `payload` and `signature`. */
  call(p: SignParams, payload: Uint8Array, signature: Uint8Array): Call;
}

export interface ActionSpec {
  action: string;
  extrinsic: CallName;
  nonceDomain: NonceDomain;
  method: 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Submit route pattern (relative to the Directory base URL). */
  pattern: string;
  /** The path parameter repeated in the body, as [param name, body field, sub-field?]. */
  pathField?: { param: string; field: string; sub?: string };
  /** True when `canonical_payload` strictly decodes as this action's payload type. */
  decodes(bytes: Uint8Array, profile: Profile): boolean;
  parse(body: Body, did: string, profile: Profile): ParsedAction;
}

function reqText(body: Body, field: string, maxBytes = 64, code: 'invalid_request' | 'invalid_document' = 'invalid_request'): string {
  const v = body[field];
  if (typeof v !== 'string' || v.length === 0 || utf8Length(v) > maxBytes) {
    throw new DdnError(code, `${field} must be a non-empty string of at most ${maxBytes} bytes`, { field });
  }
  return v;
}

function alias(body: Body, field: string): string {
  const v = body[field];
  if (typeof v !== 'string') throw new DdnError('invalid_request', `${field} is required`, { field });
  const r = normalizeAlias(v);
  if (!r.ok) throw new DdnError('invalid_alias', `${field} is not a valid alias`, { field, ledger_error: r.error });
  return r.alias;
}

/** Every control-action payload and call (§4.4). */
function control(action: (body: Body) => { fields: Body; act: ControlAction }) {
  return (body: Body, did: string): ParsedAction => {
    const { fields, act } = action(body);
    const payload = (p: SignParams) =>
      encodeControlPayload({ did, action: act, nonce: p.nonce, validUntil: p.validUntil, signerKeyId: p.signerKeyId });
    return {
      request: fields,
      payload,
      call: (p, bytes, signature) => ({
        name: 'apply_control_with_proof',
        args: { signedPayload: bytes, signature, signerKeyId: p.signerKeyId },
      }),
    };
  };
}

const controlDecodes = (b: Uint8Array) => decodeControlPayload(b) !== undefined;

function patch(
  docAction: DocumentAction,
  extrinsic: CallName,
  read: (body: Body, did: string) => { fields: Body; part: Partial<DocumentPatchPayload>; arg: Record<string, unknown> },
) {
  return (body: Body, did: string): ParsedAction => {
    const { fields, part, arg } = read(body, did);
    const payloadOf = (p: SignParams): DocumentPatchPayload => ({
      did,
      action: docAction,
      verificationMethod: null,
      keyAgreement: null,
      service: null,
      id: null,
      ...part,
      nonce: p.nonce,
      validUntil: p.validUntil,
      signerKeyId: p.signerKeyId,
    });
    return {
      request: fields,
      payload: (p) => encodeDocumentPatchPayload(payloadOf(p)),
      call: (p, bytes, signature) =>
        ({ name: extrinsic, args: { did, ...arg, signedPayload: bytes, signature, signerKeyId: p.signerKeyId } }) as Call,
    };
  };
}

const patchDecodes = (b: Uint8Array) => decodeDocumentPatchPayload(b) !== undefined;

function idField(body: Body): string {
  return reqText(body, 'id', 64);
}

const vmRead = (field: 'verification_method' | 'key_agreement', argName: 'method' | 'keyAgreement', partName: 'verificationMethod' | 'keyAgreement') =>
  (body: Body, did: string) => {
    const vm = parseVerificationMethod(body[field], did, field);
    return { fields: { [field]: body[field] }, part: { [partName]: vm }, arg: { [argName]: vm } };
  };

const idRead = (argName: string) => (body: Body) => {
  const id = idField(body);
  return { fields: { id }, part: { id }, arg: { [argName]: id } };
};

const serviceRead = (body: Body) => {
  const svc = parseService(body.service, 'service');
  return { fields: { service: body.service }, part: { service: svc }, arg: { service: svc } };
};

function aliasSpec(
  action: string,
  extrinsic: 'add_alias' | 'update_alias' | 'remove_alias',
  method: ActionSpec['method'],
  pattern: string,
  pathField?: ActionSpec['pathField'],
): ActionSpec {
  return {
    action,
    extrinsic,
    nonceDomain: 'alias_nonce',
    method,
    pattern,
    ...(pathField ? { pathField } : {}),
    decodes: (b) => decodeAliasPayload(b) !== undefined,
    parse: (body, did) => {
      const isUpdate = extrinsic === 'update_alias';
      const a = isUpdate ? null : alias(body, 'alias');
      const oldA = isUpdate ? alias(body, 'old_alias') : null;
      const newA = isUpdate ? alias(body, 'new_alias') : null;
      const kind = extrinsic === 'add_alias' ? 'Add' : isUpdate ? 'Update' : 'Remove';
      return {
        request: isUpdate ? { old_alias: oldA, new_alias: newA } : { alias: a },
        payload: (p) =>
          encodeAliasPayload({ did, action: kind, alias: a, oldAlias: oldA, newAlias: newA, nonce: p.nonce,
            validUntil: p.validUntil, signerKeyId: p.signerKeyId }),
        call: (p, bytes, signature) => {
          const proof = { signedPayload: bytes, signature, signerKeyId: p.signerKeyId };
          return isUpdate
            ? { name: 'update_alias', args: { did, oldAlias: oldA!, newAlias: newA!, ...proof } }
            : { name: extrinsic as 'add_alias' | 'remove_alias', args: { did, alias: a!, ...proof } };
        },
      };
    },
  };
}

function deviceId(body: Body, field = 'device_id'): string {
  return reqText(body, field, 64);
}

function controlSpec(
  action: string,
  method: ActionSpec['method'],
  pattern: string,
  read: (body: Body) => { fields: Body; act: ControlAction },
  pathField?: ActionSpec['pathField'],
): ActionSpec {
  return {
    action,
    extrinsic: 'apply_control_with_proof',
    nonceDomain: 'control_nonce',
    method,
    pattern,
    ...(pathField ? { pathField } : {}),
    decodes: controlDecodes,
    parse: control(read),
  };
}

function patchSpec(
  action: DocumentAction,
  extrinsic: CallName,
  method: ActionSpec['method'],
  pattern: string,
  read: Parameters<typeof patch>[2],
  pathField?: ActionSpec['pathField'],
): ActionSpec {
  return {
    action,
    extrinsic,
    nonceDomain: 'document_nonce',
    method,
    pattern,
    ...(pathField ? { pathField } : {}),
    decodes: patchDecodes,
    parse: patch(action, extrinsic, read),
  };
}

const D = '/dids/:did';

/** Decodes `<p>:set_document:v2|` ‖ tuple strictly (prefix, exact length). */
function replacementDecodes(b: Uint8Array, profile: Profile): boolean {
  const prefix = Buffer.from(profile.setDocumentPrefix, 'ascii');
  if (b.length < prefix.length || !Buffer.from(b.subarray(0, prefix.length)).equals(prefix)) return false;
  try {
    const r = new ScaleReader(b.subarray(prefix.length));
    r.str(128);
    r.raw(32);
    r.u64();
    r.u64();
    r.str(64);
    r.end();
    return true;
  } catch {
    return false;
  }
}

export const ACTIONS: readonly ActionSpec[] = [
  aliasSpec('add_alias', 'add_alias', 'POST', `${D}/aliases`),
  aliasSpec('update_alias', 'update_alias', 'PATCH', `${D}/aliases/:old_alias`, { param: 'old_alias', field: 'old_alias' }),
  aliasSpec('remove_alias', 'remove_alias', 'DELETE', `${D}/aliases/:alias`, { param: 'alias', field: 'alias' }),
  controlSpec('add_device', 'POST', `${D}/devices`, (b) => {
    const id = deviceId(b);
    return { fields: { device_id: id }, act: { kind: 'AddDevice', deviceId: id } };
  }),
  controlSpec('update_device', 'PATCH', `${D}/devices/:device_id`, (b) => {
    const id = deviceId(b);
    const next = deviceId(b, 'new_device_id');
    return { fields: { device_id: id, new_device_id: next }, act: { kind: 'UpdateDevice', oldDeviceId: id, newDeviceId: next } };
  }, { param: 'device_id', field: 'device_id' }),
  controlSpec('remove_device', 'DELETE', `${D}/devices/:device_id`, (b) => {
    const id = deviceId(b);
    return { fields: { device_id: id }, act: { kind: 'RemoveDevice', deviceId: id } };
  }, { param: 'device_id', field: 'device_id' }),
  controlSpec('tombstone_device', 'POST', `${D}/devices/:device_id/tombstone`, (b) => {
    const id = deviceId(b);
    return { fields: { device_id: id }, act: { kind: 'TombstoneDevice', deviceId: id } };
  }, { param: 'device_id', field: 'device_id' }),
  controlSpec('deactivate_did', 'POST', `${D}/deactivate`, () => ({ fields: {}, act: { kind: 'DeactivateDid' } })),
  controlSpec('delete_did', 'DELETE', D, () => ({ fields: {}, act: { kind: 'DeleteDid' } })),
  {
    action: 'UpdateRootPubkey',
    extrinsic: 'update_root_pubkey',
    nonceDomain: 'root_pubkey_nonce',
    method: 'PUT',
    pattern: `${D}/root-pubkey`,
    decodes: (b) => decodeRootKeyPayload(b) !== undefined,
    parse: (body, did) => {
      const raw = body.new_root_pubkey;
      const key = typeof raw === 'string' ? parseRootPubkey(raw) : undefined;
      if (!key) throw new DdnError('invalid_root_pubkey', 'new_root_pubkey is not a 32-byte key', { field: 'new_root_pubkey' });
      return {
        request: { new_root_pubkey: to0x(key) },
        payload: (p) =>
          encodeRootKeyPayload({ did, newRootPubkey: key, nonce: p.nonce, validUntil: p.validUntil, signerKeyId: p.signerKeyId }),
        call: (p, bytes, signature) => ({
          name: 'update_root_pubkey',
          args: { did, newRootPubkey: key, signedPayload: bytes, signature, signerKeyId: p.signerKeyId },
        }),
      };
    },
  },
  patchSpec('AddVerificationMethod', 'add_verification_method', 'POST', `${D}/document/verification-methods`,
    vmRead('verification_method', 'method', 'verificationMethod')),
  patchSpec('UpdateVerificationMethod', 'update_verification_method', 'PUT', `${D}/document/verification-methods/:id`,
    vmRead('verification_method', 'method', 'verificationMethod'), { param: 'id', field: 'verification_method', sub: 'id' }),
  patchSpec('RemoveVerificationMethod', 'remove_verification_method', 'DELETE', `${D}/document/verification-methods/:id`,
    idRead('methodId'), { param: 'id', field: 'id' }),
  patchSpec('AddAuthentication', 'add_authentication', 'POST', `${D}/document/authentication`, idRead('methodId')),
  patchSpec('RemoveAuthentication', 'remove_authentication', 'DELETE', `${D}/document/authentication/:id`,
    idRead('methodId'), { param: 'id', field: 'id' }),
  patchSpec('AddKeyAgreement', 'add_key_agreement', 'POST', `${D}/document/key-agreements`,
    vmRead('key_agreement', 'keyAgreement', 'keyAgreement')),
  patchSpec('UpdateKeyAgreement', 'update_key_agreement', 'PUT', `${D}/document/key-agreements/:id`,
    vmRead('key_agreement', 'keyAgreement', 'keyAgreement'), { param: 'id', field: 'key_agreement', sub: 'id' }),
  patchSpec('RemoveKeyAgreement', 'remove_key_agreement', 'DELETE', `${D}/document/key-agreements/:id`,
    idRead('keyId'), { param: 'id', field: 'id' }),
  patchSpec('AddService', 'add_service', 'POST', `${D}/document/services`, serviceRead),
  patchSpec('UpdateService', 'update_service', 'PUT', `${D}/document/services/:serviceId`, serviceRead,
    { param: 'serviceId', field: 'service', sub: 'id' }),
  patchSpec('RemoveService', 'remove_service', 'DELETE', `${D}/document/services/:id`, idRead('serviceId'),
    { param: 'id', field: 'id' }),
  {
    action: 'replace_document',
    extrinsic: 'set_document_with_proof_v2',
    nonceDomain: 'document_nonce',
    method: 'PUT',
    pattern: `${D}/document/proof`,
    decodes: replacementDecodes,
    parse: (body, did, profile) => {
      const doc: DidDocument = parseDidDocument(body.document, did, 'document');
      const hash = documentHash(doc);
      return {
        request: { document: body.document },
        payload: (p) =>
          documentReplacementSigningBytes(profile, {
            did,
            documentHash: hash,
            documentNonce: p.nonce,
            validUntil: p.validUntil,
            signerKeyId: p.signerKeyId,
          }),
        call: (p, _bytes, signature) => ({
          name: 'set_document_with_proof_v2',
          args: {
            did,
            docBlob: encodeDocument(doc),
            documentNonce: p.nonce,
            validUntil: p.validUntil,
            signerKeyId: p.signerKeyId,
            signature,
          },
        }),
      };
    },
  },
];

export const ACTIONS_BY_NAME: ReadonlyMap<string, ActionSpec> = new Map(ACTIONS.map((a) => [a.action, a]));

export { documentReplacementToken };
