/**
 * Applications (http-api.md §9): read, registration and the authorization actions (domain, status, control
 * change, linked DIDs), and the application policy read. Payloads are the SCALE tuples of ledger-rules.md §4.10,
 * built with the control DID's current `application_nonce`; a stale nonce or payload is 409
 * `application_proof_stale` (prepare and sign again).
 */
import { bytesEqual, parseHex, to0x } from '../base/bytes.js';
import { DdnError } from '../base/errors.js';
import type { Call } from '../ledger/extrinsic.js';
import { getDidRecord } from '../ledger/records.js';
import { getApplication, verifiedDomain, type ApplicationRecord } from '../ledger/runtime/application-state.js';
import { applicationNonce } from '../ledger/runtime/nonces.js';
import { getPolicyV3 } from '../ledger/runtime/policy-state.js';
import {
  APPLICATION_STATUSES,
  decodeApplicationAuthorization,
  encodeApplicationAuthorization,
  isAddressableApplicationId,
  isApplicationId,
  type ApplicationAuthorization,
  type ApplicationStatus,
} from '../protocol/payloads/application.js';
import { policyToJson } from '../protocol/policy/json-render.js';
import { parseSignature } from './request-fields.js';
import type { DirectoryDeps } from './deps.js';
import {
  accepted,
  activeDidRecord,
  dryRun,
  jsonInteger,
  NO_SIGNATURE,
  optionalDid,
  parseSignerKeyId,
  requireDid,
  resolveSigner,
  submitToLedger,
  type Body,
} from './submission.js';
import type { ApplicationAuthorizationPrepareResponse, ApplicationPolicyResponse, ApplicationRegistrationPrepareResponse, ApplicationSubmitResponse } from '../wire/applications.js';

/** Application call arguments bound `signer_key_id` to 96 bytes (ledger-rules.md §10). */
const SIGNER_KEY_ID_BYTES = 96;

const AUTH_ACTIONS = ['set_domain', 'clear_domain', 'set_status', 'update_control', 'link_did', 'unlink_did'] as const;
type AuthAction = (typeof AUTH_ACTIONS)[number];

const STATUS_BY_NAME: Record<string, ApplicationStatus> = { active: 'Active', suspended: 'Suspended', tombstoned: 'Tombstoned' };
const statusName = (s: ApplicationStatus) => s.toLowerCase();

function assertApplicationId(id: string): void {
  if (!isApplicationId(id)) throw new DdnError('invalid_application_id', 'application id must be 1–64 characters of [a-z0-9._-]', { application_id: id });
}

/** Registration refuses ids no HTTP client can address (`.`, `..`): 400 `invalid_application_id`. */
function assertRegistrableApplicationId(id: string): void {
  assertApplicationId(id);
  if (!isAddressableApplicationId(id)) {
    throw new DdnError('invalid_application_id', 'application id must not be a dot segment (. or ..): HTTP clients cannot address it', {
      application_id: id,
      reason: 'unaddressable',
    });
  }
}

/** Application `nonce`: a JSON integer (product spec), else 400 `invalid_nonce`. */
function parseIntegerNonce(v: unknown): bigint {
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return BigInt(v);
  throw new DdnError('invalid_nonce', 'nonce must be a JSON integer', { field: 'nonce' });
}

/** `canonical_payload` on application routes: `0x`-hex only, strictly decoding as an application tuple. */
function parseHexPayload(v: unknown): Uint8Array {
  const bytes = typeof v === 'string' && v.startsWith('0x') ? parseHex(v) : undefined;
  if (!bytes || bytes.length === 0 || !decodeApplicationAuthorization(bytes)) {
    throw new DdnError('invalid_canonical_payload', 'canonical_payload must be the 0x-hex application tuple', { field: 'canonical_payload' });
  }
  return bytes;
}

function stale(message: string, details: Record<string, unknown> = {}): DdnError {
  return new DdnError('application_proof_stale', `${message}; prepare and sign again`, details);
}

