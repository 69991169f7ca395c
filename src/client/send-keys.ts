/**
 * The ids and encryption randomness of one file transfer, derived from a 32-byte transfer secret so that a resumed
 * send rebuilds every envelope byte for byte: the Relay then answers an envelope it already holds with its stored
 * result (http-api.md §10.3 step 6) instead of refusing a second encryption of the same chunk. The ephemeral key
 * and nonce of a chunk also depend on the chunk's own bytes, so a file that changed never reuses a key.
 */
import { randomBytes } from 'node:crypto';
import { toHex, utf8 } from '../base/bytes.js';
import { AEAD_NONCE_BYTES, hkdfSha256 } from '../crypto/aead.js';
import { sha256 } from '../crypto/hash.js';
import { x25519KeyPairFromSeed, type X25519KeyPair } from '../crypto/x25519.js';

const SALT = utf8('ddn:send-transfer:v1');

/** Ids and seal inputs of one transfer. */
export interface TransferKeys {
  groupId: string;
  messageId(sequence: number): string;
  /** The ephemeral key and nonce for the chunk `sequence` whose record bytes are `plaintext`. */
  seal(sequence: number, plaintext: Uint8Array): { ephemeral: X25519KeyPair; nonce: Uint8Array };
}

/** A UUID v4 text from 16 bytes (version and variant bits set). */
export function uuidFromBytes(b: Uint8Array): string {
  const x = Uint8Array.from(b.subarray(0, 16));
  x[6] = (x[6]! & 0x0f) | 0x40;
  x[8] = (x[8]! & 0x3f) | 0x80;
  const h = toHex(x);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** A new random transfer secret. */
export function newTransferSecret(): Uint8Array {
  return new Uint8Array(randomBytes(32));
}

/** The {@link TransferKeys} of `secret` (32 bytes). */
export function transferKeys(secret: Uint8Array): TransferKeys {
  if (secret.length !== 32) throw new RangeError('a transfer secret is 32 bytes');
  const derive = (info: string, length: number) => hkdfSha256(secret, SALT, utf8(info), length);
  return {
    groupId: uuidFromBytes(derive('group', 16)),
    messageId: (seq) => uuidFromBytes(derive(`message|${seq}`, 16)),
    seal(seq, plaintext) {
      const digest = toHex(sha256(plaintext));
      return { ephemeral: x25519KeyPairFromSeed(derive(`ephemeral|${seq}|${digest}`, 32)), nonce: derive(`nonce|${seq}|${digest}`, AEAD_NONCE_BYTES) };
    },
  };
}
