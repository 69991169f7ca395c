/** HKDF-SHA256 (RFC 5869) and ChaCha20-Poly1305 (RFC 8439) through node:crypto. */
import { createCipheriv, createDecipheriv, hkdfSync } from 'node:crypto';

/** The Poly1305 tag length appended to every ciphertext. */
export const AEAD_TAG_BYTES = 16;
export const AEAD_KEY_BYTES = 32;
export const AEAD_NONCE_BYTES = 12;

/** HKDF-SHA256 extract-and-expand of `ikm` into `length` bytes. */
export function hkdfSha256(ikm: Uint8Array, salt: Uint8Array, info: Uint8Array, length: number): Uint8Array {
  return new Uint8Array(hkdfSync('sha256', ikm, salt, info, length));
}

/** ChaCha20-Poly1305 encryption: ciphertext ‖ 16-byte tag. */
export function chacha20Poly1305Seal(key: Uint8Array, nonce: Uint8Array, plaintext: Uint8Array, aad: Uint8Array): Uint8Array {
  const cipher = createCipheriv('chacha20-poly1305', key, nonce, { authTagLength: AEAD_TAG_BYTES });
  cipher.setAAD(aad, { plaintextLength: plaintext.length });
  const body = cipher.update(plaintext);
  cipher.final();
  const out = new Uint8Array(body.length + AEAD_TAG_BYTES);
  out.set(body, 0);
  out.set(cipher.getAuthTag(), body.length);
  return out;
}

/** ChaCha20-Poly1305 decryption of ciphertext ‖ tag; undefined when the tag does not verify (or the input is short). */
export function chacha20Poly1305Open(key: Uint8Array, nonce: Uint8Array, sealed: Uint8Array, aad: Uint8Array): Uint8Array | undefined {
  if (sealed.length < AEAD_TAG_BYTES || nonce.length !== AEAD_NONCE_BYTES || key.length !== AEAD_KEY_BYTES) return undefined;
  const bodyLength = sealed.length - AEAD_TAG_BYTES;
  const decipher = createDecipheriv('chacha20-poly1305', key, nonce, { authTagLength: AEAD_TAG_BYTES });
  decipher.setAAD(aad, { plaintextLength: bodyLength });
  decipher.setAuthTag(sealed.subarray(bodyLength));
  const body = decipher.update(sealed.subarray(0, bodyLength));
  try {
    decipher.final();
  } catch {
    return undefined;
  }
  return new Uint8Array(body);
}