/** One authorization action parsed from a body: its tuple (given a nonce), its call (given signatures), its request. */
interface AuthIntent {
  action: AuthAction;
  extrinsic: Call['name'];
  controlDid: string;
  controlSignerKeyId: string;
  linked: { did: string; signerKeyId: string } | null;
  tuple(nonce: bigint): ApplicationAuthorization;
  call(controlSignature: Uint8Array, linkedSignature: Uint8Array | null): Call;
  request: Body;
}

export class ApplicationService {
  constructor(private readonly deps: DirectoryDeps) {}

  private get ledger() {
    return this.deps.ledger;
  }

  private encode(a: ApplicationAuthorization): Uint8Array {
    return encodeApplicationAuthorization(this.deps.profile, a);
  }

  // ---------------------------------------------------------------- reads

  read(id: string): Body {
    assertApplicationId(id);
    const view = this.ledger.finalizedView();
    const app = getApplication(view, id);
    if (!app) throw new DdnError('application_not_found', 'application not found', { application_id: id });
    const policy = getPolicyV3(view, { kind: 'Application', id });
    const block = this.ledger.finalizedRefNow();
    return {
      application_id: id,
      control_did: app.controlDid,
      status: statusName(app.status),
      application_revision: Number(app.revision),
      registered_at: app.registeredAt,
      updated_at: app.updatedAt,
      domain: app.domain,
      domain_verified: app.domain !== null && verifiedDomain(view, this.deps.clock.nowMs(), id) === app.domain,
      linked_dids: [...app.linkedDids],
      policy_revision: policy ? Number(policy.revision) : null,
      block_number: block.number,
      block_hash: block.hash,
    };
  }

  readPolicy(id: string): ApplicationPolicyResponse {
    assertApplicationId(id);
    const view = this.ledger.finalizedView();
    const app = getApplication(view, id);
    if (!app || app.status !== 'Active') {
      throw new DdnError('application_not_found', app ? 'application is not active' : 'application not found', { application_id: id });
    }
    const policy = getPolicyV3(view, { kind: 'Application', id });
    if (!policy) throw new DdnError('policy_not_found', 'the application has no policy', { application_id: id });
    const block = this.ledger.finalizedRefNow();
    return {
      application_id: id,
      control_did: app.controlDid,
      application_revision: Number(app.revision),
      policy_revision: Number(policy.revision),
      policy_ttl_seconds: policy.policyTtlSeconds,
      policy: policyToJson(policy),
      block_hash: block.hash,
      block_number: block.number,
    };
  }

  // ---------------------------------------------------------------- registration

  /** Registration pre-checks (§9): not registered (tombstoned ids stay taken), control DID active, signer resolves. */
  private registrationPrechecks(id: string, controlDid: string, signerKeyId: string): void {
    const pool = this.ledger.poolView();
    if (getApplication(pool, id)) throw new DdnError('application_already_exists', 'application id is taken', { application_id: id });
    const rec = activeDidRecord(pool, controlDid, 'control_did');
    resolveSigner(controlDid, rec, signerKeyId);
  }

  private registrationCall(id: string, controlDid: string, signerKeyId: string, signature: Uint8Array): Call {
    return { name: 'register_application', args: { applicationId: id, controlDid, signerKeyId, signature } };
  }

  prepareRegistration(id: string, body: Body): ApplicationRegistrationPrepareResponse {
    assertRegistrableApplicationId(id);
    const controlDid = requireDid(body, 'control_did');
    const signerKeyId = parseSignerKeyId(body, 'signer_key_id', SIGNER_KEY_ID_BYTES);
    this.registrationPrechecks(id, controlDid, signerKeyId);
    const nonce = applicationNonce(this.ledger.poolView(), controlDid);
    const payload = this.encode({ action: 'register', applicationId: id, controlDid, status: 'Active', nonce });
    dryRun(this.ledger, this.registrationCall(id, controlDid, signerKeyId, NO_SIGNATURE));
    const hex = to0x(payload);
    const n = jsonInteger(nonce);
    return {
      application_id: id,
      control_did: controlDid,
      signer_key_id: signerKeyId,
      nonce: n,
      extrinsic: 'register_application',
      canonical_payload: hex,
      payload_to_sign: hex,
      request: { control_did: controlDid, signer_key_id: signerKeyId, nonce: n, canonical_payload: hex },
    };
  }

