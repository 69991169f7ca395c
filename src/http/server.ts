/**
 * The HTTP server of one role (Directory, Relay or Cache), on fastify. A route is one object (src/http/route.ts):
 * its shapes, error codes, rate class, parser and handler; a role adds its list with `add`, fastify's router matches
 * on the raw path (§0.4: `%2F` stays inside its parameter, bad escapes are 400 `invalid_path`), and
 * `GET /openapi.json` serves the document built from the same objects (src/http/openapi.ts).
 *
 * What fastify has no rule for stays ours, one concern a file: the body is read and parsed by ours
 * (src/http/body-intake.ts: the §0.3 limits, 408, the body budget, JSON objects only); refusals before any route
 * (src/http/node-server.ts); answers and error bodies (src/http/answers.ts: the §0.6 body or the route's own, the
 * Relay's DeliveryResult); the rate gate, the route's parser (in `preHandler`) and its handler
 * (src/http/route-runner.ts). A path with routes for other methods is 405 with `Allow`. Schemas are not used to
 * validate requests — the routes' parsers report the spec's codes in the spec's order — and answers are serialised
 * with `JSON.stringify` as handlers build them, so a request costs no schema work.
 *
 * Every request has an id (its acceptable `X-Request-Id`, else a generated one), echoed in the response and
 * bound into `ctx.log`, the request's logger, so every line logged through it carries `reqId`. fastify itself runs
 * without a logger: it would log nothing of ours (the access log and every error line are ours) and would tie
 * `finish` listeners to every response.
 */
import type { IncomingMessage } from 'node:http';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from 'fastify';
import { pino, type Logger } from 'pino';
import type { TSchema } from 'typebox';
import { DdnError, type ErrorCode } from '../base/errors.js';
import { createAnswerer, type HttpObserver, type Mounted } from './answers.js';
import type { BodyBudget } from './body-budget.js';
import { bodyIntake } from './body-intake.js';
import { LingeringCloses } from './lingering-close.js';
import { DEFAULT_CONNECTION_SETTINGS, rawJsonResponse, type ConnectionGate, type ConnectionSettings } from './connections.js';
import { jsonPayload, type HttpMethod, type PathParams, type RequestContext, type RequestLogger, type RouteHandler } from './context.js';
import { errorBody, retryAfterSeconds } from './error-body.js';
import type { HandOver } from './hand-over.js';
import { LazyRequestLogger } from './lazy-request-logger.js';
import { clientErrorHandler, nodeServerFactory } from './node-server.js';
import { isRoleDefinition, serverDocument, type DocumentAdjustment, type RoleDefinition } from './openapi.js';
import { addressKey, clientAddress, type RateClass, type RateLimits } from './rate-limit.js';
import { markArrival, queryOf, refusalOf, secondsSince } from './request-state.js';
import { acceptedRequestId } from './request-id.js';
import { asIs, isUpgrade, type Answers, type Route, type RouteEntry, type UpgradeDoc } from './route.js';
import { OpenApiDocumentSchema } from './schemas.js';
import { routeHooks } from './route-runner.js';
import { hasEmptySegment, invalidPath, splitTarget } from './url.js';

export type {
  HttpMethod,
  HttpResponse,
  JsonAnswer,
  JsonPayload,
  ParamNames,
  PathParams,
  PayloadAnswer,
  RequestContext,
  RequestLogger,
  RouteHandler,
} from './context.js';
export { json, jsonPayload } from './context.js';
export type { HttpObserver, RequestRecorder } from './answers.js';

/**
 * Options of a route added with {@link HttpServer.route} (node-level routes: health, readiness, metrics); a role's
 * routes are route objects (src/http/route.ts).
 */
