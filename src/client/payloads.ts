/**
 * Signed bytes and request bodies of DID mutations, built only with the shared protocol codecs
 * (ledger-rules.md §4.1–§4.4, §4.6; http-api.md §5.1). Used for "local style" requests and to check what a
 * Directory prepared before signing it.
 */
import { to0x } from '../base/bytes.js';
import { encodeDidActionPayload, parseDidAction, type ParsedDidAction } from '../protocol/did-actions.js';
import { documentReplacementToken } from '../protocol/payloads/document-replacement.js';
import type { Profile } from '../protocol/profile.js';
import { ActionFieldError, type ActionFields, type DidAction, type FieldBag } from './actions.js';
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

/** Runs a shared-protocol parser, reporting a field problem as {@link ActionFieldError}. */
function parsed(action: DidAction, did: string, fields: FieldBag): ParsedDidAction {
  try {
    return parseDidAction(action, did, fields);
  } catch (e) {
    throw new ActionFieldError(e instanceof Error ? e.message : String(e));
  }
}

/**
 * The exact bytes the signer signs for `action` on `did` (the `canonical_payload`), from request-form fields,
 * with the codec the Directory uses (src/protocol/did-actions.ts).
 */
export function encodeActionPayload(profile: Profile, did: string, action: DidAction, fields: FieldBag, auth: PayloadAuth): Uint8Array {
  return encodeDidActionPayload(profile, did, parsed(action, did, fields).operand, auth);
}

/** The action fields in their §5.1 normalised request form: aliases trimmed and lowercased, root key as 0x-hex. */
export function normalizeActionFields<A extends DidAction>(did: string, action: A, fields: ActionFields[A]): FieldBag {
  return parsed(action, did, fields).request;
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
  const { operand, request: norm } = parsed(action, did, fields);
  const payload = encodeDidActionPayload(profile, did, operand, auth);
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
