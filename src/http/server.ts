/**
 * The HTTP server of one role (Directory, Relay or Cache). Every request goes to one handler that routes on
 * the raw path ({@link Router}), reads the body as bytes and parses it here, so that the §0.3 rules (JSON on
 * every method, 415, 400 `invalid_json`, 413 before parsing) and the §0.6 error body hold on every route.
 * fastify provides listen/close, `inject()` for tests and in-process clients, and the server's upgrade events.
 */
import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import type { Logger } from 'pino';
import { DdnError, type ErrorCode } from '../base/errors.js';
import { acceptedRequestId, inRequest } from '../base/request-scope.js';
import { BodyError, isBodyless, readRequestBody, refusedBeforeBody } from './body-reader.js';
import { connectionRefused, createBoundedServer, DEFAULT_CONNECTION_SETTINGS, rawJsonResponse, type ConnectionGate, type ConnectionSettings } from './connections.js';
import { errorBody, retryAfterSeconds, toDdnError } from './error-body.js';
import { parseJsonBody, type JsonObject } from './json-body.js';
import type { RateClass, RateLimits } from './rate-limit.js';
import { Router, type PathParams } from './router.js';
import { invalidPath, parseQuery, splitTarget, type RawTarget } from './url.js';

/** Methods a route can be added for (`HEAD` is served by `GET` routes). */
export type HttpMethod = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'OPTIONS';

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
  /** The request's id: its acceptable `X-Request-Id`, else one made up; echoed in the response. */
  requestId: string;
}

/** A route handler. Throw `DdnError` for client-visible failures. */
export type RouteHandler<P = Record<string, string>> = (ctx: RequestContext<P>) => HttpResponse | Promise<HttpResponse>;

/** Per-route options. */
export interface RouteOptions {
  /**
   * Builds this route's error body instead of the §0.6 shape (the Relay answers with a DeliveryResult, §10.5).
   * The status is still the code's status.
   */
  errorBody?: (err: DdnError) => object;
  /** The request-rate class the route counts against (src/http/rate-limit.ts); none: never limited. */
  rateClass?: RateClass;
  /** A write's target (DID, persona…) for its class's per-target budget, from params or body; undefined: none. */
  rateTarget?: (ctx: RequestContext) => string | undefined;
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
  /**
   * The body of refusals made before any route is known (a refused connection, unparseable HTTP, a header
   * timeout, `CONNECT`); the §0.6 error body by default. The Relay's also carries the DeliveryResult fields.
   */
  refusalBody?: (err: DdnError) => object;
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
  /** The fastify instance: `listen`, `close` (waits for in-flight requests), `inject`, and non-JSON routes. */
  readonly fastify: FastifyInstance;
  /** Adds a JSON route; `pattern` is relative to the base path, e.g. `/dids/:did/aliases/:alias`. */
  route<P extends string>(
    method: HttpMethod,
    pattern: P,
    handler: RouteHandler<PathParams<P>>,
    options?: RouteOptions,
  ): void;
}

interface Route {
  handler: RouteHandler;
  options: RouteOptions;
  recorder: RequestRecorder | undefined;
}

/** One request being answered: its id (logs, `X-Request-Id`) and when it arrived. */
interface Exchange {
  readonly id: string;
  readonly startedAt: number;
}

function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name.toLowerCase()];
  return Array.isArray(v) ? v.join(', ') : v;
}

/** A response ready to write: status, extra headers and the serialised JSON object. */
interface Outgoing {
  status: number;
  headers: Record<string, string> | undefined;
  payload: JsonPayload;
  /** Close the connection after the response (unread body bytes may follow). */
  close: boolean;
  /** The error code of an error answer. */
  code?: string;
  contentType?: string;
}

/** The `X-Request-Id` header of `req` from its raw list (so `req.headers` is not built for it). */
function incomingRequestId(req: IncomingMessage): string | undefined {
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length === 12 && name.toLowerCase() === 'x-request-id') return acceptedRequestId(raw[i + 1]);
  }
  return undefined;
}

/** The request as a route handler sees it: one object per request, headers read from Node's only on use. */
class Context implements RequestContext {
  constructor(
    private readonly req: IncomingMessage,
    readonly method: string,
    readonly rawUrl: string,
    readonly params: Record<string, string>,
    readonly query: Record<string, string>,
    readonly body: JsonObject | undefined,
    readonly rawBody: Buffer | undefined,
    readonly requestId: string,
  ) {}

