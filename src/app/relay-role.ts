/**
 * Builds the Relay role of a node (http-api.md §10): its SQLite staging store (`<data-dir>/relay.sqlite`),
 * outbound Cache stores (node-signed, in-process for this node's own Cache), executors, live sessions and the
 * `/ws/{did}/{device}` upgrade handler, the service and its sweeper. Part of the composition root.
 */
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { WebSocketServer } from 'ws';
import type { Clock } from '../base/clock.js';
import type { HttpServer } from '../http/server.js';
import type { DirectoryPort } from '../ports/directory-port.js';
import type { NodeIdentity } from '../protocol/node-signature.js';
import type { Profile } from '../protocol/profile.js';
import { HttpCacheStorer, type LocalCachePort, type StoreRetryPolicy } from '../relay/cache-store-client.js';
import { BaseDidDeliveryExecutor, type DeliveryExecutor } from '../relay/executor.js';
import { HttpRelayForwarder } from '../relay/plan/forward.js';
import { PlanExecutor } from '../relay/plan/executor.js';
import { PolicyCachingDirectory } from '../relay/policy-cache.js';
import { InProcessLiveFanout, type LiveFanout, type LiveFanoutFactory } from '../relay/live-fanout.js';
import { DEFAULT_LIVE_LIMITS, LiveSessions } from '../relay/live-sessions.js';
import { OutboundHttp } from '../outbound/outbound-http.js';
import { registerRelayRoutes } from '../relay/routes.js';
import { RelayService, type RelayEvent } from '../relay/service.js';
import type { RelaySettings } from '../relay/settings.js';
import type { RelayStagingStore, RelaySweepResult } from '../relay/staging-store.js';
import { DEFAULT_RELAY_SWEEP_INTERVAL_MS, RelaySweeper } from '../relay/sweeper.js';
import { liveRoute } from '../relay/websocket-route.js';
import { SqliteRelayStagingStore, type SqliteRelayStagingOptions } from '../store/sqlite/relay-staging-store.js';
import { PgLiveFanout } from '../store/postgres/live-fanout.js';
import { openPgRelayStagingStore } from '../store/postgres/relay-staging-store.js';
import type { StorageGuard } from '../store/storage-guard.js';
import type { OpenedRole } from './cache-role.js';
import type { Config } from './config.js';
import type { DirectoryAccess } from './directory-access.js';
import { localCachePort } from './local-cache.js';
import type { NodeMetrics } from './metrics.js';
import { runs, type NodeContext } from './node-context.js';
import type { NodeUrls } from './public-urls.js';
import type { CacheRole } from './cache-role.js';
import type { EventProcessing } from './event-processing.js';

/** The Relay file inside the data directory. */
export const RELAY_DB_FILE = 'relay.sqlite';

/** Inputs of {@link createRelayRole}. */
export interface RelayRoleOptions {
  config: Config;
  profile: Profile;
  clock: Clock;
  directory: DirectoryPort;
  /** Who the Relay signs node requests as. */
  identity: NodeIdentity;
  /** `public_urls.relay` once known. */
  publicRelayUrls(): readonly string[];
  /** `public_urls.cache` of this node (stores to them are in-process). */
  publicCacheUrls(): readonly string[];
  /** This node's Cache, when it runs one. */
  localCache?: LocalCachePort;
  logger?: Logger;
  sweepIntervalMs?: number;
  /** Outbound store timeouts and retries (tests shorten them). */
  storeRetry?: Partial<StoreRetryPolicy>;
  /** Replaces the `DeliveryPlan/v1` executor (tests). */
  planExecutor?: DeliveryExecutor;
  events?: (e: RelayEvent) => void;
  store?: SqliteRelayStagingOptions;
  /** An already opened staging store (PostgreSQL with `--db`); default: the SQLite file in the data directory. */
  staging?: RelayStagingStore;
  /** Reaches live sessions of other Relay processes (PostgreSQL with `--db`); default: this process only. */
  liveFanout?: LiveFanoutFactory;
  /** Where the Relay's deliveries, outbound requests, sweeps and live sessions are counted. */
  metrics?: NodeMetrics;
}

