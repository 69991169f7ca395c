/**
 * The HTTP server of one role (Directory, Relay or Cache), on fastify: routes are fastify routes declared with
 * TypeBox schemas (documentation, the OpenAPI document at `GET /openapi.json`, and the wire types), matched by
 * fastify's router on the raw path (§0.4: `%2F` stays inside its parameter, bad escapes are 400 `invalid_path`).
 *
 * What fastify has no rule for stays ours: the body is read by our content-type parser (src/http/body-reader.ts:
 * the §0.3 limits, 408, the drain of a too-large body, shared memory for large ones) and parsed by ours
 * (src/http/json-body.ts: JSON objects only, depth, poisoned keys); every error answer is the §0.6 body (or the
 * route's own, the Relay's DeliveryResult); a path with routes for other methods is 405 with `Allow`. Schemas
 * are not used to validate requests — the services' parsers report the spec's codes in the spec's order — and
 * responses are serialised with `JSON.stringify` as handlers build them, so a request costs no schema work.
 *
 * Every request has an id (its acceptable `X-Request-Id`, else a generated one), echoed in the response and
 * bound into `ctx.log`, the request's logger, so every line logged through it carries `reqId`. fastify itself runs
 * without a logger: it would log nothing of ours (the access log and every error line are ours) and would tie
 * `finish` listeners to every response.
 */
import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest, type RouteHandlerMethod } from 'fastify';
import swagger from '@fastify/swagger';
import { pino, type Logger } from 'pino';
import type { TSchema } from 'typebox';
import { DdnError, type ErrorCode } from '../base/errors.js';
import type { RequestTrace } from '../base/request-trace.js';
import type { BodyBudget } from './body-budget.js';
import { BodyError, isBodyless, readRequestBody, refusedBeforeBody, type BodyHold } from './body-reader.js';
import {
  connectionRefused,
  createBoundedServer,
  DEFAULT_CONNECTION_SETTINGS,
  rawJsonResponse,
  type ConnectionGate,
  type ConnectionSettings,
} from './connections.js';
import { authenticateChallenge, errorBody, retryAfterSeconds, toDdnError } from './error-body.js';
import { parseJsonBody, type JsonObject } from './json-body.js';
import { addressKey, clientAddress, type RateClass, type RateLimits } from './rate-limit.js';
import { LazyRequestLogger } from './lazy-request-logger.js';
import { acceptedRequestId } from './request-id.js';
import { withAdditions } from './openapi-additions.js';
import { enumerateErrorCodes, errorResponses, OpenApiDocumentSchema, paramsOf } from './schemas.js';
import { invalidPath, parseQuery } from './url.js';

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

/** Builds an {@link HttpResponse}; a promise as body (an un-awaited use-case result) is a type error. */
export function json<T extends object>(status: number, body: T extends PromiseLike<unknown> ? never : T, headers?: Record<string, string>): HttpResponse {
  return headers === undefined ? { status, body } : { status, body, headers };
}

