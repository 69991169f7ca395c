/**
 * One Cache store by the Relay (http-api.md §10.4.1 step 2): `POST {endpoint}/cache/store`, node-signed
 * (§10.6), over keep-alive HTTP with a timeout and bounded retries with backoff — or in-process when the
 * endpoint is one of this node's `public_urls.cache` (not an outbound request, so no address guard applies).
 */
import { ENVELOPE_FIELD_CODES } from '../protocol/envelope-codes.js';
import { postNodeSigned } from '../outbound/node-post.js';
import type { Logger } from 'pino';
import type { Clock } from '../base/clock.js';
import type { NodeIdentity } from '../protocol/node-signature.js';
import type { Profile } from '../protocol/profile.js';
import { normalizeEndpoint } from '../protocol/retrieval-proof.js';
import { OutboundError, type OutboundHttp } from '../outbound/outbound-http.js';
import { DdnError, ERROR_STATUS, type ErrorCode } from '../base/errors.js';
import { isJsonObject } from '../base/guards.js';
import type { RequestTrace } from '../base/request-trace.js';
import { retry } from '../base/retry.js';
import type { Envelope } from '../protocol/envelope.js';
import type { DeliveryView } from '../ports/directory-port.js';
import type { CacheStoreResponse } from '../wire/cache.js';
import { receivedErrorBody, type ReceivedErrorBody } from '../wire/errors.js';

/**
 * The answer of a Cache to one store, in the Cache's wire types (`src/wire/`): its 202 body, or its refusal's
 * status and §0.6 error body. An HTTP answer is read into them; the in-process Cache answers them directly.
 */
export type CacheAnswer =
  | {
      /** 202: stored. */
      ok: true;
      /** The members of the store answer the Relay reads; null when the body was no JSON object. */
      body: StoreAnswerRead | null;
    }
  | {
      ok: false;
      status: number;
      /** Null when the body was no JSON object. */
      body: ReceivedErrorBody | null;
    };

/** What the Relay reads of a 202 (the retention the Cache applied), as received: each member when it has its type. */
export type StoreAnswerRead = Partial<Pick<CacheStoreResponse, 'applied_ttl' | 'expires_at'>>;

/**
 * What the Relay made of an envelope before storing it (§10.3 steps 3–5): its parse, whose sender signature it
 * verified, and the recipient's resolution. Handed to this node's own Cache instead of the text, so the Cache
 * neither parses nor verifies again (it still applies its own settings and checks, `CacheService.storeAdmitted`).
 */
export interface AdmittedEnvelope {
  /** The parse of exactly the bytes stored (no provenance). */
  env: Envelope;
  /** The resolution the Relay delivers under, without a winning rule (so never a reused one, policy-cache.ts). */
  view: DeliveryView;
}

/** One envelope to store. */
export interface StoreItem {
  /** The envelope text (a JSON object), as sent over HTTP. */
  bytes: Buffer;
  /** The Relay's parse and resolution of `bytes`, when it holds them (an unchunked envelope without provenance). */
  admitted?: AdmittedEnvelope;
}

/**
 * This node's own Cache, called in-process (wired by the composition root; roles never import each other).
 * `node` is the identity the store is made as, exactly as if it had been node-signed.
 */
export interface LocalCachePort {
  /** `trace`: the request the store is made for (its logger, and its id for the Cache's Directory lookups). */
  store(item: StoreItem, node: NodeIdentity, trace?: RequestTrace): Promise<CacheAnswer>;
}

/** The retention a Cache applied to a copy, as its 202 answered it (§11.1 response: ISO duration, ISO time). */
export interface AppliedRetention {
  appliedTtl: string;
  expiresAt: string;
}

/** The outcome of storing one envelope at one endpoint. */
export type StoreOutcome =
  | {
      ok: true;
      attempts: number;
      /** What the Cache applied; null when its answer did not say. */
      retention: AppliedRetention | null;
    }
  | {
      ok: false;
      attempts: number;
      /** `failed`, `attempted` (outcome unknown), or the Cache's error code. */
      cacheResult: string;
      /** The Cache refused the client's envelope itself (see {@link envelopeRefusalOf}). */
      envelopeRefusal?: DdnError;
      /** What went wrong, for the 502's `details.failures` (`HTTP 503 ledger_unavailable`, `network: connect ECONNREFUSED …`). */
      reason?: string;
      /** The Cache answered 507: it is out of storage (its disk or its storage budget). */
      storageFull?: true;
    };

