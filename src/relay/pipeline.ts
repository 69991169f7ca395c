/**
 * The admission steps of `POST /relay` (http-api.md §10.3): envelope (step 3), sender signature (4), recipient
 * resolution (5), and the checks after idempotency — expiry (7), persona (8), provenance (10), limits (11),
 * `Reject/v1` (12). Each failure is a coded `DdnError`; the service turns it into a DeliveryResult.
 */
import type { Logger } from 'pino';
import { trimJsonObject } from '../base/json-text.js';
import { DdnError } from '../base/errors.js';
import type { RequestTrace, TraceLogger } from '../base/request-trace.js';
import type { AuthenticatedNode } from '../shared/node-auth.js';
import type { DeliveryView, DirectoryPort } from '../ports/directory-port.js';
import { MAX_METADATA_BYTES, parseEnvelope, type Envelope } from '../protocol/envelope.js';
import { isDid } from '../protocol/did.js';
import { verifySenderSignature, type SenderSignatureCheck } from '../protocol/sender-signature.js';
import type { RelaySettings } from './settings.js';

/** One `POST /relay` or `POST /relay/{recipientDid}`. */
export interface RelayRequest {
  /** The parsed JSON object body. */
  body: Record<string, unknown>;
  /** The body bytes as received. */
  rawBody: Buffer;
  /** The decoded `{recipientDid}` path segment; null on `POST /relay`. */
  pathRecipient: string | null;
  /** The verified node of a node-signed request (§10.6, step 2), else null. */
  node: AuthenticatedNode | null;
  /** The request's id (passed on to the Caches and Relays called for it) and logger (lines carry the id). */
  trace?: RequestTrace;
  /** The client's address key (RequestContext.clientKey): whose staging bytes an unsigned chunk set counts as. */
  client?: string;
}

/** A request that passed steps 3–5. */
export interface Resolved {
  env: Envelope;
  view: DeliveryView;
  /** The client envelope text (JSON object, no provenance) — what is staged, stored and pushed live. */
  clientEnvelope: Buffer;
  /** The request's id and logger. */
  trace?: RequestTrace;
  /** The client's address key, when known. */
  client?: string;
}

/** What the admission steps read. */
export interface AdmissionDeps {
  settings: RelaySettings;
  directory: DirectoryPort;
  logger?: Logger;
  /** The §10.2 sender-signature check (tests count its calls); `verifySenderSignature` by default. */
  verifySender?: SenderSignatureCheck;
}

/**
 * A Directory call; anything but a coded answer is 503 `policy_lookup_failed` — never "not found" (§10.3 step 5).
 * The failure is logged through `log`, the request's logger.
 */
async function lookup<T>(log: TraceLogger | undefined, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof DdnError && err.code === 'policy_lookup_failed') {
      throw new DdnError('policy_lookup_failed', err.message, { ...err.details, retry_after_seconds: 1 });
    }
    log?.warn({ err }, 'directory lookup failed');
    throw new DdnError('policy_lookup_failed', 'the Directory could not answer; try again later', { retry_after_seconds: 1 });
  }
}

/** The provenance names the resolution's winning policy, revision and rule (§10.3 step 10). */
function namesWinner(view: DeliveryView, p: NonNullable<Envelope['provenance']>): boolean {
  const w = view.policy;
  return w !== null && w.policyId === p.policyId && w.policyRevision === p.policyRevision && w.ruleId === p.ruleId;
}

