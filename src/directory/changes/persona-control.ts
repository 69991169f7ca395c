/**
 * Change kind: persona revocation and controller rotation (http-api.md §7.6), prepare and submit. Signed by a
 * current controller of the persona's operator; a rotation's new set must contain the signer (staged rotation).
 */
import { DdnError } from '../../base/errors.js';
import type { PersonaOperation } from '../../protocol/payloads/persona.js';
import type { DirectoryDeps } from '../deps.js';
import { assertControllerSet, assertSignerInSet, controllerThresholdOf, optionalControllerKeys } from '../persona-fields.js';
import type { Profile } from '../../protocol/profile.js';
import { defer, settle, type Deferred } from '../deferred.js';
import { bindBodyPersona, optionalDid, readPrepareAuth, readSignedFields, requireAction, validUntilAt, type Body, type PrepareAuth } from '../submission.js';
import type { KindFields, NoncePrepared, SubmitSteps, SyncPrepareSteps } from '../write-pipeline.js';
import type {
  PersonaControlPrepareBodySchema,
  PersonaPrepareResponse,
  PersonaRevokeBodySchema,
  PersonaRotateBodySchema,
  PersonaSubmitResponse,
} from '../../wire/personas.js';
import type { Reads } from '../../http/json-body.js';
import type { Unchecked } from '../../http/route.js';
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
function controlOperation(persona: string, action: ControlAction, body: Reads<'controller_keys' | 'controller_threshold'>): Control {
  if (action === 'revoke_persona') return { kind: 'Revoke', persona };
  const keys = optionalControllerKeys(body);
  if (keys === undefined) throw new DdnError('invalid_request', 'missing field "controller_keys"', { field: 'controller_keys' });
  return { kind: 'RotateControllers', persona, controllerKeyIds: keys, controllerThreshold: controllerThresholdOf(body) };
}

/** The operator the body names, else the persona's (pool state). */
function controlOperator(env: DirectoryDeps, persona: string, given: string | undefined): string {
  return given ?? poolPersona(env, persona).operatorDid;
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

/**
 * `POST /personas/{p}/prepare` as its route's parser reads it. Without `operator_did` the persona's operator is
 * looked up (`persona_not_found`) before the signer fields and the new set are refused: those are kept deferred.
 */
export interface ControlPrepare {
  persona: string;
  action: ControlAction;
  operatorDid: string | undefined;
  rest: Deferred<{ auth: PrepareAuth; op: Control }>;
}

/** The parser of `POST /personas/{p}/prepare`: the body's persona, the action, `operator_did`, the rest deferred. */
export function parseControlPrepare(profile: Profile, { persona, body }: PersonaRequest<Unchecked<typeof PersonaControlPrepareBodySchema>>): ControlPrepare {
  bindBodyPersona(body, persona);
  const action = body.action;
  if (action !== 'revoke_persona' && action !== 'rotate_persona_controllers') {
    throw new DdnError('unsupported_action', 'action must be revoke_persona or rotate_persona_controllers', { action: action ?? null });
  }
  const operatorDid = optionalDid(body, 'operator_did');
  return { persona, action, operatorDid, rest: defer(() => ({ auth: readPrepareAuth(body, profile), op: controlOperation(persona, action, body) })) };
}

/** `POST /personas/{p}/prepare` (revoke or rotate). */
export const PREPARE_PERSONA_CONTROL: SyncPrepareSteps<PersonaEnv, ControlPrepare, ControlDraft, NoncePrepared, PersonaPrepareResponse> = {
  read(env, r) {
    const operatorDid = controlOperator(env, r.persona, r.operatorDid);
    const { auth, op } = settle(r.rest);
    return { persona: r.persona, action: r.action, operatorDid, signerKeyId: auth.signerKeyId, validUntil: validUntilAt(auth, env.clock.nowMs()), op };
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

/** A revocation or rotation as its route's parser reads it; `operatorDid` the body's (else the persona's, later). */
export interface ControlSubmit extends Omit<PersonaSubmission, 'operatorDid'> {
  action: ControlAction;
  op: Control;
  operatorDid: string | undefined;
}

interface ControlSubmission extends PersonaSubmission {
  action: ControlAction;
  op: Control;
}

/** The parser of `DELETE /personas/{p}` and `PUT /personas/{p}/controllers` (`action` is the route's). */
export function parseControlSubmit(
  profile: Profile,
  action: 'revoke_persona',
  request: PersonaRequest<Unchecked<typeof PersonaRevokeBodySchema>>,
): ControlSubmit;
export function parseControlSubmit(
  profile: Profile,
  action: 'rotate_persona_controllers',
  request: PersonaRequest<Unchecked<typeof PersonaRotateBodySchema>>,
): ControlSubmit;
export function parseControlSubmit(
  profile: Profile,
  action: ControlAction,
  { persona, body }: PersonaRequest<Unchecked<typeof PersonaRevokeBodySchema> | Unchecked<typeof PersonaRotateBodySchema>>,
): ControlSubmit {
  bindBodyPersona(body, persona);
  requireAction(body, action);
  const s = readSignedFields(body, profile);
  // the overloads pair each action with its route's body: a rotation's is the rotation body
  const op = controlOperation(persona, action, body as Unchecked<typeof PersonaRotateBodySchema>);
  return { persona, action, s, op, operatorDid: optionalDid(body, 'operator_did') };
}

/** `DELETE /personas/{p}` (revoke) and `PUT /personas/{p}/controllers` (rotate). */
export const SUBMIT_PERSONA_CONTROL: SubmitSteps<PersonaEnv, ControlSubmit, ControlSubmission, KindFields<PersonaSubmitResponse>> = {
  read: (env, i) => ({ ...i, operatorDid: controlOperator(env, i.persona, i.operatorDid) }),
  rebuild: (_env, i) => personaRebuilt(i, i.op),
  call: personaSubmitCall,
  precheck: (env, i) => prechecks(env, i.persona, i.operatorDid, i.op, i.s.signerKeyId),
  admission: personaAdmission,
  // The product spec shows `extrinsic: "revoke_persona"` for revocation (http-api.md §7.6, §14).
  answer: (i) => personaAccepted(i, {}, i.action === 'revoke_persona' ? 'revoke_persona' : PERSONA_EXTRINSIC),
};
