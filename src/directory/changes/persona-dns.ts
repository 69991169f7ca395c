/**
 * Change kind: DNS persona registration and renewal, `PUT /personas/{p}` (http-api.md §7.4). The body repeats a
 * verified DNS challenge's intent field by field (403 `canonical_payload_mismatch` naming the field); the
 * challenge is marked used once the change is admitted, and a used challenge only answers a duplicate.
 */
import { bytesEqual, parseHex } from '../../base/bytes.js';
import { DdnError } from '../../base/errors.js';
import type { PersonaOperation } from '../../protocol/payloads/persona.js';
import type { DnsChallenge } from '../dns-challenges.js';
import {
  assertSignerInSet,
  attestationOf,
  constraintsEqual,
  controllerThresholdOf,
  decodesAsPersona,
  encodePersona,
  intentMismatch,
  optionalConstraints,
  optionalControllerKeys,
  personaCall,
} from '../persona-fields.js';
import { requireString } from '../request-fields.js';
import { assertCanonical, bindBodyPersona, readSignedFields, requireAction, requireDid } from '../submission.js';
import type { KindFields, SubmitSteps } from '../write-pipeline.js';
import type { PersonaSubmitResponse } from '../../wire/personas.js';
import {
  compareAttestationFields,
  personaAccepted,
  personaAdmission,
  personaSubmitCall,
  poolPersona,
  precheckSigner,
  sameList,
  type PersonaEnv,
  type PersonaRequest,
  type PersonaSubmission,
} from './persona-common.js';

interface DnsSubmission extends PersonaSubmission {
  challenge: DnsChallenge;
  /** The challenge is used and this very extrinsic is pending: a resubmission. */
  duplicate: boolean;
}

export const SUBMIT_DNS_PERSONA: SubmitSteps<PersonaEnv, PersonaRequest, DnsSubmission, KindFields<PersonaSubmitResponse>> = {
  async read(env, { persona, body }) {
    bindBodyPersona(body, persona);
    const action = requireAction(body, 'register_persona', 'renew_persona');
    const operatorDid = requireDid(body, 'operator_did');
    const challengeId = requireString(body, 'challenge_id');
    const s = readSignedFields(body, env.profile);
    const c = await env.personaChallenges.load(persona, challengeId, env.clock.nowMs());
    const duplicate = c.status === 'used' && env.ledger.isPending(personaCall(s.canonical, s.signature, s.signerKeyId));
    if (c.status === 'used' && !duplicate) throw new DdnError('challenge_already_used', 'the challenge was already used', { challenge_id: c.id });
    if (!c.intent) throw new DdnError('challenge_not_verified', 'verify the challenge first', { challenge_id: c.id });
    if (c.operatorDid !== operatorDid) throw new DdnError('challenge_mismatch', 'the challenge is bound to another operator', { field: 'operator_did' });
    if (c.action !== action) throw new DdnError('challenge_mismatch', 'the challenge is bound to another action', { field: 'action' });
    const i = c.intent;

    // Every intent field equals the verified intent (403 canonical_payload_mismatch), then the bytes.
    if (s.nonce.toString() !== i.nonce) throw intentMismatch('nonce');
    if (s.validUntil.toString() !== i.validUntil) throw intentMismatch('valid_until');
    if (s.signerKeyId !== i.signerKeyId) throw intentMismatch('signer_key_id');
    compareAttestationFields(body, i);
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
    return { persona, action, operatorDid, s, challenge: c, duplicate };
  },
  call: personaSubmitCall,
  skipsPrechecks: (i) => i.duplicate,
  precheck(env, i) {
    precheckSigner(env, i.operatorDid, i.s.signerKeyId);
    if (i.action === 'renew_persona') assertSignerInSet(poolPersona(env, i.persona).controllerKeyIds, i.s.signerKeyId, 'current');
  },
  admission: personaAdmission,
  answer: (i) => personaAccepted(i),
  async after(env, i, txHash) {
    await env.personaChallenges.markUsed(i.challenge.id, txHash);
  },
};
