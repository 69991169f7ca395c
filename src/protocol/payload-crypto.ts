/**
 * The payload encryption profile `<p>:cbor-chunk:x25519-hkdf-sha256-chacha20poly1305:v1` (http-api.md §10.9) and
 * the plaintext profile `<p>:plaintext-cbor:v1` (§10.1, §14), used for control envelopes and for user files.
 *
 * Encrypted payload: `{profile, key_id, ephemeral_x25519_b64, nonce_b64, ciphertext_b64}`. The shared secret is
 * X25519(ephemeral, recipient); the key is HKDF-SHA256(secret, salt = SHA-256(AAD), info = profile, 32 bytes);
 * the cipher is ChaCha20-Poly1305 with a random 12-byte nonce and the AAD
 * `profile|message_id|to|message_group_id|sequence_number|total_chunks` — for an unchunked envelope the group is
 * empty and the numbers are `0|1`, which is §10.9's `profile|message_id|to||0|1`.
 */
import { randomBytes, type KeyObject } from 'node:crypto';
import { parseBase64, toBase64, utf8 } from '../base/bytes.js';
import { AEAD_KEY_BYTES, AEAD_NONCE_BYTES, chacha20Poly1305Open, chacha20Poly1305Seal, hkdfSha256 } from '../crypto/aead.js';
import { sha256 } from '../crypto/hash.js';
import { generateX25519KeyPair, x25519SharedSecret, type X25519KeyPair } from '../crypto/x25519.js';
import type { Profile } from './profile.js';
import { TransferError } from './transfer-error.js';

/** The JSON payload of the encryption profile. */
export interface EncryptedPayloadJson {
  profile: string;
  key_id: string;
  ephemeral_x25519_b64: string;
  nonce_b64: string;
  ciphertext_b64: string;
}

/** The JSON payload of the plaintext profile: the CBOR record in Base64, readable by every intermediary. */
export interface PlaintextPayloadJson {
  profile: string;
  cbor_b64: string;
}

/** The envelope values the AAD binds. */
export interface AadFields {
  messageId: string;
  /** The envelope's `to` exactly as sent. */
  to: string;
  /** `message_group_id`, or `''` for an unchunked envelope. */
  groupId: string;
  /** `sequence_number`, 0 when unchunked. */
  sequence: number;
  /** `total_chunks`, 1 when unchunked. */
  total: number;
}

/** `<p>:plaintext-cbor:v1`. */
export function plaintextProfileOf(profile: Profile): string {
  return `${profile.p}:plaintext-cbor:v1`;
}

/** The AAD bytes: `profile|message_id|to|group|sequence|total` in UTF-8. */
export function payloadAad(profile: Profile, f: AadFields): Uint8Array {
  return utf8(`${profile.controlPayloadProfile}|${f.messageId}|${f.to}|${f.groupId}|${f.sequence}|${f.total}`);
}

/** The AAD fields of a received envelope (`recipient` stands for `to`, absent chunk fields for `''`, 0, 1). */
export function aadFieldsOf(envelope: Readonly<Record<string, unknown>>): AadFields {
  const str = (v: unknown) => (typeof v === 'string' ? v : '');
  const int = (v: unknown, d: number) => (typeof v === 'number' && Number.isSafeInteger(v) ? v : d);
  return {
    messageId: str(envelope.message_id),
    to: str(envelope.to ?? envelope.recipient),
    groupId: str(envelope.message_group_id),
    sequence: int(envelope.sequence_number, 0),
    total: int(envelope.total_chunks, 1),
  };
}

function contentKey(profile: Profile, secret: Uint8Array, aad: Uint8Array): Uint8Array {
  return hkdfSha256(secret, sha256(aad), utf8(profile.controlPayloadProfile), AEAD_KEY_BYTES);
}