/** A failed store. */
export type StoreFailure = Extract<StoreOutcome, { ok: false }>;

/** Stores envelopes at Cache endpoints. */
export interface CacheStorer {
  /** Stores `item` at `endpoint`, for request `trace` (its id passed on as `X-Request-Id`). */
  store(endpoint: string, item: StoreItem, trace?: RequestTrace): Promise<StoreOutcome>;
}

/** Timeouts and retries of outbound stores. */
export interface StoreRetryPolicy {
  /** Attempts per endpoint, the first included (default 3). */
  attempts: number;
  /** Pause before the second attempt, doubled for each further one (default 200 ms). */
  backoffMs: number;
  /** Per-attempt timeout (default 10 s). */
  timeoutMs: number;
}

export const DEFAULT_STORE_RETRY: Readonly<StoreRetryPolicy> = Object.freeze({ attempts: 3, backoffMs: 200, timeoutMs: 10_000 });

/** Statuses worth retrying at the same endpoint (§0.5 and the deployed sender's list). */
const RETRYABLE = new Set([429, 500, 502, 503, 504, 507]);

/** What {@link HttpCacheStorer} needs. */
export interface CacheStorerDeps {
  profile: Profile;
  clock: Clock;
  identity: NodeIdentity;
  outbound: OutboundHttp;
  /** `public_urls.cache` of this node: endpoints equal to one of them are stored in-process. */
  ownCacheUrls(): readonly string[];
  local?: LocalCachePort;
  retry?: Partial<StoreRetryPolicy>;
  /** Waits between attempts (tests pass an instant one). */
  sleep?: (ms: number) => Promise<void>;
  logger?: Logger;
}

/** An HTTP answer of a Cache to a store, read into {@link CacheAnswer}. */
export function answerOf(status: number, text: Buffer): CacheAnswer {
  let v: unknown = null;
  try {
    v = JSON.parse(text.toString('utf8'));
  } catch {
    // not JSON: no body
  }
  if (status !== 202) return { ok: false, status, body: receivedErrorBody(v) };
  if (!isJsonObject(v)) return { ok: true, body: null };
  const { applied_ttl, expires_at } = v;
  // each member set on its own, not spread from literals: a spread here took V8's slow path (~0.5 % of a two-hop
  // Relay's event loop, bench/HISTORY.md session 33)
  const body: StoreAnswerRead = {};
  if (typeof applied_ttl === 'string') body.applied_ttl = applied_ttl;
  if (typeof expires_at === 'string') body.expires_at = expires_at;
  return { ok: true, body };
}

/** The retention of an accepted store's answer (`applied_ttl`, `expires_at`), when it carries both. */
export function retentionOf(body: StoreAnswerRead | null): AppliedRetention | null {
  const appliedTtl = body?.applied_ttl;
  const expiresAt = body?.expires_at;
  return appliedTtl !== undefined && expiresAt !== undefined ? { appliedTtl, expiresAt } : null;
}

/** The Cache's error text for `cache_result`: its `error` (= `code`) field, else `http_<status>`. */
function errorText(status: number, body: ReceivedErrorBody | null): string {
  const e = body?.error ?? body?.code;
  return e !== undefined && e.length > 0 && e.length <= 128 ? e : `http_${status}`;
}

/**
 * Codes a Cache answers for a fault of the client's envelope (http-api.md §10.5's malformed, too-large and
 * undeliverable rows): no retry and no other Cache will take it, so the Relay answers the client with the
 * same 4xx instead of 502 `upstream_unavailable` (which deployed senders retry).
 */
const ENVELOPE_FAULTS: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  // the field codes, but for the policy context (the Relay's own, never a Cache's verdict on the envelope)
  ...ENVELOPE_FIELD_CODES.filter((c) => c !== 'client_policy_context_forbidden'),
  'envelope_too_large',
  'payload_too_large',
  'chunk_too_large',
  'metadata_too_large',
  'envelope_expired',
  'plaintext_not_allowed',
]);

