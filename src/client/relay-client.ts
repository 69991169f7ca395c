/**
 * The Relay SDK (http-api.md §10.3, §10.5): `POST /relay` with retries of the identical bytes on the statuses
 * deployed senders retry (429, 502, 503, 507), honouring `Retry-After`. A retry is safe because the Relay is
 * idempotent per `message_id` and content (§10.3 step 6).
 */
import { errorCodeOf, isJsonObject, memberOf } from '../base/guards.js';
import { retry } from '../base/retry.js';
import { RequestFailedError } from './deadline-fetch.js';
import { globalFetch, joinUrl, type FetchLike, type FetchResponseLike } from './http.js';
import { realTiming, type PollTiming } from './poll.js';
import type { DeliveryResult, RelayLimitsResponse } from './transfer-types.js';

/** Statuses after which the same body is sent again (§0.5, §12 item 9; 408 asks for the request again). */
export const RELAY_RETRY_STATUSES: ReadonlySet<number> = new Set([408, 429, 502, 503, 507]);

/** The Relay refused an envelope, or every attempt failed. `result` is the DeliveryResult when one was returned. */
export class RelayError extends Error {
  readonly code: string;
  readonly status: number | undefined;
  readonly result: DeliveryResult | undefined;
  readonly attempts: number;
  constructor(code: string, message: string, attempts: number, status?: number, result?: DeliveryResult) {
    super(message);
    this.name = 'RelayError';
    this.code = code;
    this.status = status;
    this.result = result;
    this.attempts = attempts;
  }
}

/** A retry about to wait: which attempt failed, why, and how long until the next. */
export interface RelayRetry {
  attempt: number;
  maxAttempts: number;
  waitMs: number;
  error: RelayError;
}

/**
 * Network failures not worth a retry: nothing listens (refused), the name does not resolve, or no route. They are
 * reported at once; timeouts and dropped connections are retried like the "try again later" statuses.
 */
const UNREACHABLE_CODES: ReadonlySet<string> = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ERR_INVALID_URL']);

/** The errno-style code of a failed fetch (`fetch failed` carries it on its `cause`). */
function networkCode(e: unknown): string | undefined {
  for (let x: unknown = e, depth = 0; x !== null && typeof x === 'object' && depth < 4; x = memberOf(x, 'cause'), depth++) {
    const code = errorCodeOf(x);
    if (code !== undefined && code !== '') return code;
  }
  return undefined;
}

function networkMessage(e: unknown): string {
  const message = memberOf(memberOf(e, 'cause'), 'message');
  if (typeof message === 'string') return message;
  return e instanceof Error ? e.message : String(e);
}

/**
 * A 502 whose every downstream failure is one no retry can change: the Relay refuses the address (private
 * endpoint without `--allow-private-endpoints`), the URL is invalid, or the host name does not exist
 * (`details.failures`, as ddn's Relay reports them).
 */
function permanentDownstream(result: DeliveryResult | undefined): boolean {
  const failures = result?.details?.failures;
  if (!Array.isArray(failures) || failures.length === 0) return false;
  return failures.every((f: unknown) => {
    const reason = memberOf(f, 'reason');
    return typeof reason === 'string' && /^(blocked_address|invalid_url):|ENOTFOUND/.test(reason);
  });
}

/** Options of {@link RelayClient}. */
export interface RelayClientOptions {
  fetch?: FetchLike;
  timing?: PollTiming;
  /** Attempts per envelope, the first included; default 8. */
  maxAttempts?: number;
  /** First back-off when no `Retry-After` came; doubles per attempt; default 500 ms. */
  backoffMs?: number;
  /** Longest single wait; default 30 000 ms. */
  maxWaitMs?: number;
  /** No attempt of an envelope starts later than this after its first one; default 120 000 ms. */
  retryForMs?: number;
  /** Told before each wait between attempts (a CLI shows the reason and a countdown). */
  onRetry?(r: RelayRetry): void;
}

/** A successful post: the Relay's result and how many attempts it took. */
export interface RelayPostOutcome {
  result: DeliveryResult;
  attempts: number;
}

function parseResult(text: string): DeliveryResult | undefined {
  try {
    const v = JSON.parse(text) as unknown;
    if (typeof v === 'object' && v !== null && typeof (v as DeliveryResult).success === 'boolean') return v as DeliveryResult;
  } catch {
    // not JSON
  }
  return undefined;
}

function errorCode(text: string, status: number): { code: string; message: string } {
  try {
    const v: unknown = JSON.parse(text);
    if (!isJsonObject(v)) return { code: `http_${status}`, message: `HTTP ${status}` };
    const code = typeof v.code === 'string' ? v.code : typeof v.error === 'string' ? v.error : `http_${status}`;
    return { code, message: typeof v.message === 'string' ? v.message : `HTTP ${status} ${code}` };
  } catch {
    return { code: `http_${status}`, message: `HTTP ${status}` };
  }
}

function retryAfterMs(res: FetchResponseLike): number | undefined {
  const v = res.headers.get('retry-after');
  return v !== null && /^\d+$/.test(v.trim()) ? Number(v.trim()) * 1000 : undefined;
}