/** Steps 3–5: envelope, sender signature, recipient. */
export async function admit(req: RelayRequest, nowMs: number, deps: AdmissionDeps): Promise<Resolved> {
  const { settings, directory } = deps;
  const log = req.trace?.log ?? deps.logger;
  const id = req.trace?.id;
  // 3. envelope (provenance fields only on node-signed requests, §10.1)
  const env = parseEnvelope(req.body, {
    nowMs,
    clockSkewSeconds: settings.proofClockSkewSeconds,
    allowPlaintext: settings.allowPlaintext,
    allowProvenance: req.node !== null,
    malformedSenderSignatureIs403: !settings.profile.acceptsDeployedClientForms,
  });
  // 4. sender signature (§10.2)
  if (env.sender !== null) {
    const sender = env.sender;
    const record = await lookup(log, () => directory.getDid(sender.did, id));
    (deps.verifySender ?? verifySenderSignature)(settings.profile, env.fields, sender, record);
  }
  // 5. recipient: the path names a base DID equal to the target byte for byte; aliases must use POST /relay
  if (req.pathRecipient !== null && (!isDid(req.pathRecipient) || !env.targetIsDid || env.target !== req.pathRecipient)) {
    throw new DdnError('recipient_mismatch', 'the recipient in the body does not name the DID of the path', {
      field: 'to',
      path: req.pathRecipient,
    });
  }
  let did = env.target;
  if (!env.targetIsDid) {
    const owner = await lookup(log, () => directory.lookupAlias(env.target, id));
    if (owner === null) throw new DdnError('recipient_not_found', 'no DID holds this alias', { field: 'to' });
    did = owner;
  }
  let view = await lookup(log, () => directory.resolveDelivery(did, env.persona, env.tag, id));
  // a provenance naming another rule than a cached winner: the cache may be behind the sender (policy-cache.ts)
  const p = env.provenance;
  if (p !== null && view !== null && directory.forget !== undefined && !namesWinner(view, p)) {
    directory.forget(did, env.persona, env.tag);
    view = await lookup(log, () => directory.resolveDelivery(did, env.persona, env.tag, id));
  }
  if (view === null || view.recipient.deactivated) {
    throw new DdnError('recipient_not_found', 'the recipient DID has no active record', { field: 'to' });
  }
  const clientEnvelope = env.provenance === null ? trimJsonObject(req.rawBody) : Buffer.from(JSON.stringify(env.fields), 'utf8');
  return { env, view, clientEnvelope, trace: req.trace, ...(req.client === undefined ? {} : { client: req.client }) };
}

/** Steps 7–12, in order. `bodyBytes` is the request body's length. */
export function checkDeliverable(r: Resolved, bodyBytes: number, nowMs: number, settings: RelaySettings): void {
  const { env, view } = r;
  // 7. expiry
  if (env.requestedExpiryMs <= nowMs) {
    throw new DdnError('envelope_expired', 'timestamp + ttl is already past', { expired_at: new Date(env.requestedExpiryMs).toISOString() });
  }
  // 8. persona liveness
  if (env.persona !== null && view.personaState !== 'ok') {
    throw new DdnError('persona_not_deliverable', 'the addressed persona is not deliverable', {
      persona: env.persona,
      reason: view.personaState ?? 'persona_not_found',
    });
  }
  // 9 happened with the resolution (a failed lookup is 503 there). 10. provenance must name the winner.
  const p = env.provenance;
  const policy = view.policy;
  if (p !== null && (policy === null || policy.policyId !== p.policyId || policy.policyRevision !== p.policyRevision || policy.ruleId !== p.ruleId)) {
    throw new DdnError('policy_provenance_stale', 'the policy provenance does not match the current resolution', {
      expected: policy === null ? null : { policy_id: policy.policyId, policy_revision: policy.policyRevision, rule_id: policy.ruleId },
      received: { policy_id: p.policyId, policy_revision: p.policyRevision, rule_id: p.ruleId },
    });
  }
  // 11. limits: the effective constraints, capped by this node's advertised limits
  const c = view.effectiveConstraints;
  const envelopeLimit = Math.min(c.maxHttpEnvelopeBytes, settings.maxHttpEnvelopeBytes);
  if (bodyBytes > envelopeLimit) {
    throw new DdnError('envelope_too_large', `the envelope exceeds ${envelopeLimit} bytes`, { limit_bytes: envelopeLimit, received: bodyBytes });
  }
  if (env.chunk === null) {
    const limit = Math.min(c.maxUnchunkedMessageBytes, settings.maxUnchunkedMessageBytes);
    if (env.payloadBytes > limit) {
      throw new DdnError('payload_too_large', `the payload exceeds ${limit} bytes`, { limit_bytes: limit, received: env.payloadBytes });
    }
  } else {
    const limit = Math.min(c.maxChunkBytes, settings.maxChunkBytes);
    if (env.payloadBytes > limit) {
      throw new DdnError('chunk_too_large', `the chunk payload exceeds ${limit} bytes`, { limit_bytes: limit, received: env.payloadBytes });
    }
  }
  if (env.metadataBytes > MAX_METADATA_BYTES) {
    throw new DdnError('metadata_too_large', `envelope metadata exceeds ${MAX_METADATA_BYTES} bytes`, {
      limit_bytes: MAX_METADATA_BYTES,
      received: env.metadataBytes,
    });
  }
  // 12. Reject/v1 (chunks included; nothing is staged)
  if (policy !== null && policy.action.type === 'Reject/v1') {
    throw new DdnError('policy_rejected', "the recipient's delivery policy rejects this envelope", {
      reason_code: policy.action.reason_code,
      policy_id: policy.policyId,
      policy_revision: policy.policyRevision,
      rule_id: policy.ruleId,
      policy_source: policy.source,
    });
  }
}
