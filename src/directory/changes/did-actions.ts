/**
 * Change kind: the DID actions (http-api.md §5) — aliases, document patches and replacement, root key and
 * control changes — through `POST /dids/{did}/prepare` and each action's own submit route. The action table and
 * codecs are src/directory/actions.ts; this file holds what the routes add: path binding, the replacement's
 * `timestamp` / `pubkey`, and the signer checks.
 */
import { bytesEqual, parseHex, to0x } from '../../base/bytes.js';
import { DdnError } from '../../base/errors.js';
import { isJsonObject } from '../../base/guards.js';
import { getDidRecord, getNonce, type DidRecord } from '../../ledger/records.js';
import { normalizeAlias } from '../../protocol/alias.js';
import { resolveSigningKey } from '../../protocol/keys.js';
import { documentReplacementToken } from '../../protocol/payloads/document-replacement.js';
import { parseV2Token } from '../../protocol/payloads/registration.js';
import { ACTIONS_BY_NAME, type ActionSpec, type ParsedAction, type SignParams } from '../actions.js';
import type { DirectoryDeps } from '../deps.js';
import { optionalString, parseCanonicalPayload, parseValidUntil } from '../request-fields.js';
import {
  activeDidRecord,
  assertDid,
  DEFAULT_VALIDITY_MS,
  NO_SIGNATURE,
  parseSignerKeyId,
  readSignedAuth,
  signedRequestFields,
  type Body,
  type SignedAuth,
} from '../submission.js';
import type { Profile } from '../../protocol/profile.js';
import type { Unchecked } from '../../http/route.js';
import type { MutationPrepareBodySchema, MutationSubmitBodySchema } from '../../wire/directory-writes.js';
import type { Reads } from '../../http/json-body.js';
import type { KindFields, NoncePrepared, SubmitSteps, SyncPrepareSteps } from '../write-pipeline.js';
import type { MutationActionFields, MutationPrepareResponse, MutationRequest, MutationSubmitResponse } from '../../wire/directory-writes.js';

/** DID action signer ids are bounded to 64 bytes (ledger-rules.md §2.4). */
const SIGNER_KEY_ID_BYTES = 64;

/** The key `signerKeyId` names on the DID, else 403 `signer_not_authorized`. */
function signerKey(did: string, rec: DidRecord, signerKeyId: string): Uint8Array {
  const key = resolveSigningKey(did, rec.rootPubkey, rec.document, signerKeyId);
  if (!key) throw new DdnError('signer_not_authorized', 'signer_key_id does not name a key of this DID', { signer_key_id: signerKeyId });
  return key;
}

/** A body `did` must be the path's. */
function bindDid(body: Reads<'did'>, did: string): void {
  assertDid(did);
  if (body.did !== undefined && body.did !== did) throw new DdnError('path_body_mismatch', 'body did differs from the path', { field: 'did' });
}

/** UpdateService: `service.id` is filled from the route only if absent. */
function withServiceId<B extends Reads<'service'>>(body: B, pathId?: string): B {
  const s = body.service;
  if (!isJsonObject(s)) return body;
  if (s.id !== undefined || pathId === undefined) return body;
  return { ...body, service: { ...s, id: pathId } };
}

/** The body value repeated from the path must equal it (after normalisation); absent values are taken from the path. */
function bindPathField<B extends Body>(spec: ActionSpec, params: Record<string, string>, body: B): B {
  const pf = spec.pathField;
  if (!pf) return body;
  const pathValue = params[pf.param]!;
  const norm = (v: string) => {
    const r = pf.field.endsWith('alias') ? normalizeAlias(v) : undefined;
    return r?.ok === true ? r.alias : v;
  };
  if (pf.sub) {
    const obj = body[pf.field];
    if (!isJsonObject(obj)) return body;
    const inner = obj[pf.sub];
    if (inner !== pathValue) throw new DdnError('path_body_mismatch', `${pf.field}.${pf.sub} differs from the path`, { field: `${pf.field}.${pf.sub}` });
    return body;
  }
  const v = body[pf.field];
  if (v === undefined) return { ...body, [pf.field]: pathValue };
  if (typeof v !== 'string' || norm(v) !== norm(pathValue)) {
    throw new DdnError('path_body_mismatch', `${pf.field} differs from the path`, { field: pf.field });
  }
  return body;
}

