/** Hashes: blake2_256 for the ledger (ledger-rules.md §1.5), SHA-256 for the HTTP layer. */
import { blake2b } from '@noble/hashes/blake2.js';
import { createHash } from 'node:crypto';

export function blake2_256(data: Uint8Array): Uint8Array {
  return blake2b(data, { dkLen: 32 });
}

export function sha256(data: Uint8Array | string): Uint8Array {
  return new Uint8Array(createHash('sha256').update(data).digest());
}