  /** Node builds `req.headers` from the raw list on first use: a route that reads none (resolve) never pays it. */
  get headers(): IncomingHttpHeaders {
    return this.req.headers;
  }

  /** A function value, so routes can pass it on (`proofFromHeaders(ctx.header, …)`); made on use. */
  get header(): (name: string) => string | undefined {
    const headers = this.req.headers;
    return (name) => headerValue(headers, name);
  }

  get protocol(): 'http' | 'https' {
    return (this.req.socket as TLSSocket | undefined)?.encrypted === true ? 'https' : 'http';
  }
}

/** The response of a handler's answer. */
function outgoingOf(r: HttpResponse): Outgoing {
  const out: Outgoing = { status: r.status, headers: r.headers, payload: r.payload ?? JSON.stringify(r.body), close: false };
  if (r.contentType !== undefined) out.contentType = r.contentType;
  return out;
}

const CONTENT_TYPE = 'application/json; charset=utf-8';

/**
 * Writes `out` on a Node response. Every request of every role ends here, whether it came over a socket or
 * through `fastify.inject`, so headers and framing are the same on both.
 */
function writeOutgoing(res: ServerResponse, out: Outgoing, requestId: string): void {
  const headers: OutgoingHttpHeaders = {};
  if (out.headers !== undefined) for (const name of Object.keys(out.headers)) headers[name.toLowerCase()] = out.headers[name];
  if ((out.status === 429 || out.status === 503) && headers['retry-after'] === undefined) headers['retry-after'] = '1';
  if (out.close) headers.connection = 'close';
  headers['content-type'] = out.contentType ?? CONTENT_TYPE;
  headers['x-request-id'] = requestId;
  const payload = out.payload;
  if (typeof payload === 'string' || Buffer.isBuffer(payload)) {
    headers['content-length'] = typeof payload === 'string' ? Buffer.byteLength(payload) : payload.length;
    res.writeHead(out.status, headers);
    res.end(payload);
    return;
  }
  let length = 0;
  for (const part of payload) length += part.length;
  headers['content-length'] = length;
  res.writeHead(out.status, headers);
  res.cork();
  for (const part of payload) res.write(part);
  res.end();
}

/**
 * Builds the fastify instance of one role. Routes are added with `route()` at any time.
 *
 * Requests over a socket skip fastify's request pipeline: the Node server fastify listens with hands each
 * request straight to {@link createHttpServer}'s own handler (routing on the raw path, reading the body,
 * answering JSON), which is most of the per-request CPU of a small request otherwise. `fastify.inject` and
 * anything fastify itself rejects (unparseable HTTP, an invalid `Content-Type` under inject) reach the same
 * handler and error mapping through fastify's catch-all route.
 */