/** A built Relay role. */
export interface RelayRole {
  readonly service: RelayService;
  readonly store: RelayStagingStore;
  readonly sessions: LiveSessions;
  readonly live: LiveFanout;
  readonly settings: RelaySettings;
  /** Adds the routes and the WebSocket upgrade handler to the Relay server. */
  register(server: HttpServer): void;
  /** Starts the background purge. */
  start(): void;
  /** Stops the background purge (`close()` stops it too). */
  stop(): Promise<void>;
  sweep(): Promise<RelaySweepResult>;
  /** Resolves once every accepted write is committed. */
  settle(): Promise<void>;
  /** Closes every live session with 1001 (before the HTTP server closes: upgraded sockets keep it open). */
  closeSessions(): Promise<void>;
  /** Stops the purge, closes outbound connections, commits queued writes and closes the database. */
  close(): Promise<void>;
}

/** The Relay's settings from the configuration. */
function relaySettings(o: RelayRoleOptions): RelaySettings {
  const c = o.config;
  return Object.freeze({
    profile: o.profile,
    publicRelayUrls: o.publicRelayUrls,
    maxHttpEnvelopeBytes: c.relay.maxHttpEnvelopeBytes,
    maxUnchunkedMessageBytes: c.relay.maxUnchunkedMessageBytes,
    maxChunkBytes: c.relay.maxChunkBytes,
    stagingWindowSeconds: c.relay.stagingWindowSeconds,
    stagingMaxBytes: c.relay.stagingMaxBytes,
    stagingMaxSetsPerRecipient: c.relay.stagingMaxSetsPerRecipient,
    stagingMaxSetBytes: c.relay.stagingMaxSetBytes,
    stagingMaxBytesPerRecipient: c.relay.stagingMaxBytesPerRecipient,
    stagingMaxBytesPerSender: c.relay.stagingMaxBytesPerSender,
    stagingIdleSeconds: c.relay.stagingIdleSeconds,
    proofClockSkewSeconds: c.proofClockSkewSeconds,
    allowPlaintext: c.cache.allowPlaintext,
  });
}

/** The staging store: the one given, else the SQLite file in the data directory; its gauges in `m`. */
function stagingStore(o: RelayRoleOptions, logger: Logger | undefined, m: NodeMetrics | undefined): RelayStagingStore {
  const store: RelayStagingStore =
    o.staging ??
    SqliteRelayStagingStore.open(join(o.config.dataDir, RELAY_DB_FILE), {
      ...o.store,
      writer: {
        onBatchError: (err) => logger?.error({ err }, 'relay write batch failed'),
        onThreadExit: (err, restarted) =>
          logger?.error(
            { err, restarted },
            restarted ? 'relay writer thread died; a new one took over' : 'relay writer thread keeps dying; writes are refused until restart',
          ),
        ...(m === undefined ? {} : { onCommit: m.writerCommits('relay') }),
        ...o.store?.writer,
      },
    });
  if (m !== undefined) {
    m.gaugesOf(() => store.usage(), {
      ddn_relay_staged_chunk_sets: { help: 'Chunk sets the Relay is staging (waiting for their other chunks)', value: (u) => u.sets },
      ddn_relay_staged_bytes: { help: 'Envelope bytes of the chunks the Relay is staging', value: (u) => u.bytes },
    });
    if (store instanceof SqliteRelayStagingStore) m.writerQueue('relay', () => store.writeQueue);
  }
  return store;
}

