/**
 * Ed25519 (ledger-rules.md §1.6). A signature is checked first by libsodium (`ed25519-sodium.ts`), or by
 * node:crypto with a cache of parsed public keys where libsodium is not loaded; a signature the fast path refuses
 * is re-checked under ZIP-215 rules (@noble/curves), so the verdict is the ZIP-215 one the deployed chain uses,
 * while valid signatures stay on the fast path. Both fast paths accept only signatures ZIP-215 accepts (the
 * cofactorless equation with canonical encodings), so which one runs never changes a verdict.
 */
import { createPrivateKey, createPublicKey, sign as nodeSign, verify as nodeVerify, type KeyObject } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { sodium, type SodiumEd25519 } from './ed25519-sodium.js';

const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
const PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
const KEY_CACHE_MAX = 10_000;
const keyCache = new Map<string, KeyObject>();

function publicKeyObject(publicKey: Uint8Array): KeyObject {
  const id = Buffer.from(publicKey).toString('hex');
  let k = keyCache.get(id);
  if (!k) {
    k = createPublicKey({ key: Buffer.concat([SPKI_PREFIX, publicKey]), format: 'der', type: 'spki' });
    if (keyCache.size >= KEY_CACHE_MAX) keyCache.delete(keyCache.keys().next().value as string);
    keyCache.set(id, k);
  }
  return k;
}

/** The ZIP-215 verdict, for what the fast path refused or could not parse. */
function verifyZip215(publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): boolean {
  try {
    return ed25519.verify(signature, message, publicKey, { zip215: true });
  } catch {
    return false;
  }
}

/** The fast path: true only for a signature that verifies (a refusal is not final, see {@link verifyZip215}). */
function verifyFast(publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): boolean {
  if (sodium !== null) return sodium.crypto_sign_verify_detached(signature, message, publicKey);
  try {
    return nodeVerify(null, message, publicKeyObject(publicKey), signature);
  } catch {
    return false; // a key node:crypto cannot parse (non-canonical point)
  }
}

/** True iff `signature` (exactly 64 bytes) is a valid Ed25519 signature of `message` by `publicKey` (32 bytes). */
export function verifyEd25519(publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): boolean {
  if (publicKey.length !== 32 || signature.length !== 64) return false;
  return verifyFast(publicKey, message, signature) || verifyZip215(publicKey, message, signature);
}

/**
 * {@link verifyEd25519} with the same verdict, verified on the libuv thread pool (node:crypto's callback form,
 * whichever backend the synchronous path uses), so a server's event loop keeps serving while signatures are
 * checked in parallel.
 */
export function verifyEd25519Async(publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): Promise<boolean> {
  if (publicKey.length !== 32 || signature.length !== 64) return Promise.resolve(false);
  let key: KeyObject;
  try {
    key = publicKeyObject(publicKey);
  } catch {
    return Promise.resolve(verifyZip215(publicKey, message, signature));
  }
  return new Promise((resolve) => {
    nodeVerify(null, message, key, signature, (err, ok) => {
      resolve((err === null && ok) || verifyZip215(publicKey, message, signature));
    });
  });
}

/**
 * True iff `signature` verifies over one of `messages` (a signed text that may have been built in several ways):
 * every text on the fast path first, so a match on a later text does not pay for ZIP-215 checks of the earlier.
 */
export function verifyAnyEd25519(publicKey: Uint8Array, messages: readonly Uint8Array[], signature: Uint8Array): boolean {
  if (publicKey.length !== 32 || signature.length !== 64) return false;
  return messages.some((m) => verifyFast(publicKey, m, signature)) || messages.some((m) => verifyZip215(publicKey, m, signature));
}

/** {@link verifyAnyEd25519} on the thread pool, one message after the other. */
export async function verifyAnyEd25519Async(publicKey: Uint8Array, messages: readonly Uint8Array[], signature: Uint8Array): Promise<boolean> {
  for (const m of messages) if (await verifyEd25519Async(publicKey, m, signature)) return true;
  return false;
}

/** An Ed25519 key pair held by a client (never by a server, except its own node and attestor keys). */
export interface Ed25519KeyPair {
  readonly publicKey: Uint8Array;
  sign(message: Uint8Array): Uint8Array;
}

export function keyPairFromSeed(seed: Uint8Array): Ed25519KeyPair {
  if (seed.length !== 32) throw new RangeError('Ed25519 seed must be 32 bytes');
  return keyPairFromPrivateKey(createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, seed]), format: 'der', type: 'pkcs8' }));
}

/** The 32-byte seed of an Ed25519 private key (its PKCS#8 form is the fixed prefix and the seed), else null. */
function seedOf(priv: KeyObject): Uint8Array | null {
  if (priv.asymmetricKeyType !== 'ed25519') return null;
  const pkcs8 = priv.export({ format: 'der', type: 'pkcs8' });
  const ok = pkcs8.length === PKCS8_PREFIX.length + 32 && pkcs8.subarray(0, PKCS8_PREFIX.length).equals(PKCS8_PREFIX);
  const seed = ok ? Uint8Array.from(pkcs8.subarray(PKCS8_PREFIX.length)) : null;
  pkcs8.fill(0);
  return seed;
}

function sodiumKeyPair(lib: SodiumEd25519, seed: Uint8Array): Ed25519KeyPair {
  const publicKey = new Uint8Array(32);
  const secretKey = new Uint8Array(64);
  lib.crypto_sign_seed_keypair(publicKey, secretKey, seed);
  seed.fill(0);
  return {
    publicKey,
    sign: (message) => {
      const signature = new Uint8Array(64);
      lib.crypto_sign_detached(signature, message, secretKey);
      return signature;
    },
  };
}

export function keyPairFromPrivateKey(priv: KeyObject): Ed25519KeyPair {
  const seed = sodium === null ? null : seedOf(priv);
  if (sodium !== null && seed !== null) return sodiumKeyPair(sodium, seed);
  const spki = createPublicKey(priv).export({ format: 'der', type: 'spki' });
  return {
    publicKey: new Uint8Array(spki.subarray(spki.length - 32)),
    sign: (message) => new Uint8Array(nodeSign(null, message, priv)),
  };
}
