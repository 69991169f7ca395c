/**
 * The HTTP side of a node: the limits every role's server shares (rate limits, the request-body budget, the
 * connection gate), one server per enabled role with its routes, `/health`, `/ready` and `/metrics`, and the
 * listeners. Two components: the servers, open once built (`fastify.inject` works) and closed first when the node
 * stops — live sessions and export streams ended, no new connection accepted, in-flight requests drained — and
 * the listeners, which bind every role's port when the node starts. Part of the composition root.
 */
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { DirectoryService } from '../directory/service.js';
import { registerDirectoryRoutes } from '../directory/routes.js';
import { exportFeedParts } from '../directory/export-routes.js';
import type { GenesisConfig } from '../ledger/block.js';
import type { Ledger } from '../ledger/chain.js';
import { BodyBudget } from '../http/body-budget.js';
import { ConnectionGate } from '../http/connections.js';
import type { RateLimits } from '../http/rate-limit.js';
import type { HandOver } from '../http/hand-over.js';
import { createHttpServer, type HttpServer, type HttpServerOptions } from '../http/server.js';
import { refusalResult } from '../relay/delivery-result.js';
import type { StorageGuard } from '../store/storage-guard.js';
import type { CacheRole } from './cache-role.js';
import { hostForUrl, isLoopbackHost, type Config, type Role } from './config.js';
import { watchFeedStream } from './feed-stream-metrics.js';
import { registerHealthRoute, type HealthSource } from './health.js';
import type { Component } from './lifecycle.js';
import { registerMetricsRoute, type MetricsAccess, type NodeMetrics } from './metrics.js';
import type { NodeContext } from './node-context.js';
import type { ReadyFlag } from './node-health.js';
import type { NodeUrls } from './public-urls.js';
import { openRateLimits, type NodeRateLimits } from './rate-limits.js';
import { registerReadyRoute, writesCheck, type ReadinessCheck } from './readiness.js';
import type { RelayRole } from './relay-role.js';

const BODY_LIMITS: Record<Role, (c: Config) => Pick<HttpServerOptions, 'bodyLimitBytes' | 'tooLargeCode'>> = {
  directory: (c) => ({ bodyLimitBytes: c.directory.maxBodyBytes, tooLargeCode: 'payload_too_large' }),
  relay: (c) => ({ bodyLimitBytes: c.relay.maxHttpEnvelopeBytes, tooLargeCode: 'envelope_too_large' }),
  cache: (c) => ({ bodyLimitBytes: c.relay.maxHttpEnvelopeBytes, tooLargeCode: 'envelope_too_large' }),
};

/** One set of rate-limit budgets for every role of the process, when configured (closed after the servers). */
export async function openNodeRateLimits(ctx: NodeContext): Promise<NodeRateLimits | undefined> {
  const rate = await openRateLimits(ctx.config.rateLimit, ctx.config.db, ctx.logger);
  if (rate === undefined) return undefined;
  ctx.lifecycle.add({ name: 'rate limits', stop: () => rate.close() });
  ctx.metrics.watchRateLimits(rate.limits);
  return rate;
}

/** What the servers of a node serve. */
export interface ServersDeps {
  rate: NodeRateLimits | undefined;
  storage: StorageGuard;
  health: HealthSource;
  readyChecks: readonly ReadinessCheck[];
  /** Why `/ready/writes` fails now, or null (`writesRefusal` in readiness.ts). */
  writesRefusal: () => string | null;
  ready: ReadyFlag;
  /** With `handOver`: the writes this process hands to the producer (a ledger on PostgreSQL). */
  directory: { service: DirectoryService; ledger: Ledger; genesis: GenesisConfig; handOver: HandOver | undefined } | undefined;
  cache: CacheRole | undefined;
  relay: RelayRole | undefined;
}

/** The servers of every enabled role, with all their routes, as a component; none listens yet. */
export function openServers(ctx: NodeContext, deps: ServersDeps): NodeServers {
  const { config, logger, metrics } = ctx;
  const bodyBudget = watchedBodyBudget(config, metrics, deps.storage);
  const metricsAccess = { token: config.metricsToken, loopback: isLoopbackHost(config.host) };
  if (metricsAccess.token === null && !metricsAccess.loopback) {
    logger.warn({ host: config.host }, 'GET /metrics answers 403 on a non-loopback address until --metrics-token is set');
  }
  const { rate, cache, relay, directory } = deps;
  const feedStreams: { close(): void }[] = [];
  const servers = buildServers(config, {
    logger,
    metrics,
    connectionGate: new ConnectionGate(config.http),
    bodyBudget,
    ...(rate === undefined ? {} : { rateLimits: rate.limits }),
    health: deps.health,
    readyChecks: deps.readyChecks,
    writesCheck: writesCheck(deps.writesRefusal),
    isReady: deps.ready.isReady,
    metricsAccess,
    ...(directory?.handOver === undefined ? {} : { handOver: directory.handOver }),
    register: {
      ...(directory === undefined ? {} : { directory: (server) => void feedStreams.push(registerDirectory(ctx, server, directory, rate)) }),
      ...(cache === undefined ? {} : { cache: (server) => cache.register(server) }),
      ...(relay === undefined ? {} : { relay: (server) => relay.register(server) }),
    },
  });
  return ctx.lifecycle.add(new NodeServers(servers, relay, feedStreams));
}

