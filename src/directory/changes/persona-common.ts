/**
 * What the persona change kinds share (http-api.md §7): the operator-signed `apply_persona_with_proof`
 * extrinsic with the operator's `operator_nonce`, the signer pre-checks, the comparison of attestation fields
 * with a verified DNS challenge, and the prepared and accepted bodies.
 */
import { bytesEqual, parseHex, to0x } from '../../base/bytes.js';
import { DdnError } from '../../base/errors.js';
import { operatorNonce } from '../../ledger/runtime/nonces.js';
import { getPersona, type PersonaRecord } from '../../ledger/runtime/persona-state.js';
import type { PersonaOperation } from '../../protocol/payloads/persona.js';
import type { DirectoryDeps } from '../deps.js';
import type { VerifiedIntent } from '../dns-challenges.js';
import { defer, settle, type Deferred } from '../deferred.js';
import { decodesAsPersona, encodePersona, intentMismatch, personaCall } from '../persona-fields.js';
import { parseU64Field } from '../request-fields.js';
import type { PersonaChallenges } from '../persona-challenges.js';
import { activeDidRecord, NO_SIGNATURE, resolveSigner, signedRequestFields, type Body, type SignedFields } from '../submission.js';
import type { Admission, KindFields, NoncePrepared, Rebuilt } from '../write-pipeline.js';
import type { PersonaPrepareResponse, PersonaSubmitResponse } from '../../wire/personas.js';
import type { Reads } from '../../http/json-body.js';

export const PERSONA_EXTRINSIC = 'apply_persona_with_proof';

/** The persona change kinds run with the DNS challenges beside the Directory deps. */
export type PersonaEnv = DirectoryDeps & { personaChallenges: PersonaChallenges };

/** A persona route's action (§7). */
export type PersonaAction = PersonaSubmitResponse['action'];

/** Route action → ledger operation (for responses). */
const OPERATION_OF = {
  register_persona: 'Register',
  renew_persona: 'Renew',
  register_named_persona: 'RegisterNamed',
  revoke_persona: 'Revoke',
  rotate_persona_controllers: 'RotateControllers',
  transfer_persona: 'Transfer',
} as const satisfies Record<PersonaAction, PersonaOperation['kind']>;

/** {@link OPERATION_OF} for pending markers, whose action is any string. */
export const OPERATIONS: Readonly<Record<string, PersonaOperation['kind'] | undefined>> = OPERATION_OF;

/** A persona route's path and body, as its route's parser reads them: the persona name canonical, the body's fields `B`. */
export interface PersonaRequest<B> {
  persona: string;
  body: B;
}

/** §2.2 step 5 for a persona change signed by the operator: operator active, signer resolvable. */
export function precheckSigner(env: DirectoryDeps, operatorDid: string, signerKeyId: string): void {
  const rec = activeDidRecord(env.ledger.poolView(), operatorDid, 'operator_did');
  resolveSigner(operatorDid, rec, signerKeyId);
}

/** The persona record in the pool state (404 `persona_not_found`). */
export function poolPersona(env: DirectoryDeps, persona: string): PersonaRecord {
  const rec = getPersona(env.ledger.poolView(), persona);
  if (!rec) throw new DdnError('persona_not_found', 'persona not found', { persona });
  return rec;
}

/**
 * `verification_expires_at`, `attestor` and `attestation_signature` as a submission's parser reads them: each
 * refusal kept for its place among the comparisons with the verified intent (§7.4, §7.7).
 */
export interface AttestationFields {
  verificationExpiresAt: Deferred<bigint>;
  attestor: Deferred<Uint8Array>;
  attestationSignature: Deferred<Uint8Array>;
}

/** A `0x`-hex body field (400 `invalid_request`). */
function hexField<F extends string>(body: Reads<NoInfer<F>>, field: F): Uint8Array {
  const v = body[field];
  const bytes = typeof v === 'string' ? parseHex(v) : undefined;
  if (!bytes) throw new DdnError('invalid_request', `${field} must be 0x-hex`, { field });
  return bytes;
}

