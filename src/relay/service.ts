/**
 * The Relay's use-cases (http-api.md §10.3): one envelope in, one DeliveryResult out. Steps 3–5 and 7–12 are
 * in `pipeline.ts`; this file adds step 2's nonce record, idempotency (6), chunk staging (13, §10.4.3),
 * delivery through the {@link DeliveryExecutor} the winning action selects (14) and the events (15).
 * Transport-free: the routes hand over parsed bodies and raw bytes.
 */
import { insufficientStorage, isStorageFailure } from '../base/storage-errors.js';
import type { RelayLimitsResponse } from '../wire/relay.js';
import type { Logger } from 'pino';
import { isoMs, type Clock } from '../base/clock.js';
import { DdnError, isDdnError } from '../base/errors.js';
import type { RequestTrace, TraceLogger } from '../base/request-trace.js';
import type { DirectoryPort } from '../ports/directory-port.js';
import type { SenderSignatureCheck } from '../protocol/sender-signature.js';
import { messageIdReuse } from '../protocol/envelope.js';
import { eventEnvelopeContext } from '../protocol/event-envelope.js';
import type { RelayEvent } from '../ports/node-events.js';
import { nodeSignatureError } from '../protocol/node-signature.js';
import { failureResult, NO_ATTEMPT, successResult, type DeliveryResult } from './delivery-result.js';
import type { DeliveryExecutor, DeliveryJob } from './executor.js';
import { admit, checkDeliverable, type RelayRequest, type Resolved } from './pipeline.js';
import { limitsBody, type RelaySettings } from './settings.js';
import type { RelayStagingStore, RelaySweepResult, StageOutcome } from './staging-store.js';

export type { RelayEvent };

/** The executors step 14 chooses from. */
export interface RelayExecutors {
  /** No winning rule, or `BaseDidDelivery/v1` (§10.4.1). */
  base: DeliveryExecutor;
  /** `DeliveryPlan/v1` (§10.4.2). */
  plan: DeliveryExecutor;
}

/** What the Relay is built from. */
export interface RelayServiceDeps {
  settings: RelaySettings;
  directory: DirectoryPort;
  store: RelayStagingStore;
  clock: Clock;
  executors: RelayExecutors;
  events?: (e: RelayEvent) => void;
  logger?: Logger;
  /** The §10.2 sender-signature check (tests count its calls); `verifySenderSignature` by default. */
  verifySender?: SenderSignatureCheck;
}

/** The Relay role. */
export class RelayService {
  /** Unchunked deliveries in progress, by message key: a concurrent duplicate request waits for the first. */
  private readonly inFlight = new Map<string, { hash: string; recipientDid: string; result: Promise<DeliveryResult> }>();
  /** Chunk sets being delivered, by (recipient, group): one delivery of a set at a time. */
  private readonly setLocks = new Map<string, Promise<unknown>>();

  constructor(private readonly deps: RelayServiceDeps) {}

  get settings(): RelaySettings {
    return this.deps.settings;
  }

  /** `GET /relay/limits` (§10.5). */
  limits(): RelayLimitsResponse {
    return limitsBody(this.deps.settings);
  }

  /** `POST /relay[/{recipientDid}]` after step 1 (body read) and step 2 (node signature verified by the route). */
  async relay(req: RelayRequest): Promise<DeliveryResult> {
    try {
      return await this.process(req);
    } catch (err) {
      if (!isDdnError(err)) {
        this.logOf(req)?.error({ err }, 'relay failed');
        // the storage failing (a full disk, an I/O error) is 507, never 500 (src/base/storage-errors.ts)
        return failureResult(isStorageFailure(err) ? insufficientStorage() : new DdnError('internal_error', 'internal error'));
      }
      return failureResult(err);
    }
  }

  /** Drops staged sets past `retry_until`, results older than 24 h and expired nonces. */
  sweep(): Promise<RelaySweepResult> {
    return this.deps.store.sweep(this.deps.clock.nowMs());
  }