export interface RouteOptions {
  /** The request-rate class the route counts against; none: never limited. */
  rateClass?: RateClass;
  /** A write's target for its class's per-target budget; undefined: none. */
  rateTarget?: (ctx: RequestContext) => string | undefined;
  /** The error codes the handler can answer (beside the HTTP layer's own). */
  errors?: readonly ErrorCode[];
  /** Builds this route's error body instead of the §0.6 shape. */
  errorBody?: (err: DdnError) => object;
  errorSchema?: TSchema;
  schema?: {
    summary?: string;
    description?: string;
    tags?: string[];
    params?: TSchema;
    querystring?: TSchema;
    headers?: TSchema;
    body?: TSchema;
    response?: Answers;
  };
}

/** Options of {@link createHttpServer}. */
export interface HttpServerOptions {
  /** Role name, bound into every log line as `role`; the OpenAPI tag of routes that name none. */
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
  /** Where the writes of routes marked `handOver` may go instead (src/http/hand-over.ts); none: all stay here. */
  handOver?: HandOver;
}

/** One role's HTTP server. */
export interface HttpServer {
  /** The fastify instance: `listen`, `close` (waits for in-flight requests), `inject`. */
  readonly fastify: FastifyInstance;
  /**
   * Adds a role (its route list and its document's adjustment) or a list of routes. Route objects are added to
   * fastify when it starts (`ready`, `listen` or the first `inject`); adding one later throws. A WebSocket route's
   * upgrade handler is attached to Node's server at once.
   */
  add(routes: readonly RouteEntry[] | RoleDefinition): void;
  /**
   * Adds a JSON route from a handler; `pattern` is relative to the base path. For the HTTP layer's own suites'
   * made-up routes: the routes of src/ are route objects (`defineRoute`), their answers typed by their schemas.
   */
  route<P extends string>(method: HttpMethod, pattern: P, handler: RouteHandler<PathParams<P>>, options?: RouteOptions): void;
  /** Every route object added so far, in order (what the OpenAPI document is built from). */
  routes(): readonly Route[];
  /** Every WebSocket route added so far, in order (the rest of the OpenAPI document). */
  upgrades(): readonly UpgradeDoc[];
  /** The document adjustments of the roles added so far, in order. */
  adjustments(): readonly DocumentAdjustment[];
}

/** A route object from a handler and {@link RouteOptions} (the node-level routes). */
export function routeOf(method: HttpMethod, url: string, handler: RouteHandler, options: RouteOptions = {}): Route {
  const s = options.schema ?? {};
  return {
    method,
    url,
    summary: s.summary ?? `${method} ${url}`,
    ...(s.description === undefined ? {} : { description: s.description }),
    ...(s.tags === undefined ? {} : { tags: s.tags }),
    ...(s.params === undefined ? {} : { params: s.params }),
    ...(s.querystring === undefined ? {} : { query: s.querystring }),
    ...(s.headers === undefined ? {} : { headers: s.headers }),
    ...(s.body === undefined ? {} : { body: s.body }),
    answers: s.response ?? {},
    errors: options.errors ?? [],
    ...(options.errorBody === undefined ? {} : { errorBody: options.errorBody }),
    ...(options.errorSchema === undefined ? {} : { errorSchema: options.errorSchema }),
    ...(options.rateClass === undefined ? {} : { rateClass: options.rateClass }),
    ...(options.rateTarget === undefined ? {} : { rateTarget: options.rateTarget }),
    parse: asIs,
    handle: (_input, ctx) => handler(ctx),
  };
}

/** A logger that writes nothing (a server built with `logger: false`). */
const SILENT: RequestLogger = pino({ level: 'silent' });

/** Methods probed for `Allow` on a path without a route for the request's method. */
const METHODS: readonly HttpMethod[] = ['DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT'];

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

/** Request ids: the client's `x-request-id` when acceptable, else made up, unique per server and process. */
function requestIds(): (req: IncomingMessage) => string {
  let nextRequestId = 0;
  const idPrefix = `${Math.floor(Math.random() * 0x1000000).toString(36)}-`;
  return (req) => {
    markArrival(req);
    const sent = req.headers['x-request-id'];
    return acceptedRequestId(typeof sent === 'string' ? sent : undefined) ?? `${idPrefix}${(nextRequestId++).toString(36)}`;
  };
}

