/**
 * Personas (http-api.md §7): reads, DNS register / renew with a verified challenge, named personas, revocation,
 * controller rotation and transfer. Every submission follows the §2.2 pipeline; the ledger's persona module
 * (src/ledger/runtime/personas.ts) stays the judge of every rule.
 */
import { bytesEqual, parseHex, to0x } from '../base/bytes.js';
import { isoMs } from '../base/clock.js';
import { DdnError } from '../base/errors.js';
import { verifyEd25519 } from '../crypto/ed25519.js';
import type { Call } from '../ledger/extrinsic.js';
import { getDidRecord } from '../ledger/records.js';
import { operatorNonce, personaNonce, policyNonce, policyV3Nonce } from '../ledger/runtime/nonces.js';
import { getPersona, personaLiveness, type PersonaRecord } from '../ledger/runtime/persona-state.js';
import type { PersonaOperation } from '../protocol/payloads/persona.js';
import type { Profile } from '../protocol/profile.js';
import { requestedConstraintsToJson } from '../protocol/policy/constraints-json.js';
import type { RequestedDeliveryConstraints } from '../protocol/policy/types.js';
import { resolveSigningKey } from '../protocol/keys.js';
import { parseSignature, parseU64Field, parseValidUntil, requireString } from './request-fields.js';
import type { DnsChallenge, VerifiedIntent } from './dns-challenges.js';
import type { PersonaChallenges } from './persona-challenges.js';
import {
  assertControllerSet,
  assertSignerInSet,
  attestationOf,
  constraintsEqual,
  controllerThresholdOf,
  decodesAsPersona,
  dnsPersonaOf,
  encodePersona,
  intentMismatch,
  namedPersonaOf,
  optionalConstraints,
  optionalControllerKeys,
  personaCall,
  personaRecordToJson,
  sameU64,
  type PreparedTail,
  type SignedRequestFields,
} from './persona-fields.js';
import type { DirectoryDeps } from './deps.js';
import {
  accepted,
  activeDidRecord,
  assertCanonical,
  bindBodyPersona,
  dryRun,
  errorForLedgerName,
  NO_SIGNATURE,
  optionalDid,
  parsePersonaName,
  parseSignerKeyId,
  requireAction,
  requireCanonicalPayload,
  requireDid,
  resolveSigner,
  submitToLedger,
  validUntilOrDefault,
  type Body,
} from './submission.js';
import type { OperatorNonceResponse, PersonaNoncesResponse, PersonaPrepareResponse, PersonaRecordResponse } from '../wire/personas.js';

const EXTRINSIC = 'apply_persona_with_proof';

/** Route action → ledger operation (for responses and pending markers). */
const OPERATIONS: Record<string, PersonaOperation['kind']> = {
  register_persona: 'Register',
  renew_persona: 'Renew',
  register_named_persona: 'RegisterNamed',
  revoke_persona: 'Revoke',
  rotate_persona_controllers: 'RotateControllers',
  transfer_persona: 'Transfer',
};

/** Signed fields every persona submission carries (§2.1). */
interface Signed {
  nonce: bigint;
  validUntil: bigint;
  signerKeyId: string;
  signature: Uint8Array;
  canonical: Uint8Array;
}

function signedFields(body: Body, profile: Profile): Signed {
  return {
    nonce: parseU64Field(body.nonce, 'nonce'),
    validUntil: parseValidUntil(body.valid_until, profile.acceptsDeployedClientForms),
    signerKeyId: parseSignerKeyId(body),
    signature: parseSignature(body.signature),
    canonical: requireCanonicalPayload(body),
  };
}


/** The authorization fields a prepared `request` carries (§7.5–§7.7). */
function requestAuth(nonce: bigint, validUntil: bigint, signerKeyId: string, hex: string): SignedRequestFields {
  return { nonce: nonce.toString(), valid_until: validUntil.toString(), signer_key_id: signerKeyId, canonical_payload: hex };
}