  async submitRegistration(id: string, body: Body): Promise<ApplicationSubmitResponse> {
    assertRegistrableApplicationId(id);
    const controlDid = requireDid(body, 'control_did');
    if (body.signer_key_id === undefined || body.signer_key_id === null) {
      throw new DdnError('invalid_request', 'missing field "signer_key_id"', { field: 'signer_key_id' });
    }
    const signerKeyId = parseSignerKeyId(body, 'signer_key_id', SIGNER_KEY_ID_BYTES);
    const nonce = parseIntegerNonce(body.nonce);
    const canonical = parseHexPayload(body.canonical_payload);
    const signature = parseSignature(body.signature);
    const call = this.registrationCall(id, controlDid, signerKeyId, signature);
    const pending = this.ledger.isPending(call);
    const current = applicationNonce(this.ledger.poolView(), controlDid);
    if (!pending) {
      if (nonce !== current) throw stale('nonce is not the current application nonce', { expected: jsonInteger(current), received: jsonInteger(nonce) });
      const rebuilt = this.encode({ action: 'register', applicationId: id, controlDid, status: 'Active', nonce: current });
      if (!bytesEqual(canonical, rebuilt)) throw stale('canonical_payload differs from the payload rebuilt with the current nonce');
      this.registrationPrechecks(id, controlDid, signerKeyId);
    }
    const { txHash, duplicate } = await submitToLedger(this.ledger, call, {
      subject: id,
      action: 'register_application',
      nonceDomain: 'application_nonce',
      nonce: nonce.toString(),
      limitKey: `${controlDid}|application_nonce`,
    });
    return accepted(txHash, duplicate, {
      application_id: id,
      control_did: controlDid,
      action: 'register_application',
      extrinsic: 'register_application',
      nonce_domain: 'application_nonce',
      nonce: jsonInteger(nonce),
    });
  }

  // ---------------------------------------------------------------- authorization actions

  /** The live application in the pool state (404 `application_not_found`). */
  private poolApplication(id: string): ApplicationRecord {
    const app = getApplication(this.ledger.poolView(), id);
    if (!app) throw new DdnError('application_not_found', 'application not found', { application_id: id });
    return app;
  }