export function parseAttestationFields(body: Reads<'verification_expires_at' | 'attestor' | 'attestation_signature'>): AttestationFields {
  return {
    verificationExpiresAt: defer(() => parseU64Field(body.verification_expires_at, 'verification_expires_at', 'invalid_request')),
    attestor: defer(() => hexField(body, 'attestor')),
    attestationSignature: defer(() => hexField(body, 'attestation_signature')),
  };
}

/** The attestation fields repeat the verification outputs, each field's syntax refused just before its comparison. */
export function compareAttestationFields(a: AttestationFields, i: VerifiedIntent): void {
  if (settle(a.verificationExpiresAt) !== BigInt(i.verificationExpiresAt)) throw intentMismatch('verification_expires_at');
  if (!bytesEqual(settle(a.attestor), parseHex(i.attestor)!)) throw intentMismatch('attestor');
  if (!bytesEqual(settle(a.attestationSignature), parseHex(i.attestationSignature)!)) throw intentMismatch('attestation_signature');
}

export function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, k) => x === b[k]);
}

// ---------------------------------------------------------------- prepare

/** A persona change read from a prepare body. */
export interface PersonaDraft {
  persona: string;
  operatorDid: string;
  signerKeyId: string;
  validUntil: bigint;
  op: PersonaOperation;
}

/** The operation signed with the operator's current `operator_nonce`, and its dry-run extrinsic. */
export function buildPersona(env: DirectoryDeps, d: PersonaDraft): NoncePrepared {
  const nonce = operatorNonce(env.ledger.poolView(), d.operatorDid);
  const payload = encodePersona(d.operatorDid, d.op, nonce, d.validUntil, d.signerKeyId);
  return { payload, nonce, probe: personaCall(payload, NO_SIGNATURE, d.signerKeyId) };
}

/** The prepared body: the change, the operator nonce, the bytes to sign and the `request` to submit back. */
export function preparedPersona(
  d: PersonaDraft,
  action: PersonaAction,
  built: NoncePrepared,
  request: Body,
  extra: { new_operator_did?: string } = {},
): PersonaPrepareResponse {
  const hex = to0x(built.payload);
  const auth = signedRequestFields(built.nonce, d.validUntil, d.signerKeyId, hex);
  return {
    persona: d.persona,
    operator_did: d.operatorDid,
    ...extra,
    action,
    operation: d.op.kind,
    extrinsic: PERSONA_EXTRINSIC,
    nonce_domain: 'operator_nonce',
    ...auth,
    payload_to_sign: hex,
    request: { ...request, ...auth },
  };
}

// ---------------------------------------------------------------- submit

/** A persona change read from a submit body. */
export interface PersonaSubmission {
  persona: string;
  action: PersonaAction;
  operatorDid: string;
  s: SignedFields;
}

/** The submitted bytes beside the ones rebuilt from the body's fields and the operation `op` read from them. */
export function personaRebuilt(i: PersonaSubmission, op: PersonaOperation): Rebuilt {
  return { canonical: i.s.canonical, rebuilt: encodePersona(i.operatorDid, op, i.s.nonce, i.s.validUntil, i.s.signerKeyId), decodes: decodesAsPersona };
}

export const personaSubmitCall = (i: PersonaSubmission) => personaCall(i.s.canonical, i.s.signature, i.s.signerKeyId);

export function personaAdmission(env: DirectoryDeps, i: PersonaSubmission): Admission {
  return {
    subject: i.persona,
    action: i.action,
    limitKey: `${i.operatorDid}|operator_nonce`,
    nonce: { domain: 'operator_nonce', value: i.s.nonce, current: operatorNonce(env.ledger.poolView(), i.operatorDid) },
  };
}

/** The kind's fields of the 202 body; `extra` follows the operator (e.g. the new operator of a transfer). */
export function personaAccepted(
  i: PersonaSubmission,
  extra: { new_operator_did?: string } = {},
  extrinsic: string = PERSONA_EXTRINSIC,
): KindFields<PersonaSubmitResponse> {
  return {
    persona: i.persona,
    operator_did: i.operatorDid,
    ...extra,
    action: i.action,
    extrinsic,
    operation: OPERATION_OF[i.action],
    nonce_domain: 'operator_nonce',
    nonce: i.s.nonce.toString(),
  };
}
