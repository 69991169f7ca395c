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
  parseSignerKeyId,
  readSignedFields,
  requireAction,
  requireDid,
  validUntilOrDefault,
  type Body,
} from '../submission.js';
import type { KindFields, NoncePrepared, PrepareSteps, SubmitSteps } from '../write-pipeline.js';
import type { PersonaPrepareResponse, PersonaSubmitResponse } from '../../wire/personas.js';
import {
  buildPersona,
  compareAttestationFields,
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
  body: Body,
  operatorDid: string,
  allowUsed: boolean,
): Promise<{ c: DnsChallenge; i: VerifiedIntent }> {
  const c = await env.personaChallenges.load(persona, requireString(body, 'challenge_id'), env.clock.nowMs());
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

/** `POST /personas/{p}/transfer/prepare`. */
export const PREPARE_PERSONA_TRANSFER: PrepareSteps<PersonaEnv, PersonaRequest, TransferDraft, NoncePrepared, PersonaPrepareResponse> = {
  async read(env, { persona, body }) {
    bindBodyPersona(body, persona);
    const operatorDid = requireDid(body, 'operator_did');
    const { c, i } = await transferChallenge(env, persona, body, operatorDid, false);
    const newSig = parseSignature(body.new_operator_signature, 'new_operator_signature');
    const signerKeyId = parseSignerKeyId(body);
    const validUntil = validUntilOrDefault(body, env.clock.nowMs(), env.profile);
    return { persona, operatorDid, c, i, newSig, signerKeyId, validUntil, op: transferOperation(c, i, newSig) };
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

interface TransferSubmission extends Transfer, PersonaSubmission {
  /** The challenge is used and this very extrinsic is pending: a resubmission. */
  duplicate: boolean;
}

/** `PUT /personas/{p}/transfer`: every transfer field repeats the verified intent; the bytes are then rebuilt. */
export const SUBMIT_PERSONA_TRANSFER: SubmitSteps<PersonaEnv, PersonaRequest, TransferSubmission, KindFields<PersonaSubmitResponse>> = {
  async read(env, { persona, body }) {
    bindBodyPersona(body, persona);
    const action = requireAction(body, 'transfer_persona');
    const operatorDid = requireDid(body, 'operator_did');
    const s = readSignedFields(body, env.profile);
    const newSig = parseSignature(body.new_operator_signature, 'new_operator_signature');
    const { c, i } = await transferChallenge(env, persona, body, operatorDid, true);
    const duplicate = c.status === 'used' && env.ledger.isPending(personaCall(s.canonical, s.signature, s.signerKeyId));
    if (c.status === 'used' && !duplicate) throw new DdnError('challenge_already_used', 'the challenge was already used', { challenge_id: c.id });

    if (requireDid(body, 'new_operator_did') !== c.operatorDid) throw intentMismatch('new_operator_did');
    const keys = optionalControllerKeys(body, 'new_controller_keys');
    if (keys === undefined || !sameList(keys, i.controllerKeys)) throw intentMismatch('new_controller_keys');
    if (controllerThresholdOf(body, 'new_controller_threshold') !== i.controllerThreshold) throw intentMismatch('new_controller_threshold');
    if (!constraintsEqual(optionalConstraints(body), i.constraints)) throw intentMismatch('delivery_constraints');
    if (requireString(body, 'new_operator_signer_key_id') !== i.signerKeyId) throw intentMismatch('new_operator_signer_key_id');
    compareAttestationFields(body, i);
    return { persona, action, operatorDid, s, c, i, newSig, duplicate };
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
