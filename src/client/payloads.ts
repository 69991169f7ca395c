/**
 * Signed bytes and request bodies of DID mutations, built only with the shared protocol codecs
 * (ledger-rules.md §4.1–§4.4, §4.6; http-api.md §5.1). Used for "local style" requests and to check what a
 * Directory prepared before signing it.
 */
import { to0x } from '../base/bytes.js';
import { normalizeAlias } from '../protocol/alias.js';
import { documentHash } from '../protocol/document.js';
import { parseDidDocument, parseService, parseVerificationMethod } from '../protocol/document-json.js';
import { parseRootPubkey } from '../protocol/keys.js';
import { encodeAliasPayload } from '../protocol/payloads/alias.js';
import { encodeControlPayload, type ControlAction } from '../protocol/payloads/control.js';
import { documentActionField, encodeDocumentPatchPayload } from '../protocol/payloads/document-patch.js';
import { documentReplacementSigningBytes, documentReplacementToken } from '../protocol/payloads/document-replacement.js';
import { encodeRootKeyPayload } from '../protocol/payloads/root-key.js';
import type { Profile } from '../protocol/profile.js';
import { ActionFieldError, stringField, type ActionFields, type DidAction, type FieldBag } from './actions.js';
import type { U64Input } from './types.js';

/** The authorization fields every DID mutation payload ends with. */
export interface PayloadAuth {
  nonce: bigint;
  validUntil: bigint;
  signerKeyId: string;
}

/** A DID mutation request body without `signature` (http-api.md §5.1 `request`). */
export interface MutationRequest {
  did: string;
  action: DidAction;
  nonce: string;
  valid_until: string;
  signer_key_id: string;
  canonical_payload?: string;
  [field: string]: unknown;
}

const U64_MAX = (1n << 64n) - 1n;

/** A `u64` from a bigint, a safe non-negative integer or a canonical decimal string; throws RangeError otherwise. */
export function toU64(v: U64Input | unknown, what = 'value'): bigint {
  let n: bigint | undefined;
  if (typeof v === 'bigint') n = v;
  else if (typeof v === 'number' && Number.isSafeInteger(v)) n = BigInt(v);
  else if (typeof v === 'string' && /^(0|[1-9][0-9]*)$/.test(v)) n = BigInt(v);
  if (n === undefined || n < 0n || n > U64_MAX) throw new RangeError(`${what} must be a u64 (decimal string)`);
  return n;
}

function alias(f: FieldBag, key: string): string {
  const r = normalizeAlias(stringField(f, key));
  if (!r.ok) throw new ActionFieldError(`${key}: ${r.error}`);
  return r.alias;
}

function rootKey(f: FieldBag): Uint8Array {
  const k = parseRootPubkey(stringField(f, 'new_root_pubkey'));
  if (!k) throw new ActionFieldError('new_root_pubkey is not a 32-byte Ed25519 key (0x-hex, hex or z-base58)');
  return k;
}

function controlAction(action: DidAction, f: FieldBag): ControlAction {
  switch (action) {
    case 'add_device':
      return { kind: 'AddDevice', deviceId: stringField(f, 'device_id') };
    case 'update_device':
      return { kind: 'UpdateDevice', oldDeviceId: stringField(f, 'device_id'), newDeviceId: stringField(f, 'new_device_id') };
    case 'remove_device':
      return { kind: 'RemoveDevice', deviceId: stringField(f, 'device_id') };
    case 'tombstone_device':
      return { kind: 'TombstoneDevice', deviceId: stringField(f, 'device_id') };
    case 'deactivate_did':
      return { kind: 'DeactivateDid' };
    case 'delete_did':
      return { kind: 'DeleteDid' };
    default:
      throw new ActionFieldError(`${action} is not a control action`);
  }
}

/**
 * The exact bytes the signer signs for `action` on `did` (the `canonical_payload`), from request-form fields.
 * Aliases are normalised as the payload requires; objects are converted by the shared `protocol/document-json`
 * parsers (which throw `DdnError` `invalid_document`); `replace_document` hashes the converted document and is
 * prefixed with the profile's `<p>:set_document:v2|`.
 */