/** A failed attempt worth another: the Relay's answer (or the network failure) and its `Retry-After`. */
class TryAgain extends Error {
  constructor(
    readonly error: RelayError,
    readonly afterMs?: number,
  ) {
    super(error.message);
  }
}

/** A client of one Relay base URL. */
export class RelayClient {
  readonly baseUrl: string;
  private readonly fetchImpl: FetchLike;
  private readonly timing: PollTiming;
  private readonly maxAttempts: number;
  private readonly backoffMs: number;
  private readonly maxWaitMs: number;
  private readonly retryForMs: number;
  private readonly onRetry: ((r: RelayRetry) => void) | undefined;

  constructor(baseUrl: string, opts: RelayClientOptions = {}) {
    this.baseUrl = baseUrl;
    this.fetchImpl = opts.fetch ?? globalFetch;
    this.timing = opts.timing ?? realTiming;
    this.maxAttempts = opts.maxAttempts ?? 8;
    this.backoffMs = opts.backoffMs ?? 500;
    this.maxWaitMs = opts.maxWaitMs ?? 30_000;
    this.retryForMs = opts.retryForMs ?? 120_000;
    this.onRetry = opts.onRetry;
  }

  /** `GET /relay/limits`, or undefined when this Relay does not publish them. */
  async limits(): Promise<RelayLimitsResponse | undefined> {
    try {
      const res = await this.fetchImpl(joinUrl(this.baseUrl, '/relay/limits'), { method: 'GET', headers: { accept: 'application/json' } });
      if (res.status !== 200) return undefined;
      return JSON.parse(await res.text()) as RelayLimitsResponse;
    } catch {
      return undefined;
    }
  }

  /**
   * Posts `body` (the envelope's exact JSON text) to `POST /relay`, or to `POST /relay/{recipientDid}` when given.
   * Success is a 2xx with `success: true` (§12 item 14). 429/502/503/507 and network failures are retried with
   * the same bytes, waiting `Retry-After` or an exponential back-off, for at most `maxAttempts` attempts started
   * within `retryForMs`; any other answer throws {@link RelayError}, and so does, at once, a Relay that cannot be
   * reached at all (refused connection, unknown host, bad port, failed TLS).
   */
  async post(body: string, recipientDid?: string): Promise<RelayPostOutcome> {
    const url = joinUrl(this.baseUrl, recipientDid === undefined ? '/relay' : `/relay/${encodeURIComponent(recipientDid)}`);
    const attempt = async (n: number): Promise<RelayPostOutcome> => {
      let res: FetchResponseLike;
      let text: string;
      try {
        res = await this.fetchImpl(url, { method: 'POST', headers: { accept: 'application/json', 'content-type': 'application/json' }, body });
        text = await res.text();
      } catch (e) {
        if (e instanceof RequestFailedError) {
          const failure = new RelayError(e.permanent ? 'relay_unreachable' : e.code, e.message, n);
          if (e.permanent) throw failure;
          throw new TryAgain(failure);
        }
        const code = networkCode(e);
        if ((code !== undefined && UNREACHABLE_CODES.has(code)) || networkMessage(e) === 'bad port') {
          throw new RelayError('relay_unreachable', `cannot reach the Relay at ${this.baseUrl}: ${networkMessage(e)}`, n);
        }
        if (memberOf(e, 'name') === 'AbortError') throw e;
        throw new TryAgain(new RelayError('relay_unreachable', `Relay request failed: ${networkMessage(e)}`, n));
      }
      const result = parseResult(text);
      if (res.status >= 200 && res.status < 300 && result?.success === true) return { result, attempts: n };
      const { code, message } = result ? { code: result.code, message: result.message } : errorCode(text, res.status);
      const refusal = new RelayError(code, `Relay answered ${res.status} ${code}: ${message}`, n, res.status, result);
      if (!RELAY_RETRY_STATUSES.has(res.status) || (res.status === 502 && permanentDownstream(result))) throw refusal;
      throw new TryAgain(refusal, retryAfterMs(res));
    };
    try {
      return await retry(attempt, {
        attempts: this.maxAttempts,
        deadlineMs: this.timing.now() + this.retryForMs,
        retryable: (e) => e instanceof TryAgain,
        backoff: { firstMs: this.backoffMs, maxMs: this.maxWaitMs },
        waitMs: (e, _n, backoffMs) => {
          const after = (e as TryAgain).afterMs;
          return after === undefined ? backoffMs : Math.min(Math.max(after, 0), this.maxWaitMs);
        },
        onRetry: (r) => this.onRetry?.({ attempt: r.attempt, maxAttempts: this.maxAttempts, waitMs: r.waitMs, error: (r.error as TryAgain).error }),
        timing: this.timing,
      });
    } catch (e) {
      if (!(e instanceof TryAgain)) throw e;
      const last = e.error;
      const n = last.attempts;
      throw new RelayError(last.code, `${last.message} (gave up after ${n} attempt${n === 1 ? '' : 's'})`, n, last.status, last.result);
    }
  }
}