/** The common tail of every persona prepare response: the operator nonce and the bytes to sign. */
function preparedTail(nonce: bigint, validUntil: bigint, signerKeyId: string, hex: string): PreparedTail {
  return { nonce_domain: 'operator_nonce', ...requestAuth(nonce, validUntil, signerKeyId, hex), payload_to_sign: hex };
}

export class PersonaService {
  constructor(
    private readonly deps: DirectoryDeps,
    readonly challenges: PersonaChallenges,
  ) {}

  private get ledger() {
    return this.deps.ledger;
  }

  private now(): number {
    return this.deps.clock.nowMs();
  }

  // ---------------------------------------------------------------- reads (§7.1)

  read(raw: string): PersonaRecordResponse {
    const persona = parsePersonaName(raw);
    const view = this.ledger.finalizedView();
    const rec = getPersona(view, persona);
    if (!rec) throw new DdnError('persona_not_found', 'persona not found', { persona });
    const now = this.now();
    const block = this.ledger.finalizedRefNow();
    const pending = this.ledger
      .pendingEntries()
      .filter((e) => e.call.name === EXTRINSIC && e.tx.meta.subject === persona)
      .map((e) => ({
        operation: OPERATIONS[e.tx.meta.action] ?? e.tx.meta.action,
        action: e.tx.meta.action,
        nonce: e.tx.meta.nonce ?? null,
        tx_hash: e.tx.txHash,
        submitted_at: isoMs(e.tx.submittedAtMs),
      }));
    return {
      ...personaRecordToJson(persona, rec, now, personaLiveness(view, now, persona).ok),
      block_number: block.number,
      block_hash: block.hash,
      pending_operations: pending,
    };
  }

  nonces(raw: string): PersonaNoncesResponse {
    const persona = parsePersonaName(raw);
    if (!getPersona(this.ledger.finalizedView(), persona)) {
      throw new DdnError('persona_not_found', 'persona not found (or its registration is not final yet)', { persona });
    }
    const pool = this.ledger.poolView();
    const operator = (getPersona(pool, persona) ?? getPersona(this.ledger.finalizedView(), persona)!).operatorDid;
    return {
      persona,
      operator_did: operator,
      persona_nonce: personaNonce(pool, persona).toString(),
      operator_nonce: operatorNonce(pool, operator).toString(),
      policy_nonce: policyNonce(pool, operator).toString(),
      policy_v3_nonce: policyV3Nonce(pool, operator).toString(),
    };
  }

  operatorNonce(did: string): OperatorNonceResponse {
    const pool = this.ledger.poolView();
    if (!getDidRecord(pool, did)) throw new DdnError('did_not_found', 'DID not found', { did });
    return { operator_did: did, operator_nonce: operatorNonce(pool, did).toString() };
  }

  // ---------------------------------------------------------------- shared submission tail

  private async submit(persona: string, action: string, operatorDid: string, s: Signed, extra: Body = {}, extrinsicName = EXTRINSIC): Promise<Body> {
    const call = personaCall(s.canonical, s.signature, s.signerKeyId);
    const pool = this.ledger.poolView();
    const { txHash, duplicate } = await submitToLedger(
      this.ledger,
      call,
      { subject: persona, action, nonceDomain: 'operator_nonce', nonce: s.nonce.toString(), limitKey: `${operatorDid}|operator_nonce` },
      { expectedNonce: operatorNonce(pool, operatorDid), receivedNonce: s.nonce },
    );
    return accepted(txHash, duplicate, {
      persona,
      operator_did: operatorDid,
      ...extra,
      action,
      extrinsic: extrinsicName,
      operation: OPERATIONS[action],
      nonce_domain: 'operator_nonce',
      nonce: s.nonce.toString(),
    });
  }

  /** §2.2 step 5 for a persona change signed by the operator: operator active, signer resolvable. */
  private precheckSigner(operatorDid: string, signerKeyId: string): void {
    const rec = activeDidRecord(this.ledger.poolView(), operatorDid, 'operator_did');
    resolveSigner(operatorDid, rec, signerKeyId);
  }

