/**
 * The composition root. {@link buildNode} calls one small factory per part of the node, each handed the parts it
 * needs — data directory, storage guard, ledger, Directory service, the way to the Directory, the Cache, event
 * processing, the Relay, rate limits, health and readiness, the servers and listeners, the identity's
 * registration — and each registering its start and stop with the node's {@link Lifecycle}, in that order. What is
 * built opens no socket; {@link BuiltNode.listen} starts the lifecycle (the roles' purges, the listeners, the
 * ready flag, the registration) and returns the {@link RunningNode}, which nothing changes afterwards.
 * {@link startNode} is both. `close()` stops the lifecycle: every part in reverse (ARCHITECTURE.md, "Assembling a
 * node").
 */
import { to0x } from '../base/bytes.js';
import type { DirectoryService } from '../directory/service.js';
import type { HttpServer } from '../http/server.js';
import type { Ledger } from '../ledger/chain.js';
import type { StorageGuard } from '../store/storage-guard.js';
import { openCacheRole, type CacheRole } from './cache-role.js';
import type { Config, Role } from './config.js';
import { directoryAccess } from './directory-access.js';
import { openEventProcessing } from './event-processing.js';
import type { EventDispatcher } from '../events/dispatcher.js';
import { identityRegistration, type IdentityRegistration } from './identity-registration.js';
import type { NodeMetrics } from './metrics.js';
import { nodeContext, type NodeContext, type NodeOverrides } from './node-context.js';
import { healthSource, readyChecks, ReadyFlag } from './node-health.js';
import { writesRefusal } from './readiness.js';
import { NodeListeners, openNodeRateLimits, openServers } from './node-http.js';
import { advertiseProducer, openDataDir, openDirectoryService, openHandOver, openLedger, openStorageGuard, type NodeDataDir } from './node-ledger.js';
import { NodeUrls } from './public-urls.js';
import { openRelayRole, type RelayRole } from './relay-role.js';

export type { NodeOverrides } from './node-context.js';

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

/** Starts a node: {@link buildNode}, then {@link BuiltNode.listen}. */
export async function startNode(config: Config, overrides: NodeOverrides = {}): Promise<RunningNode> {
  const built = await buildNode(config, overrides);
  return built.listen();
}

/** Builds a node: data directory, ledger, stores, the roles' services and HTTP servers of `config.roles`; no socket. */
export async function buildNode(config: Config, overrides: NodeOverrides = {}): Promise<BuiltNode> {
  const ctx = nodeContext(config, overrides);
  try {
    return await assemble(ctx);
  } catch (err) {
    await ctx.lifecycle.stop().catch((e: unknown) => ctx.logger.error({ err: e }, 'cleanup after failed start'));
    throw err;
  }
}

/** The parts of a built node that its running form shows. */
interface Parts {
  readonly dataDir: NodeDataDir;
  readonly ledger: Ledger;
  readonly storage: StorageGuard;
  readonly urls: NodeUrls;
  readonly directoryService: DirectoryService | undefined;
  readonly cache: CacheRole | undefined;
  readonly relay: RelayRole | undefined;
  readonly events: EventDispatcher | undefined;
  readonly registration: IdentityRegistration;
}

/** Every part of the node, each added to `ctx.lifecycle` after the parts it takes. */
async function assemble(ctx: NodeContext): Promise<BuiltNode> {
  const dataDir = openDataDir(ctx);
  const storage = openStorageGuard(ctx);
  const backend = await openLedger(ctx, dataDir, storage);
  const { ledger } = backend;
  const directoryService = await openDirectoryService(ctx, backend, dataDir.keys);
  const access = directoryAccess(ctx, ledger);
  const urls = new NodeUrls(ctx.config);
  const cache = await openCacheRole(ctx, { access, storage, urls });
  const events = await openEventProcessing(ctx, { identity: dataDir.identity, access, ledger, cache: cache?.role, urls });
  const relay = await openRelayRole(ctx, { access, storage, urls, identity: dataDir.identity, cache: cache?.role, events });
  const rate = await openNodeRateLimits(ctx);
  const handOver = openHandOver(ctx, backend);
  const ready = new ReadyFlag();
  const servers = openServers(ctx, {
    rate,
    storage,
    health: healthSource(ctx, { keys: dataDir.keys, backend, storage, access, events, ready }),
    readyChecks: readyChecks(ctx, { backend, access, pgPools: [backend.pgPool, cache?.pgPool, relay?.pgPool] }),
    writesRefusal: writesRefusal(storage, backend.sync),
    ready,
    directory: directoryService === undefined ? undefined : { service: directoryService, ledger, genesis: dataDir.keys.genesis, handOver },
    cache: cache?.role,
    relay: relay?.role,
  });
  ctx.lifecycle.add(new NodeListeners(ctx.config, servers, urls));
  advertiseProducer(ctx, backend, urls);
  ctx.lifecycle.add(ready);
  const registration = identityRegistration(ctx, { dataDir, remote: access.remote, ledger, directoryService, urls });
  const parts: Parts = {
    dataDir,
    ledger,
    storage,
    urls,
    directoryService,
    cache: cache?.role,
    relay: relay?.role,
    events: events?.dispatcher,
    registration,
  };
  return builtNode(ctx, parts, servers.servers);
}

/** The built node: `listen()` starts the lifecycle, `close()` stops it. */
function builtNode(ctx: NodeContext, parts: Parts, servers: ReadonlyMap<Role, HttpServer>): BuiltNode {
  const { config, lifecycle, logger } = ctx;
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= lifecycle.stop().then(() => logger.info('node stopped'));
    return closing;
  };
  let listened = false;
  const listen = async (): Promise<RunningNode> => {
    if (listened) throw new Error('the node listens already');
    listened = true;
    try {
      await lifecycle.start();
    } catch (err) {
      await close().catch((e: unknown) => logger.error({ err: e }, 'cleanup after failed start'));
      throw err;
    }
    return runningNode(ctx, parts, close);
  };
  return { config, ledger: parts.ledger, servers, listen, close };
}

/** The started node, logged. */
function runningNode(ctx: NodeContext, parts: Parts, close: () => Promise<void>): RunningNode {
  const { config } = ctx;
  const { urls, ledger, dataDir, directoryService, cache, relay, events } = parts;
  const listening = urls.listening;
  ctx.logger.info(
    {
      roles: config.roles,
      urls: listening,
      profile: config.profile,
      chain_id: dataDir.keys.genesis.chainId,
      genesis_hash: to0x(ledger.genesisHash),
      node_did: dataDir.identity.did,
    },
    'node started',
  );
  return {
    config,
    urls: listening,
    publicUrls: urls.public,
    ledger,
    ...(directoryService === undefined ? {} : { directoryService }),
    ...(cache === undefined ? {} : { cache }),
    ...(relay === undefined ? {} : { relay }),
    ...(events === undefined ? {} : { events }),
    identity: { did: dataDir.identity.did, ready: parts.registration.ready },
    storage: parts.storage,
    metrics: ctx.metrics,
    close,
  };
}
