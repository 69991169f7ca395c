/**
 * Directory use-cases over the embedded ledger (http-api.md §2–§5): reads of finalized state; DID registration
 * and every DID mutation run the write pipeline (write-pipeline.ts) with the change kinds of
 * src/directory/changes/did-*.ts. Nothing here speaks HTTP.
 */
import type { AliasResponse, BlockResponse, NoncesResponse, RegistrationStatusResponse, TransactionResponse } from '../wire/directory.js';
import { to0x } from '../base/bytes.js';
import { isoMs } from '../base/clock.js';
import { DdnError } from '../base/errors.js';
import type { DirectoryLedger } from '../ledger/ports.js';
import type { StateReader } from '../ledger/state.js';
import { getAliasOwner, getDidRecord, getNonce, type NonceDomain } from '../ledger/records.js';
import { normalizeAlias } from '../protocol/alias.js';
import type { ActionSpec } from './actions.js';
import { ApplicationService } from './applications.js';
import {
  parseDidActionPrepare,
  parseDidActionSubmit,
  PREPARE_DID_ACTION,
  SUBMIT_DID_ACTION,
  type DidActionPrepare,
  type DidActionSigned,
} from './changes/did-actions.js';
import {
  parseRegistrationPrepare,
  parseRegistrationSubmit,
  PREPARE_DID_REGISTRATION,
  SUBMIT_DID_REGISTRATION,
  type RegistrationPrepareInput,
  type RegistrationSubmitInput,
} from './changes/did-registration.js';
import { resolveDelivery, type DeliveryResolution } from './delivery-resolution.js';
import type { DirectoryDeps } from './deps.js';
import { createTxtLookup } from './dns-verifier.js';
import { PolicyV2Service } from './policies-v2.js';
import { PolicyV3Service } from './policies-v3.js';
import { PersonaChallenges } from './persona-challenges.js';
import { PersonaService } from './personas.js';
import { assertDid } from './submission.js';
import { txErrorBody } from './ledger-errors.js';
import { pendingOperationsOf, renderDidRecordPart, type DidRecordPart } from './record-view.js';
import { ResolveCache } from './resolve-cache.js';
import { prepareChangeSync, submitChange } from './write-pipeline.js';
import { subjectKindOf } from './subject-kind.js';
import type { DidRecordResponse } from '../wire/directory.js';
import {
  MutationPrepareBodySchema,
  MutationSubmitBodySchema,
  RegistrationPrepareBodySchema,
  RegistrationSubmitBodySchema,
  type MutationPrepareBody,
  type MutationPrepareResponse,
  type MutationSubmitBody,
  type MutationSubmitResponse,
  type RegistrationPrepareBody,
  type RegistrationPrepareResponse,
  type RegistrationSubmitBody,
  type RegistrationSubmitResponse,
} from '../wire/directory-writes.js';
import { fieldsOfWire } from '../http/route.js';

export type { DirectoryDeps };

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

  private resolveBodies: ResolveCache | undefined;

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

  /** `GET /resolve/{did}`'s rendered bodies, one cache per service (made on first use: the routes, the metrics). */
  get resolveCache(): ResolveCache {
    this.resolveBodies ??= new ResolveCache(this.deps.ledger, (did, view) => this.resolvePart(did, view), this.deps.resolveCacheBytes);
    return this.resolveBodies;
  }

  private get ledger(): DirectoryLedger {
    return this.deps.ledger;
  }

  // ---------------------------------------------------------------- reads (§3)

  resolve(did: string): DidRecordResponse {
    const block = this.ledger.finalizedRefNow();
    return { ...this.resolvePart(did, this.ledger.finalizedView()), block_number: block.number, block_hash: block.hash };
  }

  /** {@link resolve} without the block fields, reading finalized state through `view` (the resolve cache records what it reads). */
  resolvePart(did: string, view: StateReader): DidRecordPart {
    assertDid(did);
    const rec = getDidRecord(view, did);
    if (!rec) {
      const reg = this.pendingRegistration(did);
      if (reg) throw new DdnError('registration_pending', 'registration awaiting confirmation', { tx_hash: reg });
      throw new DdnError('did_not_found', 'DID not found', { did });
    }
    const pending = pendingOperationsOf(this.ledger.pendingEntries(), did);
    return renderDidRecordPart(did, rec, getNonce(view, 'document_nonce', did), pending);
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

  block(which: string): BlockResponse {
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
        const x: BlockResponse['extrinsics'][number] = {
          tx_hash: t.txHash,
          extrinsic: t.extrinsic,
          success: t.status === 'included',
          action: t.meta.action,
          subject: t.meta.subject,
          subject_kind: subjectKindOf(t),
        };
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

  // ---------------------------------------------------------------- changes (§4, §5): the write pipeline

  // The routes' parsers decode each request's shape (src/directory/routes.ts); these take their results.

  prepareParsedRegistration(input: RegistrationPrepareInput): RegistrationPrepareResponse {
    return prepareChangeSync(this.deps, PREPARE_DID_REGISTRATION, input);
  }

  submitParsedRegistration(input: RegistrationSubmitInput): Promise<RegistrationSubmitResponse> {
    return submitChange(this.deps, SUBMIT_DID_REGISTRATION, input);
  }

  prepareParsedMutation(input: DidActionPrepare): MutationPrepareResponse {
    return prepareChangeSync(this.deps, PREPARE_DID_ACTION, input);
  }

  submitParsedMutation(input: DidActionSigned): Promise<MutationSubmitResponse> {
    return submitChange(this.deps, SUBMIT_DID_ACTION, input);
  }

  // In-process callers (the node's own registration, src/app/local-registration.ts) send the routes' wire bodies
  // (src/wire/directory-writes.ts), read by the same parsers.

  prepareRegistration(body: RegistrationPrepareBody): RegistrationPrepareResponse {
    return this.prepareParsedRegistration(parseRegistrationPrepare(this.deps.profile, fieldsOfWire(RegistrationPrepareBodySchema, body)));
  }

  submitRegistration(body: RegistrationSubmitBody): Promise<RegistrationSubmitResponse> {
    return this.submitParsedRegistration(parseRegistrationSubmit(this.deps.profile, fieldsOfWire(RegistrationSubmitBodySchema, body)));
  }

  prepareMutation(did: string, body: MutationPrepareBody): MutationPrepareResponse {
    return this.prepareParsedMutation(parseDidActionPrepare(did, fieldsOfWire(MutationPrepareBodySchema, body)));
  }

  async submitMutation(spec: ActionSpec, params: Record<string, string>, body: MutationSubmitBody): Promise<MutationSubmitResponse> {
    return this.submitParsedMutation(parseDidActionSubmit(this.deps.profile, { spec, params, body: fieldsOfWire(MutationSubmitBodySchema, body) }));
  }
}
