/**
 * Builds the Cache role of a node (http-api.md §11): its SQLite mailbox (`<data-dir>/cache.sqlite`), service,
 * event hub and sweeper; registers its routes on the Cache server. Part of the composition root.
 */
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Clock } from '../base/clock.js';
import { CacheEventHub, type CacheEvents } from '../cache/events.js';
import type { MailboxStore, SweepResult } from '../cache/mailbox-store.js';
import { DEFAULT_READ_CACHE_LIMITS } from '../cache/read-cache.js';
import { registerCacheRoutes } from '../cache/routes.js';
import { CacheService } from '../cache/service.js';
import { MAX_RESPONSE_ENVELOPE_BYTES, type CacheSettings } from '../cache/settings.js';
import { CacheSweeper, DEFAULT_SWEEP_INTERVAL_MS } from '../cache/sweeper.js';
import type { HttpServer } from '../http/server.js';
import type { DirectoryPort } from '../ports/directory-port.js';
import type { Profile } from '../protocol/profile.js';
import { openPgMailboxStore } from '../store/postgres/mailbox-store.js';
import type { PgPool } from '../store/postgres/pool.js';
import { SqliteMailboxStore, type SqliteMailboxOptions } from '../store/sqlite/mailbox-store.js';
import type { StorageGuard } from '../store/storage-guard.js';
import type { Config } from './config.js';
import type { DirectoryAccess } from './directory-access.js';
import type { NodeMetrics } from './metrics.js';
import { runs, type NodeContext } from './node-context.js';
import type { NodeUrls } from './public-urls.js';
import { startNodeVerifier, watchVerifier } from './verifier-thread.js';

/** The Cache file inside the data directory. */
export const CACHE_DB_FILE = 'cache.sqlite';

/** Inputs of {@link createCacheRole}. */
export interface CacheRoleOptions {
  config: Config;
  profile: Profile;
  clock: Clock;
  directory: DirectoryPort;
  /**
   * Where node requests' DIDs are looked up (default `directory`): a Cache in its own process reuses these records for
   * `--directory-view-ttl-ms`, as a Relay's every store would otherwise cost a lookup.
   */
  nodeDirectory?: DirectoryPort;
  /** `public_urls.cache` once known (the listening URL by default). */
  publicCacheUrls(): readonly string[];
  logger?: Logger;
  sweepIntervalMs?: number;
  store?: SqliteMailboxOptions;
  /** An already opened mailbox (PostgreSQL with `--db`); default: the SQLite file in the data directory. */
  mailbox?: MailboxStore;
  /** Where the Cache's expiries and purges are counted. */
  metrics?: NodeMetrics;
}

/** A built Cache role. */
export interface CacheRole {
  readonly service: CacheService;
  readonly events: CacheEvents;
  readonly store: MailboxStore;
  /** Adds the routes to the Cache server. */
  register(server: HttpServer): void;
  /** Starts the background purge. */
  start(): void;
  /** Stops the background purge (`close()` stops it too). */
  stop(): Promise<void>;
  /** One purge now. */
  sweep(): Promise<SweepResult>;
  /** Resolves once every accepted write is committed. */
  settle(): Promise<void>;
  /** Stops the purge, commits queued writes and closes the database. */
  close(): Promise<void>;
}

/** The Cache's gauges, read at scrape time: what the mailbox holds, its writer's queue, the verifier's. */
function watchCache(m: NodeMetrics, store: MailboxStore, budgetBytes: number | null | undefined): void {
  m.gaugesOf(() => store.usage(), {
    ddn_cache_envelopes_held: { help: 'Envelopes the Cache holds (expired ones not yet purged included)', value: (u) => u.entries },
    ddn_cache_envelope_bytes_held: { help: 'Bytes of the envelopes the Cache holds', value: (u) => u.bytes },
    ddn_cache_incomplete_chunk_sets: { help: 'Chunk sets the Cache holds that are not complete yet', value: (u) => u.incompleteChunkSets },
    ddn_cache_storage_budget_used_bytes: {
      help: "What the storage budget counts: the mailbox file's pages in use (SQLite), the envelope bytes held (PostgreSQL)",
      value: (u) => u.budgetUsedBytes,
    },
  });
  m.gauge('ddn_cache_storage_budget_bytes', 'The storage budget (--cache-storage-budget-bytes); 0: none', (g) => g.set(budgetBytes ?? 0));
  if (store instanceof SqliteMailboxStore) {
    m.writerQueue('mailbox', () => store.writeQueue);
    m.sqliteCheckpoints('mailbox', () => store.checkpoints);
  }
  watchVerifier(m);
}

