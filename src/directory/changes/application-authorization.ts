/**
 * Change kind: the application authorization actions (http-api.md §9) — domain, status, control change and
 * linked DIDs — signed by the control DID (and, for linked DIDs, the linked DID) over the tuples of
 * ledger-rules.md §4.10 with the control DID's current `application_nonce`; a stale control DID, nonce or payload
 * is 409 `application_proof_stale` (prepare and sign again).
 */
import { to0x } from '../../base/bytes.js';
import { DdnError } from '../../base/errors.js';
import { isOneOf } from '../../base/guards.js';
import type { Call } from '../../ledger/extrinsic.js';
import { getDidRecord } from '../../ledger/records.js';
import { getApplication, type ApplicationRecord } from '../../ledger/runtime/application-state.js';
import { applicationNonce } from '../../ledger/runtime/nonces.js';
import {
  APPLICATION_STATUSES,
  encodeApplicationAuthorization,
  type ApplicationAuthorization,
  type ApplicationStatus,
} from '../../protocol/payloads/application.js';
import { defer, settle, type Deferred } from '../deferred.js';
import {
  assertApplicationId,
  assertCurrentProof,
  parseHexPayload,
  parseIntegerNonce,
  SIGNER_KEY_ID_BYTES,
  stale,
  STATUS_BY_NAME,
  statusName,
} from '../application-fields.js';
import type { DirectoryDeps } from '../deps.js';
import { parseSignature } from '../request-fields.js';
import { activeDidRecord, jsonInteger, NO_SIGNATURE, optionalDid, parseSignerKeyId, requireDid, resolveSigner, type Body } from '../submission.js';
import type { KindFields, NoncePrepared, SubmitSteps, SyncPrepareSteps } from '../write-pipeline.js';
import type { ApplicationRequest } from './application-registration.js';
import type {
  ApplicationAuthorizationBodySchema,
  ApplicationAuthorizationPrepareBodySchema,
  ApplicationAuthorizationPrepareResponse,
  ApplicationSubmitResponse,
} from '../../wire/applications.js';
import type { Reads } from '../../http/json-body.js';
import type { Unchecked } from '../../http/route.js';

const AUTH_ACTIONS = ['set_domain', 'clear_domain', 'set_status', 'update_control', 'link_did', 'unlink_did'] as const;
type AuthAction = (typeof AUTH_ACTIONS)[number];

/** One authorization action parsed from a body: its tuple (given a nonce), its call (given signatures), its request. */
interface AuthIntent {
  id: string;
  action: AuthAction;
  extrinsic: Call['name'];
  controlDid: string;
  controlSignerKeyId: string;
  linked: { did: string; signerKeyId: string } | null;
  tuple(nonce: bigint): ApplicationAuthorization;
  call(controlSignature: Uint8Array, linkedSignature: Uint8Array | null): Call;
  request: Body;
}

/** The live application in the pool state (404 `application_not_found`). */
function poolApplication(env: DirectoryDeps, id: string): ApplicationRecord {
  const app = getApplication(env.ledger.poolView(), id);
  if (!app) throw new DdnError('application_not_found', 'application not found', { application_id: id });
  return app;
}

/** An authorization action's own fields as the body gives them (no state). */
type ActionFields =
  | { action: 'set_domain'; domain: string }
  | { action: 'clear_domain' }
  | { action: 'set_status'; status: ApplicationStatus }
  | { action: 'update_control'; newControlDid: string }
  | { action: 'link_did' | 'unlink_did'; linkedDid: string; linkedSignerKeyId: string };

/** What a preparation's body holds: the action and its fields, the control DID's signer. */
interface AuthFields {
  fields: ActionFields;
  controlSignerKeyId: string;
}

/** The action, `control_signer_key_id`, then the action's fields (§9 order). */
/** The fields a preparation's body gives (src/wire/applications.ts `ApplicationAuthorizationPrepareBodySchema`). */
type AuthField = 'action' | 'control_signer_key_id' | 'domain' | 'status' | 'new_control_did' | 'linked_did' | 'linked_signer_key_id';

function readAuthFields(body: Reads<AuthField>): AuthFields {
  const action = body.action;
  if (!isOneOf(AUTH_ACTIONS, action)) {
    throw new DdnError('unsupported_action', `action must be one of ${AUTH_ACTIONS.join(', ')}`, { action: action ?? null });
  }
  const controlSignerKeyId = parseSignerKeyId(body, 'control_signer_key_id', SIGNER_KEY_ID_BYTES);
  return { fields: actionFields(action, body), controlSignerKeyId };
}

