/**
 * Change kind: persona revocation and controller rotation (http-api.md §7.6), prepare and submit. Signed by a
 * current controller of the persona's operator; a rotation's new set must contain the signer (staged rotation).
 */
import { DdnError } from '../../base/errors.js';
import type { PersonaOperation } from '../../protocol/payloads/persona.js';
import type { DirectoryDeps } from '../deps.js';
import { assertControllerSet, assertSignerInSet, controllerThresholdOf, optionalControllerKeys } from '../persona-fields.js';
import { bindBodyPersona, optionalDid, parseSignerKeyId, readSignedFields, requireAction, validUntilOrDefault, type Body } from '../submission.js';
import type { KindFields, NoncePrepared, SubmitSteps, SyncPrepareSteps } from '../write-pipeline.js';
import type { PersonaPrepareResponse, PersonaSubmitResponse } from '../../wire/personas.js';
import {
  buildPersona,
  PERSONA_EXTRINSIC,
  personaAccepted,
  personaAdmission,
  type PersonaDraft,
  type PersonaEnv,
  personaRebuilt,
  type PersonaRequest,
  type PersonaSubmission,
  personaSubmitCall,
  poolPersona,
  precheckSigner,
  preparedPersona,
} from './persona-common.js';

export type ControlAction = 'revoke_persona' | 'rotate_persona_controllers';
type Control = PersonaOperation & { kind: 'Revoke' | 'RotateControllers' };

/** Revoke or RotateControllers from body fields. */
function controlOperation(persona: string, action: ControlAction, body: Body): Control {
  if (action === 'revoke_persona') return { kind: 'Revoke', persona };
  const keys = optionalControllerKeys(body);
  if (keys === undefined) throw new DdnError('invalid_request', 'missing field "controller_keys"', { field: 'controller_keys' });
  return { kind: 'RotateControllers', persona, controllerKeyIds: keys, controllerThreshold: controllerThresholdOf(body) };
}

/** The persona's operator unless the body names one. */
function controlOperator(env: DirectoryDeps, persona: string, body: Body): string {
  return optionalDid(body, 'operator_did') ?? poolPersona(env, persona).operatorDid;
}

function prechecks(env: DirectoryDeps, persona: string, operatorDid: string, op: Control, signerKeyId: string): void {
  const rec = poolPersona(env, persona);
  if (rec.operatorDid !== operatorDid) {
    throw new DdnError('invalid_persona_controller', 'operator_did is not the persona’s operator', { field: 'operator_did' });
  }
  precheckSigner(env, operatorDid, signerKeyId);
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

interface ControlDraft extends PersonaDraft {
  action: ControlAction;
  op: Control;
}

/** `POST /personas/{p}/prepare` (revoke or rotate). */
export const PREPARE_PERSONA_CONTROL: SyncPrepareSteps<PersonaEnv, PersonaRequest, ControlDraft, NoncePrepared, PersonaPrepareResponse> = {
  read(env, { persona, body }) {
    bindBodyPersona(body, persona);
    const action = body.action;
    if (action !== 'revoke_persona' && action !== 'rotate_persona_controllers') {
      throw new DdnError('unsupported_action', 'action must be revoke_persona or rotate_persona_controllers', { action: action ?? null });
    }
    const operatorDid = controlOperator(env, persona, body);
    const signerKeyId = parseSignerKeyId(body);
    const validUntil = validUntilOrDefault(body, env.clock.nowMs(), env.profile);
    return { persona, action, operatorDid, signerKeyId, validUntil, op: controlOperation(persona, action, body) };
  },
  precheck: (env, d) => prechecks(env, d.persona, d.operatorDid, d.op, d.signerKeyId),
  build: buildPersona,
  answer(_env, d, built) {
    const request: Body = { persona: d.persona, operator_did: d.operatorDid, action: d.action };
    if (d.op.kind === 'RotateControllers') {
      request.controller_keys = [...d.op.controllerKeyIds];
      request.controller_threshold = d.op.controllerThreshold;
    }
    return preparedPersona(d, d.action, built, request);
  },
};

interface ControlSubmission extends PersonaSubmission {
  action: ControlAction;
  op: Control;
}

/** `DELETE /personas/{p}` (revoke) and `PUT /personas/{p}/controllers` (rotate). */
export const SUBMIT_PERSONA_CONTROL: SubmitSteps<
  PersonaEnv,
  PersonaRequest & { action: ControlAction },
  ControlSubmission,
  KindFields<PersonaSubmitResponse>
> = {
  read(env, { persona, body, action }) {
    bindBodyPersona(body, persona);
    requireAction(body, action);
    const s = readSignedFields(body, env.profile);
    const op = controlOperation(persona, action, body);
    return { persona, action, s, op, operatorDid: controlOperator(env, persona, body) };
  },
  rebuild: (_env, i) => personaRebuilt(i, i.op),
  call: personaSubmitCall,
  precheck: (env, i) => prechecks(env, i.persona, i.operatorDid, i.op, i.s.signerKeyId),
  admission: personaAdmission,
  // The product spec shows `extrinsic: "revoke_persona"` for revocation (http-api.md §7.6, §14).
  answer: (i) => personaAccepted(i, {}, i.action === 'revoke_persona' ? 'revoke_persona' : PERSONA_EXTRINSIC),
};
