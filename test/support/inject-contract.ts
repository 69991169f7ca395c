/**
 * The OpenAPI contract on answers a harness reads with `fastify.inject` (no listening port, so the `fetch` wrapper
 * of test/support/contract-check.ts does not see them): each answer is validated against the document the server
 * itself serves — its JSON body against the route's schema for its status, so an error answer must carry a code
 * the document lists for that route and status — and each accepted (2xx) JSON request body against the route's
 * request schema. A violation throws, failing the test that read the answer. Used by the Directory, Relay and
 * Cache harnesses (test/support/directory-harness.ts, test/relay/harness.ts, test/cache/harness.ts).
 */
import type { HttpServer } from '../../src/http/server.js';
import { recordAnswer } from './answered-codes.js';
import { JSON_TYPES, OpenApiChecker, type OpenApiDocument } from './openapi-check.js';

/** One request a harness injected and the answer it read. */
export interface InjectedExchange {
  method: string;
  url: string;
  status: number;
  /** The answer's `content-type` header as the injection gives it. */
  contentType: unknown;
  text: string;
  /** The request body as sent (a JSON text, or anything else, which is not checked). */
  payload?: string | undefined;
}

function parsed(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

/** The check of `server`'s injected exchanges against its own `GET /openapi.json` (fetched once). */
export function injectContract(server: Pick<HttpServer, 'fastify'>): (x: InjectedExchange) => Promise<void> {
  let checker: Promise<OpenApiChecker> | undefined;
  return async (x) => {
    checker ??= server.fastify.inject({ method: 'GET', url: '/openapi.json' }).then((r) => new OpenApiChecker(r.json<OpenApiDocument>()));
    const c = await checker;
    const path = x.url.split('?')[0]!;
    const method = x.method.toUpperCase();
    const type = typeof x.contentType === 'string' ? x.contentType : '';
    let problem: string | undefined;
    if (JSON_TYPES.test(type) && method !== 'HEAD') {
      const body = parsed(x.text);
      if (body.ok) recordAnswer(x.status, body.value);
      problem = body.ok ? c.problem(method, path, x.status, body.value, type) : `${method} ${path} ${x.status}: not JSON though ${type}`;
    }
    if (problem === undefined && x.status < 300 && x.payload !== undefined) {
      const sent = parsed(x.payload);
      if (sent.ok) problem = c.requestProblem(method, path, sent.value);
    }
    if (problem !== undefined) throw new Error(`answer or accepted request not described by the OpenAPI document: ${problem}`);
  };
}

const checks = new WeakMap<object, (x: InjectedExchange) => Promise<void>>();

/** The check of `server` (made once per server). */
function checkOf(server: Pick<HttpServer, 'fastify'>): (x: InjectedExchange) => Promise<void> {
  let check = checks.get(server);
  if (check === undefined) {
    check = injectContract(server);
    checks.set(server, check);
  }
  return check;
}

type Injected = Awaited<ReturnType<HttpServer['fastify']['inject']>>;

/** What {@link injectChecked} sends: fastify's inject options; a body object is sent (and checked) as JSON. */
export interface CheckedInjection {
  method: 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'OPTIONS';
  url: string;
  headers?: Record<string, string>;
  payload?: string | Buffer | object;
  remoteAddress?: string;
}

/**
 * A request by `fastify.inject`, its answer (and, if accepted, its JSON body) checked against the server's own
 * document: for a suite's own requests beside its harness (a header check, a raw body, a chosen client address).
 */
export async function injectChecked(server: Pick<HttpServer, 'fastify'>, o: CheckedInjection): Promise<Injected> {
  const res = await server.fastify.inject(o);
  await checkOf(server)({
    method: o.method,
    url: o.url,
    status: res.statusCode,
    contentType: res.headers['content-type'],
    text: res.body,
    payload: typeof o.payload === 'string' ? o.payload : o.payload === undefined || Buffer.isBuffer(o.payload) ? undefined : JSON.stringify(o.payload),
  });
  return res;
}

/** `GET url` by `fastify.inject`, its answer checked against the server's own document (a suite without a harness). */
export async function getChecked(server: Pick<HttpServer, 'fastify'>, url: string): Promise<Injected> {
  return injectChecked(server, { method: 'GET', url });
}