  private async process(req: RelayRequest): Promise<DeliveryResult> {
    const { store, clock, settings } = this.deps;
    // 2. a node request's nonce is single-use
    if (req.node !== null && !(await store.claimNonce(req.node.claim, clock.nowMs()))) throw nodeSignatureError('nonce_replayed');
    const r = await admit(req, clock.nowMs(), this.deps);
    const { env } = r;
    const key = env.messageId.toLowerCase();
    // 6. idempotency: a delivered message id within 24 h — the same content replays the remembered result; an
    // unchunked envelope to the same recipient with other content (re-encrypted on retry) is a duplicate whose
    // first copy stands; anything else is a conflict (`messageIdReuse`)
    const incoming = { contentHash: env.contentHash, recipientDid: r.view.recipient.did, chunked: env.chunk !== null };
    const { result: prior, staged } = await store.findPrior(key, clock.nowMs(), env.chunk === null);
    if (prior !== null) return reusedResult(prior.result, messageIdReuse({ ...prior, chunked: prior.recipientDid === null }, incoming), env.messageId);
    if (env.chunk === null) {
      if (staged !== null) throw conflict(env.messageId);
      const running = this.inFlight.get(key);
      if (running !== undefined) {
        const reuse = messageIdReuse({ contentHash: running.hash, recipientDid: running.recipientDid, chunked: false }, incoming);
        return running.result.then((result) => reusedResult(result, reuse, env.messageId));
      }
    }
    checkDeliverable(r, req.rawBody.length, clock.nowMs(), settings);
    if (env.chunk !== null) return this.stageChunk(r);
    return this.deliverOnce(key, r);
  }

  /**
   * Step 14 for an unchunked envelope; a success is remembered for 24 h. The answer does not wait for that
   * record (bookkeeping, see `remember`): until it is written, an identical request gets this delivery's result
   * from the in-flight entry.
   */
  private deliverOnce(key: string, r: Resolved): Promise<DeliveryResult> {
    const run = this.deliver(r, { env: r.env, envelopes: [r.clientEnvelope], chunked: false, view: r.view, trace: r.trace });
    const recipientDid = r.view.recipient.did;
    const entry = { hash: r.env.contentHash, recipientDid, result: run };
    this.inFlight.set(key, entry);
    const recorded = run.then(
      (result) =>
        result.success ? this.remember(r, () => this.deps.store.saveResult(key, r.env.contentHash, recipientDid, result, this.deps.clock.nowMs())) : undefined,
      () => undefined,
    );
    void recorded.finally(() => {
      if (this.inFlight.get(key) === entry) this.inFlight.delete(key);
    });
    return run;
  }

  /** Runs the executor of the winning action and emits the events; failures become results. */
  private async deliver(r: Resolved, job: DeliveryJob): Promise<DeliveryResult> {
    const action = r.view.policy?.action.type;
    const executor = action === 'DeliveryPlan/v1' ? this.deps.executors.plan : this.deps.executors.base;
    this.emit('RelayAccepted', r);
    let result: DeliveryResult;
    try {
      result = await executor.execute(job);
    } catch (err) {
      if (!isDdnError(err)) throw err;
      this.logOf(r)?.info({ message_id: r.env.messageId, code: err.code }, 'relay delivery failed');
      return failureResult(err);
    }
    this.emit('RelayDelivered', r);
    return result;
  }

  /** Step 13 (§10.4.3): stage durably; once every sequence is staged, deliver the set as a whole. */
  private async stageChunk(r: Resolved): Promise<DeliveryResult> {
    const { env, view } = r;
    const chunk = env.chunk!;
    const { settings, clock, store } = this.deps;
    const nowMs = clock.nowMs();
    const outcome = await store.stage({
      recipientDid: view.recipient.did,
      groupId: chunk.groupId,
      sequence: chunk.sequence,
      messageKey: env.messageId.toLowerCase(),
      contentHash: env.contentHash,
      set: { total: chunk.total, to: env.to, tag: env.tag, applicationId: env.applicationId, sender: env.sender?.did ?? null },
      envelope: r.clientEnvelope,
      nowMs,
      retryUntilMs: nowMs + settings.stagingWindowSeconds * 1000,
      maxBytes: settings.stagingMaxBytes,
      maxSetsPerRecipient: settings.stagingMaxSetsPerRecipient,
      // a signed set counts as its sender's, an unsigned one as its client address's
      owner: env.sender !== null ? `did:${env.sender.did}` : r.client === undefined ? null : `address:${r.client}`,
      maxSetBytes: settings.stagingMaxSetBytes,
      maxBytesPerRecipient: settings.stagingMaxBytesPerRecipient,
      maxBytesPerOwner: settings.stagingMaxBytesPerSender,
      idleDropMs: settings.stagingIdleSeconds * 1000,
    });
    if (!outcome.complete) return stagedResult(chunk.groupId, outcome);
    return this.withSetLock(`${view.recipient.did}\n${chunk.groupId}`, () => this.deliverSet(r, outcome));
  }

