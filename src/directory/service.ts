/**
 * Directory use-cases over the embedded ledger (http-api.md §2–§5): reads of finalized state, DID registration
 * and every DID mutation through prepare → sign (client side) → submit. Nothing here speaks HTTP.
 */
import type { AliasResponse, NoncesResponse, RegistrationStatusResponse, TransactionResponse } from '../wire/directory.js';
import { bytesEqual, parseHex, to0x, utf8Length } from '../base/bytes.js';
import { isoMs } from '../base/clock.js';
import { DdnError } from '../base/errors.js';
import type { Ledger } from '../ledger/chain.js';
import type { Call } from '../ledger/extrinsic.js';
import { getAliasOwner, getDidRecord, getNonce, isDeletedDid, type DidRecord, type NonceDomain } from '../ledger/records.js';
import type { StateReader } from '../ledger/state.js';
import { normalizeAlias } from '../protocol/alias.js';
import { isDid } from '../protocol/did.js';
import { checkDocumentStructure, documentHash, encodeDocument, DOC } from '../protocol/document.js';
import { parseDidDocument } from '../protocol/document-json.js';
import { parseRootPubkey, resolveSigningKey } from '../protocol/keys.js';
import { parseV2Token, registrationSigningBytes, registrationToken } from '../protocol/payloads/registration.js';
import { documentReplacementToken } from '../protocol/payloads/document-replacement.js';
import {
  optionalString,
  parseCanonicalPayload,
  parseSignature,
  parseU64Field,
  parseValidUntil,
} from './request-fields.js';
import { ACTIONS_BY_NAME, type ActionSpec, type SignParams } from './actions.js';
import { ApplicationService } from './applications.js';
import { resolveDelivery, type DeliveryResolution } from './delivery-resolution.js';
import type { DirectoryDeps } from './deps.js';
import { createTxtLookup } from './dns-verifier.js';
import { PolicyV2Service } from './policies-v2.js';
import { PolicyV3Service } from './policies-v3.js';
import { PersonaChallenges } from './persona-challenges.js';
import { PersonaService } from './personas.js';
import { assertDid, invalidDid, submitToLedger } from './submission.js';
import { ledgerError, txErrorBody } from './ledger-errors.js';
import { pendingOperationsOf, renderDidRecord } from './record-view.js';
import type { DidRecordResponse } from '../wire/directory.js';
import type { MutationSubmitResponse, RegistrationSubmitResponse } from '../wire/directory-writes.js';

type Body = Record<string, unknown>;

export type { DirectoryDeps };

const DEFAULT_VALIDITY_MS = 300_000n;
const REGISTRATION_WINDOW_MS = 3_600_000n;
const ACCEPTED_MESSAGE = 'accepted for processing; not final';

export { assertDid };

export class DirectoryService {
  /** Personas (§7). */
  readonly personas: PersonaService;
  /** Persona DNS challenges (§7.2, §7.3). */
  readonly personaChallenges: PersonaChallenges;
  /** Delivery policies v2 (§8.2). */
  readonly policiesV2: PolicyV2Service;
  /** Delivery policies v3 (§8.3). */
  readonly policiesV3: PolicyV3Service;
  /** Applications (§9). */
  readonly applications: ApplicationService;

  constructor(readonly deps: DirectoryDeps) {
    const lookup = createTxtLookup({
      ...(deps.dnsServers ? { servers: deps.dnsServers } : {}),
      ...(deps.dnsTimeoutMs !== undefined ? { timeoutMs: deps.dnsTimeoutMs } : {}),
    });
    this.personaChallenges = new PersonaChallenges(deps, deps.challenges, lookup);
    this.personas = new PersonaService(deps, this.personaChallenges);
    this.policiesV2 = new PolicyV2Service(deps);
    this.policiesV3 = new PolicyV3Service(deps);
    this.applications = new ApplicationService(deps);
  }

  /** `GET /delivery-resolution/{did}` (§6). */
  deliveryResolution(did: string, query: Record<string, string>): DeliveryResolution {
    return resolveDelivery(this.deps, did, query);
  }