function actionFields(action: AuthAction, body: Reads<AuthField>): ActionFields {
  switch (action) {
    case 'set_domain':
      if (typeof body.domain !== 'string') throw new DdnError('invalid_request', 'missing field "domain"', { field: 'domain' });
      return { action, domain: body.domain };
    case 'clear_domain':
      return { action };
    case 'set_status': {
      const status = typeof body.status === 'string' ? STATUS_BY_NAME[body.status] : undefined;
      if (!status) throw new DdnError('invalid_request', 'status must be active, suspended or tombstoned', { field: 'status' });
      return { action, status };
    }
    case 'update_control':
      return { action, newControlDid: requireDid(body, 'new_control_did') };
    case 'link_did':
    case 'unlink_did': {
      const linkedDid = requireDid(body, 'linked_did');
      return { action, linkedDid, linkedSignerKeyId: parseSignerKeyId(body, 'linked_signer_key_id', SIGNER_KEY_ID_BYTES) };
    }
  }
}

/**
 * `POST /applications/{id}/authorization/prepare` as its route's parser reads it: the id, then the body's fields,
 * refused after the application is found (§9 order) and so kept {@link Deferred}.
 */
export interface AuthorizationPrepare {
  id: string;
  rest: Deferred<AuthFields>;
}

/** What a submission's body adds: the nonce, the bytes, the signatures and the control DID it names. */
interface SignedAuthFields extends AuthFields {
  nonce: bigint;
  canonical: Uint8Array;
  controlSignature: Uint8Array;
  linkedSignature: Uint8Array | null;
  givenControlDid: string | undefined;
}

/** `PUT /applications/{id}/authorization` as its route's parser reads it (the body's refusals deferred as above). */
export interface AuthorizationSubmit {
  id: string;
  rest: Deferred<SignedAuthFields>;
}

/** The parser of `POST /applications/{id}/authorization/prepare`. */
export function parseAuthorizationPrepare({ id, body }: ApplicationRequest<Unchecked<typeof ApplicationAuthorizationPrepareBodySchema>>): AuthorizationPrepare {
  assertApplicationId(id);
  return { id, rest: defer(() => readAuthFields(body)) };
}

/** The control signature as `control_signature` (or `signature`); the linked DID's for a linked-DID action. */
function readSignedAuthFields(body: Unchecked<typeof ApplicationAuthorizationBodySchema>): SignedAuthFields {
  const f = readAuthFields(body);
  const nonce = parseIntegerNonce(body.nonce);
  const canonical = parseHexPayload(body.canonical_payload);
  const sigField = body.control_signature !== undefined ? 'control_signature' : 'signature';
  const controlSignature = parseSignature(body[sigField], sigField);
  const linkedSignature = 'linkedDid' in f.fields ? parseSignature(body.linked_signature, 'linked_signature') : null;
  return { ...f, nonce, canonical, controlSignature, linkedSignature, givenControlDid: optionalDid(body, 'control_did') };
}

/** The parser of `PUT /applications/{id}/authorization`. */
export function parseAuthorizationSubmit({ id, body }: ApplicationRequest<Unchecked<typeof ApplicationAuthorizationBodySchema>>): AuthorizationSubmit {
  assertApplicationId(id);
  return { id, rest: defer(() => readSignedAuthFields(body)) };
}

/** The application in the pool state, then the body's fields (their refusals thrown here), as one intent. */
function authIntent(env: DirectoryDeps, id: string, rest: Deferred<AuthFields>): AuthIntent {
  const app = poolApplication(env, id);
  const { fields: f, controlSignerKeyId } = settle(rest);
  const controlDid = app.controlDid;
  const request: Body = { action: f.action, control_did: controlDid };
  const base = { id, action: f.action, controlDid, controlSignerKeyId, linked: null, request };
  const single = (extrinsic: Call['name'], args: Record<string, unknown>, tuple: (n: bigint) => ApplicationAuthorization): AuthIntent => ({
    ...base,
    extrinsic,
    tuple,
    call: (sig) => ({ name: extrinsic, args: { applicationId: id, ...args, signerKeyId: controlSignerKeyId, signature: sig } }) as Call,
  });
  switch (f.action) {
    case 'set_domain':
    case 'clear_domain': {
      const domain = f.action === 'set_domain' ? f.domain : null;
      if (domain !== null) request.domain = domain;
      return single('set_application_domain', { domain }, (nonce) => ({ action: 'domain', applicationId: id, controlDid, domain, nonce }));
    }
    case 'set_status': {
      const status = f.status;
      request.status = statusName(status);
      return single('set_application_status', { status: APPLICATION_STATUSES.indexOf(status) }, (nonce) => ({
        action: 'status',
        applicationId: id,
        controlDid,
        newStatus: status,
        nonce,
      }));
    }
    case 'update_control': {
      const newControlDid = f.newControlDid;
      request.new_control_did = newControlDid;
      return single('update_application', { newControlDid }, (nonce) => ({
        action: 'update',
        applicationId: id,
        newControlDid,
        currentStatus: app.status,
        nonce,
      }));
    }
    case 'link_did':
    case 'unlink_did': {
      const { linkedDid, linkedSignerKeyId } = f;
      const enabled = f.action === 'link_did';
      request.linked_did = linkedDid;
      return {
        ...base,
        linked: { did: linkedDid, signerKeyId: linkedSignerKeyId },
        extrinsic: 'set_application_linked_did',
        tuple: (nonce) => ({ action: 'linked_did', applicationId: id, controlDid, linkedDid, enabled, nonce }),
        call: (controlSignature, linkedSignature) => ({
          name: 'set_application_linked_did',
          args: {
            applicationId: id,
            linkedDid,
            enabled,
            controlSignerKeyId,
            controlSignature,
            linkedSignerKeyId,
            linkedSignature: linkedSignature ?? NO_SIGNATURE,
          },
        }),
      };
    }
  }
}

