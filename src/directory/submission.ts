/**
 * Pieces of the §2.2 submission pipeline shared by the persona, policy and application use-cases
 * (http-api.md §2): field syntax, Directory pre-checks that give better codes than the ledger, the pool dry run
 * of prepare routes and pool admission of submit routes, with ledger errors mapped per §1.1.
 */
import { bytesEqual, utf8Length } from '../base/bytes.js';
import { DdnError, type ErrorCode } from '../base/errors.js';
import { isOneOf } from '../base/guards.js';
import type { LedgerPool } from '../ledger/ports.js';
import { LedgerFailure } from '../ledger/errors.js';
import type { Call } from '../ledger/extrinsic.js';
import { getDidRecord, type DidRecord } from '../ledger/records.js';
import type { StateReader } from '../ledger/state.js';
import type { TxMeta } from '../ledger/store.js';
import { didProblem, isDid } from '../protocol/did.js';
import { resolveSigningKey } from '../protocol/keys.js';
import { canonicalPersona } from '../protocol/persona-name.js';
import { POLICY_BOUNDS } from '../protocol/policy/types.js';
import type { Profile } from '../protocol/profile.js';
import { parseCanonicalPayload, parseSignature, parseU64Field, parseValidUntil } from './request-fields.js';
import { codeForLedgerError, ledgerError, type LedgerErrorContext } from './ledger-errors.js';
import type { Reads } from '../http/json-body.js';

/**
 * A JSON object the Directory builds (a prepared `request`). A body a parser reads is typed by its route's schema
 * instead (src/http/route.ts `Unchecked`, `Reads`), so every field it reads is one the schema declares.
 */
export type Body = Record<string, unknown>;

/** Default authorization validity of prepare routes (http-api.md §5.1). */
export const DEFAULT_VALIDITY_MS = 300_000n;
export const ACCEPTED_MESSAGE = 'accepted for processing; not final';
/** A 64-byte placeholder signature for dry runs that skip signature checks. */
export const NO_SIGNATURE = new Uint8Array(64);

/**
 * 400 `invalid_did` for a value that is not a DID; `details` names the field and, for a DID over the 128-byte cap,
 * `max_bytes` (`{field, reason: "too_long", max_bytes: 128}`).
 */
export function invalidDid(value: unknown, field: string): DdnError {
  const problem = didProblem(value) ?? { reason: 'invalid_format' };
  const message = problem.reason === 'too_long' ? `${field} is longer than ${problem.max_bytes} bytes` : `${field} is not a valid DID`;
  return new DdnError('invalid_did', message, { field, ...(typeof value === 'string' ? { did: value } : {}), ...problem });
}

/** A DID from a path (`invalid_did`). */
export function assertDid(did: string, field = 'did'): void {
  if (!isDid(did)) throw invalidDid(did, field);
}

/** A DID field of the body (`invalid_did` when malformed, `invalid_request` when missing). */
export function requireDid<F extends string>(body: Reads<NoInfer<F>>, field: F): string {
  const v = body[field];
  if (v === undefined || v === null) throw new DdnError('invalid_request', `missing field "${field}"`, { field });
  if (typeof v !== 'string' || !isDid(v)) throw invalidDid(v, field);
  return v;
}

/** An optional DID field (`invalid_did` when present and malformed). */
export function optionalDid<F extends string>(body: Reads<NoInfer<F>>, field: F): string | undefined {
  const v = body[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || !isDid(v)) throw invalidDid(v, field);
  return v;
}

/** A canonical persona name from a path or body value (`invalid_persona`). */
export function parsePersonaName(raw: unknown, field = 'persona'): string {
  const p = typeof raw === 'string' ? canonicalPersona(raw) : undefined;
  if (!p) throw new DdnError('invalid_persona', `${field} is not a valid persona name`, { field });
  return p;
}

/** A body copy of the path persona must canonicalise to the same name (§0.4). */
export function bindBodyPersona<F extends string = 'persona'>(body: Reads<NoInfer<F>>, persona: string, field: F = 'persona' as F): void {
  const v = body[field];
  if (v === undefined || v === null) return;
  const p = typeof v === 'string' ? canonicalPersona(v) : undefined;
  if (p !== persona) throw new DdnError('path_body_mismatch', `${field} differs from the path`, { field });
}