  private get ledger(): Ledger {
    return this.deps.ledger;
  }

  private nowMs(): bigint {
    return BigInt(this.deps.clock.nowMs());
  }

  // ---------------------------------------------------------------- reads (§3)

  resolve(did: string): DidRecordResponse {
    assertDid(did);
    const view = this.ledger.finalizedView();
    const rec = getDidRecord(view, did);
    if (!rec) {
      const reg = this.pendingRegistration(did);
      if (reg) throw new DdnError('registration_pending', 'registration awaiting confirmation', { tx_hash: reg });
      throw new DdnError('did_not_found', 'DID not found', { did });
    }
    const pending = pendingOperationsOf(this.ledger.pendingEntries(), did);
    return renderDidRecord(did, rec, getNonce(view, 'document_nonce', did), pending, this.ledger.finalizedRefNow());
  }

  /** tx hash of a registration of `did` in the pool or in a non-final block. */
  private pendingRegistration(did: string): string | undefined {
    const inPool = this.ledger.pendingEntries().find((e) => e.call.name === 'register_with_proof_v2' && e.tx.meta.subject === did);
    if (inPool) return inPool.tx.txHash;
    const head = this.ledger.headRef();
    if (head.number !== this.ledger.finalizedRefNow().number) {
      const rec = getDidRecord(this.ledger.poolView(), did);
      if (rec?.registrationTx) return rec.registrationTx;
    }
    return undefined;
  }

  registrationStatus(did: string): RegistrationStatusResponse {
    assertDid(did);
    const rec = getDidRecord(this.ledger.finalizedView(), did);
    if (rec) {
      const tx = rec.registrationTx ? { tx_id: rec.registrationTx, tx_hash: rec.registrationTx } : {};
      return { did, registration_status: 'confirmed', version: rec.version, deactivated: rec.deactivated, ...tx };
    }
    const pending = this.pendingRegistration(did);
    if (pending) return { did, registration_status: 'pending', version: 0, deactivated: false, tx_id: pending, tx_hash: pending };
    const missing: RegistrationStatusResponse = { did, registration_status: 'missing', version: 0, deactivated: false };
    const failed = this.ledger.lastFailure(did, 'register_with_proof_v2', this.deps.clock.nowMs() - 3_600_000);
    if (!failed?.error) return missing;
    const e = txErrorBody(failed.error, { fullDocument: true });
    return { ...missing, last_error: { code: e.code, message: e.message }, tx_id: failed.txHash, tx_hash: failed.txHash };
  }

  nonces(did: string): NoncesResponse {
    assertDid(did);
    const pool = this.ledger.poolView();
    if (!getDidRecord(pool, did)) throw new DdnError('did_not_found', 'DID not found', { did });
    const next = (domain: NonceDomain): string => getNonce(pool, domain, did).toString();
    return {
      did,
      alias_nonce: next('alias_nonce'),
      document_nonce: next('document_nonce'),
      root_pubkey_nonce: next('root_pubkey_nonce'),
      control_nonce: next('control_nonce'),
      policy_nonce: next('policy_nonce'),
      policy_v3_nonce: next('policy_v3_nonce'),
      operator_nonce: next('operator_nonce'),
      application_nonce: next('application_nonce'),
    };
  }

  transaction(txHash: string): TransactionResponse {
    if (!/^0x[0-9a-fA-F]{64}$/.test(txHash)) throw new DdnError('invalid_request', 'tx_hash must be 0x + 64 hex', { field: 'tx_hash' });
    const view = this.ledger.txView(txHash.toLowerCase());
    if (!view) throw new DdnError('transaction_not_found', 'unknown transaction', { tx_hash: txHash });
    return {
      tx_hash: view.tx.txHash,
      status: view.status,
      extrinsic: view.tx.extrinsic,
      submitted_at: isoMs(view.tx.submittedAtMs),
      ...(view.status !== 'pending' && view.block ? { block_number: view.block.number, block_hash: view.block.hash } : {}),
      ...(view.status === 'failed' && view.tx.error ? { error: txErrorBody(view.tx.error, this.errorCtxOf(view.tx.extrinsic)) } : {}),
    };
  }