const fullDocument = (spec: ActionSpec): boolean => spec.action === 'replace_document';

/** `POST /dids/{did}/prepare`, as its route's parser reads it: the DID and the action named. */
export interface DidActionPrepare {
  did: string;
  spec: ActionSpec;
  /** The request body: the action's fields are read after the DID is found active (`read`), so they stay unchecked. */
  body: Unchecked<typeof MutationPrepareBodySchema>;
}

/**
 * The request shape of `POST /dids/{did}/prepare` that comes before the DID's state (§5.1 order): the path DID, the
 * body's `did`, the action. The action's fields are read after the DID is found active, so they stay in `read`.
 */
export function parseDidActionPrepare(did: string, body: Unchecked<typeof MutationPrepareBodySchema>): DidActionPrepare {
  bindDid(body, did);
  const actionName = body.action;
  const spec = typeof actionName === 'string' ? ACTIONS_BY_NAME.get(actionName) : undefined;
  if (!spec) throw new DdnError('unsupported_action', 'unknown action', { action: actionName ?? null });
  return { did, spec, body };
}

interface DidActionDraft {
  did: string;
  spec: ActionSpec;
  parsed: ParsedAction;
  p: Omit<SignParams, 'nonce'>;
}

/** `POST /dids/{did}/prepare`: the DID must be active before the action's fields are read (§5.1 order). */
export const PREPARE_DID_ACTION: SyncPrepareSteps<DirectoryDeps, DidActionPrepare, DidActionDraft, NoncePrepared, MutationPrepareResponse> = {
  read(env, { did, spec, body }) {
    activeDidRecord(env.ledger.poolView(), did);
    const parsed = spec.parse(spec.action === 'UpdateService' ? withServiceId(body) : body, did, env.profile);
    const signerKeyId = parseSignerKeyId(body, 'signer_key_id', SIGNER_KEY_ID_BYTES);
    // valid_until is field syntax: checked before the signer resolves (§5.1 order)
    const validUntil =
      body.valid_until === undefined
        ? BigInt(env.clock.nowMs()) + DEFAULT_VALIDITY_MS
        : parseValidUntil(body.valid_until, env.profile.acceptsDeployedClientForms);
    return { did, spec, parsed, p: { signerKeyId, validUntil } };
  },
  precheck(env, d) {
    signerKey(d.did, activeDidRecord(env.ledger.poolView(), d.did), d.p.signerKeyId);
  },
  build(env, d) {
    const nonce = getNonce(env.ledger.poolView(), d.spec.nonceDomain, d.did);
    const p: SignParams = { ...d.p, nonce };
    const payload = d.parsed.payload(p);
    return { payload, nonce, probe: d.parsed.call(p, payload, NO_SIGNATURE) };
  },
  errors: (d) => ({ fullDocument: fullDocument(d.spec) }),
  answer(env, { did, spec, parsed, p }, { payload, nonce }) {
    const hex = to0x(payload);
    // `parse` accepted the action fields, so they have the wire form.
    const request: MutationRequest = {
      did,
      action: spec.action,
      ...(parsed.request as MutationActionFields),
      ...(fullDocument(spec)
        ? {
            timestamp: documentReplacementToken(nonce, p.validUntil),
            pubkey: to0x(signerKey(did, activeDidRecord(env.ledger.poolView(), did), p.signerKeyId)),
          }
        : {}),
      ...signedRequestFields(nonce, p.validUntil, p.signerKeyId, hex),
    };
    return {
      did,
      action: spec.action,
      extrinsic: spec.extrinsic,
      nonce_domain: spec.nonceDomain,
      nonce: nonce.toString(),
      valid_until: p.validUntil.toString(),
      signer_key_id: p.signerKeyId,
      payload_to_sign: hex,
      canonical_payload: hex,
      schema_version: '1',
      previous_version: getDidRecord(env.ledger.finalizedView(), did)?.version ?? 0,
      request,
    };
  },
};

export interface DidActionSubmit {
  spec: ActionSpec;
  params: Record<string, string>;
  /** The fields of any action's submission (each route's schema holds its own action's: `mutationSubmitBodySchema`). */
  body: Unchecked<typeof MutationSubmitBodySchema>;
}

