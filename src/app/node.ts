/**
 * The composition root, in two steps: {@link buildNode} builds every dependency of one node from its
 * {@link Config} (data directory, ledger, stores, role services, one HTTP server per enabled role with all its
 * routes) and opens no socket; {@link BuiltNode.listen} then listens on every role's port, starts the background
 * work (sweeps, the node identity's registration) and returns the {@link RunningNode}, which nothing changes
 * afterwards. {@link startNode} is both. `close()` tears everything down in reverse order.
 */
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { to0x } from '../base/bytes.js';
import { systemClock, type Clock } from '../base/clock.js';
import { DirectoryClient } from '../client/directory-client.js';
import { HttpDirectoryPort } from '../adapters/directory-port-http.js';
import { DirectoryViewCache, FreshDidRecords } from '../adapters/directory-view-cache.js';
import { failoverFetch } from '../adapters/failover-fetch.js';
import { LocalDirectoryPort } from '../directory/local-port.js';
import { SqliteDnsChallengeStore } from '../store/sqlite/dns-challenge-store.js';
import { PgDnsChallengeStore } from '../store/postgres/dns-challenge-store.js';
import { DirectoryService } from '../directory/service.js';
import { registerDirectoryRoutes } from '../directory/routes.js';
import { registerExportRoutes } from '../directory/export-routes.js';
import type { FeedStream } from '../directory/export-stream.js';
import { ConnectionGate } from '../http/connections.js';
import { BodyBudget } from '../http/body-budget.js';
import type { RateLimits } from '../http/rate-limit.js';
import { createHttpServer, type HttpServer, type HttpServerOptions } from '../http/server.js';
import { refusalResult } from '../relay/delivery-result.js';
import type { Ledger } from '../ledger/chain.js';
import type { DirectoryPort } from '../ports/directory-port.js';
import { makeProfile } from '../protocol/profile.js';
import type { StoreRetryPolicy } from '../relay/cache-store-client.js';
import { nodeIdentityOf } from '../relay/node-identity.js';
import { StorageGuard, type FreeSpace } from '../store/storage-guard.js';
import { openPgMailboxStore } from '../store/postgres/mailbox-store.js';
import { PgLiveFanout } from '../store/postgres/live-fanout.js';
import type { PgPool } from '../store/postgres/pool.js';
import { openPgRelayStagingStore } from '../store/postgres/relay-staging-store.js';
import { createCacheRole, type CacheRole } from './cache-role.js';
import { hostForUrl, isLoopbackHost, type Config, type Role } from './config.js';
import { registerHealthRoute, type HealthSource } from './health.js';
import { createLogger } from './logger.js';
import { NodeMetrics, registerMetricsRoute, type MetricsAccess } from './metrics.js';
import { DirectoryProbe, reasonOf, registerReadyRoute, storageCheck, writesCheck, type ReadinessCheck } from './readiness.js';
import { buildInfo } from './version.js';
import { localCachePort } from './local-cache.js';
import { openLedgerBackend } from './ledger-backend.js';
import { openRateLimits } from './rate-limits.js';
import { loadNodeKey, loadNodeKeys } from './node-keys.js';
import { lockDataDir } from './data-dir-lock.js';
import { watchFeedStream } from './feed-stream-metrics.js';
import { startNodeRegistration, type RegistrationDirectory } from './node-registration.js';
import { localRegistrationDirectory } from './local-registration.js';
import { createRelayRole, type RelayRole } from './relay-role.js';
import { startEventProcessing, type EventProcessing } from './event-processing.js';
import type { EventDispatcher } from '../events/dispatcher.js';
import type { ChainClient } from '../chain/chain-port.js';
import { chainCheck, chainDegraded, createChainClient, ledgerTime, loadNetwork, networkKeys } from './chain-backend.js';

