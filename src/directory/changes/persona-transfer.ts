/**
 * Change kind: persona transfer (http-api.md §7.7), prepare and submit. The new operator verified a transfer
 * DNS challenge and signed its acceptance; the current operator's controller signs the change. The challenge is
 * marked used once the change is admitted, and a used challenge only answers a duplicate.
 */
import { parseHex, to0x } from '../../base/bytes.js';
import { DdnError } from '../../base/errors.js';
import { verifyEd25519 } from '../../crypto/ed25519.js';
import { personaLiveness } from '../../ledger/runtime/persona-state.js';
import { resolveSigningKey } from '../../protocol/keys.js';
import type { PersonaOperation } from '../../protocol/payloads/persona.js';
import { requestedConstraintsToJson } from '../../protocol/policy/constraints-json.js';
import type { Profile } from '../../protocol/profile.js';
import type { RequestedDeliveryConstraints } from '../../protocol/policy/types.js';
import { defer, settle, type Deferred } from '../deferred.js';
import type { DirectoryDeps } from '../deps.js';
import type { DnsChallenge, VerifiedIntent } from '../dns-challenges.js';
import {
  assertSignerInSet,
  attestationOf,
  constraintsEqual,
  controllerThresholdOf,
  intentMismatch,
  optionalConstraints,
  optionalControllerKeys,
  personaCall,
} from '../persona-fields.js';
import { parseSignature, requireString } from '../request-fields.js';
import {
  activeDidRecord,
  bindBodyPersona,
  errorForLedgerName,
  readPrepareAuth,
  readSignedFields,
  requireAction,
  requireDid,
  validUntilAt,
  type Body,
  type PrepareAuth,
  type SignedFields,
} from '../submission.js';
import type { KindFields, NoncePrepared, PrepareSteps, SubmitSteps } from '../write-pipeline.js';
import type { PersonaPrepareResponse, PersonaSubmitResponse, PersonaTransferPrepareBodySchema, PersonaTransferSubmitBodySchema } from '../../wire/personas.js';
import type { Unchecked } from '../../http/route.js';
import {
  buildPersona,
  compareAttestationFields,
  parseAttestationFields,
  type AttestationFields,
  personaAccepted,
  personaAdmission,
  type PersonaDraft,
  type PersonaEnv,
  personaRebuilt,
  type PersonaRequest,
  type PersonaSubmission,
  personaSubmitCall,
  precheckSigner,
  preparedPersona,
  sameList,
} from './persona-common.js';

/** A verified transfer challenge for `persona` whose current operator is `operatorDid`. */
async function transferChallenge(
  env: PersonaEnv,
  persona: string,
  challengeId: string,
  operatorDid: string,
  allowUsed: boolean,
): Promise<{ c: DnsChallenge; i: VerifiedIntent }> {
  const c = await env.personaChallenges.load(persona, challengeId, env.clock.nowMs());
  if (c.status === 'used' && !allowUsed) throw new DdnError('challenge_already_used', 'the challenge was already used', { challenge_id: c.id });
  if (c.action !== 'transfer_persona') throw new DdnError('challenge_mismatch', 'the challenge is not a transfer challenge', { field: 'action' });
  if (!c.intent) throw new DdnError('challenge_not_verified', 'the new operator must verify the challenge first', { challenge_id: c.id });
  if (c.currentOperatorDid !== operatorDid) {
    throw new DdnError('challenge_mismatch', 'the challenge was created for another current operator', { field: 'operator_did' });
  }
  return { c, i: c.intent };
}