/** The Relay's two executors: base-DID delivery (stores retried) and `DeliveryPlan/v1` (one attempt per endpoint). */
function relayExecutors(
  o: RelayRoleOptions,
  parts: { directory: PolicyCachingDirectory; outbound: OutboundHttp; live: LiveFanout; logger: Logger | undefined },
): { base: DeliveryExecutor; plan: DeliveryExecutor } {
  const { outbound, logger } = parts;
  const storerOf = (retry: Partial<StoreRetryPolicy> | undefined): HttpCacheStorer =>
    new HttpCacheStorer({
      profile: o.profile,
      clock: o.clock,
      identity: o.identity,
      outbound,
      ownCacheUrls: o.publicCacheUrls,
      ...(o.localCache === undefined ? {} : { local: o.localCache }),
      ...(retry === undefined ? {} : { retry }),
      ...(logger === undefined ? {} : { logger }),
    });
  const plan =
    o.planExecutor ??
    new PlanExecutor({
      profile: o.profile,
      identity: o.identity,
      directory: parts.directory,
      // §10.4.2: plan steps make one attempt per endpoint with a 10 s timeout
      storer: storerOf({ attempts: 1, timeoutMs: o.storeRetry?.timeoutMs ?? 10_000 }),
      forwarder: new HttpRelayForwarder({ profile: o.profile, clock: o.clock, identity: o.identity, outbound, ...(logger === undefined ? {} : { logger }) }),
    });
  return { base: new BaseDidDeliveryExecutor({ profile: o.profile, identity: o.identity, storer: storerOf(o.storeRetry), live: parts.live }), plan };
}

/** The live sessions of this process, with the configured limits; their gauges in `m`. */
function liveSessions(c: Config, m: NodeMetrics | undefined): LiveSessions {
  const sessions = new LiveSessions({
    ...DEFAULT_LIVE_LIMITS,
    maxSessions: c.relay.liveMaxSessions,
    maxSessionsPerDid: c.relay.maxSessionsPerDid,
    maxBufferedBytes: c.relay.liveMaxSessionBufferedBytes,
    maxTotalBufferedBytes: c.relay.liveMaxBufferedBytes,
    pingIntervalMs: c.relay.livePingIntervalMs,
  });
  m?.gauges(
    {
      ddn_relay_live_sessions: { help: 'Open live (WebSocket) sessions on this process', key: 'sessions' },
      ddn_relay_live_buffered_bytes: { help: "Bytes queued on the live sessions' sockets", key: 'bufferedBytes' },
    },
    () => sessions.totals(),
  );
  return sessions;
}

/** Adds the Relay's routes and its `/ws/{did}/{device}` upgrade handler to `server`; the upgrade handler. */
function registerRelay(
  server: HttpServer,
  o: RelayRoleOptions,
  parts: { service: RelayService; store: RelayStagingStore; sessions: LiveSessions; logger: Logger | undefined; m: NodeMetrics | undefined },
): WebSocketServer {
  const { store, logger, m } = parts;
  const c = o.config;
  const live = liveRoute({
    basePath: '',
    directory: o.directory,
    sessions: parts.sessions,
    auth: {
      mode: c.relay.liveAuth,
      profile: o.profile,
      clock: o.clock,
      skewSeconds: c.proofClockSkewSeconds,
      publicRelayUrls: o.publicRelayUrls,
      claimNonce: (claim, nowMs) => store.claimNonce(claim, nowMs),
      firstFrameTimeoutMs: c.relay.liveAuthTimeoutMs,
    },
    ...(logger === undefined ? {} : { logger }),
  });
  registerRelayRoutes(server, parts.service, {
    nodeAuth: { profile: o.profile, directory: o.directory, nonces: store, clock: o.clock },
    ...(m === undefined ? {} : { onResult: (r) => m.relayDelivery(r.delivery_mode, r.code) }),
    live: live.route,
  });
  return live.wss;
}