export function encodeActionPayload(profile: Profile, did: string, action: DidAction, fields: FieldBag, auth: PayloadAuth): Uint8Array {
  const base = { did, nonce: auth.nonce, validUntil: auth.validUntil, signerKeyId: auth.signerKeyId };
  switch (action) {
    case 'add_alias':
    case 'remove_alias':
      return encodeAliasPayload({ ...base, action: action === 'add_alias' ? 'Add' : 'Remove', alias: alias(fields, 'alias'), oldAlias: null, newAlias: null });
    case 'update_alias':
      return encodeAliasPayload({ ...base, action: 'Update', alias: null, oldAlias: alias(fields, 'old_alias'), newAlias: alias(fields, 'new_alias') });
    case 'add_device':
    case 'update_device':
    case 'remove_device':
    case 'tombstone_device':
    case 'deactivate_did':
    case 'delete_did':
      return encodeControlPayload({ ...base, action: controlAction(action, fields) });
    case 'UpdateRootPubkey':
      return encodeRootKeyPayload({ ...base, newRootPubkey: rootKey(fields) });
    case 'replace_document':
      return documentReplacementSigningBytes(profile, {
        did,
        documentHash: documentHash(parseDidDocument(fields.document, did, 'document')),
        documentNonce: auth.nonce,
        validUntil: auth.validUntil,
        signerKeyId: auth.signerKeyId,
      });
    default: {
      const slot = documentActionField(action);
      return encodeDocumentPatchPayload({
        ...base,
        action,
        verificationMethod: slot === 'verificationMethod' ? parseVerificationMethod(fields.verification_method, did, 'verification_method') : null,
        keyAgreement: slot === 'keyAgreement' ? parseVerificationMethod(fields.key_agreement, did, 'key_agreement') : null,
        service: slot === 'service' ? parseService(fields.service, 'service') : null,
        id: slot === 'id' ? stringField(fields, 'id') : null,
      });
    }
  }
}

/** The action fields in their §5.1 normalised request form: aliases trimmed and lowercased, root key as 0x-hex. */
export function normalizeActionFields<A extends DidAction>(action: A, fields: ActionFields[A]): FieldBag {
  const f: FieldBag = fields;
  switch (action) {
    case 'add_alias':
    case 'remove_alias':
      return { alias: alias(f, 'alias') };
    case 'update_alias':
      return { old_alias: alias(f, 'old_alias'), new_alias: alias(f, 'new_alias') };
    case 'UpdateRootPubkey':
      return { new_root_pubkey: to0x(rootKey(f)) };
    default:
      return { ...f };
  }
}

/** Options of {@link buildMutationRequest}. */
export interface BuildOptions {
  nonce: U64Input;
  validUntil: U64Input;
  signerKeyId: string;
  /** `replace_document` only: the signer's current public key, sent as `pubkey` (optional on the wire). */
  pubkey?: Uint8Array;
}

/** A locally built mutation: the body to send (plus `signature`) and the bytes to sign. */
export interface BuiltMutation {
  request: MutationRequest;
  payload: Uint8Array;
}

/**
 * Builds the exact request body of `action` (http-api.md §5.1 `request` shape) and its canonical payload with
 * the shared codecs, from a nonce obtained from `GET /dids/{did}/nonces`.
 */
export function buildMutationRequest<A extends DidAction>(
  profile: Profile,
  did: string,
  action: A,
  fields: ActionFields[A],
  opts: BuildOptions,
): BuiltMutation {
  const auth: PayloadAuth = { nonce: toU64(opts.nonce, 'nonce'), validUntil: toU64(opts.validUntil, 'valid_until'), signerKeyId: opts.signerKeyId };
  const norm = normalizeActionFields(action, fields);
  const payload = encodeActionPayload(profile, did, action, norm, auth);
  const extra: FieldBag =
    action === 'replace_document'
      ? { timestamp: documentReplacementToken(auth.nonce, auth.validUntil), ...(opts.pubkey ? { pubkey: to0x(opts.pubkey) } : {}) }
      : {};
  const request: MutationRequest = {
    did,
    action,
    ...norm,
    ...extra,
    nonce: auth.nonce.toString(),
    valid_until: auth.validUntil.toString(),
    signer_key_id: auth.signerKeyId,
    canonical_payload: to0x(payload),
  };
  return { request, payload };
}
