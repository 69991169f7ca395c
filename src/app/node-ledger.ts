/**
 * The parts of a node every role stands on, in the order they are opened: the data directory's lock and keys,
 * the storage guard, the ledger backend (with its metrics), and the Directory service when the node runs it.
 * Each registers its stop with the node's lifecycle.
 */
import type { NetworkDefinition } from '../chain/network-definition.js';
import { DirectoryService } from '../directory/service.js';
import { HandOver } from '../http/hand-over.js';
import type { NodeIdentity } from '../protocol/node-signature.js';
import { nodeIdentityOf } from '../relay/node-identity.js';
import { PgDnsChallengeStore } from '../store/postgres/dns-challenge-store.js';
import { SqliteDnsChallengeStore } from '../store/sqlite/dns-challenge-store.js';
import { StorageGuard } from '../store/storage-guard.js';
import { createChainClient, ledgerTime, loadNetwork, networkKeys } from './chain-backend.js';
import { lockDataDir } from './data-dir-lock.js';
import { openLedgerBackend, type LedgerBackend } from './ledger-backend.js';
import { runs, type NodeContext } from './node-context.js';
import { loadNodeKey, loadNodeKeys, type NodeKeys } from './node-keys.js';
import type { NodeUrls } from './public-urls.js';

/** The data directory's keys and the node identity. */
export interface NodeDataDir {
  readonly network: NetworkDefinition | undefined;
  readonly keys: NodeKeys;
  readonly identity: NodeIdentity;
  /** The service the node acts under: its Relay, or, without a Relay, its Cache (event Calls). */
  readonly acting: 'relay' | 'cache';
}

/** Locks the data directory (one process each: the lock comes first and is released last) and loads its keys. */
export function openDataDir(ctx: NodeContext): NodeDataDir {
  const { config, clock, profile } = ctx;
  const lock = lockDataDir(config.dataDir);
  ctx.lifecycle.add({ name: 'data-dir lock', stop: () => lock.release() });
  const acting = runs(ctx, 'relay') || !runs(ctx, 'cache') ? 'relay' : 'cache';
  const network = config.chain === null ? undefined : loadNetwork(config);
  const keys =
    network === undefined ? loadNodeKeys(config.dataDir, { profile: config.profile, chainId: config.chainId }, clock) : networkKeys(config.dataDir, network);
  return { network, keys, identity: nodeIdentityOf(profile, loadNodeKey(config.dataDir), acting), acting };
}

/** The data directory's storage guard: before any database opens, so on a full disk the reserve makes room for their WAL. */
export function openStorageGuard(ctx: NodeContext): StorageGuard {
  const { config, overrides, logger } = ctx;
  const storage = StorageGuard.open(config.dataDir, {
    reserveBytes: config.storageReserveBytes,
    logger,
    ...(overrides.freeSpace === undefined ? {} : { freeSpace: overrides.freeSpace }),
  });
  ctx.lifecycle.add({ name: 'storage guard', stop: () => storage.close() });
  return storage;
}

/** Opens the ledger `--ledger`/`--db` ask for (`ledger-backend.ts`) and counts it in the node's metrics. */
export async function openLedger(ctx: NodeContext, dataDir: NodeDataDir, storage: StorageGuard): Promise<LedgerBackend> {
  const { config, overrides, logger, metrics } = ctx;
  const { network } = dataDir;
  const backend = await openLedgerBackend(config, {
    profile: ctx.profile,
    genesis: dataDir.keys.genesis,
    clock: ctx.clock,
    autoProduce: overrides.autoProduce ?? true,
    logger,
    guard: storage,
    ...(overrides.ledgerCheckpointerFromBytes === undefined ? {} : { checkpointerFromBytes: overrides.ledgerCheckpointerFromBytes }),
    ...(network === undefined || config.chain === null
      ? {}
      : { chain: { network, client: (overrides.chainClient ?? createChainClient)(config.chain, logger.child({ component: 'chain-client' })) } }),
  });
  ctx.lifecycle.add({ name: 'ledger', stop: () => backend.close() });
  metrics.sqliteCheckpoints('ledger', () => backend.checkpoints());
  if (runs(ctx, 'directory')) {
    const unwatch = metrics.watchLedger(backend.ledger);
    ctx.lifecycle.add({ name: 'ledger metrics', stop: unwatch });
  }
  if (backend.sync !== undefined) {
    metrics.watchLedgerLock(backend.sync);
    metrics.watchReplicaStorage(backend.sync);
  }
  if (backend.chain !== undefined) metrics.watchChain(backend.chain);
  return backend;
}

/**
 * With a ledger on PostgreSQL and the Directory role: the hand-over of writes to the process that produces the
 * blocks (src/http/hand-over.ts). Its address is published once the Directory listens ({@link advertiseProducer}).
 */
export function openHandOver(ctx: NodeContext, backend: LedgerBackend): HandOver | undefined {
  const sync = backend.sync;
  if (sync === undefined || !runs(ctx, 'directory')) return undefined;
  const handOver = new HandOver({ source: sync, maxInFlight: ctx.config.ledgerHandOver.maxInFlight });
  ctx.metrics.watchHandOver(handOver);
  ctx.lifecycle.add({ name: 'hand-over', stop: () => handOver.close() });
  return handOver;
}

/**
 * Publishes, for when this process produces the blocks, where other Directory processes reach it: `--ledger-peer-url`,
 * else the Directory's listening URL unless it listens on every interface (which of its addresses?). Added after the
 * listeners.
 */
export function advertiseProducer(ctx: NodeContext, backend: LedgerBackend, urls: NodeUrls): void {
  const sync = backend.sync;
  if (sync === undefined || !runs(ctx, 'directory')) return;
  ctx.lifecycle.add({
    name: 'producer address',
    start: () => {
      const { host, ledgerHandOver } = ctx.config;
      const listening = urls.listening.directory;
      const url = ledgerHandOver.peerUrl ?? (host === '0.0.0.0' || host === '::' ? undefined : listening);
      if (url !== undefined) sync.advertise(url);
      else
        ctx.logger.warn({ host }, 'no --ledger-peer-url: while this process produces the blocks, the other Directory processes admit their writes themselves');
    },
  });
}

/** The Directory service, when the node runs the Directory role. */
export async function openDirectoryService(ctx: NodeContext, backend: LedgerBackend, keys: NodeKeys): Promise<DirectoryService | undefined> {
  if (!runs(ctx, 'directory')) return undefined;
  const { config, clock } = ctx;
  const { ledger } = backend;
  return new DirectoryService({
    ledger,
    profile: ctx.profile,
    // under a chain, the chain's time when it runs ahead of the wall clock (chain-backend.ts)
    clock: backend.chain === undefined ? clock : ledgerTime(clock, ledger),
    attestor: keys.attestor,
    // Shared by every Directory process on PostgreSQL (the replica database is only a cache of the ledger).
    challenges: backend.pgPool === undefined ? new SqliteDnsChallengeStore(backend.db) : await PgDnsChallengeStore.open(backend.pgPool),
    allowPrivateEndpoints: config.policy.allowPrivateEndpoints,
    dnsServers: [...config.directory.dnsServers],
    resolveCacheBytes: config.directory.resolveCacheBytes,
  });
}