/** Opens the Relay's database and wires its parts. */
export function createRelayRole(o: RelayRoleOptions): RelayRole {
  const logger = o.logger?.child({ role: 'relay' });
  const m = o.metrics;
  const settings = relaySettings(o);
  const store = stagingStore(o, logger, m);
  const outbound = new OutboundHttp({
    allowPrivate: o.config.policy.allowPrivateEndpoints,
    ...(m === undefined ? {} : { observe: (result: string, seconds: number) => m.outbound(result, seconds) }),
  });
  // winning-rule lookups reused for their policy_ttl_seconds (a remote Directory's answers are reused by the node)
  const directory = new PolicyCachingDirectory(o.directory, o.clock);
  const sessions = liveSessions(o.config, m);
  const live = o.liveFanout === undefined ? new InProcessLiveFanout(sessions) : o.liveFanout(sessions);
  const service = new RelayService({
    settings,
    directory,
    store,
    clock: o.clock,
    executors: relayExecutors(o, { directory, outbound, live, logger }),
    ...(o.events === undefined ? {} : { events: o.events }),
    ...(logger === undefined ? {} : { logger }),
  });
  const sweep = (): Promise<RelaySweepResult> => service.sweep();
  const sweeper = new RelaySweeper(
    m?.countedSweep('ddn_relay_swept_total', "What the Relay's purge removed: chunk sets, chunks, delivery results and nonces past their window", sweep) ??
      sweep,
    o.sweepIntervalMs ?? DEFAULT_RELAY_SWEEP_INTERVAL_MS,
    logger,
  );
  // the upgrade handlers of the servers the routes were added to (one: the Relay's)
  const upgrades: WebSocketServer[] = [];
  return {
    service,
    store,
    sessions,
    live,
    settings,
    register: (server) => void upgrades.push(registerRelay(server, o, { service, store, sessions, logger, m })),
    start: () => sweeper.start(),
    stop: () => sweeper.stop(),
    sweep: () => sweeper.sweep(),
    settle: () => store.settle(),
    async closeSessions() {
      await sessions.closeAll();
      for (const wss of upgrades) wss.close();
    },
    async close() {
      await sessions.closeAll();
      await sweeper.stop();
      outbound.close();
      await live.close();
      await store.close();
    },
  };
}

/**
 * The node's Relay role, when it runs one, as two components: the role with its staging store (PostgreSQL with
 * `--db`, live pushes then reaching every Relay process through LISTEN/NOTIFY; else SQLite in the data
 * directory), open once built and closed after the servers; its purge, started with the node.
 */
export async function openRelayRole(
  ctx: NodeContext,
  deps: {
    access: DirectoryAccess;
    storage: StorageGuard;
    urls: NodeUrls;
    identity: NodeIdentity;
    cache: CacheRole | undefined;
    events: EventProcessing | undefined;
  },
): Promise<OpenedRole<RelayRole> | undefined> {
  if (!runs(ctx, 'relay')) return undefined;
  const { config, overrides, logger, clock } = ctx;
  const staging = config.db === null ? undefined : await openPgRelayStagingStore(config.db.url, config.db.schema);
  const pgLive =
    config.db === null || staging === undefined
      ? undefined
      : await PgLiveFanout.open({ url: config.db.url, schema: config.db.schema, pool: staging.pool, logger }).catch(async (e: unknown) => {
          await staging.close();
          throw e;
        });
  if (pgLive !== undefined) ctx.metrics?.watchLiveFanout(pgLive);
  const { cache, events } = deps;
  const role = createRelayRole({
    config,
    profile: ctx.profile,
    clock,
    directory: deps.access.directory,
    ...(staging === undefined ? { store: { guard: deps.storage } } : { staging }),
    ...(pgLive === undefined ? {} : { liveFanout: (sessions) => pgLive.attach(sessions) }),
    identity: deps.identity,
    ...(events === undefined ? {} : { events: (e) => events.relayEvent(e) }),
    publicRelayUrls: deps.urls.relay,
    publicCacheUrls: deps.urls.cache,
    // the Cache takes the Relay's sender check as its own when both read the same DID records
    ...(cache === undefined
      ? {}
      : {
          localCache: localCachePort(cache.service, clock, config.proofClockSkewSeconds, {
            sharedDidRecords: deps.access.cacheDirectory === deps.access.directory,
          }),
        }),
    logger,
    metrics: ctx.metrics,
    ...(overrides.relaySweepIntervalMs === undefined ? {} : { sweepIntervalMs: overrides.relaySweepIntervalMs }),
    ...(overrides.relayStoreRetry === undefined ? {} : { storeRetry: overrides.relayStoreRetry }),
  });
  ctx.lifecycle.add({ name: 'relay', stop: () => role.close() });
  ctx.lifecycle.add({ name: 'relay purge', start: () => role.start(), stop: () => role.stop() });
  return { role, ...(staging === undefined ? {} : { pgPool: staging.pool }) };
}
