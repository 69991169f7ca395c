/**
 * The node's side of `--ledger substrate` (docs/chain.md): the network definition and the keys it implies, the
 * default chain client, and what readiness, health and metrics say about the chain.
 */
import { bytesEqual } from '../base/bytes.js';
import type { Logger } from 'pino';
import type { ChainClient } from '../chain/chain-port.js';
import { defaultNetwork, loadNetworkFile, networkGenesis, type NetworkDefinition } from '../chain/network-definition.js';
import type { ChainOrdering } from '../chain/substrate-ordering.js';
import { createSubstrateClient } from '../chain/substrate-client.js';
import type { Clock } from '../base/clock.js';
import type { Ledger } from '../ledger/chain.js';
import type { Config } from './config.js';
import { DataDirError, loadAttestorKey, type NodeKeys } from './node-keys.js';
import type { ReadinessCheck } from './readiness.js';

/** A Directory more than this many finalized chain blocks behind is degraded. */
export const CHAIN_LAG_DEGRADED_BLOCKS = 10;

/**
 * The network file `--network` names, checked against `--profile`; throws DataDirError saying what differs.
 * Without `--network`: the chain's default network of `--network-id` (see defaultNetwork).
 */
export function loadNetwork(config: Config): NetworkDefinition {
  if (config.chain === null) throw new Error('loadNetwork needs --ledger substrate');
  if (config.chain.networkFile === null) return defaultNetwork(config.chain.networkId, config.profile);
  let network: NetworkDefinition;
  try {
    network = loadNetworkFile(config.chain.networkFile);
  } catch (e) {
    throw new DataDirError((e as Error).message);
  }
  if (network.profile !== config.profile) {
    throw new DataDirError(
      `the network file ${config.chain.networkFile} is of profile '${network.profile}', but --profile is '${config.profile}': pass --profile ${network.profile}`,
    );
  }
  return network;
}

/**
 * The keys of a Directory on a network: the genesis the network file defines, and the data directory's attestor
 * key when the network lists it (else the Directory attests no persona).
 */
export function networkKeys(dataDir: string, network: NetworkDefinition): NodeKeys {
  const attestor = loadAttestorKey(dataDir);
  const listed = network.personaAttestors.some((k) => bytesEqual(k, attestor.publicKey));
  return Object.freeze({ ...(listed ? { attestor } : {}), genesis: Object.freeze(networkGenesis(network)) });
}

/** The chain client of `--chain-url` and `--chain-key` (@polkadot/api; the key is read at connect). */
export function createChainClient(chain: NonNullable<Config['chain']>, logger: Logger): ChainClient {
  return createSubstrateClient({ urls: chain.urls, keyFile: chain.keyFile, logger });
}

/**
 * The Directory's "now" under a chain: the wall clock, or the head's time when the chain runs ahead of it (a dev
 * chain makes a block per transaction, each at least a slot after its parent). Validity windows the Directory
 * fills in (a prepared registration's expiry, a default `valid_until`) are then counted from the time the chain
 * will execute them at, as the pool's checks already are.
 */
export function ledgerTime(clock: Clock, ledger: Pick<Ledger, 'headRef'>): Clock {
  return { nowMs: () => Math.max(clock.nowMs(), ledger.headRef().timestampMs) };
}

/**
 * `/ready`: the chain answers, the Directory has applied the chain's finalized head once since start, and it is
 * not more than {@link CHAIN_LAG_DEGRADED_BLOCKS} behind since.
 */
export function chainCheck(chain: ChainOrdering): ReadinessCheck {
  return {
    name: 'chain',
    check: async () => {
      const s = chain.status();
      if (s.halted !== null) return `following the chain stopped: ${s.halted}`;
      if (!s.connected) return 'no chain endpoint answers';
      const behind = `applied chain block #${s.applied.number} of #${s.chainFinalized} finalized`;
      if (!s.caughtUpOnce || s.chainFinalized - s.applied.number > CHAIN_LAG_DEGRADED_BLOCKS) return behind;
      return null;
    },
  };
}

/** `/health` degraded: the chain does not answer, following stopped, or the Directory is far behind. */
export function chainDegraded(chain: ChainOrdering): boolean {
  const s = chain.status();
  return !s.connected || s.halted !== null || s.chainFinalized - s.applied.number > CHAIN_LAG_DEGRADED_BLOCKS;
}