/** An {@link HttpResponse} whose body is the pre-serialised JSON object `payload`. */
export function jsonPayload(status: number, payload: JsonPayload, headers?: Record<string, string>): HttpResponse {
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

/**
 * The declared shapes of a route (TypeBox schemas): they make the OpenAPI document. Error statuses need not be
 * listed: every route documents the §0.6 error body (or `errorSchema`) for 400, 404, 413, 415, 429, 500 and 503.
 */
export interface RouteSchema {
  summary?: string;
  description?: string;
  tags?: string[];
  params?: TSchema;
  querystring?: TSchema;
  headers?: TSchema;
  body?: TSchema;
  /** Success (and route-specific error) statuses and their bodies. */
  response?: Record<number, TSchema>;
}

/** Per-route options. */
export interface RouteOptions {
  /**
   * Builds this route's error body instead of the §0.6 shape (the Relay answers with a DeliveryResult, §10.5).
   * The status is still the code's status.
   */
  errorBody?: (err: DdnError) => object;
  /** The schema of {@link errorBody}'s bodies, for the OpenAPI document. */
  errorSchema?: TSchema;
  /** The request-rate class the route counts against (src/http/rate-limit.ts); none: never limited. */
  rateClass?: RateClass;
  /** A write's target (DID, persona…) for its class's per-target budget, from params or body; undefined: none. */
  rateTarget?: (ctx: RequestContext) => string | undefined;
  /** The route's declared shapes (OpenAPI). */
  schema?: RouteSchema;
}

/** Options of {@link createHttpServer}. */
export interface HttpServerOptions {
  /** Role name, bound into every log line as `role`. */
  name: string;
  logger: Logger | false;
  /** Largest accepted body (§0.3), checked before parsing. */
  bodyLimitBytes: number;
  /** The 413 code: `payload_too_large` at the Directory, `envelope_too_large` at Relay and Cache. */
  tooLargeCode: Extract<ErrorCode, 'payload_too_large' | 'envelope_too_large'>;
  /** Path prefix of the role's base URL (§0.1). */
  basePath?: string;
  /** The node's request rate limits; none: no route is limited. */
  rateLimits?: RateLimits;
  /** Log one `request completed` line per request at `info` (default false). */
  accessLog?: boolean;
  /** Told of every answered request (metrics). */
  observer?: HttpObserver;
  /** Timeouts of the listener ({@link DEFAULT_CONNECTION_SETTINGS} for those not given). */
  connections?: Partial<ConnectionSettings>;
  /** Connection caps, shared by every listener of the process; none when absent. */
  gate?: ConnectionGate;
  /** The memory for request bodies in flight, shared by every listener of the process; no bound when absent. */
  bodyBudget?: BodyBudget;
  /**
   * The body of refusals made before any route is known (a refused connection, unparseable HTTP, a header
   * timeout, `CONNECT`); the §0.6 error body by default. The Relay's also carries the DeliveryResult fields.
   */
  refusalBody?: (err: DdnError) => object;
  /** The version in the OpenAPI document (`info.version`). */
  version?: string;
}

/**
 * Told of every answered request, cheaply: label values are resolved once per route, when it is added, into a
 * {@link RequestRecorder}; a request then costs one call.
 */
export interface HttpObserver {
  /** The recorder of the requests matched to route `pattern` of `method`. */
  route(method: string, pattern: string): RequestRecorder;
  /** The recorder of requests that matched no route (404, 405, requests refused before routing). */
  readonly unmatched: RequestRecorder;
}

/** Records the answers of one route. */
export interface RequestRecorder {
  /** One answer: its status, its error code (error answers only) and the seconds from arrival to answer. */
  record(status: number, code: string | undefined, seconds: number): void;
}

/** One role's HTTP server. */
export interface HttpServer {
  /** The fastify instance: `listen`, `close` (waits for in-flight requests), `inject`. */
  readonly fastify: FastifyInstance;
  /**
   * Adds a JSON route; `pattern` is relative to the base path, e.g. `/dids/:did/aliases/:alias`. Routes are
   * added to fastify when it starts (`ready`, `listen` or the first `inject`); adding one later throws.
   */
  route<P extends string>(method: HttpMethod, pattern: P, handler: RouteHandler<PathParams<P>>, options?: RouteOptions): void;
}

interface Route {
  method: HttpMethod;
  pattern: string;
  handler: RouteHandler;
  options: RouteOptions;
  recorder: RequestRecorder | undefined;
  /** Not told to the observer (`/openapi.json`). */
  unobserved?: boolean;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The body bytes as received (src/http/server.ts); null when there were none. */
    ddnRawBody: Buffer | null;
    /** The request's logger (src/http/server.ts), made on first use. */
    ddnLog: RequestLogger | null;
  }
  interface FastifyContextConfig {
    /** The route's options (src/http/server.ts). */
    ddn?: unknown;
  }
}

/**
 * A request answered without reading its body (an unsupported `Expect`, or `Expect: 100-continue` with a body
 * announced over the limit): the error is set on Node's request before fastify sees it, and answered by the route
 * it reaches (so the Relay's carries its DeliveryResult).
 */
const REFUSED = Symbol('refused');
type Refusable = IncomingMessage & { [REFUSED]?: BodyError };

function refuse(req: IncomingMessage, err: BodyError): void {
  (req as Refusable)[REFUSED] = err;
}

/** The response of a request (set before fastify sees it), so a body's reservation ends with its answer. */
const RESPONSE = Symbol('response');
/** The reservation of a request's body, made when its bytes are first reserved. */
const HOLD = Symbol('hold');
type Held = IncomingMessage & { [RESPONSE]?: ServerResponse; [HOLD]?: BodyHold };