/** What {@link sealPayload} needs; `ephemeral` and `nonce` are fresh random values unless given (test vectors). */
export interface SealInput {
  recipientKeyId: string;
  recipientPublicKey: Uint8Array;
  plaintext: Uint8Array;
  aad: AadFields;
  ephemeral?: X25519KeyPair;
  nonce?: Uint8Array;
}

/** Encrypts `plaintext` for the recipient's X25519 key under the profile. */
export function sealPayload(profile: Profile, input: SealInput): EncryptedPayloadJson {
  const ephemeral = input.ephemeral ?? generateX25519KeyPair();
  const nonce = input.nonce ?? new Uint8Array(randomBytes(AEAD_NONCE_BYTES));
  if (nonce.length !== AEAD_NONCE_BYTES) throw new RangeError('nonce must be 12 bytes');
  let secret: Uint8Array;
  try {
    secret = x25519SharedSecret(ephemeral.privateKey, input.recipientPublicKey);
  } catch {
    throw new TransferError('invalid_recipient_key', 'the recipient key-agreement key is not a usable X25519 public key');
  }
  const aad = payloadAad(profile, input.aad);
  const ciphertext = chacha20Poly1305Seal(contentKey(profile, secret, aad), nonce, input.plaintext, aad);
  return {
    profile: profile.controlPayloadProfile,
    key_id: input.recipientKeyId,
    ephemeral_x25519_b64: toBase64(ephemeral.publicKey),
    nonce_b64: toBase64(nonce),
    ciphertext_b64: toBase64(ciphertext),
  };
}

/** The plaintext-profile payload of a CBOR record. */
export function plaintextPayload(profile: Profile, record: Uint8Array): PlaintextPayloadJson {
  return { profile: plaintextProfileOf(profile), cbor_b64: toBase64(record) };
}

function b64Field(payload: Readonly<Record<string, unknown>>, field: string, length?: number): Uint8Array {
  const v = payload[field];
  const b = typeof v === 'string' ? parseBase64(v) : undefined;
  if (b === undefined || (length !== undefined && b.length !== length)) {
    throw new TransferError('invalid_encrypted_payload', `payload.${field} is missing or malformed`);
  }
  return b;
}

/**
 * The record bytes carried by an envelope `payload` of either profile. Encrypted payloads need the recipient's
 * X25519 private key; a wrong key, a changed byte anywhere in the ciphertext, or an AAD field that differs
 * (message id, `to`, chunk position) all end in `decryption_failed`.
 */
export function openPayload(profile: Profile, payload: unknown, aad: AadFields, decryptionKey: KeyObject | null): Uint8Array {
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
    throw new TransferError('invalid_encrypted_payload', 'payload is not an object');
  }
  const p = payload as Record<string, unknown>;
  if (p.profile === plaintextProfileOf(profile)) return b64Field(p, 'cbor_b64');
  if (p.profile !== profile.controlPayloadProfile) {
    throw new TransferError('unsupported_payload_profile', `unsupported payload profile ${JSON.stringify(p.profile)}`);
  }
  if (decryptionKey === null) throw new TransferError('decryption_key_required', 'the payload is encrypted and no decryption key was given');
  const ephemeral = b64Field(p, 'ephemeral_x25519_b64', 32);
  const nonce = b64Field(p, 'nonce_b64', AEAD_NONCE_BYTES);
  const ciphertext = b64Field(p, 'ciphertext_b64');
  const aadBytes = payloadAad(profile, aad);
  let plain: Uint8Array | undefined;
  try {
    plain = chacha20Poly1305Open(contentKey(profile, x25519SharedSecret(decryptionKey, ephemeral), aadBytes), nonce, ciphertext, aadBytes);
  } catch {
    plain = undefined;
  }
  if (plain === undefined) {
    throw new TransferError(
      'decryption_failed',
      `message ${aad.messageId}: decryption failed (wrong key, or the ciphertext or its envelope fields were altered)`,
    );
  }
  return plain;
}
