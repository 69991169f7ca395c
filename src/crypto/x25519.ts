/**
 * X25519 key agreement (RFC 7748) through node:crypto. Keys are `KeyObject`s so private keys never need to be
 * exported; raw 32-byte public keys are what DID documents publish (http-api.md §6).
 */
import { createPrivateKey, createPublicKey, diffieHellman, generateKeyPairSync, type KeyObject } from 'node:crypto';

const SPKI_PREFIX = Buffer.from('302a300506032b656e032100', 'hex');
const PKCS8_PREFIX = Buffer.from('302e020100300506032b656e04220420', 'hex');

/** An X25519 private key and its raw public key. */
export interface X25519KeyPair {
  readonly privateKey: KeyObject;
  readonly publicKey: Uint8Array;
}

/** The raw 32-byte public key of an X25519 private or public `KeyObject`. */
export function x25519PublicKeyOf(key: KeyObject): Uint8Array {
  const pub = key.type === 'private' ? createPublicKey(key) : key;
  const spki = pub.export({ format: 'der', type: 'spki' });
  return new Uint8Array(spki.subarray(spki.length - 32));
}

/** A new random X25519 key pair. */
export function generateX25519KeyPair(): X25519KeyPair {
  const { privateKey } = generateKeyPairSync('x25519');
  return { privateKey, publicKey: x25519PublicKeyOf(privateKey) };
}

/** The X25519 key pair of a 32-byte private scalar (test vectors, fixed-seed tests). */
export function x25519KeyPairFromSeed(seed: Uint8Array): X25519KeyPair {
  if (seed.length !== 32) throw new RangeError('X25519 private key must be 32 bytes');
  const privateKey = createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, seed]), format: 'der', type: 'pkcs8' });
  return { privateKey, publicKey: x25519PublicKeyOf(privateKey) };
}

/** A `KeyObject` for a raw 32-byte X25519 public key. */
export function x25519PublicKeyObject(publicKey: Uint8Array): KeyObject {
  if (publicKey.length !== 32) throw new RangeError('X25519 public key must be 32 bytes');
  return createPublicKey({ key: Buffer.concat([SPKI_PREFIX, publicKey]), format: 'der', type: 'spki' });
}

/**
 * The 32-byte X25519 shared secret. Throws when node:crypto refuses the peer key (e.g. a low-order point, whose
 * all-zero result OpenSSL rejects), so a sender never encrypts to, and a receiver never trusts, such a key.
 */
export function x25519SharedSecret(privateKey: KeyObject, peerPublicKey: Uint8Array): Uint8Array {
  return new Uint8Array(diffieHellman({ privateKey, publicKey: x25519PublicKeyObject(peerPublicKey) }));
}