/** When a request reached fastify (`performance.now()`), set when its id is made: the start of its answer time. */
const ARRIVED = Symbol('arrived');
type Timed = IncomingMessage & { [ARRIVED]?: number };

/** Seconds from `request`'s arrival until now. */
function secondsSince(request: FastifyRequest): number {
  return (performance.now() - ((request.raw as Timed)[ARRIVED] ?? performance.now())) / 1000;
}

/** A logger that writes nothing (a server built with `logger: false`). */
const SILENT: RequestLogger = pino({ level: 'silent' });

/** Marks the query of a request whose query string could not be decoded (the error is answered by the route). */
const BAD_QUERY = Symbol('bad query');
type Query = Record<string, string> & { [BAD_QUERY]?: unknown };

/** Our query rules (first occurrence wins, bad encoding is 400), as fastify's query parser: it must not throw. */
function queryOf(raw: string): Query {
  try {
    return parseQuery(raw);
  } catch (err) {
    const q: Query = Object.create(null) as Query;
    q[BAD_QUERY] = err;
    return q;
  }
}

const CONTENT_TYPE = 'application/json; charset=utf-8';
/** Methods probed for `Allow` on a path without a route for the request's method. */
const METHODS: readonly HttpMethod[] = ['DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT'];

function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name.toLowerCase()];
  return Array.isArray(v) ? v.join(', ') : v;
}