  /** Delivers a complete staged set (chunks in sequence order); on failure the set stays staged. */
  private async deliverSet(r: Resolved, outcome: StageOutcome): Promise<DeliveryResult> {
    const { env, view } = r;
    const chunk = env.chunk!;
    const { store, clock } = this.deps;
    // A concurrent request may have delivered the set while this one waited for the lock.
    const prior = await store.findResult(env.messageId.toLowerCase(), clock.nowMs());
    if (prior !== null && prior.contentHash === env.contentHash) return prior.result;
    const chunks = await store.loadSet(view.recipient.did, chunk.groupId);
    if (chunks.length < outcome.total) return stagedResult(chunk.groupId, { ...outcome, received: chunks.length });
    const envelopes = chunks.map((c) => Buffer.from(c.envelope.buffer, c.envelope.byteOffset, c.envelope.byteLength));
    const result = await this.deliver(r, { env, envelopes, chunked: true, view, trace: r.trace });
    if (!result.success) {
      result.details = { ...result.details, message_group_id: chunk.groupId, retry_until: isoMs(outcome.retryUntilMs) };
      return result;
    }
    const delivered: DeliveryResult = {
      ...result,
      code: 'chunk_set_delivered',
      message: `chunk set delivered (${result.message})`,
      details: { ...result.details, message_group_id: chunk.groupId, received_chunks: outcome.total, expected_chunks: outcome.total },
    };
    await this.remember(r, () => store.finishSet(view.recipient.did, chunk.groupId, chunks, delivered, clock.nowMs()));
    return delivered;
  }

  private async withSetLock<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.setLocks.get(key) ?? Promise.resolve();
    const run = previous.then(fn, fn);
    const tail = run.catch(() => undefined);
    this.setLocks.set(key, tail);
    try {
      return await run;
    } finally {
      if (this.setLocks.get(key) === tail) this.setLocks.delete(key);
    }
  }

  /** A bookkeeping write after a delivery succeeded: its failure must not turn the success into an error. */
  private async remember(r: Resolved, write: () => Promise<void>): Promise<void> {
    try {
      await write();
    } catch (err) {
      this.logOf(r)?.warn({ err }, 'could not record a delivered result; an identical retry will deliver again');
    }
  }

  /** The logger of the request `r` is served for: its lines carry the request id. */
  private logOf(r: { trace?: RequestTrace }): TraceLogger | undefined {
    return r.trace?.log ?? this.deps.logger;
  }

  private emit(type: RelayEvent['type'], r: Resolved): void {
    const sink = this.deps.events;
    if (sink === undefined) return;
    const { env, view } = r;
    try {
      sink({
        type,
        message_id: env.messageId,
        recipient_did: view.recipient.did,
        persona: env.persona,
        tag: env.tag,
        application_id: env.applicationId,
        chunked: env.chunk !== null,
        message_group_id: env.chunk?.groupId ?? null,
        occurred_at: isoMs(this.deps.clock.nowMs()),
        envelope: eventEnvelopeContext(env, view.recipient.did),
        requested_expiry_ms: env.requestedExpiryMs,
      });
    } catch (err) {
      this.logOf(r)?.warn({ err }, 'relay event handler failed');
    }
  }
}

function conflict(messageId: string): DdnError {
  return new DdnError('message_id_conflict', 'this message_id was already used with different content', { message_id: messageId });
}

/**
 * The answer to a `message_id` seen again: the first delivery's result as it was for identical content (§10.3
 * step 6); for a duplicate whose content differed, that result with `details.deduped: true` when it succeeded (the
 * first copy stands, this one is dropped); a conflict → 409 `message_id_conflict`.
 */
function reusedResult(first: DeliveryResult, reuse: ReturnType<typeof messageIdReuse>, messageId: string): DeliveryResult {
  if (reuse === 'conflict') throw conflict(messageId);
  if (reuse === 'identical' || !first.success) return first;
  return { ...first, details: { ...first.details, deduped: true } };
}

/** 202 `chunk_staged` (§10.5): the set is incomplete. */
function stagedResult(groupId: string, o: StageOutcome): DeliveryResult {
  return successResult('chunk_staged', 'staged', 'chunk staged; the set is incomplete', NO_ATTEMPT, {
    message_group_id: groupId,
    received_chunks: o.received,
    expected_chunks: o.total,
    retry_until: isoMs(o.retryUntilMs),
  });
}
