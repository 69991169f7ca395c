/**
 * Never sign what you did not check: a prepared `payload_to_sign` is accepted only when it equals the bytes
 * rebuilt with the shared codec from the prepared `request` (and, when given, from what the caller asked for).
 */
import { bytesEqual, parseBinary, parseHex, toHex } from '../base/bytes.js';
import { normalizeAlias } from '../protocol/alias.js';
import { documentHash } from '../protocol/document.js';
import { parseDidDocument } from '../protocol/document-json.js';
import { parseRootPubkey } from '../protocol/keys.js';
import { documentReplacementToken } from '../protocol/payloads/document-replacement.js';
import { parseV2Token, registrationSigningBytes } from '../protocol/payloads/registration.js';
import type { Profile } from '../protocol/profile.js';
import { isDidAction, type DidAction, type FieldBag } from './actions.js';
import { PayloadCheckError } from './errors.js';
import { encodeActionPayload, toU64, type MutationRequest, type PayloadAuth } from './payloads.js';
import type { MutationPrepareResponse, RegistrationPrepareResponse, U64Input } from './types.js';

/**
 * `POST /dids/{did}/prepare` 200 (http-api.md §5.1) as the SDK holds it: the wire shape with the action narrowed
 * and the `request` the SDK submits back.
 */
export type PreparedMutation = Omit<MutationPrepareResponse, 'action' | 'request'> & { action: DidAction; request: MutationRequest };

/** What the caller asked the Directory to prepare; checked against the preparation when given. */
export interface ExpectedMutation {
  did: string;
  action: DidAction;
  /** Request-form fields; normalised like the payload (aliases, root key form). */
  fields: FieldBag;
  signerKeyId?: string;
  validUntil?: U64Input;
}

function check(ok: boolean, message: string): asserts ok {
  if (!ok) throw new PayloadCheckError(message);
}

/** Runs `f`, turning any exception (bad field, bad document) into a {@link PayloadCheckError}. */
function guarded<T>(what: string, f: () => T): T {
  try {
    return f();
  } catch (e) {
    if (e instanceof PayloadCheckError) throw e;
    throw new PayloadCheckError(`${what}: ${e instanceof Error ? e.message : String(e)}`);
  }
}

function payloadBytes(payloadToSign: unknown, canonical: unknown): Uint8Array {
  check(typeof payloadToSign === 'string' && payloadToSign.startsWith('0x'), 'payload_to_sign must be 0x-hex');
  const p = parseHex(payloadToSign);
  check(p !== undefined && p.length > 0, 'payload_to_sign must be 0x-hex');
  if (canonical !== undefined) {
    const c = typeof canonical === 'string' ? parseBinary(canonical) : undefined;
    check(c !== undefined && bytesEqual(c, p), 'canonical_payload differs from payload_to_sign');
  }
  return p;
}

/**
 * Checks a prepared DID mutation and returns the bytes to sign. Throws {@link PayloadCheckError} unless:
 * `payload_to_sign` (and every `canonical_payload` copy) equals the payload rebuilt from `request`; the request
 * agrees with the top-level `did`/`action`/`nonce`/`valid_until`/`signer_key_id`; a `replace_document`
 * `timestamp` is `v2:<nonce>:<valid_until>` and its `pubkey`, when present, is `signerPublicKey`; and, when
 * `expected` is given, the payload also equals the one rebuilt from the caller's own fields.
 */