/** A body DID repeating the path must equal it (§0.4). */
export function bindBodyDid<F extends string = 'did'>(body: Reads<NoInfer<F>>, did: string, field: F = 'did' as F): void {
  const v = body[field];
  if (v !== undefined && v !== null && v !== did) throw new DdnError('path_body_mismatch', `${field} differs from the path`, { field });
}

/** The body `action` must be the route's action (`action_mismatch`). */
export function requireAction<A extends string>(body: Reads<'action'>, ...expected: A[]): A {
  const a = body.action;
  if (isOneOf(expected, a)) return a;
  throw new DdnError('action_mismatch', `action must be ${expected.join(' or ')}`, { expected });
}

/** `signer_key_id`: `root` by default, else a non-empty id within the payload bound (≤ 256 bytes). */
export function parseSignerKeyId<F extends string = 'signer_key_id'>(
  body: Reads<NoInfer<F>>,
  field: F = 'signer_key_id' as F,
  maxBytes: number = POLICY_BOUNDS.signerKeyIdBytes,
): string {
  const v = body[field] ?? 'root';
  if (typeof v !== 'string' || v.length === 0 || utf8Length(v) > maxBytes) {
    throw new DdnError('invalid_request', `${field} must be root or a verification-method id of at most ${maxBytes} bytes`, { field });
  }
  return v;
}

/** `valid_until` of a prepare request when given (ms; ISO-8601 too where the profile accepts it), else undefined. */
function givenValidUntil(body: Reads<'valid_until'>, profile: Profile): bigint | undefined {
  const v = body.valid_until;
  return v === undefined || v === null ? undefined : parseValidUntil(v, profile.acceptsDeployedClientForms);
}

/** A preparation's `signer_key_id` and `valid_until` (undefined: absent, the default applies at its use). */
export interface PrepareAuth {
  signerKeyId: string;
  validUntil: bigint | undefined;
}

/** {@link PrepareAuth} of a prepare body: the syntax of both fields, no clock. */
export function readPrepareAuth(body: Reads<'signer_key_id' | 'valid_until'>, profile: Profile): PrepareAuth {
  const signerKeyId = parseSignerKeyId(body);
  return { signerKeyId, validUntil: givenValidUntil(body, profile) };
}

/** A preparation's expiry: the one given, or now + 5 min. */
export const validUntilAt = (auth: PrepareAuth, nowMs: number): bigint => auth.validUntil ?? BigInt(nowMs) + DEFAULT_VALIDITY_MS;

/** The authorization fields of a signed submission (§2.1). */
export interface SignedAuth {
  nonce: bigint;
  validUntil: bigint;
  signerKeyId: string;
  signature: Uint8Array;
}

/** {@link SignedAuth} with the submitted `canonical_payload`. */
export interface SignedFields extends SignedAuth {
  canonical: Uint8Array;
}

/** §2.2 step 2, in the order the codes are checked: nonce, valid_until, signer_key_id, signature. */
/** The fields of a signed submission's authorization (§2.1). */
export type SignedAuthField = 'nonce' | 'valid_until' | 'signer_key_id' | 'signature';

export function readSignedAuth(body: Reads<SignedAuthField>, profile: Profile, signerKeyIdBytes?: number): SignedAuth {
  return {
    nonce: parseU64Field(body.nonce, 'nonce'),
    validUntil: parseValidUntil(body.valid_until, profile.acceptsDeployedClientForms),
    signerKeyId: parseSignerKeyId(body, 'signer_key_id', signerKeyIdBytes),
    signature: parseSignature(body.signature),
  };
}

/** {@link readSignedAuth}, then the required `canonical_payload` (persona and policy submissions). */
export function readSignedFields(body: Reads<SignedAuthField | 'canonical_payload'>, profile: Profile): SignedFields {
  const auth = readSignedAuth(body, profile);
  return { ...auth, canonical: parseCanonicalPayload(body.canonical_payload) };
}

/** The authorization fields of a prepared `request` (decimal strings and the `0x`-hex payload). */
export type SignedRequestFields = { nonce: string; valid_until: string; signer_key_id: string; canonical_payload: string };

/** The authorization fields a prepared `request` ends with (§5.1): what the client submits back with its signature. */
export function signedRequestFields(nonce: bigint, validUntil: bigint, signerKeyId: string, hex: string): SignedRequestFields {
  return { nonce: nonce.toString(), valid_until: validUntil.toString(), signer_key_id: signerKeyId, canonical_payload: hex };
}

