/**
 * The HTTP server of one role (Directory, Relay or Cache). Every request goes to one handler that routes on
 * the raw path ({@link Router}), reads the body as bytes and parses it here, so that the §0.3 rules (JSON on
 * every method, 415, 400 `invalid_json`, 413 before parsing) and the §0.6 error body hold on every route.
 * fastify provides listen/close, `inject()` for tests and in-process clients, and the server's upgrade events.
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type OutgoingHttpHeaders, type Server, type ServerResponse } from 'node:http';
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
import { BodyError, isBodyless, readRequestBody } from './body-reader.js';
import { errorBody, retryAfterSeconds, toDdnError } from './error-body.js';
import { parseJsonBody, type JsonObject } from './json-body.js';
import { Router, type PathParams } from './router.js';
import { invalidPath, parseQuery, splitTarget } from './url.js';

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
}

const CONTENT_TYPE = 'application/json; charset=utf-8';

/**
 * Writes `out` on a Node response. Every request of every role ends here, whether it came over a socket or
 * through `fastify.inject`, so headers and framing are the same on both.
 */
function writeOutgoing(res: ServerResponse, out: Outgoing): void {
  const headers: OutgoingHttpHeaders = {};
  if (out.headers !== undefined) for (const name of Object.keys(out.headers)) headers[name.toLowerCase()] = out.headers[name];
  if ((out.status === 429 || out.status === 503) && headers['retry-after'] === undefined) headers['retry-after'] = '1';
  if (out.close) headers.connection = 'close';
  headers['content-type'] = CONTENT_TYPE;
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
  const limits = { limitBytes: opts.bodyLimitBytes, tooLargeCode: opts.tooLargeCode };
  let nextRequestId = 0;
  let nodeServer: Server | undefined;

  const fastify: FastifyInstance = Fastify({
    ...(logger === undefined ? { logger: false } : { loggerInstance: logger as FastifyBaseLogger }),
    bodyLimit: opts.bodyLimitBytes,
    exposeHeadRoutes: false,
    // request lines are logged by handle(); fastify's own would repeat them for inject()ed requests
    logController: new LogController({ disableRequestLogging: true }),
    // Requests on kept-alive connections during close are served normally instead of fastify's own 503 body.
    return503OnClosing: false,
    serverFactory: () => {
      nodeServer = createServer((req, res) => void handle(req, res));
      // fastify's defaults for a server it creates itself
      nodeServer.keepAliveTimeout = 72_000;
      nodeServer.requestTimeout = 0;
      nodeServer.setTimeout(0);
      return nodeServer;
    },
    clientErrorHandler: (err, socket) => {
      // Unparseable HTTP (before any request exists) still gets a JSON error body, never fastify's own shape.
      if ((err as { code?: unknown }).code === 'ECONNRESET' || socket.destroyed) return;
      if (socket.writable) {
        const body = JSON.stringify(errorBody(new DdnError('invalid_request', 'malformed HTTP request')));
        socket.write(
          'HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\n' +
            `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
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

  function routeOf(method: string, rawUrl: string): Route | undefined {
    try {
      return router.match(method, splitTarget(rawUrl).path).value;
    } catch {
      return undefined;
    }
  }

  /** The error response of `err`; logs what the client must not see. */
  function errorOutgoing(err: unknown, route: Route | undefined, requestId: string, close: boolean): Outgoing {
    const e = toDdnError(err);
    if (e !== err) logger?.error({ reqId: requestId, err }, 'unhandled error');
    else if (e.status >= 500) logger?.warn({ reqId: requestId, code: e.code, reason: e.message }, 'server-side failure');
    let body: object = errorBody(e);
    if (route?.options.errorBody !== undefined) {
      try {
        body = route.options.errorBody(e);
      } catch (bodyErr) {
        logger?.error({ reqId: requestId, err: bodyErr }, 'errorBody failed');
      }
    }
    const headers: Record<string, string> = {};
    const allow = e.details?.allow;
    if (e.code === 'method_not_allowed' && Array.isArray(allow)) headers.allow = allow.join(', ');
    if (e.status === 429 || e.status === 503) headers['retry-after'] = String(retryAfterSeconds(e));
    return { status: e.status, headers, payload: JSON.stringify(body), close };
  }

  /** An error fastify raised before the catch-all route ran (inject, or a framework failure). */
  function replyError(request: FastifyRequest, reply: FastifyReply, err: unknown): void {
    if (reply.sent) return;
    const route = routeOf(request.method, request.raw.url ?? '/');
    const out = errorOutgoing(err, route, String(request.id), false);
    reply.hijack();
    writeOutgoing(reply.raw, out);
  }

  function logCompleted(req: IncomingMessage, res: ServerResponse, requestId: string, startedAt: number): void {
    res.once('finish', () => {
      logger?.info(
        { reqId: requestId, req: { method: req.method, url: req.url }, res: { statusCode: res.statusCode }, responseTime: performance.now() - startedAt },
        'request completed',
      );
    });
  }

  /** One request, from Node's request and response to the route handler and back. Never rejects. */
  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const requestNumber = nextRequestId++;
    const requestId = () => `req-${requestNumber.toString(36)}`;
    if (logger?.isLevelEnabled('info') === true) logCompleted(req, res, requestId(), performance.now());
    const method = req.method ?? 'GET';
    const rawUrl = req.url ?? '/';
    let route: Route | undefined;
    let out: Outgoing;
    try {
      const target = splitTarget(rawUrl);
      // a GET (most reads) neither waits for a body nor, with a synchronous handler, for a promise at all
      const body = isBodyless(method) ? undefined : await readRequestBody(req, limits);
      const match = router.match(method, target.path);
      route = match.value;
      const rawBody = body !== undefined && body.length > 0 ? body : undefined;
      // Node builds `req.headers` from the raw list on first use: a read that needs none (resolve) never pays it
      const ctx: RequestContext = {
        method,
        rawUrl,
        params: match.params,
        query: parseQuery(target.query),
        body: rawBody === undefined ? undefined : parseJsonBody(rawBody, req.headers['content-type']),
        rawBody,
        get headers() {
          return req.headers;
        },
        header: (name) => headerValue(req.headers, name),
        protocol: (req.socket as TLSSocket | undefined)?.encrypted === true ? 'https' : 'http',
      };
      const answer = route.handler(ctx);
      const r = answer instanceof Promise ? await answer : answer;
      out = { status: r.status, headers: r.headers, payload: r.payload ?? JSON.stringify(r.body), close: false };
    } catch (err) {
      const bodyFailure = err instanceof BodyError;
      out = errorOutgoing(bodyFailure ? err.error : err, route ?? (bodyFailure ? routeOf(method, rawUrl) : undefined), requestId(), bodyFailure && err.closeConnection);
    }
    if (res.headersSent || res.destroyed) return;
    if (nodeServer !== undefined && !nodeServer.listening) out.close = true;
    writeOutgoing(res, out);
  }

  fastify.removeAllContentTypeParsers();
  // The body is left unread for handle(), which reads it from the raw request as over a socket.
  fastify.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined));
  fastify.setErrorHandler((err, request, reply) => replyError(request, reply, fromFramework(err)));
  const viaFastify = (request: FastifyRequest, reply: FastifyReply): void => {
    reply.hijack();
    void handle(request.raw, reply.raw);
  };
  fastify.setNotFoundHandler(viaFastify);
  fastify.all('/*', viaFastify);

  return {
    fastify,
    route(method, pattern, handler, options = {}) {
      // The handler is typed by its pattern's params; the router guarantees exactly those names.
      router.add(method, pattern, { handler: handler as unknown as RouteHandler, options });
    },
  };
}
