/**
 * A tiny JSON-over-HTTP helper for the SDK (http-api.md §0.3–§0.6). No automatic retries: only the callers that
 * say so (the pollers) retry, and only on the "try again later" statuses of §0.5.
 */
import { deadlineFetch } from './deadline-fetch.js';
import type { FetchInitLike, FetchLike } from './fetch-types.js';
import { receivedErrorBody, type ReceivedErrorBody } from '../wire/errors.js';

export type { FetchInitLike, FetchLike, FetchResponseLike } from './fetch-types.js';

/** HTTP methods the Directory routes use. */
export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** A successful (2xx) response: status and parsed JSON body. */
export interface JsonResponse<T = unknown> {
  status: number;
  body: T;
}

/** The error body of a node (http-api.md §0.6) as the SDK receives it (`src/wire/errors.ts`). */
export type ErrorBody = ReceivedErrorBody;

/** Statuses that mean "try again later" (http-api.md §0.5). */
export const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([425, 429, 500, 502, 503, 504]);

/**
 * A non-2xx answer. `code` is the server's stable `code` (falling back to `error`, then `http_<status>` when the
 * body is not the §0.6 shape); `body` is the parsed body (or the raw text when it was not JSON).
 */
export class DirectoryApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details: Record<string, unknown> | undefined;
  readonly body: unknown;
  /** `Retry-After` in seconds, when the server sent one (429, 503). */
  readonly retryAfterSeconds: number | undefined;

  constructor(status: number, code: string, message: string, body: unknown, details?: Record<string, unknown>, retryAfterSeconds?: number) {
    super(message);
    this.name = 'DirectoryApiError';
    this.status = status;
    this.code = code;
    this.body = body;
    this.details = details;
    this.retryAfterSeconds = retryAfterSeconds;
  }

  /** True for 425, 429, 500, 502, 503 and 504. */
  get retryable(): boolean {
    return RETRYABLE_STATUSES.has(this.status);
  }
}

/** True when `e` is a {@link DirectoryApiError} with a "try again later" status. */
export function isRetryableError(e: unknown): e is DirectoryApiError {
  return e instanceof DirectoryApiError && e.retryable;
}

/**
 * Builds a path from a template, percent-encoding every interpolated value as one segment with
 * `encodeURIComponent` (`:` → `%3A`, `#` → `%23`, `/` → `%2F`, `@` → `%40`; http-api.md §0.4).
 * Example: ``encodePath`/dids/${did}/aliases/${alias}` ``.
 */
export function encodePath(strings: TemplateStringsArray, ...values: ReadonlyArray<string | number | bigint>): string {
  let out = strings[0] ?? '';
  for (let i = 0; i < values.length; i++) out += encodeURIComponent(String(values[i])) + (strings[i + 1] ?? '');
  return out;
}

/** Joins a base URL (which may carry a path prefix, §0.1) and an absolute route path. */
export function joinUrl(baseUrl: string, path: string): string {
  return baseUrl.replace(/\/+$/, '') + (path.startsWith('/') ? path : `/${path}`);
}

function parseRetryAfter(v: string | null): number | undefined {
  if (v === null || !/^\d+$/.test(v.trim())) return undefined;
  return Number(v.trim());
}

function errorFromResponse(status: number, body: unknown, retryAfter: number | undefined): DirectoryApiError {
  const rec = receivedErrorBody(body);
  const code = rec?.code ?? rec?.error ?? `http_${status}`;
  return new DirectoryApiError(status, code, rec?.message ?? `HTTP ${status} ${code}`, body, rec?.details, retryAfter);
}

/**
 * The global fetch (looked up at call time so tests may replace it) with the default deadlines of
 * deadline-fetch.ts: 10 s to connect, 30 s to the first byte of the answer.
 */
export const globalFetch: FetchLike = (url, init) => (defaultFetch ??= deadlineFetch())(url, init);
let defaultFetch: FetchLike | undefined;

/**
 * Sends one JSON request and parses the JSON answer. `path` must already be encoded (see {@link encodePath}).
 * A body, when given, is sent as `application/json` on any method (DELETE included, §5.2).
 * Resolves with `{status, body}` on 2xx; throws {@link DirectoryApiError} otherwise (and with code
 * `invalid_response` when a 2xx body is not JSON). Network failures propagate as thrown by `fetchImpl`.
 * `headers` are added to the request (the Cache's retrieval-proof headers).
 */
export async function requestJson<T = unknown>(
  baseUrl: string,
  method: HttpMethod,
  path: string,
  body?: unknown,
  fetchImpl: FetchLike = globalFetch,
  headers: Readonly<Record<string, string>> = {},
): Promise<JsonResponse<T>> {
  const init: FetchInitLike = { method, headers: { accept: 'application/json', ...headers } };
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetchImpl(joinUrl(baseUrl, path), init);
  const text = await res.text();
  let parsed: unknown = text;
  let isJson = false;
  try {
    parsed = JSON.parse(text) as unknown;
    isJson = true;
  } catch {
    // keep the raw text for the error
  }
  if (res.status < 200 || res.status > 299) {
    throw errorFromResponse(res.status, parsed, parseRetryAfter(res.headers.get('retry-after')));
  }
  if (!isJson) {
    throw new DirectoryApiError(res.status, 'invalid_response', `HTTP ${res.status}: response is not JSON`, text);
  }
  return { status: res.status, body: parsed as T };
}
