/**
 * The Cache's use-cases (http-api.md §11): store, retrieve, acknowledge, purge. Transport-free: routes hand
 * over parsed bodies, raw bytes and proof fields; everything fails with coded `DdnError`s.
 */
import type { CacheLimitsResponse } from '../wire/cache.js';
import type { Logger } from 'pino';
import type { Clock } from '../base/clock.js';
import type { RequestTrace, TraceLogger } from '../base/request-trace.js';
import { DdnError, type ErrorCode } from '../base/errors.js';
import type { AuthenticatedNode } from '../shared/node-auth.js';
import type { DeliveryView, DirectoryPort } from '../ports/directory-port.js';
import type { NonceClaim } from '../ports/nonce-registry.js';
import { MAX_METADATA_BYTES, parseEnvelope, type Envelope } from '../protocol/envelope.js';
import { nodeSignatureError } from '../protocol/node-signature.js';
import type { ProofOperation } from '../protocol/retrieval-proof.js';
import { ackSubject } from '../protocol/retrieval-proof.js';
import { verifySenderSignature, type SenderSignatureCheck } from '../protocol/sender-signature.js';
import { namedStoreStep, publishedDestination, targetDestination, type CacheDestination } from './destination.js';
import { trimJsonObject } from './envelope-text.js';
import { cacheStoredEvent, type CacheEventSink } from './events.js';
import type { ChunkSetView, EntryWithEnvelope, MailboxStore, MessagePage, NewEntry, PutResult, SummaryEntry, SweepResult } from './mailbox-store.js';
import type { AckRequest, ProofInput } from './proof-request.js';
import { badProofSignature, checkProofTiming, checkRetrievalProof, proofSignatureVerifies, type CheckedProof, type ProofCheck } from './proof-verifier.js';
import { computeRetention } from './retention.js';
import type { CacheSettings } from './settings.js';

/** What the Cache is built from. */
export interface CacheServiceDeps {
  store: MailboxStore;
  directory: DirectoryPort;
  clock: Clock;
  settings: CacheSettings;
  events?: CacheEventSink;
  logger?: Logger;
  /** The §10.2 sender-signature check (tests count its calls); `verifySenderSignature` by default. */
  verifySender?: SenderSignatureCheck;
}

/** 413 `metadata_too_large` past {@link MAX_METADATA_BYTES} (§11.1 step 3). */
function checkMetadata(env: Envelope): void {
  if (env.metadataBytes > MAX_METADATA_BYTES) {
    throw new DdnError('metadata_too_large', `envelope metadata exceeds ${MAX_METADATA_BYTES} bytes`, {
      limit_bytes: MAX_METADATA_BYTES,
      received: env.metadataBytes,
    });
  }
}

/** Refusals of steps 6–7 a resolution older than the sender's can cause (see `storeChecked`). */
const STALE_VIEW_REFUSALS: ReadonlySet<string> = new Set(['cache_not_published', 'policy_applies', 'policy_provenance_stale']);

/** One `POST /cache/store`. */
export interface StoreRequest {
  /** The parsed JSON object body. */
  body: Record<string, unknown>;
  /** The body bytes exactly as received. */
  rawBody: Buffer;
  /** The verified node of a node-signed request (§10.6), else null. */
  node: AuthenticatedNode | null;
}

/**
 * One store handed over in-process by this node's Relay (http-api.md §10.4.1 step 2, "in-process"): what the Relay
 * made of the envelope, instead of its text. Only the composition root can make one (no route does).
 */
export interface AdmittedStoreRequest {
  /** The Relay's parse of `rawBody` (§10.3 step 3), without provenance. */
  env: Envelope;
  /** The Relay's resolution of the recipient (step 5), without a winning rule: the lookup this Cache would make. */
  view: DeliveryView;
  /** The envelope text, as it would have been sent. */
  rawBody: Buffer;
  /** The node the store is made as. */
  node: AuthenticatedNode;
  /**
   * True when the Relay verified the sender signature against the DID records this Cache reads (the same
   * DirectoryPort); otherwise the Cache verifies it again (a record reused by the Relay may be older).
   */
  senderVerified: boolean;
}

/**
 * Renders what a retrieval read into its answer; `nowMs` is the instant it was read at (the items'
 * `proof.timestamp`).
 */
export type Present<T, R> = (value: T, nowMs: number) => R;

/** A promise's outcome as a value, to await later without leaving a rejection unhandled in between. */
type Outcome<T> = { ok: true; value: T } | { ok: false; error: unknown };

function capture<T>(p: Promise<T>): Promise<Outcome<T>> {
  return p.then(
    (value) => ({ ok: true, value }),
    (error: unknown) => ({ ok: false, error }),
  );
}

