/**
 * The chain account's key file (`--chain-key FILE`): the sr25519 key a Directory signs its remarks with.
 *
 *     {"type":"sr25519","secret":"0x<32-byte seed, hex>","address":"5…"}
 *
 * `address` is the account in SS58 with the generic prefix 42 (what `5…` addresses are); it is checked against
 * the secret on load. The file is written with mode 0600 and refused when group or others may read it. The
 * secret never appears in an error message or a log line.
 */
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { Keyring } from '@polkadot/keyring';
import type { KeyringPair } from '@polkadot/keyring/types';
import { u8aToHex } from '@polkadot/util';
import { cryptoWaitReady, decodeAddress, encodeAddress, mnemonicGenerate, mnemonicToMiniSecret } from '@polkadot/util-crypto';

/** SS58 prefix of the addresses ddn writes and reports (the generic Substrate one). */
export const SS58_PREFIX = 42;

/** A loaded chain account key. */
export interface ChainKey {
  /** SS58 (prefix 42). */
  readonly address: string;
  /** The signing pair (holds the secret; never log it). */
  readonly pair: KeyringPair;
}

/** The key file is missing, unreadable, malformed, or readable by others. */
export class ChainKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ChainKeyError';
  }
}

interface ChainKeyFile {
  type: 'sr25519';
  secret: string;
  address: string;
}

function pairOf(seed: Uint8Array): KeyringPair {
  return new Keyring({ type: 'sr25519', ss58Format: SS58_PREFIX }).addFromSeed(seed);
}

/** A fresh random key (after `cryptoWaitReady`). */
export async function generateChainKey(): Promise<{ key: ChainKey; secret: string }> {
  await cryptoWaitReady();
  const seed = mnemonicToMiniSecret(mnemonicGenerate());
  const pair = pairOf(seed);
  return { key: { address: pair.address, pair }, secret: u8aToHex(seed) };
}

/** Writes a fresh key to `path` (mode 0600; an existing file is never overwritten) and returns it. */
export async function createChainKeyFile(path: string): Promise<ChainKey> {
  const { key, secret } = await generateChainKey();
  const file: ChainKeyFile = { type: 'sr25519', secret, address: key.address };
  writeFileSync(path, `${JSON.stringify(file)}\n`, { mode: 0o600, flag: 'wx' });
  return key;
}

function parseKeyFile(path: string, text: string): ChainKeyFile {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new ChainKeyError(`${path} is not JSON (expected {"type":"sr25519","secret":"0x…","address":"…"})`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new ChainKeyError(`${path} is not a JSON object`);
  const o = v as Record<string, unknown>;
  if (o.type !== 'sr25519') throw new ChainKeyError(`${path}: "type" must be "sr25519"`);
  if (typeof o.secret !== 'string' || !/^0x[0-9a-fA-F]{64}$/.test(o.secret))
    throw new ChainKeyError(`${path}: "secret" must be a 32-byte seed as 0x-prefixed hex`);
  if (typeof o.address !== 'string') throw new ChainKeyError(`${path}: "address" must be an SS58 address`);
  return { type: 'sr25519', secret: o.secret, address: o.address };
}

function samePublicKey(address: string, publicKey: Uint8Array): boolean {
  try {
    return u8aToHex(decodeAddress(address)) === u8aToHex(publicKey);
  } catch {
    return false;
  }
}

/** Reads and checks the key file at `path`; throws ChainKeyError with a message fit for an operator. */
export async function loadChainKey(path: string): Promise<ChainKey> {
  let mode: number;
  let text: string;
  try {
    mode = statSync(path).mode;
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ChainKeyError(`cannot read the chain key ${path}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  if ((mode & 0o077) !== 0) throw new ChainKeyError(`${path} may be read by others (mode ${(mode & 0o777).toString(8)}); run chmod 600 ${path}`);
  const file = parseKeyFile(path, text);
  await cryptoWaitReady();
  const pair = pairOf(Uint8Array.from(Buffer.from(file.secret.slice(2), 'hex')));
  if (!samePublicKey(file.address, pair.publicKey)) throw new ChainKeyError(`${path}: "address" ${file.address} is not the secret's account ${pair.address}`);
  return { address: encodeAddress(pair.publicKey, SS58_PREFIX), pair };
}
