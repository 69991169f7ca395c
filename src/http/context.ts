/**
 * What a route handler sees of a request ({@link RequestContext}, made once per request by {@link Context}) and what
 * it answers ({@link HttpResponse}).
 */
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import type { RequestTrace } from '../base/request-trace.js';
import type { JsonObject } from './json-body.js';

/** Methods a route can be added for (`HEAD` is served by `GET` routes). */
export type HttpMethod = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'OPTIONS';

/** Names of the `:params` of a route pattern, e.g. `'did' | 'serviceId'`. */
export type ParamNames<P extends string> = P extends `${string}:${infer Name}/${infer Rest}`
  ? Name | ParamNames<`/${Rest}`>
  : P extends `${string}:${infer Name}`
    ? Name
    : never;

/** The decoded path parameters of pattern `P`; `Record<string, string>` when `P` is not a literal. */
export type PathParams<P extends string> = string extends P ? Record<string, string> : { [K in ParamNames<P>]: string };

/** What a route handler returns; the body is always serialised as a JSON object. */
export interface HttpResponse {
  status: number;
  /** Serialised with `JSON.stringify`, unless `payload` is set. */
  body: object;
  /**
   * A JSON object already serialised, sent as is instead of `body` — for bodies that embed large stored
   * texts (the Cache's envelopes) which should not be parsed and serialised again.
   */
  payload?: JsonPayload;
  headers?: Record<string, string>;
  /** Sent instead of `application/json; charset=utf-8` (only with `payload`: `/metrics` text). */
  contentType?: string;
}

/** A serialised JSON object: text, bytes, or bytes in parts sent in order (large stored envelopes, uncopied). */
export type JsonPayload = Buffer | string | readonly Buffer[];

/** An answer whose JSON body is `B` (typed against a route's answer schema by src/http/route.ts). */
export interface JsonAnswer<S extends number, B> {
  status: S;
  body: B;
  headers?: Record<string, string>;
  payload?: undefined;
  contentType?: undefined;
}

/** An answer already serialised (stored envelopes, cached records, text): `body` is unused. */
export interface PayloadAnswer<S extends number> {
  status: S;
  body: object;
  payload: JsonPayload;
  headers?: Record<string, string>;
  contentType?: string;
}

/** Builds a JSON answer; a promise as body (an un-awaited use-case result) is a type error. */
export function json<T extends object, S extends number = number>(
  status: S,
  body: T extends PromiseLike<unknown> ? never : T,
  headers?: Record<string, string>,
): JsonAnswer<S, T> {
  return headers === undefined ? { status, body } : { status, body, headers };
}

/** An answer whose body is the pre-serialised JSON object `payload`. */
export function jsonPayload<S extends number>(status: S, payload: JsonPayload, headers?: Record<string, string>): PayloadAnswer<S> {
  return headers === undefined ? { status, body: {}, payload } : { status, body: {}, payload, headers };
}

/** The logger of one request: lines carry its `reqId`. */
export type RequestLogger = FastifyBaseLogger;

/** Everything a route handler sees of a request. */
export interface RequestContext<P = Record<string, string>> {
  /** Upper-case method. */
  method: string;
  /** The request target exactly as received (raw path and query), e.g. for node-signature checks (§10.6). */
  rawUrl: string;
  /** Path parameters, each percent-decoded exactly once (§0.4). */
  params: P;
  /** Form-decoded query; first occurrence of a repeated key wins. */
  query: Record<string, string>;
  /** The parsed JSON object body; `undefined` when the request had no body. */
  body: JsonObject | undefined;
  /** The body bytes as received; `undefined` when there were none. */
  rawBody: Buffer | undefined;
  /** Request headers (Node lower-cases the names). */
  headers: IncomingHttpHeaders;
  /** One header by case-insensitive name; repeated headers are joined with `, `. */
  header(name: string): string | undefined;
  /** The scheme the request arrived over (`https` on a TLS socket). */
  protocol: 'http' | 'https';
  /**
   * The client's address as the rate limits and the body budget count it: the socket peer, or behind a trusted
   * proxy the forwarded address; an IPv6 address as its /64 (`2001:db8:1:2::/64`).
   */
  clientKey: string;
  /** The request's id: its acceptable `X-Request-Id`, else one made up; echoed in the response. */
  requestId: string;
  /** The request's logger: every line carries `reqId`. */
  log: RequestLogger;
  /** The request's id and logger together, as use-cases take them (passed on with node-to-node calls). */
  trace: RequestTrace;
}

/** A route handler. Throw `DdnError` for client-visible failures. */
export type RouteHandler<P = Record<string, string>> = (ctx: RequestContext<P>) => HttpResponse | Promise<HttpResponse>;

function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name.toLowerCase()];
  return Array.isArray(v) ? v.join(', ') : v;
}

/** The request as a route handler sees it: one object per request, headers read from Node's only on use. */
export class Context implements RequestContext {
  constructor(
    private readonly request: FastifyRequest,
    readonly params: Record<string, string>,
    readonly query: Record<string, string>,
    private readonly logOf: (request: FastifyRequest) => RequestLogger,
    private readonly keyOf: (req: IncomingMessage) => string,
  ) {}

  get clientKey(): string {
    return this.keyOf(this.request.raw);
  }

  get method(): string {
    return this.request.raw.method ?? 'GET';
  }

  get rawUrl(): string {
    return this.request.raw.url ?? '/';
  }

  get body(): JsonObject | undefined {
    return this.request.body as JsonObject | undefined;
  }

  get rawBody(): Buffer | undefined {
    return this.request.ddnRawBody ?? undefined;
  }

  get requestId(): string {
    return this.request.id;
  }

  get log(): RequestLogger {
    return this.logOf(this.request);
  }

  get trace(): RequestTrace {
    return { id: this.request.id, log: this.logOf(this.request) };
  }

  get headers(): IncomingHttpHeaders {
    return this.request.raw.headers;
  }

  /** A function value, so routes can pass it on (`proofFromHeaders(ctx.header, …)`); made on use. */
  get header(): (name: string) => string | undefined {
    const headers = this.request.raw.headers;
    return (name) => headerValue(headers, name);
  }

  get protocol(): 'http' | 'https' {
    return (this.request.raw.socket as TLSSocket | undefined)?.encrypted === true ? 'https' : 'http';
  }
}