  private errorCtxOf(extrinsic: string) {
    return { fullDocument: extrinsic === 'register_with_proof_v2' || extrinsic === 'set_document_with_proof_v2' };
  }

  block(which: string): Body {
    let n: number;
    if (which === 'latest') n = this.ledger.headRef().number;
    else if (/^(0|[1-9][0-9]{0,9})$/.test(which) && Number(which) <= 0xffffffff) n = Number(which);
    else throw new DdnError('invalid_request', 'block number must be a non-negative integer', { field: 'number' });
    const b = this.ledger.block(n);
    if (!b) throw new DdnError('block_not_found', `no block ${which}`);
    const fin = this.ledger.finalizedRefNow();
    const h = b.block.header;
    return {
      number: h.number,
      hash: to0x(b.block.hash),
      parent_hash: to0x(h.parentHash),
      timestamp: h.timestampMs,
      timestamp_iso: isoMs(h.timestampMs),
      extrinsics_root: to0x(h.extrinsicsRoot),
      results_root: to0x(h.resultsRoot),
      finalized: h.number <= fin.number,
      finalized_number: fin.number,
      extrinsics: b.txs.map((t) => {
        const x: Body = { tx_hash: t.txHash, extrinsic: t.extrinsic, success: t.status === 'included' };
        if (t.error) x.error = txErrorBody(t.error, this.errorCtxOf(t.extrinsic));
        return x;
      }),
    };
  }

  aliasLookup(raw: string): AliasResponse {
    const r = normalizeAlias(raw);
    if (!r.ok) throw new DdnError('invalid_alias', 'invalid alias', { ledger_error: r.error });
    const did = getAliasOwner(this.ledger.finalizedView(), r.alias);
    if (!did) throw new DdnError('alias_not_found', 'alias not found', { alias: r.alias });
    return { alias: r.alias, did };
  }

  // ---------------------------------------------------------------- registration (§4)

  private registrationInputs(body: Body) {
    const did = body.did;
    if (typeof did !== 'string' || !isDid(did)) throw invalidDid(did, 'did');
    const rootRaw = body.root_pubkey;
    const rootPubkey = typeof rootRaw === 'string' ? parseRootPubkey(rootRaw) : undefined;
    if (!rootPubkey) throw new DdnError('invalid_root_pubkey', 'root_pubkey is not a 32-byte Ed25519 key', { field: 'root_pubkey' });
    const doc = parseDidDocument(body.did_document, did, 'did_document');
    const blob = encodeDocument(doc);
    if (blob.length > DOC.maxDocBlobBytes) throw new DdnError('invalid_document', 'document too large', { reason: 'too_large' });
    const structural = checkDocumentStructure(doc, did);
    if (structural) throw new DdnError('invalid_document', `document structure: ${structural}`, { ledger_error: structural });
    let alias: string | null = null;
    if (body.alias !== undefined && body.alias !== null) {
      const r = typeof body.alias === 'string' ? normalizeAlias(body.alias) : ({ ok: false, error: 'InvalidAlias' } as const);
      if (!r.ok) throw new DdnError('invalid_alias', 'alias is invalid', { field: 'alias', ledger_error: r.error });
      alias = r.alias;
    }
    return { did, rootPubkey, doc, blob, alias };
  }

  private assertRegistrable(did: string, alias: string | null): void {
    const pool = this.ledger.poolView();
    // An alias held by this very DID means the DID exists: that is did_already_exists (§2.2: a registration
    // resubmitted after inclusion fails with did_already_exists), not a lost alias race.
    const owner = alias === null ? undefined : getAliasOwner(pool, alias);
    if (owner !== undefined && owner !== did) throw new DdnError('alias_taken', 'alias is taken', { alias });
    if (getDidRecord(pool, did)) throw new DdnError('did_already_exists', 'DID already registered or pending', { did });
    if (isDeletedDid(pool, did)) throw new DdnError('did_deleted', 'this DID was deleted and can never be registered again', { did });
  }

