/**
 * The composition root: builds every dependency of one node from its {@link Config} (data directory, ledger,
 * one HTTP server per enabled role), starts listening, and tears it all down in order on `close()`.
 */
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { bytesEqual, to0x } from '../base/bytes.js';
import { systemClock, type Clock } from '../base/clock.js';
import { LocalDirectoryPort } from '../directory/local-port.js';
import { DirectoryService } from '../directory/service.js';
import { registerDirectoryRoutes } from '../directory/routes.js';
import { createHttpServer, type HttpServer, type HttpServerOptions } from '../http/server.js';
import { blockHash, genesisHeader } from '../ledger/block.js';
import { Ledger } from '../ledger/chain.js';
import { makeProfile } from '../protocol/profile.js';
import { openSqlite, type SqliteDb } from '../store/sqlite/database.js';
import { LEDGER_MIGRATIONS, SqliteLedgerStore } from '../store/sqlite/ledger-store.js';
import { createCacheRole, type CacheRole } from './cache-role.js';
import { hostForUrl, type Config, type Role } from './config.js';
import { registerHealthRoute } from './health.js';
import { createLogger } from './logger.js';
import { DataDirError, GENESIS_FILE, loadNodeKeys } from './node-keys.js';

/** Test seams of {@link startNode}. */
export interface NodeOverrides {
  clock?: Clock;
  logger?: Logger;
  /** Produce blocks on a timer (default true); tests pass false and call `node.ledger.produceBlock()`. */
  autoProduce?: boolean;
  /** Interval of the Cache's background purge (default 30 s). */
  cacheSweepIntervalMs?: number;
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
  /**
   * Stops accepting connections, lets in-flight requests finish, stops the ledger at a block boundary and
   * closes the database. Idempotent.
   */
  close(): Promise<void>;
}

const BODY_LIMITS: Record<Role, (c: Config) => Pick<HttpServerOptions, 'bodyLimitBytes' | 'tooLargeCode'>> = {
  directory: (c) => ({ bodyLimitBytes: c.directory.maxBodyBytes, tooLargeCode: 'payload_too_large' }),
  relay: (c) => ({ bodyLimitBytes: c.relay.maxHttpEnvelopeBytes, tooLargeCode: 'envelope_too_large' }),
  cache: (c) => ({ bodyLimitBytes: c.relay.maxHttpEnvelopeBytes, tooLargeCode: 'envelope_too_large' }),
};

/** Starts a node: data directory, ledger, and the HTTP servers of `config.roles`, listening. */
export async function startNode(config: Config, overrides: NodeOverrides = {}): Promise<RunningNode> {
  const clock = overrides.clock ?? systemClock;
  const logger = overrides.logger ?? createLogger(config.logLevel);
  const profile = makeProfile(config.profile);
  const keys = loadNodeKeys(config.dataDir, { profile: config.profile, chainId: config.chainId }, clock);

  const cleanups: (() => void | Promise<void>)[] = [];
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
    const dbPath = join(config.dataDir, 'ledger.sqlite');
    const db: SqliteDb = openSqlite(dbPath, LEDGER_MIGRATIONS, 'ledger');
    cleanups.push(() => void db.close());
    const store = new SqliteLedgerStore(db);
    const storedGenesis = store.genesisHash();
    if (storedGenesis !== undefined && !bytesEqual(storedGenesis, blockHash(genesisHeader(keys.genesis)))) {
      throw new DataDirError(
        `${dbPath} holds a chain whose genesis differs from ${join(config.dataDir, GENESIS_FILE)}; ` +
          'restore the original genesis.json or use another --data-dir',
      );
    }
    const ledger = new Ledger(store, {
      profile,
      genesis: keys.genesis,
      blockIntervalMs: config.blockIntervalMs,
      finalityDepth: config.finalityDepth,
      clock,
      autoProduce: overrides.autoProduce ?? true,
      onError: (err) => logger.error({ err }, 'block production failed'),
    });
    cleanups.push(() => ledger.stop());

    let ready = false;
    const health = { roles: config.roles, profile: config.profile, chainId: config.chainId, ledger, isReady: () => ready };
    const directoryService = config.roles.includes('directory')
      ? new DirectoryService({ ledger, profile, clock })
      : undefined;

    // Known once the Cache listens (its own URL is the default public URL).
    let publicCache: readonly string[] = config.publicUrls.cache;
    let cache: CacheRole | undefined;
    if (config.roles.includes('cache')) {
      const role = createCacheRole({
        config,
        profile,
        clock,
        directory: new LocalDirectoryPort(ledger, clock),
        publicCacheUrls: () => publicCache,
        logger,
        ...(overrides.cacheSweepIntervalMs === undefined ? {} : { sweepIntervalMs: overrides.cacheSweepIntervalMs }),
      });
      cache = role;
      cleanups.push(() => role.close());
    }

    const servers: HttpServer[] = [];
    cleanups.push(async () => {
      ready = false;
      await Promise.all(servers.map((s) => s.fastify.close()));
    });
    const urls: Partial<Record<Role, string>> = {};
    for (const role of config.roles) {
      const server = createHttpServer({ name: role, logger, ...BODY_LIMITS[role](config) });
      servers.push(server);
      registerHealthRoute(server, health);
      if (role === 'directory' && directoryService !== undefined) registerDirectoryRoutes(server, directoryService);
      if (role === 'cache' && cache !== undefined) cache.register(server);
      await server.fastify.listen({ host: config.host, port: config.ports[role] });
      const { port } = server.fastify.server.address() as AddressInfo;
      urls[role] = `http://${hostForUrl(config.host)}:${port}`;
      if (role === 'cache' && publicCache.length === 0) publicCache = Object.freeze([urls[role]]);
    }
    ready = true;

    const own = (role: Role): string[] => {
      const url = urls[role];
      return url === undefined ? [] : [url];
    };
    const publicUrls = Object.freeze({
      relay: Object.freeze(config.publicUrls.relay.length > 0 ? [...config.publicUrls.relay] : own('relay')),
      cache: Object.freeze(config.publicUrls.cache.length > 0 ? [...config.publicUrls.cache] : own('cache')),
    });
    cache?.start();
    logger.info(
      { roles: config.roles, urls, profile: config.profile, chain_id: config.chainId, genesis_hash: to0x(ledger.genesisHash) },
      'node started',
    );

    let closing: Promise<void> | undefined;
    const node: RunningNode = {
      config,
      urls: Object.freeze(urls),
      publicUrls,
      ledger,
      ...(directoryService === undefined ? {} : { directoryService }),
      ...(cache === undefined ? {} : { cache }),
      close: () => {
        closing ??= cleanup().then(() => logger.info('node stopped'));
        return closing;
      },
    };
    return node;
  } catch (err) {
    await cleanup().catch((e: unknown) => logger.error({ err: e }, 'cleanup after failed start'));
    throw err;
  }
}