  /** The persona record in the pool state (404 `persona_not_found`). */
  private poolPersona(persona: string): PersonaRecord {
    const rec = getPersona(this.ledger.poolView(), persona);
    if (!rec) throw new DdnError('persona_not_found', 'persona not found', { persona });
    return rec;
  }

  private isPending(call: Call): boolean {
    return this.ledger.isPending(call);
  }

  // ---------------------------------------------------------------- PUT /personas/{p} (§7.4)

  async submitRegistration(raw: string, body: Body): Promise<Body> {
    const persona = dnsPersonaOf(raw);
    bindBodyPersona(body, persona);
    const action = requireAction(body, 'register_persona', 'renew_persona');
    const operatorDid = requireDid(body, 'operator_did');
    const challengeId = requireString(body, 'challenge_id');
    const s = signedFields(body, this.deps.profile);
    const c = await this.challenges.load(persona, challengeId, this.now());
    const call = personaCall(s.canonical, s.signature, s.signerKeyId);
    const duplicate = c.status === 'used' && this.isPending(call);
    if (c.status === 'used' && !duplicate) throw new DdnError('challenge_already_used', 'the challenge was already used', { challenge_id: c.id });
    if (!c.intent) throw new DdnError('challenge_not_verified', 'verify the challenge first', { challenge_id: c.id });
    if (c.operatorDid !== operatorDid) throw new DdnError('challenge_mismatch', 'the challenge is bound to another operator', { field: 'operator_did' });
    if (c.action !== action) throw new DdnError('challenge_mismatch', 'the challenge is bound to another action', { field: 'action' });
    const i = c.intent;

    // Every intent field equals the verified intent (403 canonical_payload_mismatch), then the bytes.
    if (s.nonce.toString() !== i.nonce) throw intentMismatch('nonce');
    if (s.validUntil.toString() !== i.validUntil) throw intentMismatch('valid_until');
    if (s.signerKeyId !== i.signerKeyId) throw intentMismatch('signer_key_id');
    this.compareAttestationFields(body, i);
    const threshold = controllerThresholdOf(body);
    if (threshold !== i.controllerThreshold) throw intentMismatch('controller_threshold');
    const keys = optionalControllerKeys(body);
    if (action === 'register_persona' && keys === undefined) throw intentMismatch('controller_keys');
    if (keys !== undefined && !sameList(keys, i.controllerKeys)) throw intentMismatch('controller_keys');
    const constraints = optionalConstraints(body);
    if (!constraintsEqual(constraints, i.constraints)) throw intentMismatch('delivery_constraints');
    const attestation = attestationOf(c, i);
    const operation: PersonaOperation =
      action === 'register_persona'
        ? { kind: 'Register', persona, controllerKeyIds: keys ?? i.controllerKeys, controllerThreshold: threshold, constraints, attestation }
        : { kind: 'Renew', persona, constraints, attestation };
    const rebuilt = encodePersona(operatorDid, operation, s.nonce, s.validUntil, s.signerKeyId);
    assertCanonical(s.canonical, rebuilt, decodesAsPersona);
    if (!bytesEqual(rebuilt, parseHex(i.canonicalPayload ?? '')!)) throw intentMismatch('canonical_payload');

    if (!duplicate) {
      this.precheckSigner(operatorDid, s.signerKeyId);
      if (action === 'renew_persona') assertSignerInSet(this.poolPersona(persona).controllerKeyIds, s.signerKeyId, 'current');
    }
    const res = await this.submit(persona, action, operatorDid, s);
    await this.challenges.markUsed(c.id, res.tx_hash as string);
    return res;
  }

  /** `verification_expires_at`, `attestor` and `attestation_signature` repeat the verification outputs. */
  private compareAttestationFields(body: Body, i: VerifiedIntent): void {
    if (!sameU64(body, 'verification_expires_at', i.verificationExpiresAt)) throw intentMismatch('verification_expires_at');
    for (const [field, expected] of [
      ['attestor', i.attestor],
      ['attestation_signature', i.attestationSignature],
    ] as const) {
      const v = body[field];
      const bytes = typeof v === 'string' ? parseHex(v) : undefined;
      if (!bytes) throw new DdnError('invalid_request', `${field} must be 0x-hex`, { field });
      if (!bytesEqual(bytes, parseHex(expected)!)) throw intentMismatch(field);
    }
  }