  prepareRegistration(body: Body): Body {
    const { did, rootPubkey, doc, alias } = this.registrationInputs(body);
    this.assertRegistrable(did, alias);
    const now = this.nowMs();
    let expiryMs = now + DEFAULT_VALIDITY_MS;
    if (body.expiry_ms !== undefined) {
      expiryMs = parseU64Field(body.expiry_ms, 'expiry_ms', 'invalid_expiry');
      if (!(expiryMs > now && expiryMs <= now + REGISTRATION_WINDOW_MS)) {
        throw new DdnError('invalid_expiry', 'expiry_ms must be in (now, now + 1 h]', { field: 'expiry_ms' });
      }
    }
    const hash = documentHash(doc);
    const payload = to0x(registrationSigningBytes(this.deps.profile, { did, rootPubkey, alias, documentHash: hash, expiryMs }));
    const request: Body = {
      did: body.did,
      root_pubkey: body.root_pubkey,
      did_document: body.did_document,
      timestamp: registrationToken(expiryMs),
    };
    if (alias !== null) request.alias = alias;
    return {
      request,
      payload_to_sign: payload,
      canonical_payload: payload,
      document_hash: to0x(hash),
      expiry_ms: expiryMs.toString(),
      extrinsic: 'register_with_proof_v2',
    };
  }

  async submitRegistration(body: Body): Promise<RegistrationSubmitResponse> {
    const ts = body.timestamp;
    if (typeof ts !== 'string' || !ts.startsWith('v2:')) {
      if (typeof ts === 'string' && ts.length > 0) {
        throw new DdnError('legacy_registration_unsupported', 'only v2 registration tokens are accepted', { field: 'timestamp' });
      }
      throw new DdnError('invalid_timestamp_token', 'timestamp must be v2:0:<expiry_ms>', { field: 'timestamp' });
    }
    const token = parseV2Token(ts);
    if (!token || token.nonce !== 0n) throw new DdnError('invalid_timestamp_token', 'timestamp must be v2:0:<expiry_ms>', { field: 'timestamp' });
    const { did, rootPubkey, blob, alias } = this.registrationInputs(body);
    // §4.2 order: every prepare check (alias_taken, did_already_exists included) before the signature encoding;
    // an identical pending submission skips them (it is answered as a duplicate).
    let signature: Uint8Array;
    try {
      signature = parseSignature(body.signature);
    } catch (e) {
      this.assertRegistrable(did, alias);
      throw e;
    }
    const call: Call = {
      name: 'register_with_proof_v2',
      args: { did, alias, rootPubkey, expiryMs: token.ms, docBlob: blob, signature },
    };
    if (!this.isPending(call)) this.assertRegistrable(did, alias);
    const { txHash, duplicate } = await this.submitCall(call, { subject: did, action: 'register_did', limitKey: `${did}|registration` },
      { fullDocument: true });
    return {
      status: 'accepted',
      did,
      registration_status: 'pending',
      extrinsic: 'register_with_proof_v2',
      tx_hash: txHash,
      tx_id: txHash,
      ...(duplicate ? { duplicate: true } : {}),
      message: ACCEPTED_MESSAGE,
    };
  }

  // ---------------------------------------------------------------- mutations (§5)

  private activeRecord(state: StateReader, did: string): DidRecord {
    const rec = getDidRecord(state, did);
    if (!rec) throw new DdnError('did_not_found', 'DID not found', { did });
    if (rec.deactivated) throw new DdnError('did_deactivated', 'DID is deactivated', { did });
    return rec;
  }

  private signerKey(did: string, rec: DidRecord, signerKeyId: string): Uint8Array {
    const key = resolveSigningKey(did, rec.rootPubkey, rec.document, signerKeyId);
    if (!key) throw new DdnError('signer_not_authorized', 'signer_key_id does not name a key of this DID', { signer_key_id: signerKeyId });
    return key;
  }