function transferOperation(c: DnsChallenge, i: VerifiedIntent, newOperatorSignature: Uint8Array): PersonaOperation & { kind: 'Transfer' } {
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

/** What prepare and submit both hold: the challenge, its intent and the new operator's acceptance signature. */
interface Transfer {
  persona: string;
  operatorDid: string;
  c: DnsChallenge;
  i: VerifiedIntent;
  newSig: Uint8Array;
}

/**
 * §7.7 step 3 checks: persona deliverable and operated by `operatorDid`, signer a current controller; then the
 * new operator's signature over the acceptance payload (403 `invalid_signature`).
 */
function prechecks(env: DirectoryDeps, t: Transfer, signerKeyId: string): void {
  const live = personaLiveness(env.ledger.poolView(), env.clock.nowMs(), t.persona);
  if (!live.ok) throw errorForLedgerName(live.error, { persona: t.persona });
  if (live.record.operatorDid !== t.operatorDid) {
    throw new DdnError('invalid_persona_controller', 'operator_did is not the persona’s operator', { field: 'operator_did' });
  }
  precheckSigner(env, t.operatorDid, signerKeyId);
  assertSignerInSet(live.record.controllerKeyIds, signerKeyId, 'current');
  const rec = activeDidRecord(env.ledger.poolView(), t.c.operatorDid, 'new_operator_did');
  const key = resolveSigningKey(t.c.operatorDid, rec.rootPubkey, rec.document, t.i.signerKeyId);
  const acceptance = parseHex(t.i.acceptancePayload ?? '');
  if (!key || !acceptance || !verifyEd25519(key, acceptance, t.newSig)) {
    throw new DdnError('invalid_signature', 'new_operator_signature does not verify over the acceptance payload', {
      field: 'new_operator_signature',
    });
  }
}

type TransferDraft = Transfer & PersonaDraft;

/**
 * `POST /personas/{p}/transfer/prepare` as its route's parser reads it: the current operator and `challenge_id`
 * are refused before the challenge is loaded; `new_operator_signature`, `signer_key_id` and `valid_until` after
 * the challenge's checks (kept {@link Deferred}).
 */
export interface TransferPrepare {
  persona: string;
  operatorDid: string;
  challengeId: string;
  rest: Deferred<{ newSig: Uint8Array; auth: PrepareAuth }>;
}

/** The parser of `POST /personas/{p}/transfer/prepare` (a DNS persona, canonical). */
export function parseTransferPrepare(profile: Profile, { persona, body }: PersonaRequest<Unchecked<typeof PersonaTransferPrepareBodySchema>>): TransferPrepare {
  bindBodyPersona(body, persona);
  const operatorDid = requireDid(body, 'operator_did');
  const challengeId = requireString(body, 'challenge_id');
  return {
    persona,
    operatorDid,
    challengeId,
    rest: defer(() => ({ newSig: parseSignature(body.new_operator_signature, 'new_operator_signature'), auth: readPrepareAuth(body, profile) })),
  };
}

/** `POST /personas/{p}/transfer/prepare`. */
export const PREPARE_PERSONA_TRANSFER: PrepareSteps<PersonaEnv, TransferPrepare, TransferDraft, NoncePrepared, PersonaPrepareResponse> = {
  async read(env, { persona, operatorDid, challengeId, rest }) {
    const { c, i } = await transferChallenge(env, persona, challengeId, operatorDid, false);
    const { newSig, auth } = settle(rest);
    const validUntil = validUntilAt(auth, env.clock.nowMs());
    return { persona, operatorDid, c, i, newSig, signerKeyId: auth.signerKeyId, validUntil, op: transferOperation(c, i, newSig) };
  },
  precheck: (env, d) => prechecks(env, d, d.signerKeyId),
  build: buildPersona,
  answer(_env, d, built) {
    const { c, i } = d;
    const request: Body = {
      persona: d.persona,
      action: 'transfer_persona',
      operator_did: d.operatorDid,
      new_operator_did: c.operatorDid,
      new_controller_keys: [...i.controllerKeys],
      new_controller_threshold: i.controllerThreshold,
    };
    if (i.constraints) request.delivery_constraints = requestedConstraintsToJson(i.constraints);
    Object.assign(request, {
      challenge_id: c.id,
      verification_expires_at: i.verificationExpiresAt,
      new_operator_signer_key_id: i.signerKeyId,
      new_operator_signature: to0x(d.newSig),
      attestor: i.attestor,
      attestation_signature: i.attestationSignature,
    });
    return preparedPersona(d, 'transfer_persona', built, request, { new_operator_did: c.operatorDid });
  },
};

/**
 * `PUT /personas/{p}/transfer` as its route's parser reads it: the path binding, action, operator, signed fields,
 * `new_operator_signature` and `challenge_id` are refused before the challenge is loaded; the transfer's intent
 * fields after the challenge's checks, each at its comparison with the verified intent (kept {@link Deferred}).
 */
export interface TransferSubmit {
  persona: string;
  operatorDid: string;
  s: SignedFields;
  newSig: Uint8Array;
  challengeId: string;
  newOperatorDid: Deferred<string>;
  newControllerKeys: Deferred<string[] | undefined>;
  newControllerThreshold: Deferred<number>;
  constraints: Deferred<RequestedDeliveryConstraints | null>;
  newOperatorSignerKeyId: Deferred<string>;
  attestation: AttestationFields;
}

/** The parser of `PUT /personas/{p}/transfer` (a DNS persona, canonical): every field, the intent's refusals deferred. */
export function parseTransferSubmit(profile: Profile, { persona, body }: PersonaRequest<Unchecked<typeof PersonaTransferSubmitBodySchema>>): TransferSubmit {
  bindBodyPersona(body, persona);
  requireAction(body, 'transfer_persona');
  const operatorDid = requireDid(body, 'operator_did');
  const s = readSignedFields(body, profile);
  const newSig = parseSignature(body.new_operator_signature, 'new_operator_signature');
  return {
    persona,
    operatorDid,
    s,
    newSig,
    challengeId: requireString(body, 'challenge_id'),
    newOperatorDid: defer(() => requireDid(body, 'new_operator_did')),
    newControllerKeys: defer(() => optionalControllerKeys(body, 'new_controller_keys')),
    newControllerThreshold: defer(() => controllerThresholdOf(body, 'new_controller_threshold')),
    constraints: defer(() => optionalConstraints(body)),
    newOperatorSignerKeyId: defer(() => requireString(body, 'new_operator_signer_key_id')),
    attestation: parseAttestationFields(body),
  };
}

interface TransferSubmission extends Transfer, PersonaSubmission {
  /** The challenge is used and this very extrinsic is pending: a resubmission. */
  duplicate: boolean;
}

/** `PUT /personas/{p}/transfer`: every transfer field repeats the verified intent; the bytes are then rebuilt. */
export const SUBMIT_PERSONA_TRANSFER: SubmitSteps<PersonaEnv, TransferSubmit, TransferSubmission, KindFields<PersonaSubmitResponse>> = {
  async read(env, r) {
    const { persona, operatorDid, s, newSig } = r;
    const { c, i } = await transferChallenge(env, persona, r.challengeId, operatorDid, true);
    const duplicate = c.status === 'used' && env.ledger.isPending(personaCall(s.canonical, s.signature, s.signerKeyId));
    if (c.status === 'used' && !duplicate) throw new DdnError('challenge_already_used', 'the challenge was already used', { challenge_id: c.id });

    if (settle(r.newOperatorDid) !== c.operatorDid) throw intentMismatch('new_operator_did');
    const keys = settle(r.newControllerKeys);
    if (keys === undefined || !sameList(keys, i.controllerKeys)) throw intentMismatch('new_controller_keys');
    if (settle(r.newControllerThreshold) !== i.controllerThreshold) throw intentMismatch('new_controller_threshold');
    if (!constraintsEqual(settle(r.constraints), i.constraints)) throw intentMismatch('delivery_constraints');
    if (settle(r.newOperatorSignerKeyId) !== i.signerKeyId) throw intentMismatch('new_operator_signer_key_id');
    compareAttestationFields(r.attestation, i);
    return { persona, action: 'transfer_persona', operatorDid, s, c, i, newSig, duplicate };
  },
  rebuild: (_env, t) => personaRebuilt(t, transferOperation(t.c, t.i, t.newSig)),
  call: personaSubmitCall,
  skipsPrechecks: (t) => t.duplicate,
  precheck: (env, t) => prechecks(env, t, t.s.signerKeyId),
  admission: personaAdmission,
  answer: (t) => personaAccepted(t, { new_operator_did: t.c.operatorDid }),
  async after(env, t, txHash) {
    await env.personaChallenges.markUsed(t.c.id, txHash);
  },
};