  // ---------------------------------------------------------------- named personas (§7.5)

  /**
   * The named-persona operation from body fields (shared by prepare and submit). Prepare defaults the controller
   * set to the signer and the threshold to 1 and echoes both in `request`; the submit route requires both (product
   * spec), except on profile `openpayload`, which keeps the defaults for deployed clients building their own body.
   */
  private namedOperation(persona: string, body: Body, signerKeyId: string, submit = false): PersonaOperation & { kind: 'RegisterNamed' } {
    if (submit && !this.deps.profile.acceptsDeployedClientForms) {
      for (const field of ['controller_keys', 'controller_threshold']) {
        if (body[field] === undefined || body[field] === null) throw new DdnError('invalid_request', `missing field "${field}"`, { field });
      }
    }
    const keys = optionalControllerKeys(body) ?? [signerKeyId];
    const threshold = controllerThresholdOf(body);
    return { kind: 'RegisterNamed', persona, controllerKeyIds: keys, controllerThreshold: threshold, constraints: optionalConstraints(body) };
  }

  private namedPrechecks(persona: string, operatorDid: string, op: PersonaOperation & { kind: 'RegisterNamed' }, signerKeyId: string): void {
    if (getPersona(this.ledger.poolView(), persona)) {
      throw new DdnError('persona_already_exists', 'the persona is registered or its registration is pending', { persona });
    }
    const rec = activeDidRecord(this.ledger.poolView(), operatorDid, 'operator_did');
    assertControllerSet(op.controllerKeyIds, op.controllerThreshold);
    assertSignerInSet(op.controllerKeyIds, signerKeyId, 'proposed');
    resolveSigner(operatorDid, rec, signerKeyId);
  }

  prepareNamed(raw: string, body: Body): PersonaPrepareResponse {
    const persona = namedPersonaOf(raw);
    bindBodyPersona(body, persona);
    if (body.action !== undefined) requireAction(body, 'register_named_persona');
    const operatorDid = requireDid(body, 'operator_did');
    const signerKeyId = parseSignerKeyId(body);
    const validUntil = validUntilOrDefault(body, this.now(), this.deps.profile);
    const op = this.namedOperation(persona, body, signerKeyId);
    this.namedPrechecks(persona, operatorDid, op, signerKeyId);
    const nonce = operatorNonce(this.ledger.poolView(), operatorDid);
    const payload = encodePersona(operatorDid, op, nonce, validUntil, signerKeyId);
    dryRun(this.ledger, personaCall(payload, NO_SIGNATURE, signerKeyId));
    const hex = to0x(payload);
    const request: Body = {
      persona,
      action: 'register_named_persona',
      operator_did: operatorDid,
      controller_keys: [...op.controllerKeyIds],
      controller_threshold: op.controllerThreshold,
    };
    if (op.constraints) request.delivery_constraints = requestedConstraintsToJson(op.constraints);
    Object.assign(request, requestAuth(nonce, validUntil, signerKeyId, hex));
    return {
      persona,
      operator_did: operatorDid,
      action: 'register_named_persona',
      operation: 'RegisterNamed',
      extrinsic: EXTRINSIC,
      ...preparedTail(nonce, validUntil, signerKeyId, hex),
      request,
    };
  }

  async submitNamed(raw: string, body: Body): Promise<Body> {
    const persona = namedPersonaOf(raw);
    bindBodyPersona(body, persona);
    requireAction(body, 'register_named_persona');
    const operatorDid = requireDid(body, 'operator_did');
    const s = signedFields(body, this.deps.profile);
    const op = this.namedOperation(persona, body, s.signerKeyId, true);
    assertCanonical(s.canonical, encodePersona(operatorDid, op, s.nonce, s.validUntil, s.signerKeyId), decodesAsPersona);
    if (!this.isPending(personaCall(s.canonical, s.signature, s.signerKeyId))) {
      this.namedPrechecks(persona, operatorDid, op, s.signerKeyId);
    }
    return this.submit(persona, 'register_named_persona', operatorDid, s);
  }