type LookupFailure = Extract<ErrorCode, 'policy_lookup_failed' | 'ledger_unavailable'>;

/**
 * The Cache role. Each use-case takes the request it serves (`trace`): what it logs goes through the request's
 * logger (its lines carry the request id), and its Directory lookups carry the request id (passed on as
 * `X-Request-Id` by a remote Directory's port). Without one (outside a request) it logs through the Cache's own
 * logger and asks without an id.
 */
export class CacheService {
  constructor(private readonly deps: CacheServiceDeps) {}

  get settings(): CacheSettings {
    return this.deps.settings;
  }

  /** `GET /cache/limits` (§11.7). */
  limits(): CacheLimitsResponse {
    const s = this.deps.settings;
    return {
      max_http_envelope_bytes: s.maxEnvelopeBytes,
      max_metadata_bytes: MAX_METADATA_BYTES,
      max_retention_seconds: s.maxRetentionSeconds,
      chunk_staging_window_seconds: s.chunkStagingWindowSeconds,
      proof_clock_skew_seconds: s.proofClockSkewSeconds,
      allow_plaintext: s.allowPlaintext,
    };
  }

  // ------------------------------------------------------------------ store (§11.1)

  /**
   * `POST /cache/store` steps 3–12 (the route did 1–2). A node request's nonce is recorded with the entry, or
   * on its own when the store fails, so a signed request is never accepted twice.
   */
  async store(req: StoreRequest, trace?: RequestTrace): Promise<PutResult> {
    return this.recordingNonce(req.node, async () => {
      const env = this.parse(req.body, req.node !== null);
      if (env.sender !== null) await this.verifySender(env, trace);
      return this.storeParsed(env, req.rawBody, req.node, await this.resolveRecipient(env, trace), trace);
    });
  }

  /**
   * The store of an envelope this node's Relay already parsed, verified and resolved (§10.4.1 step 2 in-process):
   * steps 3–5 are taken from the Relay, but for what this Cache's own settings decide (plaintext, the clock skew,
   * the metadata bound) and, unless `senderVerified`, the sender signature; steps 6–12 run as for `store`.
   */
  async storeAdmitted(req: AdmittedStoreRequest, trace?: RequestTrace): Promise<PutResult> {
    return this.recordingNonce(req.node, async () => {
      const { env } = req;
      const { settings, clock } = this.deps;
      if (env.plaintext && !settings.allowPlaintext) throw new DdnError('plaintext_not_allowed', 'plaintext payloads are refused by this node');
      if (env.timestampMs > clock.nowMs() + settings.proofClockSkewSeconds * 1000) {
        throw new DdnError('invalid_timestamp', 'timestamp is in the future', { field: 'timestamp' });
      }
      checkMetadata(env);
      if (env.sender !== null && !req.senderVerified) await this.verifySender(env, trace);
      return this.storeParsed(env, req.rawBody, req.node, req.view, trace);
    });
  }

