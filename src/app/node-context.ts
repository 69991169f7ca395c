/**
 * What every part of a node is built with: its configuration and test seams, clock, logger, metrics, profile,
 * build, and the {@link Lifecycle} each part registers itself with. Made first by {@link buildNode}.
 */
import type { Logger } from 'pino';
import { systemClock, type Clock } from '../base/clock.js';
import type { ChainClient } from '../chain/chain-port.js';
import { systemLookups } from '../outbound/outbound-http.js';
import { makeProfile, type Profile } from '../protocol/profile.js';
import type { StoreRetryPolicy } from '../relay/cache-store-client.js';
import type { FreeSpace } from '../store/storage-guard.js';
import type { Config } from './config.js';
import { Lifecycle } from './lifecycle.js';
import { createLogger } from './logger.js';
import { NodeMetrics } from './metrics.js';
import { buildInfo, type BuildInfo } from './version.js';

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
  /**
   * Ledger file size from which its checkpoints run on a thread of their own (default `CHECKPOINTER_FROM_BYTES`,
   * 256 MiB): tests of a large ledger's checkpointer without writing one.
   */
  ledgerCheckpointerFromBytes?: number;
}

/** What every part of a node is built with. */
export interface NodeContext {
  readonly config: Config;
  readonly overrides: NodeOverrides;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly build: BuildInfo;
  readonly metrics: NodeMetrics;
  readonly profile: Profile;
  /** Where each part registers how it starts and stops. */
  readonly lifecycle: Lifecycle;
}

/** A node's metrics, with the process's outbound DNS lookups (every role may connect out: Relay, event rules). */
function nodeMetrics(build: BuildInfo): NodeMetrics {
  const metrics = new NodeMetrics(build);
  metrics.watchOutboundLookups(systemLookups());
  return metrics;
}

/** The context of a node about to be built (logs that it starts). */
export function nodeContext(config: Config, overrides: NodeOverrides): NodeContext {
  const logger = overrides.logger ?? createLogger(config.logLevel, { format: config.logFormat });
  const build = buildInfo();
  logger.info({ version: build.version, ...(build.commit === undefined ? {} : { commit: build.commit }) }, 'ddn starting');
  return {
    config,
    overrides,
    clock: overrides.clock ?? systemClock,
    logger,
    build,
    metrics: nodeMetrics(build),
    profile: makeProfile(config.profile),
    lifecycle: new Lifecycle((err: unknown) => logger.error({ err }, 'cleanup after failed start')),
  };
}

/** Whether `config` runs `role`. */
export function runs(ctx: Pick<NodeContext, 'config'>, role: Config['roles'][number]): boolean {
  return ctx.config.roles.includes(role);
}