  // ---------------------------------------------------------------- revocation and rotation (§7.6)

  /** Revoke or RotateControllers from body fields; `operator` is the persona's operator unless the body names one. */
  private controlOperation(persona: string, action: string, body: Body): PersonaOperation & { kind: 'Revoke' | 'RotateControllers' } {
    if (action === 'revoke_persona') return { kind: 'Revoke', persona };
    const keys = optionalControllerKeys(body);
    if (keys === undefined) throw new DdnError('invalid_request', 'missing field "controller_keys"', { field: 'controller_keys' });
    return { kind: 'RotateControllers', persona, controllerKeyIds: keys, controllerThreshold: controllerThresholdOf(body) };
  }

  private controlOperator(persona: string, body: Body): string {
    const given = optionalDid(body, 'operator_did');
    if (given !== undefined) return given;
    return this.poolPersona(persona).operatorDid;
  }

  private controlPrechecks(persona: string, operatorDid: string, op: PersonaOperation & { kind: 'Revoke' | 'RotateControllers' }, signerKeyId: string): void {
    const rec = this.poolPersona(persona);
    if (rec.operatorDid !== operatorDid) {
      throw new DdnError('invalid_persona_controller', 'operator_did is not the persona’s operator', { field: 'operator_did' });
    }
    this.precheckSigner(operatorDid, signerKeyId);
    assertSignerInSet(rec.controllerKeyIds, signerKeyId, 'current');
    if (op.kind === 'RotateControllers') {
      assertControllerSet(op.controllerKeyIds, op.controllerThreshold);
      if (!op.controllerKeyIds.includes(signerKeyId)) {
        throw new DdnError('invalid_persona_controller', 'the new controller set must contain the signer (staged rotation)', {
          field: 'controller_keys',
        });
      }
    }
  }

  prepareControl(raw: string, body: Body): PersonaPrepareResponse {
    const persona = parsePersonaName(raw);
    bindBodyPersona(body, persona);
    const action = body.action;
    if (action !== 'revoke_persona' && action !== 'rotate_persona_controllers') {
      throw new DdnError('unsupported_action', 'action must be revoke_persona or rotate_persona_controllers', { action: action ?? null });
    }
    const operatorDid = this.controlOperator(persona, body);
    const signerKeyId = parseSignerKeyId(body);
    const validUntil = validUntilOrDefault(body, this.now(), this.deps.profile);
    const op = this.controlOperation(persona, action, body);
    this.controlPrechecks(persona, operatorDid, op, signerKeyId);
    const nonce = operatorNonce(this.ledger.poolView(), operatorDid);
    const payload = encodePersona(operatorDid, op, nonce, validUntil, signerKeyId);
    dryRun(this.ledger, personaCall(payload, NO_SIGNATURE, signerKeyId));
    const hex = to0x(payload);
    const request: Body = { persona, operator_did: operatorDid, action };
    if (op.kind === 'RotateControllers') {
      request.controller_keys = [...op.controllerKeyIds];
      request.controller_threshold = op.controllerThreshold;
    }
    Object.assign(request, requestAuth(nonce, validUntil, signerKeyId, hex));
    return {
      persona,
      operator_did: operatorDid,
      action,
      operation: op.kind,
      extrinsic: EXTRINSIC,
      ...preparedTail(nonce, validUntil, signerKeyId, hex),
      request,
    };
  }

