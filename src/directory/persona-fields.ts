/**
 * Persona request fields and payload assembly shared by the persona use-cases (http-api.md §7): canonical path
 * names by kind, controller sets, constraints, the persona call, and the JSON of a verified challenge intent.
 */
import { parseHex, to0x } from '../base/bytes.js';
import { DdnError } from '../base/errors.js';
import type { Call } from '../ledger/extrinsic.js';
import { isValidControllerSet, type PersonaRecord } from '../ledger/runtime/persona-state.js';
import { constraintsToJson } from '../protocol/constraints.js';
import { isDnsPersona } from '../protocol/persona-name.js';
import { decodePersonaPayload, encodePersonaPayload, MAX_PERSONA_CONTROLLERS, type PersonaOperation } from '../protocol/payloads/persona.js';
import { parseRequestedConstraintsJson, requestedConstraintsToJson } from '../protocol/policy/constraints-json.js';
import { POLICY_BOUNDS, type RequestedDeliveryConstraints } from '../protocol/policy/types.js';
import type { DnsChallenge, VerifiedIntent } from './dns-challenges.js';
import { parsePersonaName, type Body } from './submission.js';
import type { Reads } from '../http/json-body.js';
import type { ChallengeResponse, ChallengeVerifyResponse, PersonaRecordResponse } from '../wire/personas.js';

/** The persona record without the block it was read from and the pending operations (§7.1). */
export type PersonaRecordFields = Omit<PersonaRecordResponse, 'block_number' | 'block_hash' | 'pending_operations'>;

/** The authorization fields a prepared persona `request` carries (§7.5–§7.7). */
export type SignedRequestFields = { nonce: string; valid_until: string; signer_key_id: string; canonical_payload: string };

/** The common tail of a persona preparation's answer: the operator nonce and the bytes to sign. */
export type PreparedTail = SignedRequestFields & { nonce_domain: 'operator_nonce'; payload_to_sign: string };

/** A canonical DNS persona (contains a dot) from the path; a single label → 400 `persona_not_dns`. */
export function dnsPersonaOf(raw: string): string {
  const p = parsePersonaName(raw);
  if (!isDnsPersona(p)) throw new DdnError('persona_not_dns', 'this route needs a DNS persona (a name with a dot)', { persona: p });
  return p;
}

/** A canonical named (single-label) persona from the path; a dotted name → 400 `persona_not_dns`. */
export function namedPersonaOf(raw: string): string {
  const p = parsePersonaName(raw);
  if (isDnsPersona(p)) throw new DdnError('persona_not_dns', 'this route needs a single-label (named) persona', { persona: p });
  return p;
}

/**
 * `controller_keys` when present: an array of strings (400 `invalid_request` otherwise). Set validity (1–8
 * distinct non-empty ids) is checked with the threshold by {@link assertControllerSet}.
 */
export function optionalControllerKeys<F extends string = 'controller_keys'>(body: Reads<NoInfer<F>>, field: F = 'controller_keys' as F): string[] | undefined {
  const v = body[field];
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || v.length > MAX_PERSONA_CONTROLLERS * 4 || !v.every((k) => typeof k === 'string')) {
    throw new DdnError('invalid_request', `${field} must be an array of key ids`, { field });
  }
  for (const k of v as string[]) {
    if (Buffer.byteLength(k, 'utf8') > POLICY_BOUNDS.signerKeyIdBytes) {
      throw new DdnError('invalid_request', `${field} entries are at most ${POLICY_BOUNDS.signerKeyIdBytes} bytes`, { field });
    }
  }
  return v as string[];
}

/** `controller_threshold`: an integer, default 1 (the set rule then requires exactly 1). */
export function controllerThresholdOf<F extends string = 'controller_threshold'>(body: Reads<NoInfer<F>>, field: F = 'controller_threshold' as F): number {
  const v = body[field];
  if (v === undefined || v === null) return 1;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 255) {
    throw new DdnError('invalid_request', `${field} must be an integer`, { field });
  }
  return v;
}

/** The controller-set rule (ledger-rules.md §8.2), else 403 `invalid_persona_controller`. */
export function assertControllerSet(keys: readonly string[], threshold: number, field = 'controller_keys'): void {
  if (!isValidControllerSet(keys, threshold)) {
    throw new DdnError('invalid_persona_controller', 'controller set must hold 1–8 distinct non-empty key ids with threshold 1', { field });
  }
}

/** The signer must be one of `keys` (a proposed or current controller), else 403 `signer_not_authorized`. */
export function assertSignerInSet(keys: readonly string[], signerKeyId: string, which: 'proposed' | 'current'): void {
  if (!keys.includes(signerKeyId)) {
    throw new DdnError('signer_not_authorized', `signer_key_id is not a ${which} persona controller`, { signer_key_id: signerKeyId });
  }
}

/** Optional `delivery_constraints` (§8.1; 400 `invalid_delivery_constraints`). */
export function optionalConstraints<F extends string = 'delivery_constraints'>(
  body: Reads<NoInfer<F>>,
  field: F = 'delivery_constraints' as F,
): RequestedDeliveryConstraints | null {
  const v = body[field];
  return v === undefined || v === null ? null : parseRequestedConstraintsJson(v, field);
}

export function constraintsEqual(a: RequestedDeliveryConstraints | null, b: RequestedDeliveryConstraints | null): boolean {
  if (a === null || b === null) return a === b;
  return (Object.keys(a) as (keyof RequestedDeliveryConstraints)[]).every((k) => a[k] === b[k]);
}

