/**
 * The SDK's default fetch: the global `fetch` with deadlines. Connecting (DNS, TCP, TLS) may take
 * `connectTimeoutMs`, the first byte of the answer `answerTimeoutMs`, and so may every pause between two chunks of
 * the body. While a request waits longer than `noticeAfterMs` it tells `onWait` (a CLI prints "waiting for the
 * Relay at … (5 s)"). Every failure is a {@link RequestFailedError} that names the URL and says whether another
 * attempt could change anything (`permanent`: nothing listens, the name does not resolve, a port fetch refuses,
 * a TLS handshake that failed).
 */
import { errorCodeOf, memberOf } from '../base/guards.js';
import { Agent } from 'undici';
import type { FetchInitLike, FetchLike, FetchResponseLike } from './fetch-types.js';

/** Deadlines of every request, and who hears of a long wait. */
export interface DeadlineOptions {
  /** How long connecting may take; default 10 000 ms. */
  connectTimeoutMs?: number;
  /** How long the first byte of the answer, and each later part of it, may take; default 30 000 ms. */
  answerTimeoutMs?: number;
  /** What is asked, for the messages: `the Relay`, `the Directory`; default `the server`. */
  name?: string;
  /** Told once a request has waited `noticeAfterMs`, then every 10 s while it still waits. */
  onWait?(wait: { name: string; url: string; waitedMs: number; deadlineMs: number }): void;
  /** Default 5 000 ms. */
  noticeAfterMs?: number;
  /** Aborting ends every request at once (Ctrl-C); the fetch then rejects with `signal.reason`. */
  signal?: AbortSignal;
}

export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
export const DEFAULT_ANSWER_TIMEOUT_MS = 30_000;

/** Why a request failed. */
export type RequestFailure = 'request_timeout' | 'connection_failed';

/** A request that got no answer: the URL, why, and whether trying again could help. */
export class RequestFailedError extends Error {
  constructor(
    readonly code: RequestFailure,
    message: string,
    readonly url: string,
    /** True when another attempt cannot succeed (refused, unknown host, bad port, failed TLS). */
    readonly permanent: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'RequestFailedError';
  }
}

/** Socket error codes after which no retry helps. */
const PERMANENT_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'ERR_INVALID_URL',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** The innermost `code` and message of an error chain (fetch rejects with `fetch failed` and the reason as cause). */
function rootCause(e: unknown): { code: string | undefined; message: string } {
  let code: string | undefined;
  let message = e instanceof Error ? e.message : String(e);
  for (let x: unknown = e, depth = 0; x !== null && typeof x === 'object' && depth < 5; x = memberOf(x, 'cause'), depth++) {
    const c = errorCodeOf(x);
    if (c !== undefined && c !== '') code = c;
    const m = memberOf(x, 'message');
    if (typeof m === 'string' && m !== '' && m !== 'fetch failed') message = m;
  }
  return { code, message };
}

function seconds(ms: number): string {
  return `${Math.round(ms / 100) / 10} s`;
}

/** A network failure of `url` as a {@link RequestFailedError}. */
export function requestFailure(e: unknown, url: string, name: string, o: { connectTimeoutMs: number; answerTimeoutMs: number }): RequestFailedError {
  if (e instanceof RequestFailedError) return e;
  const { code, message } = rootCause(e);
  const at = `${name} at ${url}`;
  if (code === 'UND_ERR_CONNECT_TIMEOUT') {
    return new RequestFailedError('request_timeout', `no connection to ${at} within ${seconds(o.connectTimeoutMs)}`, url, false, { cause: e });
  }
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
    const what = code === 'UND_ERR_HEADERS_TIMEOUT' ? 'no answer from' : 'the answer stalled from';
    return new RequestFailedError('request_timeout', `${what} ${at} within ${seconds(o.answerTimeoutMs)}`, url, false, { cause: e });
  }
  const permanent = (code !== undefined && (PERMANENT_CODES.has(code) || code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_'))) || message === 'bad port';
  const why = message === 'bad port' ? 'fetch refuses this port (bad port)' : code !== undefined && !message.includes(code) ? `${code} ${message}` : message;
  return new RequestFailedError('connection_failed', `cannot reach ${at}: ${why}`, url, permanent, { cause: e });
}

const agents = new Map<string, Agent>();

/** One keep-alive agent per pair of deadlines, shared by every client of the process. */
function agentFor(connectMs: number, answerMs: number): Agent {
  const key = `${connectMs}/${answerMs}`;
  let agent = agents.get(key);
  if (agent === undefined) {
    agent = new Agent({ connect: { timeout: connectMs }, headersTimeout: answerMs, bodyTimeout: answerMs });
    agents.set(key, agent);
  }
  return agent;
}

/** A response whose body, read through `text()`, fails like the request did (named URL, timeouts). */
function wrapped(res: FetchResponseLike, fail: (e: unknown) => RequestFailedError): FetchResponseLike {
  return {
    status: res.status,
    headers: res.headers,
    text: async () => {
      try {
        return await res.text();
      } catch (e) {
        throw fail(e);
      }
    },
  };
}

/** The global `fetch` with the deadlines of `o` (see the module comment). */
export function deadlineFetch(o: DeadlineOptions = {}): FetchLike {
  const connectTimeoutMs = o.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  const answerTimeoutMs = o.answerTimeoutMs ?? DEFAULT_ANSWER_TIMEOUT_MS;
  const name = o.name ?? 'the server';
  const noticeAfterMs = o.noticeAfterMs ?? 5_000;
  return async (url: string, init: FetchInitLike) => {
    o.signal?.throwIfAborted();
    const started = Date.now();
    let timer: NodeJS.Timeout | undefined;
    const notify = (after: number): void => {
      timer = setTimeout(() => {
        o.onWait?.({ name, url, waitedMs: Date.now() - started, deadlineMs: connectTimeoutMs + answerTimeoutMs });
        notify(10_000);
      }, after);
      timer.unref();
    };
    const stop = (): void => clearTimeout(timer);
    if (o.onWait !== undefined) notify(noticeAfterMs);
    const fail = (e: unknown): RequestFailedError => requestFailure(e, url, name, { connectTimeoutMs, answerTimeoutMs });
    try {
      const withDeadlines = { ...init, dispatcher: agentFor(connectTimeoutMs, answerTimeoutMs), ...(o.signal === undefined ? {} : { signal: o.signal }) };
      // the global fetch takes undici's Agent; its `dispatcher` type is Node's copy of the same undici types
      const res = await globalThis.fetch(url, withDeadlines as unknown as RequestInit);
      return wrapped(res, (e) => (o.signal?.aborted === true ? (o.signal.reason as RequestFailedError) : fail(e)));
    } catch (e) {
      if (o.signal?.aborted === true) throw o.signal.reason;
      throw fail(e);
    } finally {
      // the answer began (or the request failed): nothing is awaited any more
      stop();
    }
  };
}