  /** `DELETE /personas/{p}` (revoke) and `PUT /personas/{p}/controllers` (rotate). */
  async submitControl(raw: string, body: Body, action: 'revoke_persona' | 'rotate_persona_controllers'): Promise<Body> {
    const persona = parsePersonaName(raw);
    bindBodyPersona(body, persona);
    requireAction(body, action);
    const s = signedFields(body, this.deps.profile);
    const op = this.controlOperation(persona, action, body);
    const operatorDid = this.controlOperator(persona, body);
    assertCanonical(s.canonical, encodePersona(operatorDid, op, s.nonce, s.validUntil, s.signerKeyId), decodesAsPersona);
    if (!this.isPending(personaCall(s.canonical, s.signature, s.signerKeyId))) this.controlPrechecks(persona, operatorDid, op, s.signerKeyId);
    // The product spec shows `extrinsic: "revoke_persona"` for revocation (http-api.md §7.6, §14).
    return this.submit(persona, action, operatorDid, s, {}, action === 'revoke_persona' ? 'revoke_persona' : EXTRINSIC);
  }

  // ---------------------------------------------------------------- transfer (§7.7)

  /** A verified transfer challenge for `persona` whose current operator is `operatorDid`. */
  private async transferChallenge(
    persona: string,
    body: Body,
    operatorDid: string,
    allowUsed: boolean,
  ): Promise<{ c: DnsChallenge; i: VerifiedIntent }> {
    const c = await this.challenges.load(persona, requireString(body, 'challenge_id'), this.now());
    if (c.status === 'used' && !allowUsed) throw new DdnError('challenge_already_used', 'the challenge was already used', { challenge_id: c.id });
    if (c.action !== 'transfer_persona') throw new DdnError('challenge_mismatch', 'the challenge is not a transfer challenge', { field: 'action' });
    if (!c.intent) throw new DdnError('challenge_not_verified', 'the new operator must verify the challenge first', { challenge_id: c.id });
    if (c.currentOperatorDid !== operatorDid) {
      throw new DdnError('challenge_mismatch', 'the challenge was created for another current operator', { field: 'operator_did' });
    }
    return { c, i: c.intent };
  }

  private transferOperation(c: DnsChallenge, i: VerifiedIntent, newOperatorSignature: Uint8Array): PersonaOperation & { kind: 'Transfer' } {
    return {
      kind: 'Transfer',
      persona: c.persona,
      newOperatorDid: c.operatorDid,
      newControllerKeyIds: i.controllerKeys,
      newControllerThreshold: i.controllerThreshold,
      constraints: i.constraints,
      attestation: attestationOf(c, i),
      newOperatorSignerKeyId: i.signerKeyId,
      newOperatorSignature,
    };
  }

  /** §7.7 step 3 checks: persona deliverable and operated by `operatorDid`, signer a current controller. */
  private transferPrechecks(persona: string, operatorDid: string, signerKeyId: string): void {
    const live = personaLiveness(this.ledger.poolView(), this.now(), persona);
    if (!live.ok) throw errorForLedgerName(live.error, { persona });
    if (live.record.operatorDid !== operatorDid) {
      throw new DdnError('invalid_persona_controller', 'operator_did is not the persona’s operator', { field: 'operator_did' });
    }
    this.precheckSigner(operatorDid, signerKeyId);
    assertSignerInSet(live.record.controllerKeyIds, signerKeyId, 'current');
  }

  /** The new operator's signature over the acceptance payload (403 `invalid_signature`). */
  private checkAcceptance(c: DnsChallenge, i: VerifiedIntent, signature: Uint8Array): void {
    const rec = activeDidRecord(this.ledger.poolView(), c.operatorDid, 'new_operator_did');
    const key = resolveSigningKey(c.operatorDid, rec.rootPubkey, rec.document, i.signerKeyId);
    const acceptance = parseHex(i.acceptancePayload ?? '');
    if (!key || !acceptance || !verifyEd25519(key, acceptance, signature)) {
      throw new DdnError('invalid_signature', 'new_operator_signature does not verify over the acceptance payload', {
        field: 'new_operator_signature',
      });
    }
  }

