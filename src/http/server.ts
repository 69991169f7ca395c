/**
 * The fastify server of one role (Directory, Relay or Cache). One catch-all fastify route hands every request
 * to our raw-path {@link Router}; bodies are read as bytes and parsed here so that the §0.3 rules (JSON on
 * every method, 415, 400 `invalid_json`, 413 before parsing) and the §0.6 error body hold on every route.
 */
import type { IncomingHttpHeaders } from 'node:http';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import type { Logger } from 'pino';
import { DdnError, type ErrorCode } from '../base/errors.js';
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
  payload?: Buffer | string;
  headers?: Record<string, string>;
}

/** Builds an {@link HttpResponse}; a promise as body (an un-awaited use-case result) is a type error. */
export function json<T extends object>(status: number, body: T extends PromiseLike<unknown> ? never : T, headers?: Record<string, string>): HttpResponse {
  return headers === undefined ? { status, body } : { status, body, headers };
}

/** An {@link HttpResponse} whose body is the pre-serialised JSON object `payload`. */
export function jsonPayload(status: number, payload: Buffer | string, headers?: Record<string, string>): HttpResponse {
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
  request: FastifyRequest;
  reply: FastifyReply;
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

/** Builds the fastify instance of one role. Routes are added with `route()` at any time. */
export function createHttpServer(opts: HttpServerOptions): HttpServer {
  const router = new Router<Route>({ basePath: opts.basePath });
  const fastify: FastifyInstance = Fastify({
    ...(opts.logger === false
      ? { logger: false }
      : { loggerInstance: opts.logger.child({ role: opts.name }) as FastifyBaseLogger }),
    bodyLimit: opts.bodyLimitBytes,
    exposeHeadRoutes: false,
    // Requests on kept-alive connections during close are served normally instead of fastify's own 503 body.
    return503OnClosing: false,
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
      sendError(request, reply, err.code === 'FST_ERR_BAD_URL' ? invalidPath() : fromFramework(err), undefined);
    },
  });

  function routeOf(request: FastifyRequest): Route | undefined {
    try {
      return router.match(request.method, splitTarget(request.raw.url ?? '/').path).value;
    } catch {
      return undefined;
    }
  }

  /** Maps errors fastify raises before our handler runs (body reading) to codes. */
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

  function sendError(request: FastifyRequest, reply: FastifyReply, err: unknown, route: Route | undefined): void {
    const e = toDdnError(err);
    if (e !== err) request.log.error({ err }, 'unhandled error');
    else if (e.status >= 500) request.log.warn({ code: e.code, reason: e.message }, 'server-side failure');
    if (reply.sent) return;
    let body: object = errorBody(e);
    if (route?.options.errorBody !== undefined) {
      try {
        body = route.options.errorBody(e);
      } catch (bodyErr) {
        request.log.error({ err: bodyErr }, 'errorBody failed');
      }
    }
    const headers: Record<string, string> = {};
    const allow = e.details?.allow;
    if (e.code === 'method_not_allowed' && Array.isArray(allow)) headers.allow = allow.join(', ');
    if (e.status === 429 || e.status === 503) headers['retry-after'] = String(retryAfterSeconds(e));
    sendJson(reply, e.status, JSON.stringify(body), headers);
  }

  async function dispatch(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    let route: Route | undefined;
    try {
      const rawUrl = request.raw.url ?? '/';
      const target = splitTarget(rawUrl);
      const match = router.match(request.method, target.path);
      route = match.value;
      const rawBody = Buffer.isBuffer(request.body) && request.body.length > 0 ? request.body : undefined;
      const headers = request.headers;
      const ctx: RequestContext = {
        method: request.method,
        rawUrl,
        params: match.params,
        query: parseQuery(target.query),
        body: parseJsonBody(rawBody, headers['content-type']),
        rawBody,
        headers,
        header: (name) => headerValue(headers, name),
        request,
        reply,
      };
      const res = await route.handler(ctx);
      if (reply.sent) return reply;
      sendJson(reply, res.status, res.payload ?? JSON.stringify(res.body), res.headers);
    } catch (err) {
      sendError(request, reply, err, route);
    }
    return reply;
  }

  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
  fastify.setErrorHandler((err, request, reply) => sendError(request, reply, fromFramework(err), routeOf(request)));
  fastify.setNotFoundHandler(dispatch);
  fastify.all('/*', dispatch);

  return {
    fastify,
    route(method, pattern, handler, options = {}) {
      // The handler is typed by its pattern's params; the router guarantees exactly those names.
      router.add(method, pattern, { handler: handler as unknown as RouteHandler, options });
    },
  };
}

function sendJson(reply: FastifyReply, status: number, payload: Buffer | string, headers?: Record<string, string>): void {
  reply.code(status);
  if (headers !== undefined) for (const name of Object.keys(headers)) reply.header(name, headers[name]);
  if ((status === 429 || status === 503) && !reply.hasHeader('retry-after')) reply.header('retry-after', '1');
  reply.header('content-type', 'application/json; charset=utf-8');
  reply.send(payload);
}