  /** Runs `fn`; when it fails, a node request's nonce is recorded on its own, so a signed request is never accepted twice. */
  private async recordingNonce<T>(node: AuthenticatedNode | null, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (node !== null && !(err instanceof DdnError && err.code === 'invalid_node_signature')) {
        await this.deps.store.claimNonce(node.claim, this.deps.clock.nowMs()).catch(() => false);
      }
      throw err;
    }
  }

  /** Step 3: the envelope (provenance only from a node) and its metadata bound. */
  private parse(body: Record<string, unknown>, fromNode: boolean): Envelope {
    const { settings, clock } = this.deps;
    const env = parseEnvelope(body, {
      nowMs: clock.nowMs(),
      clockSkewSeconds: settings.proofClockSkewSeconds,
      allowPlaintext: settings.allowPlaintext,
      allowProvenance: fromNode,
      malformedSenderSignatureIs403: !settings.profile.acceptsDeployedClientForms,
    });
    checkMetadata(env);
    return env;
  }

  /** Steps 6–12 for an envelope that passed 3–5 (`view`: the recipient's resolution). */
  private async storeParsed(
    env: Envelope,
    rawBody: Buffer,
    node: AuthenticatedNode | null,
    resolved: DeliveryView,
    trace: RequestTrace | undefined,
  ): Promise<PutResult> {
    const { settings, clock } = this.deps;
    const nowMs = clock.nowMs();
    let view = resolved;
    // 6–7. destination and policy
    let destination: CacheDestination;
    try {
      destination = await this.checkDestination(env, view, trace);
    } catch (err) {
      // A reused resolution (a Cache in its own process) may be older than the sender's: a policy or a document
      // changed within the reuse window. It is asked anew once before the store is refused.
      const { directory } = this.deps;
      if (!(err instanceof DdnError && STALE_VIEW_REFUSALS.has(err.code)) || directory.forget === undefined) throw err;
      directory.forget(view.recipient.did, env.persona, env.tag);
      view = await this.resolveRecipient(env, trace);
      destination = await this.checkDestination(env, view, trace);
    }
    // 8. limits
    const c = view.effectiveConstraints;
    if (rawBody.length > c.maxHttpEnvelopeBytes) {
      throw new DdnError('payload_too_large', 'the envelope exceeds the effective max_http_envelope_bytes', {
        limit_bytes: c.maxHttpEnvelopeBytes,
      });
    }
    const payloadLimit = env.chunk === null ? c.maxUnchunkedMessageBytes : c.maxChunkBytes;
    if (env.payloadBytes > payloadLimit) {
      throw new DdnError('payload_too_large', `the payload exceeds the effective ${env.chunk === null ? 'max_unchunked_message_bytes' : 'max_chunk_bytes'}`, {
        limit_bytes: payloadLimit,
        received: env.payloadBytes,
      });
    }
    // 9. retention
    const retention = computeRetention(env.requestedExpiryMs, c.effectiveTtlSeconds, settings.maxRetentionSeconds, nowMs);
    // 10–12. dedupe, chunk rules, durable write
    const envelope = trimJsonObject(rawBody);
    const p = env.provenance;
    const entry: NewEntry = {
      messageId: env.messageId,
      recipientDid: view.recipient.did,
      contentHash: env.contentHash,
      storedAtMs: nowMs,
      expiresAtMs: retention.expiresAtMs,
      maxTtlSeconds: retention.maxTtlSeconds,
      appliedTtlSeconds: retention.appliedTtlSeconds,
      tag: env.tag,
      applicationId: env.applicationId,
      chunk: env.chunk,
      sizeBytes: envelope.length,
      provenance: p === null ? null : { policyId: p.policyId, policyRevision: p.policyRevision, ruleId: p.ruleId, blockHash: p.blockHash },
      envelope,
    };
    let result: PutResult;
    try {
      result = await this.deps.store.put({
        entry,
        nowMs,
        chunkWindowMs: settings.chunkStagingWindowSeconds * 1000,
        claim: node?.claim ?? null,
        quotaBytes: settings.maxBytesPerRecipient,
        budgetBytes: settings.storageBudgetBytes ?? null,
      });
    } catch (err) {
      if (err instanceof DdnError && err.code === 'proof_nonce_replayed') throw nodeSignatureError('nonce_replayed');
      throw err;
    }
    const log = this.logOf(trace);
    log?.debug({ message_id: result.entry.messageId, recipient: result.entry.recipientDid, deduped: result.deduped, bytes: envelope.length }, 'cache store');
    if (!result.deduped) this.deps.events?.emit(cacheStoredEvent(env, view.persona, destination, result.entry), log);
    return result;
  }

  /** The logger of what is done for `trace`'s request (the Cache's own outside a request). */
  private logOf(trace: RequestTrace | undefined): TraceLogger | undefined {
    return trace?.log ?? this.deps.logger;
  }

  /** A Directory lookup made for `trace`'s request (`fn` is given its id); a failure other than `code` is logged and becomes `code`. */
  private async lookup<T>(fn: (requestId: string | undefined) => Promise<T>, code: LookupFailure, trace: RequestTrace | undefined): Promise<T> {
    try {
      return await fn(trace?.id);
    } catch (err) {
      if (err instanceof DdnError && err.code === code) throw err;
      this.logOf(trace)?.warn({ err }, 'directory lookup failed');
      throw new DdnError(code, 'the Directory could not answer; try again later', { retry_after_seconds: 1 });
    }
  }

  /** Step 4 (§10.2): sender active, key resolved, signature verifies → else 403 `invalid_sender_signature`. */
  private async verifySender(env: Envelope, trace: RequestTrace | undefined): Promise<void> {
    const sender = env.sender!;
    const rec = await this.lookup((id) => this.deps.directory.getDid(sender.did, id), 'policy_lookup_failed', trace);
    (this.deps.verifySender ?? verifySenderSignature)(this.deps.settings.profile, env.fields, sender, rec);
  }

  /** Step 5: the DID (directly or through its alias) must have an active record; a failed lookup is 503. */
  private async resolveRecipient(env: Envelope, trace: RequestTrace | undefined): Promise<DeliveryView> {
    const { directory } = this.deps;
    let did = env.target;
    if (!env.targetIsDid) {
      const owner = await this.lookup((id) => directory.lookupAlias(env.target, id), 'policy_lookup_failed', trace);
      if (owner === null) throw new DdnError('recipient_not_found', 'no DID holds this alias', { field: 'to' });
      did = owner;
    }
    const view = await this.lookup((id) => directory.resolveDelivery(did, env.persona, env.tag, id), 'policy_lookup_failed', trace);
    if (view === null || view.recipient.deactivated) {
      throw new DdnError('recipient_not_found', 'the recipient DID has no active record', { field: 'to' });
    }
    return view;
  }

  /**
   * Steps 6–7. Plain stores: the recipient publishes this Cache (422 `cache_not_published`), and no policy rule
   * wins (422 `policy_applies`). Provenance stores: the resolution names the same policy, revision and rule
   * (else 409 `policy_provenance_stale` — a stale provenance cannot name a step of the current policy, so the
   * step check is only meaningful once it matches) and its named Store/Archive step targets a service of this
   * Cache (or the winner is `BaseDidDelivery/v1` and the plain-store rule holds).
   */
  private async checkDestination(env: Envelope, view: DeliveryView, trace: RequestTrace | undefined): Promise<CacheDestination> {
    const { profile } = this.deps.settings;
    const own = this.deps.settings.publicCacheUrls();
    const policy = view.policy;
    const prov = env.provenance;
    const notPublished = () => new DdnError('cache_not_published', 'the recipient does not publish this Cache', { recipient: view.recipient.did });
    if (prov === null) {
      const dest = publishedDestination(view.recipient.document, profile.cacheServiceType, own);
      if (dest === undefined) throw notPublished();
      if (policy !== null) {
        throw new DdnError('policy_applies', 'a delivery policy applies: send the envelope through a Relay', {
          policy_id: policy.policyId,
          rule_id: policy.ruleId,
        });
      }
      return dest;
    }
    if (policy === null || policy.policyId !== prov.policyId || policy.policyRevision !== prov.policyRevision || policy.ruleId !== prov.ruleId) {
      throw new DdnError('policy_provenance_stale', 'the policy provenance does not match the current resolution', {
        expected: policy === null ? null : { policy_id: policy.policyId, policy_revision: policy.policyRevision, rule_id: policy.ruleId },
        received: { policy_id: prov.policyId, policy_revision: prov.policyRevision, rule_id: prov.ruleId },
      });
    }
    if (policy.action.type === 'BaseDidDelivery/v1') {
      const dest = publishedDestination(view.recipient.document, profile.cacheServiceType, own);
      if (dest === undefined) throw notPublished();
      return dest;
    }
    const step = namedStoreStep(policy.action, prov.context.step_id);
    if (step === undefined) throw notPublished();
    const type = step.operation === 'Store' ? profile.cacheServiceType : profile.archiveServiceType;
    for (const t of step.targets) {
      const rec = await this.lookup((id) => this.deps.directory.getDid(t.serviceDid, id), 'policy_lookup_failed', trace);
      if (rec === null || rec.deactivated) continue;
      const dest = targetDestination(rec.document, t.serviceId, type, own);
      if (dest !== undefined) return dest;
    }
    throw notPublished();
  }

  // ------------------------------------------------------------------ retrieval (§11.4–§11.6)

  /** Proof steps 2–7 (the recipient's record looked up for 4–7); step 8 is the caller's. */
  private async checkProof(operation: ProofOperation, subject: string, proof: ProofInput, trace: RequestTrace | undefined): Promise<CheckedProof> {
    const { settings, clock, directory } = this.deps;
    checkProofTiming(proof, clock.nowMs(), settings.proofClockSkewSeconds);
    const record = await this.lookup((id) => directory.getDid(proof.did, id), 'ledger_unavailable', trace);
    const check: ProofCheck = {
      profile: settings.profile,
      operation,
      subject,
      proof,
      record,
      publicCacheUrls: settings.publicCacheUrls(),
      nowMs: clock.nowMs(),
      skewSeconds: settings.proofClockSkewSeconds,
    };
    return checkRetrievalProof(check);
  }

  /** Proof steps 2–8; returns the nonce claim (step 9 is recorded by the caller's write). */
  private async authorize(operation: ProofOperation, subject: string, proof: ProofInput, trace: RequestTrace | undefined): Promise<NonceClaim> {
    const checked = await this.checkProof(operation, subject, proof, trace);
    if (!(await proofSignatureVerifies(checked))) throw badProofSignature();
    return checked.claim;
  }

  /**
   * Proof steps 2–9 for a read, then the read and its answer. The signature (8) is checked on the verifier thread
   * while the nonce (9) is being recorded by the writer; once the signature holds, the mailbox is read and the
   * answer rendered while the nonce's commit is still on its way. Each of the three used to wait for the one before
   * it, and that was most of a retrieval's latency. The answer keeps the spec's order: a bad signature is 403
   * `invalid_signature` whatever the nonce (nothing is read), and the claim made for it is released again, so a
   * refused proof leaves nothing behind; then a used nonce is 409 `proof_nonce_replayed`, and what was read for it
   * is dropped; then the read's own errors (404s). The read is taken at the instant the signature held, so the
   * answer is the mailbox as it was within the request.
   */
  private async admitAndRead<R>(
    operation: ProofOperation,
    subject: string,
    proof: ProofInput,
    read: (nowMs: number) => Promise<R>,
    trace: RequestTrace | undefined,
  ): Promise<R> {
    const { store, clock } = this.deps;
    const checked = await this.checkProof(operation, subject, proof, trace);
    const claimed = capture(store.claimNonce(checked.claim, clock.nowMs()));
    if (!(await proofSignatureVerifies(checked))) {
      const claim = await claimed;
      if (claim.ok && claim.value) {
        await store.releaseNonce(checked.claim).catch((err: unknown) => {
          // the claim then simply expires with the proof's window
          this.logOf(trace)?.warn({ err }, 'releasing the nonce of a refused proof failed');
        });
      }
      throw badProofSignature();
    }
    const answer = capture(read(clock.nowMs()));
    const claim = await claimed;
    if (!claim.ok) throw claim.error;
    if (!claim.value) throw new DdnError('proof_nonce_replayed', 'this proof nonce was already used', { header: 'X-Nonce' });
    const got = await answer;
    if (!got.ok) throw got.error;
    return got.value;
  }

  /** `GET /cache/messages/{did}` (operation `pull`). */
  messages<R>(proof: ProofInput, present: Present<MessagePage, R>, trace?: RequestTrace): Promise<R> {
    const { store, settings } = this.deps;
    return this.admitAndRead(
      'pull',
      '*',
      proof,
      async (nowMs) => present(await store.listMessages(proof.did, nowMs, settings.maxResponseEnvelopeBytes), nowMs),
      trace,
    );
  }

  /** `GET /cache/summary/{did}[/{device}]` (operation `summary`). */
  summary<R>(proof: ProofInput, present: Present<SummaryEntry[], R>, trace?: RequestTrace): Promise<R> {
    return this.admitAndRead('summary', '*', proof, async (nowMs) => present(await this.deps.store.listSummary(proof.did, nowMs), nowMs), trace);
  }

  /** `GET /cache/chunks/{did}/{group}` (operation `chunks`); absent or incomplete → 404 `chunk_set_not_found`. */
  chunks<R>(proof: ProofInput, groupId: string, present: Present<ChunkSetView, R>, trace?: RequestTrace): Promise<R> {
    return this.admitAndRead(
      'chunks',
      groupId,
      proof,
      async (nowMs) => {
        const set = await this.deps.store.getChunkSet(proof.did, groupId, nowMs);
        if (set === null) throw new DdnError('chunk_set_not_found', 'no complete chunk set with this id', { message_group_id: groupId });
        return present(set, nowMs);
      },
      trace,
    );
  }

  /** `GET /cache/message/{did}/{id}` (operation `pull_message`); not visible → 404 `message_not_found`. */
  message<R>(proof: ProofInput, messageId: string, present: Present<EntryWithEnvelope, R>, trace?: RequestTrace): Promise<R> {
    return this.admitAndRead(
      'pull_message',
      messageId,
      proof,
      async (nowMs) => {
        const e = await this.deps.store.getMessage(proof.did, messageId, nowMs);
        if (e === null) throw new DdnError('message_not_found', 'no retrievable message with this id', { message_id: messageId });
        return present(e, nowMs);
      },
      trace,
    );
  }

  /** `POST /cache/ack` (operation `ack`): deletes the listed entries; returns the ids actually deleted. */
  async ack(req: AckRequest, trace?: RequestTrace): Promise<string[]> {
    const claim = await this.authorize('ack', ackSubject(req.messageIds), req.proof, trace);
    return this.deps.store.ack(req.proof.did, req.messageIds, this.deps.clock.nowMs(), claim);
  }

  // ------------------------------------------------------------------ purge (§11.7)

  /** Deletes what expired by now. */
  sweep(): Promise<SweepResult> {
    return this.deps.store.sweep(this.deps.clock.nowMs());
  }
}