  async prepareTransfer(raw: string, body: Body): Promise<PersonaPrepareResponse> {
    const persona = dnsPersonaOf(raw);
    bindBodyPersona(body, persona);
    const operatorDid = requireDid(body, 'operator_did');
    const { c, i } = await this.transferChallenge(persona, body, operatorDid, false);
    const newSig = parseSignature(body.new_operator_signature, 'new_operator_signature');
    const signerKeyId = parseSignerKeyId(body);
    const validUntil = validUntilOrDefault(body, this.now(), this.deps.profile);
    this.transferPrechecks(persona, operatorDid, signerKeyId);
    this.checkAcceptance(c, i, newSig);
    const nonce = operatorNonce(this.ledger.poolView(), operatorDid);
    const op = this.transferOperation(c, i, newSig);
    const payload = encodePersona(operatorDid, op, nonce, validUntil, signerKeyId);
    dryRun(this.ledger, personaCall(payload, NO_SIGNATURE, signerKeyId));
    const hex = to0x(payload);
    const request: Body = {
      persona,
      action: 'transfer_persona',
      operator_did: operatorDid,
      new_operator_did: c.operatorDid,
      new_controller_keys: [...i.controllerKeys],
      new_controller_threshold: i.controllerThreshold,
    };
    if (i.constraints) request.delivery_constraints = requestedConstraintsToJson(i.constraints);
    Object.assign(request, {
      challenge_id: c.id,
      verification_expires_at: i.verificationExpiresAt,
      new_operator_signer_key_id: i.signerKeyId,
      new_operator_signature: to0x(newSig),
      attestor: i.attestor,
      attestation_signature: i.attestationSignature,
      ...requestAuth(nonce, validUntil, signerKeyId, hex),
    });
    return {
      persona,
      operator_did: operatorDid,
      new_operator_did: c.operatorDid,
      action: 'transfer_persona',
      operation: 'Transfer',
      extrinsic: EXTRINSIC,
      ...preparedTail(nonce, validUntil, signerKeyId, hex),
      request,
    };
  }

  async submitTransfer(raw: string, body: Body): Promise<Body> {
    const persona = dnsPersonaOf(raw);
    bindBodyPersona(body, persona);
    requireAction(body, 'transfer_persona');
    const operatorDid = requireDid(body, 'operator_did');
    const s = signedFields(body, this.deps.profile);
    const newSig = parseSignature(body.new_operator_signature, 'new_operator_signature');
    const { c, i } = await this.transferChallenge(persona, body, operatorDid, true);
    const call = personaCall(s.canonical, s.signature, s.signerKeyId);
    const duplicate = c.status === 'used' && this.isPending(call);
    if (c.status === 'used' && !duplicate) throw new DdnError('challenge_already_used', 'the challenge was already used', { challenge_id: c.id });

    // Every transfer field repeats the verified intent; the bytes are then rebuilt and compared.
    if (requireDid(body, 'new_operator_did') !== c.operatorDid) throw intentMismatch('new_operator_did');
    const keys = optionalControllerKeys(body, 'new_controller_keys');
    if (keys === undefined || !sameList(keys, i.controllerKeys)) throw intentMismatch('new_controller_keys');
    if (controllerThresholdOf(body, 'new_controller_threshold') !== i.controllerThreshold) throw intentMismatch('new_controller_threshold');
    const constraints: RequestedDeliveryConstraints | null = optionalConstraints(body);
    if (!constraintsEqual(constraints, i.constraints)) throw intentMismatch('delivery_constraints');
    if (requireString(body, 'new_operator_signer_key_id') !== i.signerKeyId) throw intentMismatch('new_operator_signer_key_id');
    this.compareAttestationFields(body, i);
    const rebuilt = encodePersona(operatorDid, this.transferOperation(c, i, newSig), s.nonce, s.validUntil, s.signerKeyId);
    assertCanonical(s.canonical, rebuilt, decodesAsPersona);

    if (!duplicate) {
      this.transferPrechecks(persona, operatorDid, s.signerKeyId);
      this.checkAcceptance(c, i, newSig);
    }
    const res = await this.submit(persona, 'transfer_persona', operatorDid, s, { new_operator_did: c.operatorDid });
    await this.challenges.markUsed(c.id, res.tx_hash as string);
    return res;
  }
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, k) => x === b[k]);
}