/** The request as a route handler sees it: one object per request, headers read from Node's only on use. */
class Context implements RequestContext {
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

/**
 * The shape of a route pattern (`/a/:` for `/a/:b`), for finding duplicates; throws (a programming error) on a
 * malformed pattern: no leading `/`, an empty segment or parameter name, a parameter named twice.
 */
function patternShape(pattern: string): string {
  if (!pattern.startsWith('/')) throw new Error(`route pattern must start with '/': ${pattern}`);
  const segs = (pattern.length > 1 && pattern.endsWith('/') ? pattern.slice(1, -1) : pattern.slice(1)).split('/');
  const names = new Set<string>();
  for (const seg of segs) {
    if (seg.length === 0 && pattern !== '/') throw new Error(`empty segment in route pattern: ${pattern}`);
    if (!seg.startsWith(':')) continue;
    const name = seg.slice(1);
    if (name.length === 0 || names.has(name)) throw new Error(`bad route pattern: ${pattern}`);
    names.add(name);
  }
  return segs.map((seg) => (seg.startsWith(':') ? ':' : seg)).join('/');
}

/** Every route's path under `basePath` (`''` or `/` for none), in fastify's pattern syntax (the same as ours). */
function joinBase(basePath: string | undefined, pattern: string): string {
  if (basePath === undefined || basePath === '' || basePath === '/') return pattern;
  const base = (basePath.startsWith('/') ? basePath : `/${basePath}`).replace(/\/+$/, '');
  return pattern === '/' ? base : `${base}${pattern}`;
}

/**
 * Builds the fastify instance of one role. Routes are added with `route()` until it starts; `GET /openapi.json`
 * serves the OpenAPI 3.1 document of every route.
 */
export function createHttpServer(opts: HttpServerOptions): HttpServer {
  const logger = opts.logger === false ? undefined : opts.logger.child({ role: opts.name });
  const settings: ConnectionSettings = { ...DEFAULT_CONNECTION_SETTINGS, ...opts.connections };
  const limits = { limitBytes: opts.bodyLimitBytes, tooLargeCode: opts.tooLargeCode, timeoutMs: settings.requestTimeoutMs };
  const refusalBody = opts.refusalBody ?? errorBody;
  /** A whole closing response with the refusal body of `err`, for a raw socket. */
  const refusal = (err: DdnError): string =>
    rawJsonResponse(err.status, refusalBody(err), err.status === 503 ? { 'Retry-After': String(retryAfterSeconds(err)) } : {});
  let nextRequestId = 0;
  // made-up request ids: unique per server and process
  const idPrefix = `${Math.floor(Math.random() * 0x1000000).toString(36)}-`;
  const genReqId = (req: IncomingMessage): string => {
    (req as Timed)[ARRIVED] = performance.now();
    const sent = req.headers['x-request-id'];
    return acceptedRequestId(typeof sent === 'string' ? sent : undefined) ?? `${idPrefix}${(nextRequestId++).toString(36)}`;
  };
  const observer = opts.observer;
  const rate = opts.rateLimits;
  const budget = opts.bodyBudget;

  /** The client address key of `req` (see RequestContext.clientKey). */
  const clientKeyOf = (req: IncomingMessage): string => addressKey(rate?.clientOf(req) ?? clientAddress(req.socket.remoteAddress, undefined, undefined));

  /**
   * Where `req`'s body bytes are reserved: the body budget's reservation for its client address (as the rate
   * limits count it), given back when its response closes; undefined without a budget.
   */
  function holdOf(req: IncomingMessage): BodyHold | undefined {
    const held = req as Held;
    if (budget === undefined || held[HOLD] !== undefined) return held[HOLD];
    const reservation = budget.open(clientKeyOf(req));
    const res = held[RESPONSE];
    if (res === undefined || res.closed) reservation.release();
    else res.once('close', () => reservation.release());
    held[HOLD] = reservation;
    return reservation;
  }
  const routes: Route[] = [];
  let started = false;

  /** The request's logger: lines carry its `reqId`; the child logger is made when a line is first written. */
  const logOf = (request: FastifyRequest): RequestLogger =>
    (request.ddnLog ??= logger === undefined ? SILENT : new LazyRequestLogger(logger as FastifyBaseLogger, { reqId: request.id }, {}));

  const fastify: FastifyInstance = Fastify({
    logger: false,
    bodyLimit: opts.bodyLimitBytes,
    requestIdHeader: false,
    genReqId,
    // Requests on kept-alive connections during close are served normally (with `Connection: close`).
    return503OnClosing: false,
    routerOptions: {
      ignoreTrailingSlash: true,
      // DIDs, persona names and ids are long; the spec bounds them, not the router
      maxParamLength: 16 * 1024,
      querystringParser: queryOf,
    },
    serverFactory: (fastifyHandler) => {
      const handler = (req: IncomingMessage, res: ServerResponse): void => {
        if (budget !== undefined) (req as Held)[RESPONSE] = res;
        fastifyHandler(req, res);
      };
      const nodeServer = createBoundedServer(handler, settings, opts.gate, refusal(connectionRefused()));
      // An `Expect` other than 100-continue: 417 with the JSON body (Node's own has none); the body, if any
      // follows, is read and dropped by Node as for any answered request.
      nodeServer.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
        refuse(req, new BodyError(new DdnError('expectation_failed', 'only "Expect: 100-continue" is supported'), false));
        handler(req, res);
      });
      // `Expect: 100-continue`: a body announced over the limit, or beyond the body budget, is refused before
      // the client sends it
      nodeServer.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
        (req as Held)[RESPONSE] = res;
        const refused = refusedBeforeBody(req, limits) ?? continueRefusal(req);
        if (refused === undefined) res.writeContinue();
        else refuse(req, refused);
        fastifyHandler(req, res);
      });
      // CONNECT is never a route (Node would drop the connection without an answer).
      nodeServer.on('connect', (_req: IncomingMessage, socket: Socket) => {
        const err = new DdnError('method_not_allowed', 'CONNECT is not supported');
        socket.on('error', () => socket.destroy());
        socket.end(refusal(err), () => socket.destroy());
      });
      return nodeServer;
    },
    clientErrorHandler: (err, socket) => {
      // Unparseable HTTP or a request whose headers did not arrive in time (before any request exists) still
      // gets a JSON error body, never fastify's own shape; a connection that sent nothing is just closed.
      const code = (err as { code?: unknown }).code;
      if (code === 'ECONNRESET' || socket.destroyed) return;
      const timedOut = code === 'ERR_HTTP_REQUEST_TIMEOUT';
      if (socket.writable && !(timedOut && socket.bytesRead === 0)) {
        socket.write(
          refusal(
            timedOut
              ? new DdnError('request_timeout', 'request headers did not arrive in time', { timeout_ms: settings.headersTimeoutMs })
              : new DdnError('invalid_request', 'malformed HTTP request'),
          ),
        );
      }
      socket.destroy(err);
    },
    frameworkErrors: (err, request, reply) => {
      sendError(request, reply, err.code === 'FST_ERR_BAD_URL' ? invalidPath() : fromFramework(err), undefined);
    },
  });

  /**
   * The refusal of an `Expect: 100-continue` body that does not fit the body budget; when it fits, its bytes stay
   * reserved for the body reader (which then reserves them no second time).
   */
  function continueRefusal(req: IncomingMessage): BodyError | undefined {
    const declared = Number(req.headers['content-length']);
    const hold = declared > 0 ? holdOf(req) : undefined;
    if (hold === undefined) return undefined;
    const refused = hold.grow(declared, true);
    if (refused !== undefined) return new BodyError(refused, true);
    let prepaid = declared;
    (req as Held)[HOLD] = {
      grow: (bytes, whole) => {
        if (prepaid >= bytes) {
          prepaid -= bytes;
          return undefined;
        }
        return hold.grow(bytes, whole);
      },
    };
    return undefined;
  }

  /** Maps errors fastify raises before our handler runs to codes. */
  function fromFramework(err: unknown): unknown {
    if (err instanceof DdnError || err instanceof BodyError || typeof err !== 'object' || err === null) return err;
    const { code, statusCode } = err as { code?: unknown; statusCode?: unknown };
    if (code === 'FST_ERR_CTP_BODY_TOO_LARGE' || statusCode === 413) {
      return new DdnError(opts.tooLargeCode, `request body exceeds ${opts.bodyLimitBytes} bytes`, { limit_bytes: opts.bodyLimitBytes });
    }
    if (code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' || statusCode === 415) return new DdnError('unsupported_media_type');
    if (typeof statusCode === 'number' && statusCode >= 400 && statusCode < 500) return new DdnError('invalid_request', 'malformed request');
    return err;
  }

  /** The route a request was matched to; undefined for the not-found handler. */
  function routeOfRequest(request: FastifyRequest): Route | undefined {
    return request.routeOptions.config.ddn as Route | undefined;
  }

  function record(route: Route | undefined, status: number, code: string | undefined, seconds: number): void {
    if (observer !== undefined && route?.unobserved !== true) (route?.recorder ?? observer.unmatched).record(status, code, seconds);
  }

  /** The body and headers of the error answer to `err`; logs what the client must not see. */
  function errorAnswer(err: unknown, route: Route | undefined, log: FastifyBaseLogger | undefined) {
    const e = toDdnError(err);
    if (e !== err) log?.error({ err }, 'unhandled error');
    else if (e.status >= 500) log?.warn({ code: e.code, reason: e.message }, 'server-side failure');
    let body: object = errorBody(e);
    if (route?.options.errorBody !== undefined) {
      try {
        body = route.options.errorBody(e);
      } catch (bodyErr) {
        log?.error({ err: bodyErr }, 'errorBody failed');
      }
    }
    const headers: Record<string, string> = {};
    const allow = e.details?.allow;
    if (e.code === 'method_not_allowed' && Array.isArray(allow)) headers.allow = allow.join(', ');
    if (e.status === 429 || e.status === 503) headers['retry-after'] = String(retryAfterSeconds(e));
    const challenge = authenticateChallenge(e);
    if (challenge !== undefined) headers['www-authenticate'] = challenge;
    return { e, body: JSON.stringify(body), headers };
  }

  /** Answers `err` (a `DdnError`, a {@link BodyError}, or anything else: 500) on a fastify reply. */
  function sendError(request: FastifyRequest, reply: FastifyReply, err: unknown, route: Route | undefined): void {
    if (reply.sent || reply.raw.headersSent) return;
    const close = err instanceof BodyError && err.closeConnection;
    const { e, body, headers } = errorAnswer(err instanceof BodyError ? err.error : err, route, logOf(request));
    reply.code(e.status).headers(headers).header('x-request-id', request.id).type(CONTENT_TYPE);
    // fastify closes after any body-parser failure; ours say when unread bytes may follow
    if (close) reply.header('connection', 'close');
    else reply.removeHeader('connection');
    record(route, e.status, e.code, secondsSince(request));
    void reply.send(body);
  }

  /**
   * Writes a handler's answer straight to Node's response (fastify's reply is hijacked: an answer needs none of
   * its send pipeline — no hooks, serialisers or content-type handling — and a `HEAD` answer's body is dropped by
   * Node). fastify's `finish` listeners still run, so `onResponse` (the access log) sees every answer.
   */
  function write(request: FastifyRequest, reply: FastifyReply, route: Route, r: HttpResponse): void {
    if (reply.sent) return;
    let payload: JsonPayload;
    try {
      payload = r.payload ?? JSON.stringify(r.body);
    } catch (err) {
      sendError(request, reply, err, route);
      return;
    }
    const headers: OutgoingHttpHeaders = { 'content-type': r.contentType ?? CONTENT_TYPE, 'x-request-id': request.id };
    if (r.headers !== undefined) for (const name in r.headers) headers[name.toLowerCase()] = r.headers[name];
    if ((r.status === 429 || r.status === 503) && headers['retry-after'] === undefined) headers['retry-after'] = '1';
    if (r.status === 401 && headers['www-authenticate'] === undefined) headers['www-authenticate'] = 'Bearer realm="ddn"';
    record(route, r.status, undefined, secondsSince(request));
    reply.hijack();
    const res = reply.raw;
    if (typeof payload === 'string' || Buffer.isBuffer(payload)) {
      headers['content-length'] = typeof payload === 'string' ? Buffer.byteLength(payload) : payload.length;
      res.writeHead(r.status, headers);
      res.end(payload);
      return;
    }
    // bytes in parts (stored envelopes): written uncopied, with their total length, in one socket write
    let length = 0;
    for (const part of payload) length += part.length;
    headers['content-length'] = length;
    res.writeHead(r.status, headers);
    res.cork();
    for (const part of payload) res.write(part);
    res.end();
  }

  /**
   * The handler's answer, for a write that has a target after that target's rate check; a write that succeeds is
   * then counted against its target (failed ones are not: see RateLimits.checkTarget).
   */
  function run(route: Route, ctx: Context): HttpResponse | Promise<HttpResponse> {
    const targetOf = route.options.rateTarget;
    if (rate === undefined || targetOf === undefined) return route.handler(ctx);
    const target = targetOf(ctx);
    const gate = rate.checkTarget(route.options, target);
    if (gate === undefined) return route.handler(ctx);
    return gate
      .then(() => route.handler(ctx))
      .then((r) => {
        if (r.status < 300)
          rate.countTarget(route.options, target)?.catch((err: unknown) => ctx.log.warn({ err }, 'rate limits: a write could not be counted'));
        return r;
      });
  }

  /** The fastify handler of `route`: a synchronous handler's answer is written in the same call. */
  function handlerOf(route: Route): RouteHandlerMethod {
    return (request, reply) => {
      try {
        const refused = (request.raw as Refusable)[REFUSED];
        if (refused !== undefined) throw refused;
        const query = request.query as Query;
        if (query[BAD_QUERY] !== undefined) throw query[BAD_QUERY];
        const params = request.params as Record<string, string>;
        // an empty segment is never a parameter (`/dids//nonces`)
        for (const name in params) if (params[name] === '') throw new DdnError('not_found', 'no such route');
        const r = run(route, new Context(request, params, query, logOf, clientKeyOf));
        if (r instanceof Promise) {
          r.then(
            (v) => write(request, reply, route, v),
            (err: unknown) => sendError(request, reply, err, route),
          );
        } else write(request, reply, route, r);
      } catch (err) {
        sendError(request, reply, err, route);
      }
    };
  }

  /** A client over its route's budget is refused before its body is read (and the connection then closed). */
  function rateGate(options: RouteOptions) {
    return (request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void): void => {
      const gate = rate?.admitClient(options, request.raw);
      if (gate === undefined) {
        done();
        return;
      }
      gate.then(
        () => done(),
        (err: unknown) => done(isBodyless(request.method) ? toDdnError(err) : new BodyError(toDdnError(err), true)),
      );
    };
  }

  fastify.decorateRequest('ddnRawBody', null);
  fastify.decorateRequest('ddnLog', null);
  fastify.removeAllContentTypeParsers();
  // Every body, whatever its media type, is read by our reader and parsed by ours (415 for a non-JSON one).
  const readBody = (request: FastifyRequest, _payload: IncomingMessage, done: (err: Error | null, body?: unknown) => void): void => {
    const refused = (request.raw as Refusable)[REFUSED];
    if (refused !== undefined) {
      done(refused, undefined);
      return;
    }
    readRequestBody(request.raw, limits, holdOf(request.raw)).then(
      (raw) => {
        const rawBody = raw !== undefined && raw.length > 0 ? raw : undefined;
        let parsed: JsonObject | undefined;
        try {
          parsed = rawBody === undefined ? undefined : parseJsonBody(rawBody, request.headers['content-type']);
        } catch (err) {
          done(err as Error, undefined);
          return;
        }
        request.ddnRawBody = rawBody ?? null;
        done(null, parsed);
      },
      (err: Error) => done(err, undefined),
    );
  };
  fastify.addContentTypeParser('*', readBody);
  // The same parser by name for JSON: fastify remembers the parser of a named media type per header value, while
  // the catch-all is looked for anew (the header parsed and every named parser tried) on every request.
  fastify.addContentTypeParser('application/json', readBody);
  fastify.setErrorHandler((err, request, reply) => sendError(request, reply, fromFramework(err), routeOfRequest(request)));
  fastify.setNotFoundHandler((request, reply) => {
    const refused = (request.raw as Refusable)[REFUSED];
    if (refused !== undefined) {
      sendError(request, reply, refused, undefined);
      return;
    }
    const url = request.raw.url ?? '/';
    const allow = METHODS.filter((method) => fastify.findRoute({ method, url }) !== null);
    sendError(
      request,
      reply,
      allow.length === 0 ? new DdnError('not_found', 'no such route') : new DdnError('method_not_allowed', `method ${request.method} not allowed`, { allow }),
      undefined,
    );
  });
  if (opts.accessLog === true) {
    fastify.addHook('onResponse', (request, reply, done) => {
      logOf(request).info(
        { req: { method: request.method, url: request.raw.url }, res: { statusCode: reply.statusCode }, responseTime: secondsSince(request) * 1000 },
        'request completed',
      );
      done();
    });
  }

  void fastify.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: `ddn ${opts.name}`, version: opts.version ?? '0.0.0' },
    },
  });
  // The routes, added once fastify starts (after the OpenAPI plugin, which sees every route as it is added).
  void fastify.register((app, _options, done) => {
    started = true;
    for (const route of routes) {
      const handler = handlerOf(route);
      const method = route.method;
      const limited = rate !== undefined && route.options.rateClass !== undefined;
      app.route({
        method,
        url: joinBase(opts.basePath, route.pattern),
        handler,
        config: { ddn: route },
        schema: documented(route),
        ...(limited ? { onRequest: rateGate(route.options) } : {}),
      });
    }
    done();
  });
  // schemas document; they neither validate nor serialise (see the file comment)
  fastify.setValidatorCompiler(() => undefined as never);
  fastify.setSerializerCompiler(() => (data) => JSON.stringify(data));

  let openapi: string | undefined;
  const server: HttpServer = {
    fastify,
    route(method, pattern, handler, options = {}) {
      if (started) throw new Error(`route ${method} ${pattern} added after the server started`);
      const shape = patternShape(pattern);
      if (routes.some((r) => r.method === method && patternShape(r.pattern) === shape)) throw new Error(`duplicate route: ${method} ${pattern}`);
      routes.push({
        method,
        pattern,
        // The handler is typed by its pattern's params; the router guarantees exactly those names.
        handler: handler as unknown as RouteHandler,
        options,
        recorder: observer?.route(method, pattern),
      });
    },
  };
  routes.push({
    method: 'GET',
    pattern: '/openapi.json',
    handler: () => {
      openapi ??= JSON.stringify(withAdditions(fastify, fastify.swagger()));
      return jsonPayload(200, openapi);
    },
    options: { schema: { summary: 'This OpenAPI document', tags: ['meta'], response: { 200: OpenApiDocumentSchema } } },
    recorder: undefined,
    unobserved: true,
  });
  return server;
}

/** The fastify schema of a route: its declared shapes plus the error answers every route can give. */
function documented(route: Route): Record<string, unknown> {
  const s = route.options.schema ?? {};
  const response: Record<string, unknown> = { ...errorResponses(route.options.errorSchema, route.method) };
  for (const [status, schema] of Object.entries(s.response ?? {})) response[status] = schema;
  const out: Record<string, unknown> = { response: enumerateErrorCodes(response) };
  const params = s.params ?? paramsOf(route.pattern);
  if (params !== undefined) out.params = params;
  for (const key of ['summary', 'description', 'tags', 'querystring', 'headers', 'body'] as const) {
    if (s[key] !== undefined) out[key] = s[key];
  }
  return out;
}