/** The request decorations, body parsers, error and not-found handlers and the access log of a role's fastify. */
function installHandlers(
  fastify: FastifyInstance,
  o: {
    intake: ReturnType<typeof bodyIntake>;
    answers: ReturnType<typeof createAnswerer>;
    logOf: (request: FastifyRequest) => RequestLogger;
    accessLog: boolean;
  },
): void {
  fastify.decorateRequest('ddnRawBody', null);
  fastify.decorateRequest('ddnLog', null);
  fastify.decorateRequest('ddnCtx', null);
  fastify.decorateRequest('ddnInput', null);
  fastify.decorateRequest('ddnParseLater', false);
  fastify.removeAllContentTypeParsers();
  // Every body, whatever its media type, is read by our reader and parsed by ours (415 for a non-JSON one).
  fastify.addContentTypeParser('*', o.intake.readBody);
  // The same parser by name for JSON: fastify remembers the parser of a named media type per header value, while
  // the catch-all is looked for anew (the header parsed and every named parser tried) on every request.
  fastify.addContentTypeParser('application/json', o.intake.readBody);
  fastify.setErrorHandler((err, request, reply) =>
    o.answers.sendError(request, reply, o.answers.fromFramework(err), request.routeOptions.config.ddn as Mounted | undefined),
  );
  fastify.setNotFoundHandler((request, reply) => {
    const refused = refusalOf(request.raw);
    if (refused !== undefined) {
      o.answers.sendError(request, reply, refused, undefined);
      return;
    }
    const url = request.raw.url ?? '/';
    // an empty segment (one trailing `/` aside) is never a parameter (route-runner.ts), so it names no route for any
    // method: another method's pattern with a parameter there must not turn the 404 into a 405
    const { path } = splitTarget(url);
    const allow = hasEmptySegment(path) ? [] : METHODS.filter((method) => fastify.findRoute({ method, url }) !== null);
    o.answers.sendError(
      request,
      reply,
      allow.length === 0 ? new DdnError('not_found', 'no such route') : new DdnError('method_not_allowed', `method ${request.method} not allowed`, { allow }),
      undefined,
    );
  });
  if (o.accessLog) {
    fastify.addHook('onResponse', (request, reply, done) => {
      o.logOf(request).info(
        { req: { method: request.method, url: request.raw.url }, res: { statusCode: reply.statusCode }, responseTime: secondsSince(request) * 1000 },
        'request completed',
      );
      done();
    });
  }
}

/** `GET /openapi.json`: the document of every route of `server`, built on the first request. */
function openApiRoute(server: HttpServer, opts: HttpServerOptions): Route {
  let openapi: string | undefined;
  return routeOf(
    'GET',
    '/openapi.json',
    () => {
      openapi ??= JSON.stringify(
        serverDocument({ routes: server.routes(), upgrades: server.upgrades(), adjustments: server.adjustments() }, [opts.name], {
          title: `ddn ${opts.name}`,
          version: opts.version ?? '0.0.0',
          tooLargeCode: opts.tooLargeCode,
          ...(opts.basePath === undefined ? {} : { basePath: opts.basePath }),
        }),
      );
      return jsonPayload(200, openapi);
    },
    { schema: { summary: 'This OpenAPI document', tags: ['meta'], response: { 200: OpenApiDocumentSchema } } },
  );
}

/**
 * The client address of a request as the rate limits see it, and its key (RequestContext.clientKey): for a write
 * another process handed over, the key of the address that process saw.
 */
