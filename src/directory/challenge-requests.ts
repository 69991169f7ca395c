/**
 * The parsers of the DNS-challenge routes (http-api.md §7.2, §7.3): the request shape of a challenge's creation
 * and of its verification, read before the handler. A verification's fields are refused after the challenge's
 * state (§7.3's order: the challenge, then the bound values, then the nonces, then the intent's syntax), so their
 * refusals are kept {@link Deferred} and thrown by PersonaChallenges at the spec's point.
 */
import { DdnError } from '../base/errors.js';
import { isOneOf } from '../base/guards.js';
import type { Profile } from '../protocol/profile.js';
import type { RequestedDeliveryConstraints } from '../protocol/policy/types.js';
import { defer, type Deferred } from './deferred.js';
import { CHALLENGE_ACTIONS, type ChallengeAction } from './dns-challenges.js';
import { controllerThresholdOf, dnsPersonaOf, optionalConstraints, optionalControllerKeys } from './persona-fields.js';
import { parseU64Field } from './request-fields.js';
import { bindBodyPersona, readPrepareAuth, requireDid, type PrepareAuth } from './submission.js';
import type { Unchecked } from '../http/route.js';
import type { ChallengeCreateBodySchema, ChallengeVerifyBodySchema } from '../wire/personas.js';

/** `POST /personas/{persona}/dns-challenges` as its parser reads it. */
export interface ChallengeCreate {
  persona: string;
  operatorDid: string;
  action: ChallengeAction;
}

/** The parser of `POST /personas/{persona}/dns-challenges`: a DNS persona, the body's copy, the operator, the action. */
export function parseChallengeCreate(rawPersona: string, body: Unchecked<typeof ChallengeCreateBodySchema>): ChallengeCreate {
  const persona = dnsPersonaOf(rawPersona);
  bindBodyPersona(body, persona);
  const operatorDid = requireDid(body, 'operator_did');
  const action = body.action;
  if (!isOneOf(CHALLENGE_ACTIONS, action)) {
    throw new DdnError('unsupported_action', `action must be one of ${CHALLENGE_ACTIONS.join(', ')}`, { field: 'action' });
  }
  return { persona, operatorDid, action };
}

/** The intent's own fields (§7.3 table), read after the nonces are checked. */
export interface IntentFields {
  verificationDays: number;
  auth: PrepareAuth;
  constraints: RequestedDeliveryConstraints | null;
  threshold: number;
  /** `controller_keys` as given (renewal: absent or the stored set). */
  controllerKeys: string[] | undefined;
}

/** `POST …/dns-challenges/{challenge_id}/verify` as its parser reads it. */
export interface ChallengeVerify {
  persona: string;
  id: string;
  operatorDid: Deferred<string>;
  action: Deferred<string>;
  nonce: Deferred<bigint>;
  intent: Deferred<IntentFields>;
}

const DEFAULT_VERIFICATION_DAYS = 365;

function verificationDaysOf(body: Unchecked<typeof ChallengeVerifyBodySchema>): number {
  const d = body.verification_days;
  if (d === undefined || d === null) return DEFAULT_VERIFICATION_DAYS;
  if (typeof d !== 'number' || !Number.isInteger(d) || d < 1 || d > 365) {
    throw new DdnError('invalid_request', 'verification_days must be an integer from 1 to 365', { field: 'verification_days' });
  }
  return d;
}

/**
 * The parser of `POST …/dns-challenges/{challenge_id}/verify`: the DNS persona, the body's copies of the path
 * (persona, `challenge_id`), then every field of the intent in §7.3's order, each refusal deferred.
 */
export function parseChallengeVerify(profile: Profile, rawPersona: string, id: string, body: Unchecked<typeof ChallengeVerifyBodySchema>): ChallengeVerify {
  const persona = dnsPersonaOf(rawPersona);
  bindBodyPersona(body, persona);
  if (body.challenge_id !== undefined && body.challenge_id !== null && body.challenge_id !== id) {
    throw new DdnError('path_body_mismatch', 'challenge_id differs from the path', { field: 'challenge_id' });
  }
  return {
    persona,
    id,
    operatorDid: defer(() => requireDid(body, 'operator_did')),
    action: defer(() => {
      if (typeof body.action !== 'string') throw new DdnError('invalid_request', 'action must be a string', { field: 'action' });
      return body.action;
    }),
    nonce: defer(() => parseU64Field(body.nonce, 'nonce')),
    intent: defer(() => ({
      verificationDays: verificationDaysOf(body),
      auth: readPrepareAuth(body, profile),
      constraints: optionalConstraints(body),
      threshold: controllerThresholdOf(body),
      controllerKeys: optionalControllerKeys(body),
    })),
  };
}
