/**
 * The network definition (`--network FILE`, docs/chain.md): what every Directory of one ddn network on a Substrate
 * chain shares, so that they compute the same genesis, blocks and hashes — never a local clock or one node's key.
 * The ddn genesis time is the start block's timestamp; the chain id is the network id, which also tags the
 * network's remarks (several networks may share one chain).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { parseHex, toHex } from '../base/bytes.js';
import type { GenesisConfig } from '../ledger/block.js';
import { NETWORK_ID_PATTERN } from '../ledger/anchor-batch.js';

/** A chain block named by number and hash. */
export interface ChainPoint {
  readonly number: number;
  /** 0x-prefixed hex. */
  readonly hash: string;
}

export interface NetworkDefinition {
  readonly networkId: string;
  readonly profile: string;
  readonly personaAttestors: readonly Uint8Array[];
  readonly chain: {
    /** The chain's block 0 hash (0x hex); null: whatever chain the Directory is pointed at ({@link defaultNetwork}). */
    readonly genesisHash: string | null;
    /**
     * The block the network starts at: remarks of later blocks are followed. A null hash (only with block 0, in
     * {@link defaultNetwork}) is not checked: the data directory is tied to the chain by the first block applied.
     */
    readonly start: { readonly number: number; readonly hash: string | null; readonly timestampMs: number };
  };
}

/** The JSON form of the network file. */
export interface NetworkFile {
  network_id: string;
  profile: string;
  /** Hex (no `0x`) Ed25519 public keys: any Directory holding one of them may attest personas. */
  persona_attestors: string[];
  chain: { genesis_hash: string; start_block: { number: number; hash: string; timestamp_ms: number } };
}

/** The network file is missing, malformed or disagrees with the chain. The message says why. */
export class NetworkDefinitionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NetworkDefinitionError';
  }
}

const HASH = /^0x[0-9a-f]{64}$/;

/** Parses a network file's text; throws {@link NetworkDefinitionError} naming `path` and what is wrong. */
export function parseNetworkFile(path: string, text: string): NetworkDefinition {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new NetworkDefinitionError(`${path} is not valid JSON`);
  }
  const bad = (what: string) => new NetworkDefinitionError(`${path}: ${what}`);
  const f = v as Partial<NetworkFile> | null;
  if (typeof f !== 'object' || f === null || Array.isArray(f)) throw bad('expected a JSON object');
  if (typeof f.network_id !== 'string' || !NETWORK_ID_PATTERN.test(f.network_id)) {
    throw bad('network_id must be 1-64 characters of A-Z a-z 0-9 . _ - (starting with a letter or digit)');
  }
  if (f.profile !== 'platform' && f.profile !== 'openpayload') throw bad('profile must be "platform" or "openpayload"');
  const attestors = Array.isArray(f.persona_attestors) ? f.persona_attestors.map((h) => (typeof h === 'string' ? parseHex(h) : undefined)) : [];
  if (attestors.length === 0 || attestors.some((k) => k === undefined || k.length !== 32)) {
    throw bad('persona_attestors must list at least one hex Ed25519 public key (32 bytes)');
  }
  const c = f.chain;
  const s = c?.start_block;
  if (typeof c !== 'object' || c === null || typeof c.genesis_hash !== 'string' || !HASH.test(c.genesis_hash)) {
    throw bad('chain.genesis_hash must be a 0x-prefixed 32-byte lowercase hex hash');
  }
  if (
    typeof s !== 'object' ||
    s === null ||
    !Number.isSafeInteger(s.number) ||
    s.number < 0 ||
    typeof s.hash !== 'string' ||
    !HASH.test(s.hash) ||
    !Number.isSafeInteger(s.timestamp_ms) ||
    s.timestamp_ms < 0
  ) {
    throw bad('chain.start_block must be {number, hash (0x hex), timestamp_ms}');
  }
  return Object.freeze({
    networkId: f.network_id,
    profile: f.profile,
    personaAttestors: Object.freeze(attestors as Uint8Array[]),
    chain: Object.freeze({ genesisHash: c.genesis_hash, start: Object.freeze({ number: s.number, hash: s.hash, timestampMs: s.timestamp_ms }) }),
  });
}

/**
 * The network of a Directory started without `--network` (a development chain, `npm run dev-chain`): it starts at
 * the chain's block 0, its genesis time is 0, and it lists no persona attestor (the Directory attests no DNS
 * persona). Directories on one chain with one network id and profile compute the same genesis. A network of
 * several operators writes a network file instead (`ddn network init`): a recent start block, so that a new
 * Directory does not read the chain's whole history, and the attestors.
 */
export function defaultNetwork(networkId: string, profile: string): NetworkDefinition {
  return Object.freeze({
    networkId,
    profile,
    personaAttestors: [],
    chain: Object.freeze({ genesisHash: null, start: Object.freeze({ number: 0, hash: null, timestampMs: 0 }) }),
  });
}

export function toNetworkFile(n: NetworkDefinition): NetworkFile {
  if (n.chain.genesisHash === null || n.chain.start.hash === null) throw new Error('a network file names its chain and start block');
  return {
    network_id: n.networkId,
    profile: n.profile,
    persona_attestors: n.personaAttestors.map((k) => toHex(k)),
    chain: {
      genesis_hash: n.chain.genesisHash,
      start_block: { number: n.chain.start.number, hash: n.chain.start.hash, timestamp_ms: n.chain.start.timestampMs },
    },
  };
}

/** Reads and parses the network file at `path`. */
export function loadNetworkFile(path: string): NetworkDefinition {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new NetworkDefinitionError(`cannot read the network file ${path}: ${(e as Error).message}`);
  }
  return parseNetworkFile(path, text);
}

/** Writes `n` to `path` (refusing to overwrite an existing file). */
export function writeNetworkFile(path: string, n: NetworkDefinition): void {
  writeFileSync(path, `${JSON.stringify(toNetworkFile(n), null, 2)}\n`, { mode: 0o644, flag: 'wx' });
}

/** The ddn genesis of the network: every Directory following it computes the same genesis hash. */
export function networkGenesis(n: NetworkDefinition): GenesisConfig {
  return {
    profile: n.profile,
    chainId: n.networkId,
    genesisTimeMs: n.chain.start.timestampMs,
    personaAttestors: [...n.personaAttestors],
  };
}