/** Control DID active and its signer resolvable; the linked DID's signer too when that DID is active. */
function prechecks(env: DirectoryDeps, i: AuthIntent): void {
  const pool = env.ledger.poolView();
  const rec = activeDidRecord(pool, i.controlDid, 'control_did');
  resolveSigner(i.controlDid, rec, i.controlSignerKeyId, 'control_signer_key_id');
  if (i.linked !== null) {
    const linked = getDidRecord(pool, i.linked.did);
    // A missing or deactivated linked DID is the ledger's `linked_did_not_found`.
    if (linked && !linked.deactivated) resolveSigner(i.linked.did, linked, i.linked.signerKeyId, 'linked_signer_key_id');
  }
}

const encode = (env: DirectoryDeps, i: AuthIntent, nonce: bigint): Uint8Array => encodeApplicationAuthorization(env.profile, i.tuple(nonce));

/** `POST /applications/{id}/authorization/prepare`. */
export const PREPARE_APPLICATION_AUTHORIZATION: SyncPrepareSteps<
  DirectoryDeps,
  AuthorizationPrepare,
  AuthIntent,
  NoncePrepared,
  ApplicationAuthorizationPrepareResponse
> = {
  read: (env, { id, rest }) => authIntent(env, id, rest),
  precheck: prechecks,
  build(env, i) {
    const nonce = applicationNonce(env.ledger.poolView(), i.controlDid);
    return { payload: encode(env, i, nonce), nonce, probe: i.call(NO_SIGNATURE, NO_SIGNATURE) };
  },
  answer(_env, i, { payload, nonce }) {
    const hex = to0x(payload);
    return {
      application_id: i.id,
      action: i.action,
      control_did: i.controlDid,
      nonce: jsonInteger(nonce),
      extrinsic: i.extrinsic,
      canonical_payload: hex,
      payload_to_sign: hex,
      request: {
        ...i.request,
        nonce: jsonInteger(nonce),
        control_signer_key_id: i.controlSignerKeyId,
        ...(i.linked !== null ? { linked_signer_key_id: i.linked.signerKeyId } : {}),
        canonical_payload: hex,
      },
    };
  },
};

interface SignedAuthorization extends AuthIntent {
  nonce: bigint;
  canonical: Uint8Array;
  controlSignature: Uint8Array;
  linkedSignature: Uint8Array | null;
  givenControlDid: string | undefined;
}

/** `PUT /applications/{id}/authorization`: the control signature as `control_signature` (or `signature`). */
export const SUBMIT_APPLICATION_AUTHORIZATION: SubmitSteps<DirectoryDeps, AuthorizationSubmit, SignedAuthorization, KindFields<ApplicationSubmitResponse>> = {
  read(env, { id, rest }) {
    const i = authIntent(env, id, rest);
    const { nonce, canonical, controlSignature, linkedSignature, givenControlDid } = settle(rest);
    return { ...i, nonce, canonical, controlSignature, linkedSignature, givenControlDid };
  },
  call: (i) => i.call(i.controlSignature, i.linkedSignature),
  precheck(env, i) {
    if (i.givenControlDid !== undefined && i.givenControlDid !== i.controlDid) {
      throw stale('control_did is no longer the application’s control DID', { field: 'control_did' });
    }
    const current = applicationNonce(env.ledger.poolView(), i.controlDid);
    assertCurrentProof(i.nonce, current, i.canonical, () => encode(env, i, current), 'state');
    prechecks(env, i);
  },
  admission: (_env, i) => ({
    subject: i.id,
    action: i.action,
    limitKey: `${i.controlDid}|application_nonce`,
    nonce: { domain: 'application_nonce', value: i.nonce },
  }),
  answer: (i) => ({
    application_id: i.id,
    control_did: i.controlDid,
    action: i.action,
    extrinsic: i.extrinsic,
    nonce_domain: 'application_nonce',
    nonce: jsonInteger(i.nonce),
  }),
};
