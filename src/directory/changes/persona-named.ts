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
  parseSignerKeyId,
  readSignedFields,
  requireAction,
  requireDid,
  resolveSigner,
  validUntilOrDefault,
  type Body,
} from '../submission.js';
import type { KindFields, NoncePrepared, SubmitSteps, SyncPrepareSteps } from '../write-pipeline.js';
import type { PersonaPrepareResponse, PersonaSubmitResponse } from '../../wire/personas.js';
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
function namedOperation(env: DirectoryDeps, persona: string, body: Body, signerKeyId: string, submit = false): Named {
  if (submit && !env.profile.acceptsDeployedClientForms) {
    for (const field of ['controller_keys', 'controller_threshold']) {
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

/** `POST /personas/{p}/named/prepare`. */
export const PREPARE_NAMED_PERSONA: SyncPrepareSteps<PersonaEnv, PersonaRequest, NamedDraft, NoncePrepared, PersonaPrepareResponse> = {
  read(env, { persona, body }) {
    bindBodyPersona(body, persona);
    if (body.action !== undefined) requireAction(body, 'register_named_persona');
    const operatorDid = requireDid(body, 'operator_did');
    const signerKeyId = parseSignerKeyId(body);
    const validUntil = validUntilOrDefault(body, env.clock.nowMs(), env.profile);
    return { persona, operatorDid, signerKeyId, validUntil, op: namedOperation(env, persona, body, signerKeyId) };
  },
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

interface NamedSubmission extends PersonaSubmission {
  op: Named;
}

/** `PUT /personas/{p}/named`. */
export const SUBMIT_NAMED_PERSONA: SubmitSteps<PersonaEnv, PersonaRequest, NamedSubmission, KindFields<PersonaSubmitResponse>> = {
  read(env, { persona, body }) {
    bindBodyPersona(body, persona);
    const action = requireAction(body, 'register_named_persona');
    const operatorDid = requireDid(body, 'operator_did');
    const s = readSignedFields(body, env.profile);
    return { persona, action, operatorDid, s, op: namedOperation(env, persona, body, s.signerKeyId, true) };
  },
  rebuild: (_env, i) => personaRebuilt(i, i.op),
  call: personaSubmitCall,
  precheck: (env, i) => prechecks(env, i.persona, i.operatorDid, i.op, i.s.signerKeyId),
  admission: personaAdmission,
  answer: (i) => personaAccepted(i),
};