  private signerKeyId(body: Body): string {
    const v = body.signer_key_id ?? 'root';
    if (typeof v !== 'string' || v.length === 0 || utf8Length(v) > 64) {
      throw new DdnError('invalid_request', 'signer_key_id must be root or a verification-method id of at most 64 bytes', { field: 'signer_key_id' });
    }
    return v;
  }

  prepareMutation(did: string, body: Body): Body {
    assertDid(did);
    if (body.did !== undefined && body.did !== did) throw new DdnError('path_body_mismatch', 'body did differs from the path', { field: 'did' });
    const actionName = body.action;
    const spec = typeof actionName === 'string' ? ACTIONS_BY_NAME.get(actionName) : undefined;
    if (!spec) throw new DdnError('unsupported_action', 'unknown action', { action: actionName ?? null });
    const pool = this.ledger.poolView();
    const rec = this.activeRecord(pool, did);
    const fieldsBody = spec.action === 'UpdateService' ? withServiceId(body) : body;
    const parsed = spec.parse(fieldsBody, did, this.deps.profile);
    const signerKeyId = this.signerKeyId(body);
    // valid_until is field syntax: checked before the signer resolves (§5.1 order)
    const validUntil = body.valid_until === undefined ? this.nowMs() + DEFAULT_VALIDITY_MS : parseValidUntil(body.valid_until, this.deps.profile.acceptsDeployedClientForms);
    const signerKey = this.signerKey(did, rec, signerKeyId);
    const nonce = getNonce(pool, spec.nonceDomain, did);
    const p: SignParams = { nonce, validUntil, signerKeyId };
    const payload = parsed.payload(p);
    const probe = this.ledger.check(parsed.call(p, payload, new Uint8Array(64)), { skipSignatures: true });
    if (probe) throw ledgerError(probe, { fullDocument: spec.action === 'replace_document' });
    const hex = to0x(payload);
    const request: Body = { did, action: spec.action, ...parsed.request };
    if (spec.action === 'replace_document') {
      request.timestamp = documentReplacementToken(nonce, validUntil);
      request.pubkey = to0x(signerKey);
    }
    Object.assign(request, { nonce: nonce.toString(), valid_until: validUntil.toString(), signer_key_id: signerKeyId, canonical_payload: hex });
    const finalized = getDidRecord(this.ledger.finalizedView(), did);
    return {
      did,
      action: spec.action,
      extrinsic: spec.extrinsic,
      nonce_domain: spec.nonceDomain,
      nonce: nonce.toString(),
      valid_until: validUntil.toString(),
      signer_key_id: signerKeyId,
      payload_to_sign: hex,
      canonical_payload: hex,
      schema_version: '1',
      previous_version: finalized?.version ?? 0,
      request,
    };
  }