function clientAddressing(rate: RateLimits | undefined, handOver: HandOver | undefined) {
  const clientAddressOf = (req: IncomingMessage): string => rate?.clientOf(req) ?? clientAddress(req.socket.remoteAddress, undefined, undefined);
  const clientKeyOf = (req: IncomingMessage): string => addressKey(handOver?.handedFor(req) || clientAddressOf(req));
  return { clientAddressOf, clientKeyOf };
}

/**
 * Builds the fastify instance of one role. Routes are added with `add()` until it starts; `GET /openapi.json`
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
  const genReqId = requestIds();
  const observer = opts.observer;
  const rate = opts.rateLimits;

  const { clientAddressOf, clientKeyOf } = clientAddressing(rate, opts.handOver);
  const intake = bodyIntake(limits, opts.bodyBudget, clientKeyOf);
  const mounted: Mounted[] = [];
  let started = false;

  /** The request's logger: lines carry its `reqId`; the child logger is made when a line is first written. */
  const logOf = (request: FastifyRequest): RequestLogger =>
    (request.ddnLog ??= logger === undefined ? SILENT : new LazyRequestLogger(logger as FastifyBaseLogger, { reqId: request.id }, {}));
  const lingering = new LingeringCloses();
  const answers = createAnswerer({ logOf, observer, tooLargeCode: opts.tooLargeCode, bodyLimitBytes: opts.bodyLimitBytes, lingering });
  const { gate, bodyBudget } = opts;
  const nodeDeps = { settings, gate, limits, budgeted: bodyBudget !== undefined, refusal, continueRefusal: intake.continueRefusal, lingering };

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
    serverFactory: nodeServerFactory(nodeDeps),
    clientErrorHandler: clientErrorHandler(nodeDeps),
    frameworkErrors: (err, request, reply) => {
      answers.sendError(request, reply, err.code === 'FST_ERR_BAD_URL' ? invalidPath() : answers.fromFramework(err), undefined);
    },
  });

  installHandlers(fastify, { intake, answers, logOf, accessLog: opts.accessLog === true });

  // The routes, added once fastify starts.
  void fastify.register((app, _options, done) => {
    started = true;
    const deps = { answers, rate, logOf, clientKeyOf, clientAddressOf, handOver: opts.handOver };
    for (const m of mounted) {
      app.route({ method: m.route.method, url: joinBase(opts.basePath, m.route.url), config: { ddn: m }, ...routeHooks(m, deps) });
    }
    done();
  });

  const add = (route: Route, unobserved = false): void => {
    if (started) throw new Error(`route ${route.method} ${route.url} added after the server started`);
    const shape = patternShape(route.url);
    if (mounted.some((m) => m.route.method === route.method && patternShape(m.route.url) === shape)) {
      throw new Error(`duplicate route: ${route.method} ${route.url}`);
    }
    mounted.push({ route, recorder: unobserved ? undefined : observer?.route(route.method, route.url), ...(unobserved ? { unobserved } : {}) });
  };
  const upgrades: UpgradeDoc[] = [];
  const adjustments: DocumentAdjustment[] = [];
  const server: HttpServer = {
    fastify,
    add(role) {
      const routes = isRoleDefinition(role) ? role.routes : role;
      if (isRoleDefinition(role) && role.adjustDocument !== undefined) adjustments.push(role.adjustDocument);
      for (const r of routes) {
        if (!isUpgrade(r)) add(r);
        else if (upgrades.length > 0) throw new Error(`second WebSocket route: ${r.doc.path} (its upgrade handler answers every upgrade)`);
        else {
          upgrades.push(r.doc);
          r.attach(fastify.server);
        }
      }
    },
    route(method, pattern, handler, options) {
      // The handler is typed by its pattern's params; the router guarantees exactly those names.
      add(routeOf(method, pattern, handler as unknown as RouteHandler, options));
    },
    routes: () => mounted.map((m) => m.route),
    upgrades: () => upgrades,
    adjustments: () => adjustments,
  };
  add(openApiRoute(server, opts), true);
  return server;
}