export function checkPreparedMutation(
  profile: Profile,
  prepared: PreparedMutation | MutationPrepareResponse,
  expected?: ExpectedMutation,
  signerPublicKey?: Uint8Array,
): Uint8Array {
  const req: FieldBag | undefined = prepared.request;
  check(typeof req === 'object' && req !== null, 'prepared request missing');
  const p = payloadBytes(prepared.payload_to_sign, prepared.canonical_payload);
  if (req.canonical_payload !== undefined) payloadBytes(prepared.payload_to_sign, req.canonical_payload);
  const action = req.action;
  check(isDidAction(action), `unknown action ${String(action)}`);
  check(action === prepared.action, 'request.action differs from action');
  check(typeof req.did === 'string' && req.did === prepared.did, 'request.did differs from did');
  check(typeof req.signer_key_id === 'string', 'request.signer_key_id missing');
  const auth: PayloadAuth = guarded('request', () => ({
    nonce: toU64(req.nonce, 'nonce'),
    validUntil: toU64(req.valid_until, 'valid_until'),
    signerKeyId: req.signer_key_id as string,
  }));
  for (const k of ['nonce', 'valid_until', 'signer_key_id'] as const) {
    if (prepared[k] !== undefined) check(prepared[k] === req[k], `request.${k} differs from ${k}`);
  }
  if (action === 'replace_document') {
    check(req.timestamp === documentReplacementToken(auth.nonce, auth.validUntil), 'timestamp is not v2:<nonce>:<valid_until>');
    if (req.pubkey !== undefined && signerPublicKey) {
      check(req.pubkey === `0x${toHex(signerPublicKey)}`, 'pubkey is not the signing key');
    }
  }
  const rebuilt = guarded('request', () => encodeActionPayload(profile, req.did as string, action, req, auth));
  check(bytesEqual(rebuilt, p), 'payload_to_sign differs from the payload rebuilt from request');
  if (expected) {
    check(expected.did === req.did && expected.action === action, 'prepared did/action differ from the ones asked for');
    if (expected.signerKeyId !== undefined) check(expected.signerKeyId === auth.signerKeyId, 'signer_key_id differs from the one asked for');
    if (expected.validUntil !== undefined) check(toU64(expected.validUntil) === auth.validUntil, 'valid_until differs from the one asked for');
    const mine = guarded('fields', () => encodeActionPayload(profile, expected.did, expected.action, expected.fields, auth));
    check(bytesEqual(mine, p), 'payload_to_sign differs from the payload rebuilt from the fields asked for');
  }
  return p;
}

/** What the caller sent to `POST /register-did/prepare`. */
export interface ExpectedRegistration {
  did: string;
  rootPubkey: Uint8Array;
  didDocument: unknown;
  alias?: string;
  expiryMs?: U64Input;
}

const REGISTRATION_KEYS = new Set(['did', 'root_pubkey', 'did_document', 'timestamp', 'alias']);

/**
 * Checks a registration preparation (http-api.md §4.1) and returns the bytes to sign: `request` has only the
 * allowed keys; the token is `v2:0:<expiry_ms>`; did, key, normalised alias and document hash are those the
 * caller sent; and `payload_to_sign` equals `<p>:register:v2|` ‖ SCALE(...) rebuilt from them.
 */
export function checkPreparedRegistration(profile: Profile, prepared: RegistrationPrepareResponse, expected: ExpectedRegistration): Uint8Array {
  const req: FieldBag | undefined = prepared.request;
  check(typeof req === 'object' && req !== null, 'prepared request missing');
  for (const k of Object.keys(req)) check(REGISTRATION_KEYS.has(k), `unexpected request key ${k}`);
  const p = payloadBytes(prepared.payload_to_sign, prepared.canonical_payload);
  const token = typeof req.timestamp === 'string' ? parseV2Token(req.timestamp) : undefined;
  check(token !== undefined && token.nonce === 0n, 'timestamp is not v2:0:<expiry_ms>');
  if (prepared.expiry_ms !== undefined) check(String(prepared.expiry_ms) === token.ms.toString(), 'expiry_ms differs from timestamp');
  if (expected.expiryMs !== undefined) check(toU64(expected.expiryMs) === token.ms, 'expiry differs from the one asked for');
  check(req.did === expected.did, 'request.did differs');
  const key = typeof req.root_pubkey === 'string' ? parseRootPubkey(req.root_pubkey) : undefined;
  check(key !== undefined && bytesEqual(key, expected.rootPubkey), 'request.root_pubkey differs');
  let alias: string | null = null;
  if (expected.alias !== undefined) {
    const n = normalizeAlias(expected.alias);
    check(n.ok, `invalid alias ${expected.alias}`);
    alias = n.alias;
  }
  check((req.alias ?? null) === alias, 'request.alias differs from the normalised alias asked for');
  const hash = guarded('did_document', () => documentHash(parseDidDocument(req.did_document, expected.did)));
  const mine = guarded('didDocument', () => documentHash(parseDidDocument(expected.didDocument, expected.did)));
  check(bytesEqual(hash, mine), 'request.did_document differs from the document sent');
  if (prepared.document_hash !== undefined) check(prepared.document_hash === `0x${toHex(hash)}`, 'document_hash differs');
  const rebuilt = registrationSigningBytes(profile, { did: expected.did, rootPubkey: expected.rootPubkey, alias, documentHash: hash, expiryMs: token.ms });
  check(bytesEqual(rebuilt, p), 'payload_to_sign differs from the registration payload rebuilt locally');
  return p;
}