  async submitMutation(spec: ActionSpec, params: Record<string, string>, body: Body): Promise<MutationSubmitResponse> {
    const did = params.did!;
    assertDid(did);
    if (body.did !== undefined && body.did !== did) throw new DdnError('path_body_mismatch', 'body did differs from the path', { field: 'did' });
    if (body.action !== spec.action) throw new DdnError('action_mismatch', `action must be ${spec.action}`, { expected: spec.action });
    const fieldsBody = bindPathField(spec, params, spec.action === 'UpdateService' ? withServiceId(body, params.serviceId) : body);
    const nonce = parseU64Field(body.nonce, 'nonce');
    const validUntil = parseValidUntil(body.valid_until, this.deps.profile.acceptsDeployedClientForms);
    const signerKeyId = this.signerKeyId(body);
    const signature = parseSignature(body.signature);
    const canonical = body.canonical_payload === undefined ? undefined : parseCanonicalPayload(body.canonical_payload);
    const parsed = spec.parse(fieldsBody, did, this.deps.profile);
    // `canonical_payload` is required (product spec); profile `openpayload` also takes a body without it, as deployed
    // clients may send (http-api.md §2.1): the payload is then rebuilt and the signature checked over it.
    if (canonical === undefined && !this.deps.profile.acceptsDeployedClientForms) {
      throw new DdnError('invalid_canonical_payload', 'missing field "canonical_payload"', { field: 'canonical_payload' });
    }
    const p: SignParams = { nonce, validUntil, signerKeyId };
    // `pubkey` of a replacement: a string when present (any other JSON type is refused, never ignored)
    const claimedPubkey = spec.action === 'replace_document' ? optionalString(body, 'pubkey') : undefined;
    if (spec.action === 'replace_document') this.checkReplacementToken(body, nonce, validUntil);
    const payload = parsed.payload(p);
    if (canonical) {
      if (!spec.decodes(canonical, this.deps.profile)) {
        throw new DdnError('invalid_canonical_payload', 'canonical_payload does not decode as this action’s payload');
      }
      if (!bytesEqual(canonical, payload)) {
        throw new DdnError('canonical_payload_mismatch', 'canonical_payload differs from the payload rebuilt from the body');
      }
    }
    const pool = this.ledger.poolView();
    const call = parsed.call(p, payload, signature);
    if (!this.isPending(call)) {
      const rec = this.activeRecord(pool, did);
      const key = this.signerKey(did, rec, signerKeyId);
      if (claimedPubkey !== undefined) {
        const claimed = parseHex(claimedPubkey);
        if (!claimed || !bytesEqual(claimed, key)) {
          throw new DdnError('signer_not_authorized', 'pubkey is not the signer’s current key', { field: 'pubkey' });
        }
      }
    }
    const expected = getNonce(pool, spec.nonceDomain, did);
    const { txHash, duplicate } = await this.submitCall(
      call,
      { subject: did, action: spec.action, nonceDomain: spec.nonceDomain, nonce: nonce.toString(), limitKey: `${did}|${spec.nonceDomain}` },
      { fullDocument: spec.action === 'replace_document', expectedNonce: expected, receivedNonce: nonce },
    );
    return {
      status: 'accepted',
      did,
      action: spec.action,
      extrinsic: spec.extrinsic,
      tx_hash: txHash,
      tx_id: txHash,
      nonce_domain: spec.nonceDomain,
      nonce: nonce.toString(),
      ...(duplicate ? { duplicate: true } : {}),
      message: ACCEPTED_MESSAGE,
    };
  }

  private checkReplacementToken(body: Body, nonce: bigint, validUntil: bigint): void {
    const t = typeof body.timestamp === 'string' ? parseV2Token(body.timestamp) : undefined;
    if (!t || t.nonce !== nonce || t.ms !== validUntil) {
      throw new DdnError('invalid_timestamp_token', 'timestamp must be v2:<nonce>:<valid_until>', { field: 'timestamp' });
    }
  }

  private isPending(call: Call): boolean {
    return this.ledger.isPending(call);
  }

  private submitCall(call: Call, meta: Parameters<Ledger['submit']>[1], ctx: Parameters<typeof ledgerError>[1]) {
    return submitToLedger(this.ledger, call, meta, ctx);
  }
}

/** UpdateService: `service.id` is filled from the route only if absent. */
function withServiceId(body: Body, pathId?: string): Body {
  const svc = body.service;
  if (typeof svc !== 'object' || svc === null || Array.isArray(svc)) return body;
  const s = svc as Body;
  if (s.id !== undefined || pathId === undefined) return body;
  return { ...body, service: { ...s, id: pathId } };
}

/** The body value repeated from the path must equal it (after normalisation); absent values are taken from the path. */
function bindPathField(spec: ActionSpec, params: Record<string, string>, body: Body): Body {
  const pf = spec.pathField;
  if (!pf) return body;
  const pathValue = params[pf.param]!;
  const norm = (v: string) => (pf.field.endsWith('alias') ? (normalizeAlias(v) as { alias?: string }).alias ?? v : v);
  if (pf.sub) {
    const obj = body[pf.field];
    if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) return body;
    const inner = (obj as Body)[pf.sub];
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