/** The Directory's routes and its export feed, whose stream is counted in the node's metrics. */
function registerDirectory(
  ctx: NodeContext,
  server: HttpServer,
  directory: NonNullable<ServersDeps['directory']>,
  rate: NodeRateLimits | undefined,
): { close(): void } {
  const exportFeed = exportFeedParts({
    ledger: directory.ledger,
    genesis: directory.genesis,
    logger: ctx.logger,
    streamLimits: ctx.config.directory.exportStream,
    // the client address as the rate limits count it (trusted proxies), IPv6 per /64
    ...(rate === undefined ? {} : { clientOf: (req: IncomingMessage) => rate.limits.clientOf(req) }),
  });
  registerDirectoryRoutes(server, directory.service, exportFeed);
  watchFeedStream(ctx.metrics, exportFeed.stream);
  ctx.metrics.watchResolveAnswers(directory.service.resolveCache);
  return exportFeed.stream;
}

/** One budget of request bodies in flight for every listener (they share the process's memory), with its gauges. */
function watchedBodyBudget(config: Config, metrics: NodeMetrics, storage: StorageGuard): BodyBudget {
  const bodyBudget = new BodyBudget(config.bodyBudget);
  metrics.gauge('ddn_http_body_bytes_in_flight', 'Bytes reserved by request bodies being received or answered (--http-body-budget-bytes)', (g) =>
    g.set(bodyBudget.heldBytes),
  );
  metrics.countedBy(
    'ddn_http_body_refusals_total',
    'Request bodies refused before they were read: body_budget (503, the process) or body_share (429, one address)',
    'reason',
    () => ({ ...bodyBudget.refusals }),
  );
  metrics.gauge('ddn_storage_degraded', 'Whether the data directory is full (1: new data refused with 507)', (g) => g.set(storage.isDegraded ? 1 : 0));
  return bodyBudget;
}

/** The servers of a node: stopping ends the live sessions and export streams, then closes every server. */
export class NodeServers implements Component {
  readonly name = 'servers';
  constructor(
    readonly servers: ReadonlyMap<Role, HttpServer>,
    private readonly relay: RelayRole | undefined,
    private readonly feedStreams: readonly { close(): void }[],
  ) {}

  /** Stops accepting connections and lets in-flight requests finish (upgraded sockets would keep a server open). */
  async stop(): Promise<void> {
    await this.relay?.closeSessions();
    for (const stream of this.feedStreams) stream.close();
    await Promise.all([...this.servers.values()].map((s) => s.fastify.close()));
  }
}

/** Binds every server to its role's port when the node starts, and records the listening URLs. */
export class NodeListeners implements Component {
  readonly name = 'listeners';
  constructor(
    private readonly config: Config,
    private readonly servers: NodeServers,
    private readonly urls: NodeUrls,
  ) {}

  /** Listens with every server on its role's port, in order. (Stopping to accept is the servers' stop.) */
  async start(): Promise<void> {
    const urls: Partial<Record<Role, string>> = {};
    for (const [role, server] of this.servers.servers) {
      await server.fastify.listen({ host: this.config.host, port: this.config.ports[role] });
      const { port } = server.fastify.server.address() as AddressInfo;
      urls[role] = `http://${hostForUrl(this.config.host)}:${port}`;
    }
    this.urls.bind(urls);
  }
}

/** What {@link buildServers} needs. */
interface ServerDeps {
  logger: Logger;
  metrics: NodeMetrics;
  /** One count of open connections for every listener: they share the process's file descriptors. */
  connectionGate: ConnectionGate;
  /** One budget of request bodies in flight for every listener: they share the process's memory. */
  bodyBudget: BodyBudget;
  rateLimits?: RateLimits;
  health: HealthSource;
  readyChecks: readonly ReadinessCheck[];
  /** The extra check of `/ready/writes`: the node takes new data. */
  writesCheck: ReadinessCheck;
  isReady: () => boolean;
  metricsAccess: MetricsAccess;
  /** The Directory's hand-over of writes (src/http/hand-over.ts). */
  handOver?: HandOver;
  /** Adds each enabled role's own routes. */
  register: Partial<Record<Role, (server: HttpServer) => void>>;
}

/** The HTTP server of every role of `config`, with all its routes; none listens yet. */
function buildServers(config: Config, deps: ServerDeps): Map<Role, HttpServer> {
  const servers = new Map<Role, HttpServer>();
  for (const role of config.roles) {
    const server = createHttpServer({
      name: role,
      logger: deps.logger,
      accessLog: config.accessLog,
      observer: deps.metrics.httpObserver(role),
      ...(deps.health.build === undefined ? {} : { version: deps.health.build.version }),
      ...BODY_LIMITS[role](config),
      ...(deps.rateLimits === undefined ? {} : { rateLimits: deps.rateLimits }),
      connections: config.http,
      gate: deps.connectionGate,
      bodyBudget: deps.bodyBudget,
      ...(role === 'relay' ? { refusalBody: refusalResult } : {}),
      ...(role === 'directory' && deps.handOver !== undefined ? { handOver: deps.handOver } : {}),
    });
    registerHealthRoute(server, deps.health);
    registerReadyRoute(server, deps.readyChecks, deps.isReady, deps.writesCheck);
    registerMetricsRoute(server, deps.metrics, deps.metricsAccess);
    deps.register[role]?.(server);
    servers.set(role, server);
  }
  return servers;
}
