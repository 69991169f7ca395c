/**
 * Where the ledger lives: embedded in the data directory (SQLite, this process produces the blocks), or shared
 * on PostgreSQL by several Directory processes (`--db` with the directory role): then the data directory holds
 * only a replica, rebuilt from the database whenever it does not match it.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { bytesEqual } from '../base/bytes.js';
import type { Clock } from '../base/clock.js';
import { blockHash, genesisHeader, type GenesisConfig } from '../ledger/block.js';
import { Ledger } from '../ledger/chain.js';
import type { Profile } from '../protocol/profile.js';
import { PgLedgerSync, preparePgLedger, replicaMatches } from '../store/postgres/ledger-sync.js';
import { openPgPool, type PgPool } from '../store/postgres/pool.js';
import type { SqliteDb } from '../store/sqlite/database.js';
import { LedgerFile, ledgerCheckpoints } from '../store/sqlite/ledger-file.js';
import type { CheckpointerStats } from '../store/sqlite/wal-checkpointer.js';
import { SqliteLedgerStore } from '../store/sqlite/ledger-store.js';
import type { StorageGuard } from '../store/storage-guard.js';
import type { ChainClient } from '../chain/chain-port.js';
import type { NetworkDefinition } from '../chain/network-definition.js';
import { startChainOrdering, type ChainOrdering } from '../chain/substrate-ordering.js';
import type { Config } from './config.js';
import { DataDirError, GENESIS_FILE } from './node-keys.js';

export const LEDGER_FILE = 'ledger.sqlite';
export const REPLICA_FILE = 'ledger-replica.sqlite';

export interface LedgerBackend {
  readonly ledger: Ledger;
  /** The chain the ledger follows, under `--ledger substrate`. */
  readonly chain?: ChainOrdering;
  /** The ledger's SQLite database (embedded: the ledger itself; shared: the replica). */
  readonly db: SqliteDb;
  /** What that database's checkpointer thread did; null until the file is large enough to have one. */
  checkpoints(): Readonly<CheckpointerStats> | null;
  /** The shared ledger's follower/leader, when on PostgreSQL. */
  readonly sync?: PgLedgerSync;
  /** The Directory's connection pool, when on PostgreSQL. */
  readonly pgPool?: PgPool;
  close(): Promise<void>;
}

export interface LedgerBackendDeps {
  profile: Profile;
  genesis: GenesisConfig;
  clock: Clock;
  autoProduce: boolean;
  logger: Logger;
  /** The data directory's storage guard (the embedded ledger's writes). */
  guard?: StorageGuard;
  /** `--ledger substrate`: the network definition (its genesis is `genesis`) and the chain client. */
  chain?: { network: NetworkDefinition; client: ChainClient };
  /** Ledger file size from which its checkpoints run on a thread of their own (default `CHECKPOINTER_FROM_BYTES`; a test seam). */
  checkpointerFromBytes?: number;
}

