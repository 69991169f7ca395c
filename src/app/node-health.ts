/**
 * What a node says about itself: `/health` (its ledger or the remote Directory, the chain, event drops, storage)
 * and `/ready` (its checks, and whether it is started). Part of the composition root.
 */
import type { PgPool } from '../store/postgres/pool.js';
import type { StorageGuard } from '../store/storage-guard.js';
import { chainCheck, chainDegraded } from './chain-backend.js';
import type { DirectoryAccess } from './directory-access.js';
import type { EventProcessing } from './event-processing.js';
import type { HealthSource } from './health.js';
import type { LedgerBackend } from './ledger-backend.js';
import type { Component } from './lifecycle.js';
import type { NodeContext } from './node-context.js';
import type { NodeKeys } from './node-keys.js';
import { reasonOf, storageCheck, type ReadinessCheck } from './readiness.js';

/**
 * Whether the node is ready: from the start of this component — added after the servers, so once they listen —
 * until the node starts stopping (before the servers stop accepting).
 */
export class ReadyFlag implements Component {
  readonly name = 'ready';
  #ready = false;
  readonly isReady = (): boolean => this.#ready;
  start(): void {
    this.#ready = true;
  }
  stop(): void {
    this.#ready = false;
  }
}

/** What `/health` reports. */
export function healthSource(
  ctx: NodeContext,
  deps: { keys: NodeKeys; backend: LedgerBackend; storage: StorageGuard; access: DirectoryAccess; events: EventProcessing | undefined; ready: ReadyFlag },
): HealthSource {
  const { chain } = deps.backend;
  const { events, storage } = deps;
  return {
    roles: ctx.config.roles,
    profile: ctx.config.profile,
    chainId: deps.keys.genesis.chainId,
    ledger: deps.backend.ledger,
    isReady: deps.ready.isReady,
    isDegraded: () => storage.isDegraded || (chain !== undefined && chainDegraded(chain)),
    ...(chain === undefined ? {} : { chain }),
    eventDrops: () => events?.dispatcher.drops() ?? null,
    build: ctx.build,
    ...(deps.access.probe === undefined ? {} : { directory: deps.access.probe }),
  };
}

/**
 * The checks of `/ready`: the data directory, the database (the first PostgreSQL pool of this process's parts, all
 * on the one `--db` database), the remote Directory or else the ledger, and the chain.
 */
export function readyChecks(
  ctx: NodeContext,
  deps: { backend: LedgerBackend; access: DirectoryAccess; pgPools: readonly (PgPool | undefined)[] },
): ReadinessCheck[] {
  const { backend, access } = deps;
  const pool = deps.pgPools.find((p) => p !== undefined);
  const checks: ReadinessCheck[] = [
    storageCheck(ctx.config.dataDir),
    { name: 'database', check: () => (pool === undefined ? Promise.resolve(null) : reasonOf(() => pool.query('SELECT 1'))) },
  ];
  if (access.probe !== undefined) checks.push(access.probe.check());
  else checks.push({ name: 'ledger', check: () => reasonOf(async () => backend.ledger.headRef()) });
  if (backend.chain !== undefined) checks.push(chainCheck(backend.chain));
  return checks;
}
