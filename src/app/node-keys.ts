/**
 * Persistent node secrets and chain parameters in the data directory (http-api.md §0.1):
 * `attestor.key` — the Directory's persona attestor Ed25519 key (PKCS#8 PEM, mode 0600, created once, never
 * overwritten) — and `genesis.json` — the genesis parameters fixed at first start, so a restart resumes the
 * same chain.
 */
import { createPrivateKey, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseHex, toHex, bytesEqual } from '../base/bytes.js';
import type { Clock } from '../base/clock.js';
import { keyPairFromPrivateKey, type Ed25519KeyPair } from '../crypto/ed25519.js';
import type { GenesisConfig } from '../ledger/block.js';

/** File names inside the data directory. */
export const ATTESTOR_KEY_FILE = 'attestor.key';
/** The node identity key (http-api.md §0.1, §10.6): signs node-to-node requests as the node DID. */
export const NODE_KEY_FILE = 'node.key';
export const GENESIS_FILE = 'genesis.json';

/** The data directory is unusable or belongs to another chain. The message says why and what to do. */
export class DataDirError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DataDirError';
  }
}

/** What the node loads from its data directory. */
export interface NodeKeys {
  /**
   * The Directory's persona attestor key: on an embedded ledger the genesis's only persona attestor; under a chain
   * absent when the network file does not list it (the Directory then attests no persona).
   */
  readonly attestor?: Ed25519KeyPair;
  readonly genesis: Readonly<GenesisConfig>;
}

/** The chain parameters the configuration asks for. */
export interface WantedChain {
  readonly profile: string;
  readonly chainId: string;
}

/** The JSON form of `genesis.json`. */
export interface GenesisFile {
  chain_id: string;
  profile: string;
  genesis_time_ms: number;
  /** Hex (no `0x`) Ed25519 public keys. */
  persona_attestors: string[];
}

/**
 * Writes `data` to `path` only if no file is there yet, atomically (temp file + hard link), so a crash never
 * leaves a half-written file and a concurrent start never overwrites. Returns false when the file existed.
 */
function createFileOnce(path: string, data: string, mode: number): boolean {
  const tmp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  writeFileSync(tmp, data, { mode, flag: 'wx', flush: true });
  try {
    linkSync(tmp, path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    unlinkSync(tmp);
  }
}

function readIfExists(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** The Ed25519 key in `path` (PKCS#8 PEM), created with mode 0600 when absent, never overwritten. */
function loadOrCreateKey(path: string): Ed25519KeyPair {
  let pem = readIfExists(path);
  if (pem === undefined) {
    const fresh = generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
    createFileOnce(path, fresh, 0o600);
    pem = readFileSync(path, 'utf8');
  }
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: pem, format: 'pem' });
  } catch {
    throw new DataDirError(`${path} is not a PKCS#8 PEM private key`);
  }
  if (key.asymmetricKeyType !== 'ed25519') throw new DataDirError(`${path} is not an Ed25519 key`);
  return keyPairFromPrivateKey(key);
}

function loadAttestor(dataDir: string): Ed25519KeyPair {
  return loadOrCreateKey(join(dataDir, ATTESTOR_KEY_FILE));
}

/**
 * The data directory's persona attestor key (`attestor.key`, created on first use), for a network whose genesis
 * comes from elsewhere (`--ledger substrate`: the network file lists the attestors).
 */
export function loadAttestorKey(dataDir: string): Ed25519KeyPair {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  return loadAttestor(dataDir);
}

/**
 * The node identity key `<data-dir>/node.key` (Ed25519, PKCS#8 PEM, mode 0600), created on first start and
 * never overwritten. Throws {@link DataDirError} when the file is not an Ed25519 private key.
 */
export function loadNodeKey(dataDir: string): Ed25519KeyPair {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  return loadOrCreateKey(join(dataDir, NODE_KEY_FILE));
}

export function parseGenesisFile(path: string, text: string): GenesisConfig {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new DataDirError(`${path} is not valid JSON`);
  }
  const g = v as Partial<GenesisFile> | null;
  const attestors = Array.isArray(g?.persona_attestors) ? g.persona_attestors.map((h) => parseHex(String(h))) : [];
  if (
    typeof g !== 'object' ||
    g === null ||
    typeof g.chain_id !== 'string' ||
    typeof g.profile !== 'string' ||
    !Number.isSafeInteger(g.genesis_time_ms) ||
    (g.genesis_time_ms ?? -1) < 0 ||
    attestors.length === 0 ||
    attestors.some((k) => k === undefined || k.length !== 32)
  ) {
    throw new DataDirError(`${path} is malformed: expected {chain_id, profile, genesis_time_ms, persona_attestors: [hex key]}`);
  }
  return {
    chainId: g.chain_id,
    profile: g.profile,
    genesisTimeMs: g.genesis_time_ms!,
    personaAttestors: attestors as Uint8Array[],
  };
}

export function toGenesisFile(g: GenesisConfig): GenesisFile {
  return {
    chain_id: g.chainId,
    profile: g.profile,
    genesis_time_ms: g.genesisTimeMs,
    persona_attestors: g.personaAttestors.map((k) => toHex(k)),
  };
}

function checkGenesis(dataDir: string, g: GenesisConfig, want: WantedChain, attestor: Ed25519KeyPair): void {
  const where = `the data directory ${dataDir} holds a chain created with`;
  if (g.profile !== want.profile) {
    throw new DataDirError(`${where} profile '${g.profile}', but --profile is '${want.profile}'; use that profile or another --data-dir`);
  }
  if (g.chainId !== want.chainId) {
    throw new DataDirError(`${where} chain id '${g.chainId}', but --chain-id is '${want.chainId}'; use that chain id or another --data-dir`);
  }
  if (!g.personaAttestors.some((k) => bytesEqual(k, attestor.publicKey))) {
    throw new DataDirError(`${join(dataDir, ATTESTOR_KEY_FILE)} is not a persona attestor of the chain in ${join(dataDir, GENESIS_FILE)}`);
  }
}

/**
 * Loads the attestor key and genesis parameters from `dataDir`, creating them on first start (genesis time
 * from `clock`). Throws {@link DataDirError} when the stored chain disagrees with `want` or a file is damaged.
 */
export function loadNodeKeys(dataDir: string, want: WantedChain, clock: Clock): NodeKeys {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const attestor = loadAttestor(dataDir);
  const path = join(dataDir, GENESIS_FILE);
  let text = readIfExists(path);
  if (text === undefined) {
    const fresh: GenesisConfig = {
      profile: want.profile,
      chainId: want.chainId,
      genesisTimeMs: clock.nowMs(),
      personaAttestors: [attestor.publicKey],
    };
    createFileOnce(path, `${JSON.stringify(toGenesisFile(fresh), null, 2)}\n`, 0o644);
    text = readFileSync(path, 'utf8');
  }
  const genesis = parseGenesisFile(path, text);
  checkGenesis(dataDir, genesis, want, attestor);
  return Object.freeze({ attestor, genesis: Object.freeze(genesis) });
}