export function createHttpServer(opts: HttpServerOptions): HttpServer {
  const router = new Router<Route>({ basePath: opts.basePath });
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
  const observer = opts.observer;
  const accessLog = opts.accessLog === true;
  let nodeServer: Server | undefined;
  const rate = opts.rateLimits;

  /** A request's id (the client's `X-Request-Id`, or a made-up one) and arrival time. */
  function exchangeOf(req: IncomingMessage): Exchange {
    return { id: incomingRequestId(req) ?? `${idPrefix}${(nextRequestId++).toString(36)}`, startedAt: performance.now() };
  }

  const fastify: FastifyInstance = Fastify({
    ...(logger === undefined ? { logger: false } : { loggerInstance: logger as FastifyBaseLogger }),
    bodyLimit: opts.bodyLimitBytes,
    exposeHeadRoutes: false,
    // request lines are logged by handle(); fastify's own would repeat them for inject()ed requests
    logController: new LogController({ disableRequestLogging: true }),
    // Requests on kept-alive connections during close are served normally instead of fastify's own 503 body.
    return503OnClosing: false,
    serverFactory: () => {
      nodeServer = createBoundedServer(handle, settings, opts.gate, refusal(connectionRefused()));
      // An `Expect` other than 100-continue: 417 with the JSON body (Node's own has none); the body, if any
      // follows, is read and dropped by Node as for any answered request.
      nodeServer.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
        const err = new DdnError('expectation_failed', 'only "Expect: 100-continue" is supported');
        const ex = exchangeOf(req);
        const route = routeOf(req.method ?? 'GET', req.url ?? '/');
        send(res, errorOutgoing(err, route, ex, false), route, ex);
      });
      // `Expect: 100-continue`: a body announced over the limit is refused before the client sends it
      nodeServer.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
        const refused = refusedBeforeBody(req, limits);
        if (refused === undefined) {
          res.writeContinue();
          handle(req, res);
          return;
        }
        const ex = exchangeOf(req);
        const route = routeOf(req.method ?? 'POST', req.url ?? '/');
        send(res, errorOutgoing(refused.error, route, ex, true), route, ex);
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
      replyError(request, reply, err.code === 'FST_ERR_BAD_URL' ? invalidPath() : fromFramework(err));
    },
  });

  /** Maps errors fastify raises before our handler runs to codes. */
  function fromFramework(err: unknown): unknown {
    if (err instanceof DdnError || typeof err !== 'object' || err === null) return err;
    const { code, statusCode } = err as { code?: unknown; statusCode?: unknown };
    if (code === 'FST_ERR_CTP_BODY_TOO_LARGE' || statusCode === 413) {
      return new DdnError(opts.tooLargeCode, `request body exceeds ${opts.bodyLimitBytes} bytes`, {
        limit_bytes: opts.bodyLimitBytes,
      });
    }
    if (code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' || statusCode === 415) return new DdnError('unsupported_media_type');
    if (typeof statusCode === 'number' && statusCode >= 400 && statusCode < 500) {
      return new DdnError('invalid_request', 'malformed request');
    }
    return err;
  }

  /** The route of a path, or undefined (its routing error is answered later, after the body). */
  function matchOrUndefined(method: string, path: string): ReturnType<Router<Route>['match']> | undefined {
    try {
      return router.match(method, path);
    } catch {
      return undefined;
    }
  }

  function routeOf(method: string, rawUrl: string): Route | undefined {
    try {
      return router.match(method, splitTarget(rawUrl).path).value;
    } catch {
      return undefined;
    }
  }

  /** The error response of `err`; logs what the client must not see. */
  function errorOutgoing(err: unknown, route: Route | undefined, ex: Exchange, close: boolean): Outgoing {
    const e = toDdnError(err);
    if (e !== err) logger?.error({ reqId: ex.id, err }, 'unhandled error');
    else if (e.status >= 500) logger?.warn({ reqId: ex.id, code: e.code, reason: e.message }, 'server-side failure');
    let body: object = errorBody(e);
    if (route?.options.errorBody !== undefined) {
      try {
        body = route.options.errorBody(e);
      } catch (bodyErr) {
        logger?.error({ reqId: ex.id, err: bodyErr }, 'errorBody failed');
      }
    }
    const headers: Record<string, string> = {};
    const allow = e.details?.allow;
    if (e.code === 'method_not_allowed' && Array.isArray(allow)) headers.allow = allow.join(', ');
    if (e.status === 429 || e.status === 503) headers['retry-after'] = String(retryAfterSeconds(e));
    return { status: e.status, headers, payload: JSON.stringify(body), close, code: e.code };
  }

  /** An error fastify raised before the catch-all route ran (inject, or a framework failure). */
  function replyError(request: FastifyRequest, reply: FastifyReply, err: unknown): void {
    if (reply.sent) return;
    const route = routeOf(request.method, request.raw.url ?? '/');
    const ex = exchangeOf(request.raw);
    reply.hijack();
    send(reply.raw, errorOutgoing(err, route, ex, false), route, ex);
  }

  function logCompleted(req: IncomingMessage, res: ServerResponse, ex: Exchange): void {
    res.once('finish', () => {
      logger?.info(
        { reqId: ex.id, req: { method: req.method, url: req.url }, res: { statusCode: res.statusCode }, responseTime: performance.now() - ex.startedAt },
        'request completed',
      );
    });
  }

  /** Writes `out` unless the response is already gone; closes the connection once the server is closing. */
  function send(res: ServerResponse, out: Outgoing, route: Route | undefined, ex: Exchange): void {
    if (res.headersSent || res.destroyed) return;
    if (nodeServer !== undefined && !nodeServer.listening) out.close = true;
    writeOutgoing(res, out, ex.id);
    if (observer !== undefined) {
      (route?.recorder ?? observer.unmatched).record(out.status, out.code, (performance.now() - ex.startedAt) / 1000);
    }
  }

  /** Sends a handler's answer, now or when its promise settles. */
  function answer(res: ServerResponse, route: Route, r: HttpResponse | Promise<HttpResponse>, ex: Exchange): void {
    if (r instanceof Promise) {
      r.then(
        (v) => answer(res, route, v, ex),
        (err: unknown) => send(res, errorOutgoing(err, route, ex, false), route, ex),
      );
      return;
    }
    let out: Outgoing;
    try {
      out = outgoingOf(r);
    } catch (err) {
      out = errorOutgoing(err, route, ex, false);
    }
    send(res, out, route, ex);
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
        if (r.status < 300) rate.countTarget(route.options, target)?.catch((err: unknown) => logger?.warn({ err }, 'rate limits: a write could not be counted'));
        return r;
      });
  }

  /**
   * One request, from Node's request and response to the route handler and back. Never throws. A request
   * without a body (most reads) is routed and, with a synchronous handler, answered in this same call.
   */
  function handle(req: IncomingMessage, res: ServerResponse): void {
    const ex = exchangeOf(req);
    if (accessLog && logger?.isLevelEnabled('info') === true) logCompleted(req, res, ex);
    // The request's scope (its id in every log line, passed on by outbound calls) costs every promise of the
    // request an async hook on Node 20 (measured: ~10 % of a Relay delivery's CPU), so it comes with the access log.
    if (accessLog) inRequest(ex.id, () => handleIn(req, res, ex));
    else handleIn(req, res, ex);
  }

  /** {@link handle} within the request's scope (its id in every log line). */
  function handleIn(req: IncomingMessage, res: ServerResponse, ex: Exchange): void {
    const method = req.method ?? 'GET';
    const rawUrl = req.url ?? '/';
    let route: Route | undefined;
    try {
      const target = splitTarget(rawUrl);
      if (!isBodyless(method)) {
        void handleWithBody(req, res, method, rawUrl, target, ex);
        return;
      }
      const match = router.match(method, target.path);
      route = match.value;
      const query = parseQuery(target.query);
      const ctx = new Context(req, method, rawUrl, match.params, query, undefined, undefined, ex.id);
      const matched = route;
      const gate = rate?.admitClient(matched.options, req);
      answer(res, matched, gate === undefined ? run(matched, ctx) : gate.then(() => run(matched, ctx)), ex);
    } catch (err) {
      send(res, errorOutgoing(err, route, ex, false), route, ex);
    }
  }

  /** {@link handle} for a method with a body: the body is read (and bounded) before routing. Never rejects. */
  async function handleWithBody(
    req: IncomingMessage,
    res: ServerResponse,
    method: string,
    rawUrl: string,
    target: RawTarget,
    ex: Exchange,
  ): Promise<void> {
    let route: Route | undefined;
    let unread = false;
    try {
      // A client over its budget is refused before its body is read (and the connection closed).
      const early = rate === undefined ? undefined : matchOrUndefined(method, target.path);
      const gate = early === undefined ? undefined : rate?.admitClient(early.value.options, req);
      if (gate !== undefined) {
        route = early?.value;
        unread = true;
        await gate;
        unread = false;
      }
      const body = await readRequestBody(req, limits);
      const match = early ?? router.match(method, target.path);
      route = match.value;
      const rawBody = body !== undefined && body.length > 0 ? body : undefined;
      const query = parseQuery(target.query);
      const parsed = rawBody === undefined ? undefined : parseJsonBody(rawBody, req.headers['content-type']);
      answer(res, route, run(route, new Context(req, method, rawUrl, match.params, query, parsed, rawBody, ex.id)), ex);
    } catch (err) {
      const bodyFailure = err instanceof BodyError;
      const routeOfFailure = route ?? (bodyFailure ? routeOf(method, rawUrl) : undefined);
      send(res, errorOutgoing(bodyFailure ? err.error : err, routeOfFailure, ex, unread || (bodyFailure && err.closeConnection)), routeOfFailure, ex);
    }
  }

  fastify.removeAllContentTypeParsers();
  // The body is left unread for handle(), which reads it from the raw request as over a socket.
  fastify.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined));
  fastify.setErrorHandler((err, request, reply) => replyError(request, reply, fromFramework(err)));
  const viaFastify = (request: FastifyRequest, reply: FastifyReply): void => {
    reply.hijack();
    handle(request.raw, reply.raw);
  };
  fastify.setNotFoundHandler(viaFastify);
  fastify.all('/*', viaFastify);

  return {
    fastify,
    route(method, pattern, handler, options = {}) {
      // The handler is typed by its pattern's params; the router guarantees exactly those names.
      router.add(method, pattern, { handler: handler as unknown as RouteHandler, options, recorder: observer?.route(method, pattern) });
    },
  };
}
