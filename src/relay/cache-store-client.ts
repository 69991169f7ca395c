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
import type { RequestTrace } from '../base/request-trace.js';
import { retry } from '../base/retry.js';

/** The answer of a Cache to one store. */
export interface CacheAnswer {
  status: number;
  /** The parsed JSON body, or null when it was not a JSON object. */
  body: Record<string, unknown> | null;
}

/**
 * This node's own Cache, called in-process (wired by the composition root; roles never import each other).
 * `node` is the identity the store is made as, exactly as if it had been node-signed.
 */
export interface LocalCachePort {
  /** `trace`: the request the store is made for (its logger, and its id for the Cache's Directory lookups). */
  store(rawBody: Buffer, node: NodeIdentity, trace?: RequestTrace): Promise<CacheAnswer>;
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
  /** Stores `body` at `endpoint`, for request `trace` (its id passed on as `X-Request-Id`). */
  store(endpoint: string, body: Buffer, trace?: RequestTrace): Promise<StoreOutcome>;
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

function parseBody(b: Buffer): Record<string, unknown> | null {
  try {
    const v = JSON.parse(b.toString('utf8')) as unknown;
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** The retention of an accepted store's answer (`applied_ttl`, `expires_at`), when it carries both as strings. */
export function retentionOf(body: Record<string, unknown> | null): AppliedRetention | null {
  const appliedTtl = body?.applied_ttl;
  const expiresAt = body?.expires_at;
  return typeof appliedTtl === 'string' && typeof expiresAt === 'string' ? { appliedTtl, expiresAt } : null;
}

/** The Cache's error text for `cache_result`: its `error` (= `code`) field, else `http_<status>`. */
function errorText(a: CacheAnswer): string {
  const e = a.body?.error ?? a.body?.code;
  return typeof e === 'string' && e.length > 0 && e.length <= 128 ? e : `http_${a.status}`;
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

/** The Cache's refusal as the client's error, when `a` is a refusal of the envelope itself (its code at its status). */
export function envelopeRefusalOf(a: CacheAnswer): DdnError | undefined {
  const code = a.body?.code;
  if (typeof code !== 'string' || !ENVELOPE_FAULTS.has(code as ErrorCode)) return undefined;
  if (ERROR_STATUS[code as ErrorCode] !== a.status) return undefined;
  const message = typeof a.body?.message === 'string' && a.body.message.length <= 512 ? a.body.message : undefined;
  const details = a.body?.details;
  const plain = typeof details === 'object' && details !== null && !Array.isArray(details) ? (details as Record<string, unknown>) : undefined;
  return new DdnError(code as ErrorCode, message, plain);
}

/** A failed store's outcome from the Cache's answer `a`. */
function refused(attempts: number, a: CacheAnswer): StoreFailure {
  const envelopeRefusal = envelopeRefusalOf(a);
  const cacheResult = errorText(a);
  const reason = `HTTP ${a.status} ${cacheResult}`;
  const failure: StoreFailure =
    envelopeRefusal === undefined ? { ok: false, attempts, cacheResult, reason } : { ok: false, attempts, cacheResult, envelopeRefusal, reason };
  if (a.status === 507) failure.storageFull = true;
  return failure;
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

  async store(endpoint: string, body: Buffer, trace?: RequestTrace): Promise<StoreOutcome> {
    if (this.deps.local !== undefined && this.isOwn(endpoint)) {
      const a = await this.deps.local.store(body, this.deps.identity, trace);
      return a.status === 202 ? { ok: true, attempts: 1, retention: retentionOf(a.body) } : refused(1, a);
    }
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
      const answer: CacheAnswer = { status: res.status, body: parseBody(res.body) };
      // an accepted store tells the retention the Cache applied (a ttl above its maximum is capped there)
      if (res.status === 202) return { ok: true, attempts, retention: retentionOf(answer.body) };
      const failure = refused(attempts, answer);
      (trace?.log ?? this.deps.logger)?.debug({ endpoint, status: answer.status, code: failure.cacheResult }, 'cache store refused');
      throw new FailedStore(failure, RETRYABLE.has(answer.status));
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
