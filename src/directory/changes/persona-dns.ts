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
import type { Profile } from '../../protocol/profile.js';
import type { RequestedDeliveryConstraints } from '../../protocol/policy/types.js';
import { defer, settle, type Deferred } from '../deferred.js';
import { requireString } from '../request-fields.js';
import { assertCanonical, bindBodyPersona, readSignedFields, requireAction, requireDid, type SignedFields } from '../submission.js';
import type { KindFields, SubmitSteps } from '../write-pipeline.js';
import type { PersonaDnsSubmitBodySchema, PersonaSubmitResponse } from '../../wire/personas.js';
import type { Unchecked } from '../../http/route.js';
import {
  compareAttestationFields,
  parseAttestationFields,
  personaAccepted,
  personaAdmission,
  personaSubmitCall,
  poolPersona,
  precheckSigner,
  sameList,
  type AttestationFields,
  type PersonaEnv,
  type PersonaRequest,
  type PersonaSubmission,
} from './persona-common.js';

type DnsAction = 'register_persona' | 'renew_persona';

/**
 * `PUT /personas/{p}` as its route's parser reads it. The path binding, action, operator, `challenge_id` and the
 * signed fields are refused before the challenge is loaded; the intent fields after the challenge's checks, each at
 * its comparison with the verified intent (§7.4), so their refusals are kept {@link Deferred}.
 */
export interface DnsPersonaSubmit {
  persona: string;
  action: DnsAction;
  operatorDid: string;
  challengeId: string;
  s: SignedFields;
  attestation: AttestationFields;
  threshold: Deferred<number>;
  controllerKeys: Deferred<string[] | undefined>;
  constraints: Deferred<RequestedDeliveryConstraints | null>;
}

/** The parser of `PUT /personas/{p}` (a DNS persona, canonical): every field, the intent's refusals deferred. */
export function parseDnsPersonaSubmit(profile: Profile, { persona, body }: PersonaRequest<Unchecked<typeof PersonaDnsSubmitBodySchema>>): DnsPersonaSubmit {
  bindBodyPersona(body, persona);
  const action = requireAction<DnsAction>(body, 'register_persona', 'renew_persona');
  const operatorDid = requireDid(body, 'operator_did');
  const challengeId = requireString(body, 'challenge_id');
  const s = readSignedFields(body, profile);
  return {
    persona,
    action,
    operatorDid,
    challengeId,
    s,
    attestation: parseAttestationFields(body),
    threshold: defer(() => controllerThresholdOf(body)),
    controllerKeys: defer(() => optionalControllerKeys(body)),
    constraints: defer(() => optionalConstraints(body)),
  };
}

interface DnsSubmission extends PersonaSubmission {
  challenge: DnsChallenge;
  /** The challenge is used and this very extrinsic is pending: a resubmission. */
  duplicate: boolean;
}

export const SUBMIT_DNS_PERSONA: SubmitSteps<PersonaEnv, DnsPersonaSubmit, DnsSubmission, KindFields<PersonaSubmitResponse>> = {
  async read(env, r) {
    const { persona, action, operatorDid, s } = r;
    const c = await env.personaChallenges.load(persona, r.challengeId, env.clock.nowMs());
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
    compareAttestationFields(r.attestation, i);
    const threshold = settle(r.threshold);
    if (threshold !== i.controllerThreshold) throw intentMismatch('controller_threshold');
    const keys = settle(r.controllerKeys);
    if (action === 'register_persona' && keys === undefined) throw intentMismatch('controller_keys');
    if (keys !== undefined && !sameList(keys, i.controllerKeys)) throw intentMismatch('controller_keys');
    const constraints = settle(r.constraints);
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
