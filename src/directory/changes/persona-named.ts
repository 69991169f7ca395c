/**
 * Change kind: named (single-label) persona registration (http-api.md §7.5), prepare and submit. The persona
 * must not exist; the controller set must be valid and contain the signer.
 */
import { DdnError } from '../../base/errors.js';
import { getPersona } from '../../ledger/runtime/persona-state.js';
import type { PersonaOperation } from '../../protocol/payloads/persona.js';
import { requestedConstraintsToJson } from '../../protocol/policy/constraints-json.js';
import type { DirectoryDeps } from '../deps.js';
import { assertControllerSet, assertSignerInSet, controllerThresholdOf, optionalConstraints, optionalControllerKeys } from '../persona-fields.js';
import {
  activeDidRecord,
  bindBodyPersona,
  readPrepareAuth,
  readSignedFields,
  requireAction,
  requireDid,
  resolveSigner,
  validUntilAt,
  type Body,
  type PrepareAuth,
} from '../submission.js';
import type { Profile } from '../../protocol/profile.js';
import type { KindFields, NoncePrepared, SubmitSteps, SyncPrepareSteps } from '../write-pipeline.js';
import type { NamedPersonaPrepareBodySchema, NamedPersonaSubmitBodySchema, PersonaPrepareResponse, PersonaSubmitResponse } from '../../wire/personas.js';
import type { Reads } from '../../http/json-body.js';
import type { Unchecked } from '../../http/route.js';
import {
  buildPersona,
  personaAccepted,
  personaAdmission,
  type PersonaDraft,
  type PersonaEnv,
  personaRebuilt,
  type PersonaRequest,
  type PersonaSubmission,
  personaSubmitCall,
  preparedPersona,
} from './persona-common.js';

type Named = PersonaOperation & { kind: 'RegisterNamed' };

/**
 * The named-persona operation from body fields (shared by prepare and submit). Prepare defaults the controller
 * set to the signer and the threshold to 1 and echoes both in `request`; the submit route requires both (product
 * spec), except on profile `openpayload`, which keeps the defaults for deployed clients building their own body.
 */
function namedOperation(
  profile: Profile,
  persona: string,
  body: Reads<'controller_keys' | 'controller_threshold' | 'delivery_constraints'>,
  signerKeyId: string,
  submit = false,
): Named {
  if (submit && !profile.acceptsDeployedClientForms) {
    for (const field of ['controller_keys', 'controller_threshold'] as const) {
      if (body[field] === undefined || body[field] === null) throw new DdnError('invalid_request', `missing field "${field}"`, { field });
    }
  }
  const keys = optionalControllerKeys(body) ?? [signerKeyId];
  const threshold = controllerThresholdOf(body);
  return { kind: 'RegisterNamed', persona, controllerKeyIds: keys, controllerThreshold: threshold, constraints: optionalConstraints(body) };
}

function prechecks(env: DirectoryDeps, persona: string, operatorDid: string, op: Named, signerKeyId: string): void {
  if (getPersona(env.ledger.poolView(), persona)) {
    throw new DdnError('persona_already_exists', 'the persona is registered or its registration is pending', { persona });
  }
  const rec = activeDidRecord(env.ledger.poolView(), operatorDid, 'operator_did');
  assertControllerSet(op.controllerKeyIds, op.controllerThreshold);
  assertSignerInSet(op.controllerKeyIds, signerKeyId, 'proposed');
  resolveSigner(operatorDid, rec, signerKeyId);
}

interface NamedDraft extends PersonaDraft {
  op: Named;
}

/** `POST /personas/{p}/named/prepare` as its route's parser reads it (every field: no state comes first, §7.5). */
export interface NamedPrepare {
  persona: string;
  operatorDid: string;
  auth: PrepareAuth;
  op: Named;
}

/** The parser of `POST /personas/{p}/named/prepare`: the body's persona and action, the operator, signer fields, the set. */
export function parseNamedPrepare(profile: Profile, { persona, body }: PersonaRequest<Unchecked<typeof NamedPersonaPrepareBodySchema>>): NamedPrepare {
  bindBodyPersona(body, persona);
  if (body.action !== undefined) requireAction(body, 'register_named_persona');
  const operatorDid = requireDid(body, 'operator_did');
  const auth = readPrepareAuth(body, profile);
  return { persona, operatorDid, auth, op: namedOperation(profile, persona, body, auth.signerKeyId) };
}

/** `POST /personas/{p}/named/prepare`. */
export const PREPARE_NAMED_PERSONA: SyncPrepareSteps<PersonaEnv, NamedPrepare, NamedDraft, NoncePrepared, PersonaPrepareResponse> = {
  read: (env, r) => ({
    persona: r.persona,
    operatorDid: r.operatorDid,
    signerKeyId: r.auth.signerKeyId,
    validUntil: validUntilAt(r.auth, env.clock.nowMs()),
    op: r.op,
  }),
  precheck: (env, d) => prechecks(env, d.persona, d.operatorDid, d.op, d.signerKeyId),
  build: buildPersona,
  answer(_env, d, built) {
    const request: Body = {
      persona: d.persona,
      action: 'register_named_persona',
      operator_did: d.operatorDid,
      controller_keys: [...d.op.controllerKeyIds],
      controller_threshold: d.op.controllerThreshold,
    };
    if (d.op.constraints) request.delivery_constraints = requestedConstraintsToJson(d.op.constraints);
    return preparedPersona(d, 'register_named_persona', built, request);
  },
};

export interface NamedSubmission extends PersonaSubmission {
  op: Named;
}

/** The parser of `PUT /personas/{p}/named`: the body's persona, action, operator, signed fields and the set. */
export function parseNamedSubmit(profile: Profile, { persona, body }: PersonaRequest<Unchecked<typeof NamedPersonaSubmitBodySchema>>): NamedSubmission {
  bindBodyPersona(body, persona);
  const action = requireAction(body, 'register_named_persona');
  const operatorDid = requireDid(body, 'operator_did');
  const s = readSignedFields(body, profile);
  return { persona, action, operatorDid, s, op: namedOperation(profile, persona, body, s.signerKeyId, true) };
}

/** `PUT /personas/{p}/named`. */
export const SUBMIT_NAMED_PERSONA: SubmitSteps<PersonaEnv, NamedSubmission, NamedSubmission, KindFields<PersonaSubmitResponse>> = {
  read: (_env, i) => i,
  rebuild: (_env, i) => personaRebuilt(i, i.op),
  call: personaSubmitCall,
  precheck: (env, i) => prechecks(env, i.persona, i.operatorDid, i.op, i.s.signerKeyId),
  admission: personaAdmission,
  answer: (i) => personaAccepted(i),
};