/** Opens the ledger `config` asks for. */
export async function openLedgerBackend(config: Config, deps: LedgerBackendDeps): Promise<LedgerBackend> {
  const options = {
    profile: deps.profile,
    genesis: deps.genesis,
    blockIntervalMs: config.blockIntervalMs,
    finalityDepth: config.finalityDepth,
    clock: deps.clock,
    onError: (err: unknown) => deps.logger.error({ err }, 'block production failed'),
  };
  const header = genesisHeader(deps.genesis);
  const genesis = { header, hash: blockHash(header) };

  if (deps.chain !== undefined) return openChainLedger(config, deps, deps.chain, genesis.hash, options);

  if (config.db === null || !config.roles.includes('directory')) {
    const path = join(config.dataDir, LEDGER_FILE);
    const file = openLedgerFile(path, config, deps);
    try {
      const store = ledgerStore(file, deps.guard);
      assertGenesis(
        store,
        genesis.hash,
        `${path} holds a chain whose genesis differs from ${join(config.dataDir, GENESIS_FILE)}; restore the original genesis.json or use another --data-dir`,
      );
      const ledger = new Ledger(store, { ...options, autoProduce: deps.autoProduce });
      return { ledger, db: file.db, checkpoints: () => file.checkpointerStats, close: async () => (ledger.stop(), await file.close()) };
    } catch (e) {
      await file.close();
      throw e;
    }
  }

  const pool = await openPgPool({ url: config.db.url, schema: config.db.schema, onError: (err) => deps.logger.warn({ err }, 'PostgreSQL connection error') });
  try {
    if (!(await preparePgLedger(pool, genesis))) {
      throw new DataDirError(
        `the database holds a chain whose genesis differs from ${join(config.dataDir, GENESIS_FILE)}: copy genesis.json ` +
          "and attestor.key from the first Directory's data directory into this one, or use another --db-schema",
      );
    }
    const path = join(config.dataDir, REPLICA_FILE);
    let file = openLedgerFile(path, config, deps);
    if (!(await replicaMatches(pool, new SqliteLedgerStore(file.db)))) {
      deps.logger.info({ path }, 'the ledger replica does not match the database; rebuilding it');
      await file.close();
      for (const suffix of ['', '-wal', '-shm']) rmSync(path + suffix, { force: true });
      file = openLedgerFile(path, config, deps);
    }
    const db = file.db;
    const ledger = new Ledger(ledgerStore(file), { ...options, autoProduce: false });
    const sync = await PgLedgerSync.open({
      pool,
      url: config.db.url,
      schema: config.db.schema,
      ledger,
      blockIntervalMs: config.blockIntervalMs,
      admissionWaitMs: config.ledgerAdmissionWaitMs,
      handOver: config.ledgerHandOver.on,
      produce: deps.autoProduce,
      logger: deps.logger.child({ component: 'ledger-sync' }),
    }).catch(async (e: unknown) => {
      await file.close();
      throw e;
    });
    return {
      ledger,
      db,
      checkpoints: () => file.checkpointerStats,
      sync,
      pgPool: pool,
      close: async () => {
        await sync.close();
        ledger.stop();
        await file.close();
        await pool.end();
      },
    };
  } catch (e) {
    await pool.end();
    throw e;
  }
}

/**
 * `--ledger substrate`: the ledger in the data directory (SQLite), ordered by the chain — every Directory of the
 * network follows the chain itself, so nothing of the ledger is shared through `--db`.
 */
async function openChainLedger(
  config: Config,
  deps: LedgerBackendDeps,
  chain: { network: NetworkDefinition; client: ChainClient },
  genesisHash: Uint8Array,
  options: { profile: Profile; genesis: GenesisConfig; clock: Clock; onError: (err: unknown) => void },
): Promise<LedgerBackend> {
  const path = join(config.dataDir, LEDGER_FILE);
  const file = openLedgerFile(path, config, deps);
  const db = file.db;
  try {
    const store = ledgerStore(file, deps.guard);
    assertGenesis(
      store,
      genesisHash,
      `${path} holds a ledger whose genesis differs from the network ${config.chain?.networkFile ?? config.chain?.networkId ?? ''} defines ` +
        '(another network, or an embedded ledger): use another --data-dir',
    );
    const ledger = new Ledger(store, { ...options, blockIntervalMs: 1, finalityDepth: 0, autoProduce: false, ordering: 'chain' });
    const ordering = await startChainOrdering({
      client: chain.client,
      ledger,
      network: chain.network,
      logger: deps.logger.child({ component: 'chain' }),
    }).catch(async (e: unknown) => {
      await chain.client.close();
      throw e;
    });
    return {
      ledger,
      db,
      checkpoints: () => file.checkpointerStats,
      chain: ordering,
      close: async () => {
        await ordering.close();
        await file.close();
      },
    };
  } catch (e) {
    await file.close();
    throw e;
  }
}

/** The node's ledger file: its checkpoints bounded by what the storage reserve gives back (`ledgerCheckpoints`). */
function openLedgerFile(path: string, config: Config, deps: LedgerBackendDeps): LedgerFile {
  return LedgerFile.open(path, config.ledgerCacheBytes, deps.checkpointerFromBytes, ledgerCheckpoints(deps.guard?.givenBackBytes));
}

/** The ledger store over the node's ledger file, its checkpoints told of every commit. */
function ledgerStore(file: LedgerFile, guard?: StorageGuard): SqliteLedgerStore {
  return new SqliteLedgerStore(file.db, guard, () => file.afterCommit());
}

/** Throws {@link DataDirError} with `problem` when `store` holds a chain of another genesis than `wanted`. */
function assertGenesis(store: SqliteLedgerStore, wanted: Uint8Array, problem: string): void {
  const stored = store.genesisHash();
  if (stored !== undefined && !bytesEqual(stored, wanted)) throw new DataDirError(problem);
}