  private authIntent(id: string, app: ApplicationRecord, body: Body): AuthIntent {
    const action = body.action;
    if (typeof action !== 'string' || !(AUTH_ACTIONS as readonly string[]).includes(action)) {
      throw new DdnError('unsupported_action', `action must be one of ${AUTH_ACTIONS.join(', ')}`, { action: action ?? null });
    }
    const a = action as AuthAction;
    const controlDid = app.controlDid;
    const controlSignerKeyId = parseSignerKeyId(body, 'control_signer_key_id', SIGNER_KEY_ID_BYTES);
    const request: Body = { action: a, control_did: controlDid };
    const base = { action: a, controlDid, controlSignerKeyId, linked: null, request };
    const single = (extrinsic: Call['name'], args: Record<string, unknown>, tuple: (n: bigint) => ApplicationAuthorization): AuthIntent => ({
      ...base,
      extrinsic,
      tuple,
      call: (sig) => ({ name: extrinsic, args: { applicationId: id, ...args, signerKeyId: controlSignerKeyId, signature: sig } }) as Call,
    });
    switch (a) {
      case 'set_domain':
      case 'clear_domain': {
        let domain: string | null = null;
        if (a === 'set_domain') {
          if (typeof body.domain !== 'string') throw new DdnError('invalid_request', 'missing field "domain"', { field: 'domain' });
          domain = body.domain;
          request.domain = domain;
        }
        return single('set_application_domain', { domain }, (nonce) => ({ action: 'domain', applicationId: id, controlDid, domain, nonce }));
      }
      case 'set_status': {
        const status = typeof body.status === 'string' ? STATUS_BY_NAME[body.status] : undefined;
        if (!status) throw new DdnError('invalid_request', 'status must be active, suspended or tombstoned', { field: 'status' });
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
        const newControlDid = requireDid(body, 'new_control_did');
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
        const linkedDid = requireDid(body, 'linked_did');
        const linkedSignerKeyId = parseSignerKeyId(body, 'linked_signer_key_id', SIGNER_KEY_ID_BYTES);
        const enabled = a === 'link_did';
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
  private authPrechecks(i: AuthIntent): void {
    const pool = this.ledger.poolView();
    const rec = activeDidRecord(pool, i.controlDid, 'control_did');
    resolveSigner(i.controlDid, rec, i.controlSignerKeyId, 'control_signer_key_id');
    if (i.linked !== null) {
      const linked = getDidRecord(pool, i.linked.did);
      // A missing or deactivated linked DID is the ledger's `linked_did_not_found`.
      if (linked && !linked.deactivated) resolveSigner(i.linked.did, linked, i.linked.signerKeyId, 'linked_signer_key_id');
    }
  }

  private authRequest(i: AuthIntent, nonce: bigint, hex: string): Body {
    const req: Body = { ...i.request, nonce: jsonInteger(nonce), control_signer_key_id: i.controlSignerKeyId };
    if (i.linked !== null) req.linked_signer_key_id = i.linked.signerKeyId;
    req.canonical_payload = hex;
    return req;
  }

  prepareAuthorization(id: string, body: Body): ApplicationAuthorizationPrepareResponse {
    assertApplicationId(id);
    const app = this.poolApplication(id);
    const i = this.authIntent(id, app, body);
    this.authPrechecks(i);
    const nonce = applicationNonce(this.ledger.poolView(), i.controlDid);
    const hex = to0x(this.encode(i.tuple(nonce)));
    dryRun(this.ledger, i.call(NO_SIGNATURE, NO_SIGNATURE));
    return {
      application_id: id,
      action: i.action,
      control_did: i.controlDid,
      nonce: jsonInteger(nonce),
      extrinsic: i.extrinsic,
      canonical_payload: hex,
      payload_to_sign: hex,
      request: this.authRequest(i, nonce, hex),
    };
  }

  async submitAuthorization(id: string, body: Body): Promise<ApplicationSubmitResponse> {
    assertApplicationId(id);
    const app = this.poolApplication(id);
    const i = this.authIntent(id, app, body);
    const nonce = parseIntegerNonce(body.nonce);
    const canonical = parseHexPayload(body.canonical_payload);
    const sigField = body.control_signature !== undefined ? 'control_signature' : 'signature';
    const controlSignature = parseSignature(body[sigField], sigField);
    const linkedSignature = i.linked !== null ? parseSignature(body.linked_signature, 'linked_signature') : null;
    const call = i.call(controlSignature, linkedSignature);
    const givenControlDid = optionalDid(body, 'control_did');
    if (!this.ledger.isPending(call)) {
      if (givenControlDid !== undefined && givenControlDid !== i.controlDid) {
        throw stale('control_did is no longer the application’s control DID', { field: 'control_did' });
      }
      const current = applicationNonce(this.ledger.poolView(), i.controlDid);
      if (nonce !== current) throw stale('nonce is not the current application nonce', { expected: jsonInteger(current), received: jsonInteger(nonce) });
      if (!bytesEqual(canonical, this.encode(i.tuple(current)))) throw stale('canonical_payload differs from the payload rebuilt with the current state');
      this.authPrechecks(i);
    }
    const { txHash, duplicate } = await submitToLedger(this.ledger, call, {
      subject: id,
      action: i.action,
      nonceDomain: 'application_nonce',
      nonce: nonce.toString(),
      limitKey: `${i.controlDid}|application_nonce`,
    });
    return accepted(txHash, duplicate, {
      application_id: id,
      control_did: i.controlDid,
      action: i.action,
      extrinsic: i.extrinsic,
      nonce_domain: 'application_nonce',
      nonce: jsonInteger(nonce),
    });
  }
}