/** The Cache's refusal as the client's error, when it refused the envelope itself (its code at its status). */
export function envelopeRefusalOf(status: number, body: ReceivedErrorBody | null): DdnError | undefined {
  const code = body?.code;
  if (code === undefined || !ENVELOPE_FAULTS.has(code as ErrorCode)) return undefined;
  if (ERROR_STATUS[code as ErrorCode] !== status) return undefined;
  const message = body?.message !== undefined && body.message.length <= 512 ? body.message : undefined;
  return new DdnError(code as ErrorCode, message, body?.details);
}

/** A failed store's outcome from the Cache's refusal (`status` is not 202): the same whether it came over HTTP or in-process. */
function refused(attempts: number, status: number, body: ReceivedErrorBody | null): StoreFailure {
  const envelopeRefusal = envelopeRefusalOf(status, body);
  const cacheResult = errorText(status, body);
  const reason = `HTTP ${status} ${cacheResult}`;
  const failure: StoreFailure =
    envelopeRefusal === undefined ? { ok: false, attempts, cacheResult, reason } : { ok: false, attempts, cacheResult, envelopeRefusal, reason };
  if (status === 507) failure.storageFull = true;
  return failure;
}

/** A store's outcome from the Cache's answer `a` (202: accepted, with the retention it applied). */
function outcomeOf(attempts: number, a: CacheAnswer): StoreOutcome {
  // an accepted store tells the retention the Cache applied (a ttl above its maximum is capped there)
  return a.ok ? { ok: true, attempts, retention: retentionOf(a.body) } : refused(attempts, a.status, a.body);
}

/** One attempt's failure inside {@link HttpCacheStorer.store}'s retry loop. */
class FailedStore extends Error {
  constructor(
    readonly failure: StoreFailure,
    readonly retryable: boolean,
  ) {
    super(failure.reason ?? failure.cacheResult);
  }
}

/** The Relay's {@link CacheStorer}: in-process for its own Cache, node-signed HTTP otherwise. */
export class HttpCacheStorer implements CacheStorer {
  private readonly retry: StoreRetryPolicy;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(private readonly deps: CacheStorerDeps) {
    this.retry = { ...DEFAULT_STORE_RETRY, ...deps.retry };
    this.sleep = deps.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms)));
  }

  /** True when `endpoint` is one of this node's public Cache URLs. */
  isOwn(endpoint: string): boolean {
    const n = normalizeEndpoint(endpoint);
    return this.deps.ownCacheUrls().some((u) => normalizeEndpoint(u) === n);
  }

  async store(endpoint: string, item: StoreItem, trace?: RequestTrace): Promise<StoreOutcome> {
    if (this.deps.local !== undefined && this.isOwn(endpoint)) return outcomeOf(1, await this.deps.local.store(item, this.deps.identity, trace));
    const body = item.bytes;
    const url = `${endpoint.replace(/\/+$/, '')}/cache/store`;
    const attempt = async (attempts: number): Promise<StoreOutcome> => {
      let res;
      try {
        res = await postNodeSigned(this.deps, url, body, this.retry.timeoutMs, trace?.id);
      } catch (err) {
        if (!(err instanceof OutboundError)) throw err;
        (trace?.log ?? this.deps.logger)?.debug({ endpoint, kind: err.kind }, 'cache store failed');
        const reason = `${err.kind}: ${err.message.slice(0, 200)}`;
        const failure: StoreFailure = { ok: false, attempts, cacheResult: err.maybeDelivered ? 'attempted' : 'failed', reason };
        throw new FailedStore(failure, err.kind !== 'blocked_address' && err.kind !== 'invalid_url');
      }
      const outcome = outcomeOf(attempts, answerOf(res.status, res.body));
      if (outcome.ok) return outcome;
      (trace?.log ?? this.deps.logger)?.debug({ endpoint, status: res.status, code: outcome.cacheResult }, 'cache store refused');
      throw new FailedStore(outcome, RETRYABLE.has(res.status));
    };
    try {
      return await retry(attempt, {
        attempts: this.retry.attempts,
        retryable: (e) => e instanceof FailedStore && e.retryable,
        backoff: { firstMs: this.retry.backoffMs },
        timing: { now: () => this.deps.clock.nowMs(), sleep: this.sleep },
      });
    } catch (e) {
      if (e instanceof FailedStore) return e.failure;
      throw e;
    }
  }
}
