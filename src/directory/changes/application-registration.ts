/**
 * Change kind: application registration (http-api.md §9), signed by the control DID over the `register` tuple
 * of ledger-rules.md §4.10 with its current `application_nonce`; a stale nonce or payload is 409
 * `application_proof_stale` (prepare and sign again).
 */
import { to0x } from '../../base/bytes.js';
import { DdnError } from '../../base/errors.js';
import type { Call } from '../../ledger/extrinsic.js';
import { getApplication } from '../../ledger/runtime/application-state.js';
import { applicationNonce } from '../../ledger/runtime/nonces.js';
import { encodeApplicationAuthorization } from '../../protocol/payloads/application.js';
import { assertCurrentProof, assertRegistrableApplicationId, parseHexPayload, parseIntegerNonce, SIGNER_KEY_ID_BYTES } from '../application-fields.js';
import type { DirectoryDeps } from '../deps.js';
import { parseSignature } from '../request-fields.js';
import { activeDidRecord, jsonInteger, NO_SIGNATURE, parseSignerKeyId, requireDid, resolveSigner } from '../submission.js';
import type { Unchecked } from '../../http/route.js';
import type { KindFields, NoncePrepared, SubmitSteps, SyncPrepareSteps } from '../write-pipeline.js';
import type {
  ApplicationRegistrationBodySchema,
  ApplicationRegistrationPrepareBodySchema,
  ApplicationRegistrationPrepareResponse,
  ApplicationSubmitResponse,
} from '../../wire/applications.js';

/** An application route's request: the path id and the body's fields, `B` (typed by the route's body schema). */
export interface ApplicationRequest<B> {
  id: string;
  body: B;
}

/** An application registration as its route's parser reads it (prepare). */
export interface Registration {
  id: string;
  controlDid: string;
  signerKeyId: string;
}

/** Not registered (tombstoned ids stay taken), control DID active, signer resolvable. */
function prechecks(env: DirectoryDeps, r: Registration): void {
  const pool = env.ledger.poolView();
  if (getApplication(pool, r.id)) throw new DdnError('application_already_exists', 'application id is taken', { application_id: r.id });
  const rec = activeDidRecord(pool, r.controlDid, 'control_did');
  resolveSigner(r.controlDid, rec, r.signerKeyId);
}

const encode = (env: DirectoryDeps, r: Registration, nonce: bigint): Uint8Array =>
  encodeApplicationAuthorization(env.profile, { action: 'register', applicationId: r.id, controlDid: r.controlDid, status: 'Active', nonce });

const callOf = (r: Registration, signature: Uint8Array): Call => ({
  name: 'register_application',
  args: { applicationId: r.id, controlDid: r.controlDid, signerKeyId: r.signerKeyId, signature },
});

/** The request shape of `POST /applications/{id}/registration/prepare` (no state): the route's parser. */
export function parseApplicationRegistrationPrepare({
  id,
  body,
}: ApplicationRequest<Unchecked<typeof ApplicationRegistrationPrepareBodySchema>>): Registration {
  assertRegistrableApplicationId(id);
  const controlDid = requireDid(body, 'control_did');
  return { id, controlDid, signerKeyId: parseSignerKeyId(body, 'signer_key_id', SIGNER_KEY_ID_BYTES) };
}

/** `POST /applications/{id}/registration/prepare`. */
export const PREPARE_APPLICATION_REGISTRATION: SyncPrepareSteps<
  DirectoryDeps,
  Registration,
  Registration,
  NoncePrepared,
  ApplicationRegistrationPrepareResponse
> = {
  read: (_env, r) => r,
  precheck: prechecks,
  build(env, r) {
    const nonce = applicationNonce(env.ledger.poolView(), r.controlDid);
    return { payload: encode(env, r, nonce), nonce, probe: callOf(r, NO_SIGNATURE) };
  },
  answer(_env, r, { payload, nonce }) {
    const hex = to0x(payload);
    const n = jsonInteger(nonce);
    return {
      application_id: r.id,
      control_did: r.controlDid,
      signer_key_id: r.signerKeyId,
      nonce: n,
      extrinsic: 'register_application',
      canonical_payload: hex,
      payload_to_sign: hex,
      request: { control_did: r.controlDid, signer_key_id: r.signerKeyId, nonce: n, canonical_payload: hex },
    };
  },
};

/** An application registration as its route's parser reads it (submit). */
export interface SignedRegistration extends Registration {
  nonce: bigint;
  canonical: Uint8Array;
  signature: Uint8Array;
}

/** The request shape of `PUT /applications/{id}/registration` (no state): the route's parser. */
export function parseApplicationRegistrationSubmit({ id, body }: ApplicationRequest<Unchecked<typeof ApplicationRegistrationBodySchema>>): SignedRegistration {
  assertRegistrableApplicationId(id);
  const controlDid = requireDid(body, 'control_did');
  if (body.signer_key_id === undefined || body.signer_key_id === null) {
    throw new DdnError('invalid_request', 'missing field "signer_key_id"', { field: 'signer_key_id' });
  }
  const signerKeyId = parseSignerKeyId(body, 'signer_key_id', SIGNER_KEY_ID_BYTES);
  const nonce = parseIntegerNonce(body.nonce);
  const canonical = parseHexPayload(body.canonical_payload);
  return { id, controlDid, signerKeyId, nonce, canonical, signature: parseSignature(body.signature) };
}

/** `PUT /applications/{id}/registration`: `signer_key_id` is required; the proof must use the current nonce. */
export const SUBMIT_APPLICATION_REGISTRATION: SubmitSteps<DirectoryDeps, SignedRegistration, SignedRegistration, KindFields<ApplicationSubmitResponse>> = {
  read: (_env, r) => r,
  call: (r) => callOf(r, r.signature),
  precheck(env, r) {
    const current = applicationNonce(env.ledger.poolView(), r.controlDid);
    assertCurrentProof(r.nonce, current, r.canonical, () => encode(env, r, current), 'nonce');
    prechecks(env, r);
  },
  admission: (_env, r) => ({
    subject: r.id,
    action: 'register_application',
    limitKey: `${r.controlDid}|application_nonce`,
    nonce: { domain: 'application_nonce', value: r.nonce },
  }),
  answer: (r) => ({
    application_id: r.id,
    control_did: r.controlDid,
    action: 'register_application',
    extrinsic: 'register_application',
    nonce_domain: 'application_nonce',
    nonce: jsonInteger(r.nonce),
  }),
};
