/**
 * Hashes: blake2_256 for the ledger (ledger-rules.md §1.5), SHA-256 for the HTTP layer. blake2_256 is libsodium's
 * `crypto_generichash` with a 32-byte output (unkeyed BLAKE2b-256, the same bytes) where libsodium is loaded — about
 * ten times faster than @noble/hashes on a transaction's bytes, and a write hashes its extrinsic and document
 * several times — else @noble/hashes.
 */
import { blake2b } from '@noble/hashes/blake2.js';
import { createHash } from 'node:crypto';
import { sodium } from './ed25519-sodium.js';

export function blake2_256(data: Uint8Array): Uint8Array {
  if (sodium === null) return blake2b(data, { dkLen: 32 });
  const out = new Uint8Array(32);
  sodium.crypto_generichash(out, data);
  return out;
}

export function sha256(data: Uint8Array | string): Uint8Array {
  return new Uint8Array(createHash('sha256').update(data).digest());
}