/** Opens the Cache's database and wires its parts. */
export function createCacheRole(o: CacheRoleOptions): CacheRole {
  const c = o.config;
  const settings: CacheSettings = Object.freeze({
    profile: o.profile,
    publicCacheUrls: o.publicCacheUrls,
    maxEnvelopeBytes: c.relay.maxHttpEnvelopeBytes,
    maxRetentionSeconds: c.cache.maxRetentionSeconds,
    chunkStagingWindowSeconds: c.cache.chunkStagingWindowSeconds,
    allowPlaintext: c.cache.allowPlaintext,
    proofClockSkewSeconds: c.proofClockSkewSeconds,
    maxResponseEnvelopeBytes: MAX_RESPONSE_ENVELOPE_BYTES,
    maxBytesPerRecipient: c.cache.maxBytesPerRecipient === 0 ? null : c.cache.maxBytesPerRecipient,
    storageBudgetBytes: c.cache.storageBudgetBytes === 0 ? null : c.cache.storageBudgetBytes,
  });
  const logger = o.logger?.child({ role: 'cache' });
  const m = o.metrics;
  const store: MailboxStore =
    o.mailbox ??
    SqliteMailboxStore.open(join(c.dataDir, CACHE_DB_FILE), {
      readCache: { ...DEFAULT_READ_CACHE_LIMITS, maxBytes: c.cache.readCacheBytes },
      ...o.store,
      writer: {
        onBatchError: (err) => logger?.error({ err }, 'cache write batch failed'),
        onThreadExit: (err, restarted) =>
          logger?.error(
            { err, restarted },
            restarted ? 'cache writer thread died; a new one took over' : 'cache writer thread keeps dying; writes are refused until restart',
          ),
        ...(m === undefined ? {} : { onCommit: m.writerCommits('mailbox') }),
        ...o.store?.writer,
      },
    });
  if (m !== undefined) watchCache(m, store, settings.storageBudgetBytes);
  const events = new CacheEventHub(logger);
  const service = new CacheService({ store, directory: o.directory, clock: o.clock, settings, events, ...(logger ? { logger } : {}) });
  const sweep = (): Promise<SweepResult> => service.sweep();
  const sweeper = new CacheSweeper(
    m?.countedSweep('ddn_cache_swept_total', "What the Cache's purge removed: expired entries, incomplete chunk sets and their chunks, nonces", sweep) ?? sweep,
    o.sweepIntervalMs ?? DEFAULT_SWEEP_INTERVAL_MS,
    logger,
  );
  return {
    service,
    events,
    store,
    register(server) {
      registerCacheRoutes(server, service, {
        nodeAuth: { profile: o.profile, directory: o.nodeDirectory ?? o.directory, nonces: store, clock: o.clock, lookupFailureCode: 'policy_lookup_failed' },
      });
    },
    start() {
      // proofs are verified on this thread; started now, so its memory is part of the idle Cache
      startNodeVerifier(logger);
      sweeper.start();
    },
    stop: () => sweeper.stop(),
    sweep: () => sweeper.sweep(),
    settle: () => store.settle(),
    async close() {
      await sweeper.stop();
      await store.close();
    },
  };
}

/** A role a node runs, with the PostgreSQL pool its store opened (`--db`). */
export interface OpenedRole<R> {
  readonly role: R;
  readonly pgPool?: PgPool;
}

/**
 * The node's Cache role, when it runs one, as two components: the role with its mailbox (PostgreSQL with `--db`,
 * else SQLite in the data directory), open once built and closed last; its background work (the verifier thread and
 * the purge), started with the node and stopped before the mailbox closes.
 */
export async function openCacheRole(
  ctx: NodeContext,
  deps: { access: DirectoryAccess; storage: StorageGuard; urls: NodeUrls },
): Promise<OpenedRole<CacheRole> | undefined> {
  if (!runs(ctx, 'cache')) return undefined;
  const { config, overrides } = ctx;
  const mailbox = config.db === null ? undefined : await openPgMailboxStore(config.db.url, config.db.schema);
  const role = createCacheRole({
    config,
    profile: ctx.profile,
    clock: ctx.clock,
    directory: deps.access.cacheDirectory,
    nodeDirectory: deps.access.directory,
    ...(mailbox === undefined ? {} : { mailbox }),
    publicCacheUrls: deps.urls.cache,
    logger: ctx.logger,
    ...(mailbox === undefined ? { store: { guard: deps.storage } } : {}),
    metrics: ctx.metrics,
    ...(overrides.cacheSweepIntervalMs === undefined ? {} : { sweepIntervalMs: overrides.cacheSweepIntervalMs }),
  });
  ctx.lifecycle.add({ name: 'cache', stop: () => role.close() });
  ctx.lifecycle.add({ name: 'cache purge', start: () => role.start(), stop: () => role.stop() });
  return { role, ...(mailbox === undefined ? {} : { pgPool: mailbox.pool }) };
}