/** Test seams of {@link startNode}. */
export interface NodeOverrides {
  clock?: Clock;
  logger?: Logger;
  /** Produce blocks on a timer (default true); tests pass false and call `node.ledger.produceBlock()`. */
  autoProduce?: boolean;
  /** Interval of the Cache's background purge (default 30 s). */
  cacheSweepIntervalMs?: number;
  /** Interval of the Relay's background purge (default 30 s). */
  relaySweepIntervalMs?: number;
  /** Timeouts and retries of the Relay's outbound Cache stores. */
  relayStoreRetry?: Partial<StoreRetryPolicy>;
  /** Outbound TLS trust and fixed host answers of event Send/Call requests (tests with a self-signed server). */
  eventOutbound?: { extraCa?: string[]; hosts?: Record<string, string> };
  /** How the data directory's free space is measured (tests that cannot mount a small file system). */
  freeSpace?: FreeSpace;
  /** `--ledger substrate`: the chain client (default: @polkadot/api on `--chain-url` with `--chain-key`). */
  chainClient?: (chain: NonNullable<Config['chain']>, logger: Logger) => ChainClient;
}

/** The node identity (http-api.md §0.1, §10.6). */
export interface NodeIdentityInfo {
  readonly did: string;
  /** Resolves once the node DID is confirmed with its current document (registration runs in the background). */
  readonly ready: Promise<void>;
}

/** A started node. */
export interface RunningNode {
  readonly config: Config;
  /** Listening base URL (`http://host:port`) of each enabled role. */
  readonly urls: Readonly<Partial<Record<Role, string>>>;
  /** `public_urls.*` as DID documents publish them: configured, else the role's own listening URL, else none. */
  readonly publicUrls: { readonly relay: readonly string[]; readonly cache: readonly string[] };
  readonly ledger: Ledger;
  readonly directoryService?: DirectoryService;
  /** The Cache role (service, `CacheStored` events, `sweep()`, `settle()`), when enabled. */
  readonly cache?: CacheRole;
  /** The Relay role (service, staging store, live sessions, `sweep()`), when enabled. */
  readonly relay?: RelayRole;
  /** Event processing of the Cache's and the Relay's events (http-api.md §10.9), when either role runs. */
  readonly events?: EventDispatcher;
  /** The node DID the Relay signs node-to-node requests as. */
  readonly identity: NodeIdentityInfo;
  /** The data directory's storage guard: degraded while the disk is full (docs/public-node.md). */
  readonly storage: StorageGuard;
  /** This node's metrics (`GET /metrics` on every role); features add their families to its registry. */
  readonly metrics: NodeMetrics;
  /**
   * Stops accepting connections, lets in-flight requests finish, stops the ledger at a block boundary and
   * closes the database. Idempotent.
   */
  close(): Promise<void>;
}

/** A node whose stores, services and servers are built, none listening yet. */
export interface BuiltNode {
  readonly config: Config;
  readonly ledger: Ledger;
  /** Each enabled role's server with all its routes (`fastify.inject` works; no socket is open). */
  readonly servers: ReadonlyMap<Role, HttpServer>;
  /** Listens on every role's port and starts the node's background work; once only. A failure closes the node. */
  listen(): Promise<RunningNode>;
  /** Tears down what was built (and, once listening, the running node). Idempotent. */
  close(): Promise<void>;
}

/** Per-request timeout of the node identity registration at a remote Directory. */
const REGISTRATION_TIMEOUT_MS = 10_000;

const BODY_LIMITS: Record<Role, (c: Config) => Pick<HttpServerOptions, 'bodyLimitBytes' | 'tooLargeCode'>> = {
  directory: (c) => ({ bodyLimitBytes: c.directory.maxBodyBytes, tooLargeCode: 'payload_too_large' }),
  relay: (c) => ({ bodyLimitBytes: c.relay.maxHttpEnvelopeBytes, tooLargeCode: 'envelope_too_large' }),
  cache: (c) => ({ bodyLimitBytes: c.relay.maxHttpEnvelopeBytes, tooLargeCode: 'envelope_too_large' }),
};

/** Starts a node: {@link buildNode}, then {@link BuiltNode.listen}. */
export async function startNode(config: Config, overrides: NodeOverrides = {}): Promise<RunningNode> {
  const built = await buildNode(config, overrides);
  return built.listen();
}

/** The listening addresses, known once {@link BuiltNode.listen} bound every port. */
interface Listening {
  readonly urls: Readonly<Partial<Record<Role, string>>>;
  readonly publicUrls: { readonly relay: readonly string[]; readonly cache: readonly string[] };
}