/** A DID action's submission as its route's parser reads it: every field decoded, the payload rebuilt. */
export interface DidActionSigned {
  did: string;
  spec: ActionSpec;
  parsed: ParsedAction;
  s: SignedAuth;
  canonical: Uint8Array | undefined;
  claimedPubkey: string | undefined;
  /** The payload rebuilt from the body fields. */
  payload: Uint8Array;
}

/**
 * The request shape of a DID action's submission (§5.2; no state): path binding, action, the signed fields, the
 * action's fields, the replacement's `timestamp`; the payload rebuilt from them. The route's parser.
 */
export function parseDidActionSubmit(profile: Profile, { spec, params, body }: DidActionSubmit): DidActionSigned {
  const did = params.did!;
  bindDid(body, did);
  if (body.action !== spec.action) throw new DdnError('action_mismatch', `action must be ${spec.action}`, { expected: spec.action });
  const fieldsBody = bindPathField(spec, params, spec.action === 'UpdateService' ? withServiceId(body, params.serviceId) : body);
  const s = readSignedAuth(body, profile, SIGNER_KEY_ID_BYTES);
  const canonical = body.canonical_payload === undefined ? undefined : parseCanonicalPayload(body.canonical_payload);
  const parsed = spec.parse(fieldsBody, did, profile);
  // `canonical_payload` is required (product spec); profile `openpayload` also takes a body without it, as deployed
  // clients may send (http-api.md §2.1): the payload is then rebuilt and the signature checked over it.
  if (canonical === undefined && !profile.acceptsDeployedClientForms) {
    throw new DdnError('invalid_canonical_payload', 'missing field "canonical_payload"', { field: 'canonical_payload' });
  }
  // `pubkey` of a replacement: a string when present (any other JSON type is refused, never ignored)
  const claimedPubkey = fullDocument(spec) ? optionalString(body, 'pubkey') : undefined;
  if (fullDocument(spec)) {
    const t = typeof body.timestamp === 'string' ? parseV2Token(body.timestamp) : undefined;
    if (!t || t.nonce !== s.nonce || t.ms !== s.validUntil) {
      throw new DdnError('invalid_timestamp_token', 'timestamp must be v2:<nonce>:<valid_until>', { field: 'timestamp' });
    }
  }
  const payload = parsed.payload({ nonce: s.nonce, validUntil: s.validUntil, signerKeyId: s.signerKeyId });
  return { did, spec, parsed, s, canonical, claimedPubkey, payload };
}

/** Each action's submit route (`PUT` / `POST` / `DELETE /dids/{did}/…`). */
export const SUBMIT_DID_ACTION: SubmitSteps<DirectoryDeps, DidActionSigned, DidActionSigned, KindFields<MutationSubmitResponse>> = {
  read: (_env, i) => i,
  rebuild: (env, i) => i.canonical && { canonical: i.canonical, rebuilt: i.payload, decodes: (b) => i.spec.decodes(b, env.profile) },
  call: (i) => i.parsed.call(i.s, i.payload, i.s.signature),
  precheck(env, i) {
    const key = signerKey(i.did, activeDidRecord(env.ledger.poolView(), i.did), i.s.signerKeyId);
    if (i.claimedPubkey !== undefined) {
      const claimed = parseHex(i.claimedPubkey);
      if (!claimed || !bytesEqual(claimed, key)) {
        throw new DdnError('signer_not_authorized', 'pubkey is not the signer’s current key', { field: 'pubkey' });
      }
    }
  },
  admission: (env, i) => ({
    subject: i.did,
    action: i.spec.action,
    limitKey: `${i.did}|${i.spec.nonceDomain}`,
    nonce: { domain: i.spec.nonceDomain, value: i.s.nonce, current: getNonce(env.ledger.poolView(), i.spec.nonceDomain, i.did) },
    fullDocument: fullDocument(i.spec),
  }),
  answer: (i) => ({ did: i.did, action: i.spec.action, extrinsic: i.spec.extrinsic, nonce_domain: i.spec.nonceDomain, nonce: i.s.nonce.toString() }),
};