/** The persona call carrying `payload`. */
export function personaCall(payload: Uint8Array, signature: Uint8Array, signerKeyId: string): Call {
  return { name: 'apply_persona_with_proof', args: { signedPayload: payload, signature, signerKeyId } };
}

export function encodePersona(operatorDid: string, operation: PersonaOperation, nonce: bigint, validUntil: bigint, signerKeyId: string): Uint8Array {
  return encodePersonaPayload({ operatorDid, operation, nonce, validUntil, signerKeyId });
}

export const decodesAsPersona = (b: Uint8Array): boolean => decodePersonaPayload(b) !== undefined;

/**
 * The persona record as `GET /personas/{persona}` renders it (§7.1), without block and pending fields: one flat
 * record for DNS and named personas, its canonical name in `name`. There is no top-level `persona` key: the deployed
 * persona client reads `result.get("persona", result)` as the record, so a `persona` string there broke it.
 */
export function personaRecordToJson(persona: string, rec: PersonaRecord, nowMs: number, deliverable: boolean): PersonaRecordFields {
  return {
    name: persona,
    kind: rec.named ? 'named' : 'dns',
    dns_required: !rec.named,
    operator_did: rec.operatorDid,
    controller_keys: [...rec.controllerKeyIds],
    controller_threshold: rec.controllerThreshold,
    delivery_constraints: rec.deliveryConstraints ? constraintsToJson(rec.deliveryConstraints) : null,
    dns_proof_hash: rec.named ? null : to0x(rec.dnsProofHash),
    verified_at: rec.verifiedAt,
    verification_expires_at: rec.verificationExpiresAt,
    revision: rec.revision,
    active: rec.active,
    expired: !rec.named && rec.verificationExpiresAt <= nowMs,
    deliverable,
  };
}

/** The challenge fields of a §7.2 response (201 and GET). */
export function challengeToJson(c: DnsChallenge, directoryUrl: string | undefined): ChallengeResponse {
  return {
    challenge_id: c.id,
    persona: c.persona,
    operator_did: c.operatorDid,
    action: c.action,
    challenge_nonce: c.challengeNonce,
    persona_nonce: c.challengeNonce,
    operator_nonce: c.operatorNonce,
    ...(c.currentOperatorDid === null ? {} : { current_operator_did: c.currentOperatorDid }),
    record_name: c.recordName,
    record_type: 'TXT',
    record_value: c.recordValue,
    expires_at: new Date(c.expiresAtMs).toISOString(),
    ...(directoryUrl === undefined ? {} : { directory_url: directoryUrl }),
  };
}

/** The `request` of a verified register / renew: the exact `PUT /personas/{persona}` body minus `signature`. */
export function registrationRequestOf(c: DnsChallenge, i: VerifiedIntent): Body {
  const req: Body = { persona: c.persona, action: c.action, operator_did: c.operatorDid };
  if (c.action === 'register_persona') {
    req.controller_keys = [...i.controllerKeys];
    req.controller_threshold = i.controllerThreshold;
  }
  if (i.constraints !== null) req.delivery_constraints = requestedConstraintsToJson(i.constraints);
  Object.assign(req, {
    challenge_id: c.id,
    verification_expires_at: i.verificationExpiresAt,
    nonce: i.nonce,
    valid_until: i.validUntil,
    signer_key_id: i.signerKeyId,
    attestor: i.attestor,
    attestation_signature: i.attestationSignature,
    canonical_payload: i.canonicalPayload,
  });
  return req;
}

/** The verification outputs of §7.3 (verify response, and GET of a verified challenge). */
export function verificationToJson(c: DnsChallenge, i: VerifiedIntent): ChallengeVerifyResponse {
  const out: ChallengeVerifyResponse = {
    challenge_id: c.id,
    persona: c.persona,
    operator_did: c.operatorDid,
    action: c.action,
    verified: true,
    operation: c.action === 'register_persona' ? 'Register' : c.action === 'renew_persona' ? 'Renew' : 'Transfer',
    extrinsic: 'apply_persona_with_proof',
    challenge_nonce: c.challengeNonce,
    nonce: i.nonce,
    valid_until: i.validUntil,
    signer_key_id: i.signerKeyId,
    controller_keys: [...i.controllerKeys],
    controller_threshold: i.controllerThreshold,
    delivery_constraints: i.constraints === null ? null : requestedConstraintsToJson(i.constraints),
    dns_proof_hash: i.dnsProofHash,
    verification_expires_at: i.verificationExpiresAt,
    attestor: i.attestor,
    attestation_signature: i.attestationSignature,
  };
  if (c.currentOperatorDid !== null) out.current_operator_did = c.currentOperatorDid;
  if (i.canonicalPayload !== null) {
    out.canonical_payload = i.canonicalPayload;
    out.payload_to_sign = i.canonicalPayload;
    out.request = registrationRequestOf(c, i);
  }
  if (i.acceptancePayload !== null) out.acceptance_payload = i.acceptancePayload;
  return out;
}

/** The attestation fields of a verified intent, as the persona payload carries them. */
export function attestationOf(c: DnsChallenge, i: VerifiedIntent) {
  return {
    dnsProofHash: parseHex(i.dnsProofHash)!,
    challengeNonce: BigInt(c.challengeNonce),
    verificationExpiresAt: BigInt(i.verificationExpiresAt),
    attestor: parseHex(i.attestor)!,
    attestationSignature: parseHex(i.attestationSignature)!,
  };
}

/** A body field that must repeat the verified intent exactly, else 403 `canonical_payload_mismatch`. */
export function intentMismatch(field: string): DdnError {
  return new DdnError('canonical_payload_mismatch', `${field} differs from the verified intent`, { field });
}