/** Builds a node: data directory, ledger, stores, the roles' services and HTTP servers of `config.roles`; no socket. */
export async function buildNode(config: Config, overrides: NodeOverrides = {}): Promise<BuiltNode> {
  const clock = overrides.clock ?? systemClock;
  const logger = overrides.logger ?? createLogger(config.logLevel, { format: config.logFormat });
  const build = buildInfo();
  logger.info({ version: build.version, ...(build.commit === undefined ? {} : { commit: build.commit }) }, 'ddn starting');
  const metrics = new NodeMetrics(build);
  const profile = makeProfile(config.profile);
  // one process per data directory: the lock comes first and is released last
  const dirLock = lockDataDir(config.dataDir);
  // A node acts under its Relay service, or, without a Relay, under its Cache service (event Calls).
  const acting = config.roles.includes('relay') || !config.roles.includes('cache') ? 'relay' : 'cache';
  const { network, keys, identity } = (() => {
    try {
      const network = config.chain === null ? undefined : loadNetwork(config);
      const keys =
        network === undefined
          ? loadNodeKeys(config.dataDir, { profile: config.profile, chainId: config.chainId }, clock)
          : networkKeys(config.dataDir, network);
      return { network, keys, identity: nodeIdentityOf(profile, loadNodeKey(config.dataDir), acting) };
    } catch (err) {
      dirLock.release();
      throw err;
    }
  })();

  const cleanups: (() => void | Promise<void>)[] = [() => dirLock.release()];
  /** Runs the teardown steps in reverse order of setup; every step runs, the first failure is rethrown. */
  const cleanup = async (): Promise<void> => {
    let failure: unknown;
    for (const step of cleanups.splice(0).reverse()) {
      try {
        await step();
      } catch (err) {
        failure ??= err;
      }
    }
    if (failure !== undefined) throw failure;
  };
  try {
    // before any database opens: on a full disk the reserve makes room for their WAL and shared-memory files
    const storage = StorageGuard.open(config.dataDir, {
      reserveBytes: config.storageReserveBytes,
      logger,
      ...(overrides.freeSpace === undefined ? {} : { freeSpace: overrides.freeSpace }),
    });
    cleanups.push(() => storage.close());
    const backend = await openLedgerBackend(config, {
      profile,
      genesis: keys.genesis,
      clock,
      autoProduce: overrides.autoProduce ?? true,
      logger,
      guard: storage,
      ...(network === undefined || config.chain === null
        ? {}
        : { chain: { network, client: (overrides.chainClient ?? createChainClient)(config.chain, logger.child({ component: 'chain-client' })) } }),
    });
    cleanups.push(() => backend.close());
    const { ledger, db } = backend;

    // set once by listen(): the node is ready from then until it starts closing
    let listening: Listening | undefined;
    let stopping = false;
    const isReady = () => listening !== undefined && !stopping;
    if (config.roles.includes('directory')) cleanups.push(metrics.watchLedger(ledger));
    if (backend.sync !== undefined) metrics.watchLedgerLock(backend.sync);
    if (backend.chain !== undefined) metrics.watchChain(backend.chain);
    const directoryService = config.roles.includes('directory')
      ? new DirectoryService({
          ledger,
          profile,
          // under a chain, the chain's time when it runs ahead of the wall clock (chain-backend.ts)
          clock: backend.chain === undefined ? clock : ledgerTime(clock, ledger),
          attestor: keys.attestor,
          // Shared by every Directory process on PostgreSQL (the replica database is only a cache of the ledger).
          challenges: backend.pgPool === undefined ? new SqliteDnsChallengeStore(db) : await PgDnsChallengeStore.open(backend.pgPool),
          allowPrivateEndpoints: config.policy.allowPrivateEndpoints,
          dnsServers: [...config.directory.dnsServers],
          resolveCacheBytes: config.directory.resolveCacheBytes,
        })
      : undefined;

    // The Relay and the Cache ask a remote Directory when one is configured and this node does not run it.
    const remoteDirectory = config.directoryUrl.length > 0 && !config.roles.includes('directory') ? config.directoryUrl : null;
    let directory: DirectoryPort = new LocalDirectoryPort(ledger, clock);
    // the Cache's: DID records, which authenticate proofs and sender signatures, never reused (node DIDs may be)
    let cacheDirectory = directory;
    let directoryProbe: DirectoryProbe | undefined;
    if (remoteDirectory !== null) {
      const remote = new HttpDirectoryPort(remoteDirectory, { logger });
      cleanups.push(() => remote.close());
      directoryProbe = new DirectoryProbe(remote, clock);
      // answers reused for a few seconds by every role of this process (src/adapters/directory-view-cache.ts)
      const ttlMs = config.directoryViewTtlMs;
      if (ttlMs > 0) {
        const view = new DirectoryViewCache(remote, clock, { ttlMs });
        metrics.countedBy('ddn_directory_view_lookups_total', "Lookups of the remote Directory's answers: hit (reused) or miss (asked)", 'result', () => {
          const { hits, misses } = view.lookups;
          return { hit: hits, miss: misses };
        });
        directory = view;
      } else directory = remote;
      cacheDirectory = ttlMs > 0 ? new FreshDidRecords(directory, remote) : remote;
    }
    const health: HealthSource = {
      roles: config.roles,
      profile: config.profile,
      chainId: keys.genesis.chainId,
      ledger,
      isReady,
      isDegraded: () => storage.isDegraded || (backend.chain !== undefined && chainDegraded(backend.chain)),
      ...(backend.chain === undefined ? {} : { chain: backend.chain }),
      // `events` is set below, before any server listens
      eventDrops: () => events?.dispatcher.drops() ?? null,
      build,
      ...(directoryProbe === undefined ? {} : { directory: directoryProbe }),
    };
    // the PostgreSQL pools of this process's roles (all on the one --db database)
    const pgPools: PgPool[] = backend.pgPool === undefined ? [] : [backend.pgPool];
    const readyChecks: ReadinessCheck[] = [
      storageCheck(config.dataDir),
      { name: 'database', check: () => (pgPools[0] === undefined ? Promise.resolve(null) : reasonOf(() => pgPools[0]!.query('SELECT 1'))) },
    ];
    if (directoryProbe !== undefined) readyChecks.push(directoryProbe.check());
    else readyChecks.push({ name: 'ledger', check: () => reasonOf(async () => ledger.headRef()) });
    if (backend.chain !== undefined) readyChecks.push(chainCheck(backend.chain));

    // Configured, else the role's own listening URL once it listens.
    const publicCache = (): readonly string[] => listening?.publicUrls.cache ?? config.publicUrls.cache;
    const publicRelay = (): readonly string[] => listening?.publicUrls.relay ?? config.publicUrls.relay;
    let cache: CacheRole | undefined;
    if (config.roles.includes('cache')) {
      const mailbox = config.db === null ? undefined : await openPgMailboxStore(config.db.url, config.db.schema);
      if (mailbox !== undefined) pgPools.push(mailbox.pool);
      const role = createCacheRole({
        config,
        profile,
        clock,
        directory: cacheDirectory,
        nodeDirectory: directory,
        ...(mailbox === undefined ? {} : { mailbox }),
        publicCacheUrls: publicCache,
        logger,
        ...(mailbox === undefined ? { store: { guard: storage } } : {}),
        metrics,
        ...(overrides.cacheSweepIntervalMs === undefined ? {} : { sweepIntervalMs: overrides.cacheSweepIntervalMs }),
      });
      cache = role;
      cleanups.push(() => role.close());
    }
    let relay: RelayRole | undefined;
    // Set once event processing starts (below); the Relay's events before that are not processed.
    let events: EventProcessing | undefined;
    if (config.roles.includes('relay')) {
      const staging = config.db === null ? undefined : await openPgRelayStagingStore(config.db.url, config.db.schema);
      if (staging !== undefined) pgPools.push(staging.pool);
      // With --db, live pushes reach the sessions of every Relay process on the database (LISTEN/NOTIFY).
      const pgLive =
        config.db === null || staging === undefined
          ? undefined
          : await PgLiveFanout.open({ url: config.db.url, schema: config.db.schema, pool: staging.pool, logger }).catch(async (e: unknown) => {
              await staging.close();
              throw e;
            });
      const role = createRelayRole({
        config,
        profile,
        clock,
        directory,
        ...(staging === undefined ? { store: { guard: storage } } : { staging }),
        ...(pgLive === undefined ? {} : { liveFanout: (sessions) => pgLive.attach(sessions) }),
        identity,
        events: (e) => events?.relayEvent(e),
        publicRelayUrls: publicRelay,
        publicCacheUrls: publicCache,
        // the Cache takes the Relay's sender check as its own when both read the same DID records
        ...(cache === undefined
          ? {}
          : { localCache: localCachePort(cache.service, clock, config.proofClockSkewSeconds, { sharedDidRecords: cacheDirectory === directory }) }),
        logger,
        metrics,
        ...(overrides.relaySweepIntervalMs === undefined ? {} : { sweepIntervalMs: overrides.relaySweepIntervalMs }),
        ...(overrides.relayStoreRetry === undefined ? {} : { storeRetry: overrides.relayStoreRetry }),
      });
      relay = role;
      cleanups.push(() => role.close());
    }

    events =
      cache === undefined && relay === undefined
        ? undefined
        : startEventProcessing({
            config,
            profile,
            clock,
            identity,
            directory,
            ledger,
            remoteDirectory,
            ...(cache === undefined ? {} : { cache }),
            ownRelayUrls: () => (relay === undefined ? [] : publicRelay()),
            logger,
            ...(overrides.eventOutbound === undefined ? {} : { outbound: overrides.eventOutbound }),
          });
    if (events !== undefined) {
      const dispatcher = events.dispatcher;
      cleanups.push(() => events.close());
      metrics.countedBy('ddn_event_drops_total', 'Events and event steps dropped, by reason', 'reason', () => ({ ...dispatcher.drops() }));
      metrics.countedBy('ddn_event_rule_runs_total', 'Event rules run, by outcome: ok (the plan succeeded) or failed', 'outcome', () => dispatcher.runs());
    }

    // one set of budgets for every role of the process (closed after the servers)
    const rate = await openRateLimits(config.rateLimit, config.db, logger);
    if (rate !== undefined) {
      cleanups.push(() => rate.close());
      const { refusals } = rate.limits;
      metrics.countedBy(
        'ddn_rate_limit_refusals_total',
        'Requests refused with 429 rate_limited, by rate-limit budget (a class, or <class>-target)',
        'class',
        () => ({ ...refusals }),
      );
    }
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
    const metricsAccess = { token: config.metricsToken, loopback: isLoopbackHost(config.host) };
    if (metricsAccess.token === null && !metricsAccess.loopback) {
      logger.warn({ host: config.host }, 'GET /metrics answers 403 on a non-loopback address until --metrics-token is set');
    }
    // every role's server with its routes, then every one listening
    const feedStreams: FeedStream[] = [];
    const servers = buildServers(config, {
      logger,
      metrics,
      connectionGate: new ConnectionGate(config.http),
      bodyBudget,
      ...(rate === undefined ? {} : { rateLimits: rate.limits }),
      health,
      readyChecks,
      writesCheck: writesCheck(() => storage.isDegraded),
      isReady,
      metricsAccess,
      register: {
        ...(directoryService === undefined
          ? {}
          : {
              directory: (server) => {
                registerDirectoryRoutes(server, directoryService);
                const stream = registerExportRoutes(server, {
                  ledger,
                  genesis: keys.genesis,
                  logger,
                  streamLimits: config.directory.exportStream,
                  // the client address as the rate limits count it (trusted proxies), IPv6 per /64
                  ...(rate === undefined ? {} : { clientOf: (req: IncomingMessage) => rate.limits.clientOf(req) }),
                });
                watchFeedStream(metrics, stream);
                feedStreams.push(stream);
              },
            }),
        ...(cache === undefined ? {} : { cache: (server) => cache.register(server) }),
        ...(relay === undefined ? {} : { relay: (server) => relay.register(server) }),
      },
    });
    cleanups.push(async () => {
      stopping = true;
      await relay?.closeSessions();
      for (const stream of feedStreams) stream.close();
      await Promise.all([...servers.values()].map((s) => s.fastify.close()));
    });

    // The node identity: registered in this node's ledger (its Directory service called directly) or at the
    // remote Directory through the SDK; idempotent across restarts.
    const stopRequests = new AbortController();
    const registrar: RegistrationDirectory =
      remoteDirectory !== null
        ? new DirectoryClient(remoteDirectory[0]!, {
            profile,
            fetch: failoverFetch(
              remoteDirectory,
              (url, init) => globalThis.fetch(url, { ...init, signal: AbortSignal.any([stopRequests.signal, AbortSignal.timeout(REGISTRATION_TIMEOUT_MS)]) }),
              logger,
            ),
          })
        : localRegistrationDirectory(
            // without the Directory role, a private service on this node's ledger
            directoryService ?? new DirectoryService({ ledger, profile, clock, attestor: keys.attestor, challenges: SqliteDnsChallengeStore.inMemory() }),
            profile,
          );

    let closing: Promise<void> | undefined;
    const close = (): Promise<void> => {
      closing ??= cleanup().then(() => logger.info('node stopped'));
      return closing;
    };
    let listened = false;
    const listen = async (): Promise<RunningNode> => {
      if (listened) throw new Error('the node listens already');
      listened = true;
      try {
        return await listenNow();
      } catch (err) {
        await close().catch((e: unknown) => logger.error({ err: e }, 'cleanup after failed start'));
        throw err;
      }
    };
    const listenNow = async (): Promise<RunningNode> => {
      const urls = Object.freeze(await listenAll(servers, config));
      const own = (role: Role): string[] => {
        const url = urls[role];
        return url === undefined ? [] : [url];
      };
      const publicUrls = Object.freeze({
        relay: Object.freeze(config.publicUrls.relay.length > 0 ? [...config.publicUrls.relay] : own('relay')),
        cache: Object.freeze(config.publicUrls.cache.length > 0 ? [...config.publicUrls.cache] : own('cache')),
      });
      listening = { urls, publicUrls };
      cache?.start();
      relay?.start();
      const registration = startNodeRegistration({
        client: registrar,
        profile,
        identity,
        serviceUrls: acting === 'relay' ? publicUrls.relay : publicUrls.cache,
        logger: logger.child({ role: 'node' }),
      });
      cleanups.push(() => {
        stopRequests.abort();
        return registration.stop();
      });
      logger.info(
        {
          roles: config.roles,
          urls,
          profile: config.profile,
          chain_id: keys.genesis.chainId,
          genesis_hash: to0x(ledger.genesisHash),
          node_did: identity.did,
        },
        'node started',
      );
      return {
        config,
        urls,
        publicUrls,
        ledger,
        ...(directoryService === undefined ? {} : { directoryService }),
        ...(cache === undefined ? {} : { cache }),
        ...(relay === undefined ? {} : { relay }),
        ...(events === undefined ? {} : { events: events.dispatcher }),
        identity: { did: identity.did, ready: registration.ready },
        storage,
        metrics,
        close,
      };
    };
    return { config, ledger, servers, listen, close };
  } catch (err) {
    await cleanup().catch((e: unknown) => logger.error({ err: e }, 'cleanup after failed start'));
    throw err;
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
    });
    registerHealthRoute(server, deps.health);
    registerReadyRoute(server, deps.readyChecks, deps.isReady, deps.writesCheck);
    registerMetricsRoute(server, deps.metrics, deps.metricsAccess);
    deps.register[role]?.(server);
    servers.set(role, server);
  }
  return servers;
}

/** Listens with every server on its role's port, in order; the listening base URL of each role. */
async function listenAll(servers: ReadonlyMap<Role, HttpServer>, config: Config): Promise<Partial<Record<Role, string>>> {
  const urls: Partial<Record<Role, string>> = {};
  for (const [role, server] of servers) {
    await server.fastify.listen({ host: config.host, port: config.ports[role] });
    const { port } = server.fastify.server.address() as AddressInfo;
    urls[role] = `http://${hostForUrl(config.host)}:${port}`;
  }
  return urls;
}
