/**
 * Private keys on disk: PKCS#8 PEM files created with mode 0600 and never overwritten. Ed25519 keys sign (DID
 * changes, retrieval proofs); X25519 keys decrypt payloads. Nothing here sends a key anywhere.
 */
import { errorCodeOf, messageOf } from '../base/guards.js';
import { createPrivateKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { keyPairFromPrivateKey, type Ed25519KeyPair } from '../crypto/ed25519.js';
import { x25519PublicKeyOf, type X25519KeyPair } from '../crypto/x25519.js';

export type KeyType = 'ed25519' | 'x25519';

/** A key file could not be used; `code` says why. */
export class KeyFileError extends Error {
  readonly code: 'key_file_exists' | 'key_file_unreadable' | 'invalid_key_file' | 'wrong_key_type';
  constructor(code: KeyFileError['code'], message: string) {
    super(message);
    this.name = 'KeyFileError';
    this.code = code;
  }
}

/** A fresh private key of `type`. */
export function generatePrivateKey(type: KeyType): KeyObject {
  return type === 'ed25519' ? generateKeyPairSync('ed25519').privateKey : generateKeyPairSync('x25519').privateKey;
}

/** Writes `key` as PKCS#8 PEM to a new file with mode 0600; refuses to replace an existing file. */
export function writePrivateKeyFile(path: string, key: KeyObject): void {
  const pem = key.export({ format: 'pem', type: 'pkcs8' });
  try {
    writeFileSync(path, pem, { mode: 0o600, flag: 'wx' });
  } catch (e) {
    if (errorCodeOf(e) === 'EEXIST') throw new KeyFileError('key_file_exists', `${path} exists; a key file is never overwritten`);
    throw new KeyFileError('key_file_unreadable', `cannot write ${path}: ${messageOf(e)}`);
  }
}

/** Reads a PEM (or DER PKCS#8) private key file and checks its type. */
export function readPrivateKeyFile(path: string, type: KeyType): KeyObject {
  let raw: Buffer;
  try {
    raw = readFileSync(path);
  } catch (e) {
    throw new KeyFileError('key_file_unreadable', `cannot read ${path}: ${messageOf(e)}`);
  }
  let key: KeyObject;
  try {
    key = raw.includes('-----BEGIN') ? createPrivateKey(raw) : createPrivateKey({ key: raw, format: 'der', type: 'pkcs8' });
  } catch {
    throw new KeyFileError('invalid_key_file', `${path} is not a PKCS#8 private key`);
  }
  if (key.asymmetricKeyType !== type) {
    throw new KeyFileError('wrong_key_type', `${path} holds a ${key.asymmetricKeyType ?? 'unknown'} key, expected ${type}`);
  }
  return key;
}

/** The Ed25519 signing key of a file. */
export function readEd25519KeyFile(path: string): Ed25519KeyPair {
  return keyPairFromPrivateKey(readPrivateKeyFile(path, 'ed25519'));
}

/** The X25519 decryption key of a file. */
export function readX25519KeyFile(path: string): X25519KeyPair {
  const privateKey = readPrivateKeyFile(path, 'x25519');
  return { privateKey, publicKey: x25519PublicKeyOf(privateKey) };
}