/**
 * §2.2 steps 3–4: the submitted bytes strictly decode as the route's payload type (`invalid_canonical_payload`)
 * and equal the payload rebuilt from the body fields (`canonical_payload_mismatch`).
 */
export function assertCanonical(canonical: Uint8Array, rebuilt: Uint8Array, decodes: (b: Uint8Array) => boolean): void {
  if (!decodes(canonical)) throw new DdnError('invalid_canonical_payload', 'canonical_payload does not decode as this route’s payload');
  if (!bytesEqual(canonical, rebuilt)) {
    throw new DdnError('canonical_payload_mismatch', 'canonical_payload differs from the payload rebuilt from the body');
  }
}

/** The DID's record in `state`, which must exist (404 `did_not_found`) and be active (409 `did_deactivated`). */
export function activeDidRecord(state: StateReader, did: string, field?: string): DidRecord {
  const rec = getDidRecord(state, did);
  if (!rec) throw new DdnError('did_not_found', 'DID not found', field ? { did, field } : { did });
  if (rec.deactivated) throw new DdnError('did_deactivated', 'DID is deactivated', field ? { did, field } : { did });
  return rec;
}

/** The key `signerKeyId` names on the DID (ledger-rules.md §3.5), else 403 `signer_not_authorized`. */
export function resolveSigner(did: string, rec: DidRecord, signerKeyId: string, field = 'signer_key_id'): Uint8Array {
  const key = resolveSigningKey(did, rec.rootPubkey, rec.document, signerKeyId);
  if (!key) throw new DdnError('signer_not_authorized', `${field} does not name a key of ${did}`, { field, signer_key_id: signerKeyId });
  return key;
}

/** A ledger error name → the Directory code (for pre-checks that reuse the ledger's own predicates). */
export function errorForLedgerName(name: string, details?: Record<string, unknown>): DdnError {
  return new DdnError(codeForLedgerError(name), name.replace(/([a-z0-9])([A-Z])/g, '$1 $2').toLowerCase(), { ledger_error: name, ...details });
}

/** Throws the 409 `nonce_mismatch` of §0.6 for a nonce that is not the current one. */
export function nonceMismatch(domain: string, expected: bigint, received: bigint): DdnError {
  return new DdnError('nonce_mismatch', `${domain} is ${expected}, request used ${received}`, {
    nonce_domain: domain,
    expected: expected.toString(),
    received: received.toString(),
  });
}

/** Prepare routes: the ledger's checks for `call` against the pool state, without signature checks (§5.1). */
export function dryRun(ledger: Pick<LedgerPool, 'check'>, call: Call, ctx: LedgerErrorContext = {}): void {
  const failure = ledger.check(call, { skipSignatures: true });
  if (failure) throw ledgerError(failure, ctx);
}

/** §2.2 steps 6–7: pool admission; an identical pending extrinsic is a duplicate (same `tx_hash`). */
export async function submitToLedger(
  ledger: Pick<LedgerPool, 'admit'>,
  call: Call,
  meta: TxMeta,
  ctx: LedgerErrorContext = {},
): Promise<{ txHash: string; duplicate: boolean }> {
  try {
    return await ledger.admit(call, meta);
  } catch (e) {
    if (e instanceof LedgerFailure) throw ledgerError(e, ctx);
    throw e;
  }
}

/** The fields every 202 carries (§2.4); a type, so that it is a `Body`. */
export type AcceptedFields = {
  status: 'accepted';
  tx_hash: string;
  tx_id: string;
  duplicate?: true;
  message: string;
};

/** The common 202 fields (§2.4) around the route's `fields` (their literal types kept, for the wire types). */
export function accepted<const F extends Body>(txHash: string, duplicate: boolean, fields: F): AcceptedFields & F {
  return {
    status: 'accepted',
    ...fields,
    tx_hash: txHash,
    tx_id: txHash,
    ...(duplicate ? { duplicate: true } : {}),
    message: ACCEPTED_MESSAGE,
  };
}

/** A bigint as a JSON integer (application nonces, §9); the values are small in practice. */
export function jsonInteger(v: bigint): number {
  if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new DdnError('nonce_overflow', 'value exceeds the JSON safe-integer range');
  return Number(v);
}

/** A code of the error registry, for callers building errors from names. */
export type { ErrorCode };
