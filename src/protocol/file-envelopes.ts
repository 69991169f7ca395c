/**
 * Sending a file as DDN envelopes (http-api.md §10.1, §10.9): how many parts the recipient's effective limits
 * require, and the envelope of each part. Pure: ids, time text and keys are parameters.
 */
import { utf8Length } from '../base/bytes.js';
import { encodeFileRecord, MAX_RECORD_TEXT_BYTES, type FileRecord } from './file-record.js';
import { plaintextPayload, sealPayload } from './payload-crypto.js';
import type { Profile } from './profile.js';
import { senderSigningBytes } from './sender-signature.js';
import type { X25519KeyPair } from '../crypto/x25519.js';
import { toBase64 } from '../base/bytes.js';
import { TransferError } from './transfer-error.js';

/** The limits a sender must respect (the effective constraints of http-api.md §6, capped by the Relay's own). */
export interface TransferLimits {
  maxHttpEnvelopeBytes: number;
  maxUnchunkedMessageBytes: number;
  maxChunkBytes: number;
}

/** Largest number of envelopes in a set (`total_chunks` ≤ 65 535, §10.1). */
export const MAX_TOTAL_CHUNKS = 65_535;
/** File bytes per part unless the caller asks otherwise (1 MiB, as deployed senders). */
export const DEFAULT_PART_BYTES = 1_048_576;
/** Room kept below a payload limit for the record's CBOR framing and the 16-byte tag. */
export const RECORD_MARGIN_BYTES = 4096;
/** Room kept below the HTTP body limit for the envelope's JSON fields. */
export const ENVELOPE_MARGIN_BYTES = 8192;

/** How a file of a given size travels. */
export interface TransferPlan {
  chunked: boolean;
  /** File bytes per envelope (the last one may carry fewer). */
  partBytes: number;
  total: number;
}

/**
 * The parts a file of `sizeBytes` needs: one envelope when it fits `max_unchunked_message_bytes`, otherwise
 * parts that fit `max_chunk_bytes`; both also fit the HTTP body limit once Base64-encoded. Plaintext payloads
 * are measured as JSON (§10.1), so their Base64 expansion counts against the payload limits too.
 */
export function planFileTransfer(sizeBytes: number, limits: TransferLimits, opts: { plaintext?: boolean; partBytes?: number } = {}): TransferPlan {
  const fromPayloadLimit = (limit: number) => (opts.plaintext ? Math.floor(((limit - RECORD_MARGIN_BYTES) * 3) / 4) : limit - RECORD_MARGIN_BYTES);
  const httpRoom = Math.floor(((limits.maxHttpEnvelopeBytes - ENVELOPE_MARGIN_BYTES) * 3) / 4);
  const unchunkedMax = Math.min(fromPayloadLimit(limits.maxUnchunkedMessageBytes), httpRoom);
  const chunkMax = Math.min(opts.partBytes ?? DEFAULT_PART_BYTES, fromPayloadLimit(limits.maxChunkBytes), httpRoom);
  if (unchunkedMax <= 0 || chunkMax <= 0) throw new TransferError('limits_too_small', "the recipient's delivery limits are too small for any file envelope");
  if (sizeBytes <= unchunkedMax) return { chunked: false, partBytes: Math.max(sizeBytes, 1), total: 1 };
  const total = Math.ceil(sizeBytes / chunkMax);
  if (total > MAX_TOTAL_CHUNKS) throw new TransferError('file_too_large', `the file needs ${total} chunks; at most ${MAX_TOTAL_CHUNKS} are allowed`);
  return { chunked: true, partBytes: chunkMax, total };
}

/** Checks a file name and media type for the record (1–255 UTF-8 bytes; the name without path separators). */
export function assertFileMetadata(name: string, mediaType: string): void {
  const bad = (m: string): never => {
    throw new TransferError('invalid_file_metadata', m);
  };
  if (name === '' || utf8Length(name) > MAX_RECORD_TEXT_BYTES || /[/\\\0]/.test(name) || name === '.' || name === '..') {
    bad('the file name must be 1-255 UTF-8 bytes without path separators');
  }
  if (mediaType === '' || utf8Length(mediaType) > MAX_RECORD_TEXT_BYTES) bad('the media type must be 1-255 UTF-8 bytes');
}

/** One part's envelope parameters. */
export interface FileEnvelopeInput {
  to: string;
  messageId: string;
  /** Envelope timestamp text (the same for every part). */
  timestamp: string;
  ttl?: string;
  tag?: string;
  record: FileRecord;
  /** The recipient's key agreement; null sends the plaintext profile. */
  recipient: { keyId: string; publicKey: Uint8Array } | null;
  /** Fixed ephemeral key and nonce (a resumed send rebuilds byte-identical envelopes); fresh random ones otherwise. */
  seal?: { ephemeral: X25519KeyPair; nonce: Uint8Array };
  /** Signs the envelope as `sender` (§10.2): `sign` returns the Ed25519 signature of the bytes it is given. */
  sender?: EnvelopeSigner;
}

/** The sender of signed envelopes (http-api.md §10.2). */
export interface EnvelopeSigner {
  did: string;
  /** `root` or a verification-method id of `did`. */
  keyId: string;
  sign(bytes: Uint8Array): Uint8Array;
}

/** Adds `sender`, `sender_key_id` and `sender_signature` (§10.2) to a built envelope. */
export function signEnvelope(profile: Profile, envelope: Record<string, unknown>, signer: EnvelopeSigner): void {
  const signature = signer.sign(senderSigningBytes(profile, envelope));
  Object.assign(envelope, { sender: signer.did, sender_key_id: signer.keyId, sender_signature: toBase64(signature) });
}

/** A built envelope, its exact JSON body and its payload size as the Relay measures it (§10.1). */
export interface BuiltEnvelope {
  envelope: Record<string, unknown>;
  body: string;
  payloadBytes: number;
}

/**
 * The envelope of one part. Throws `limits_too_small` when the result would exceed `limits` (the payload limit
 * of its kind, or the HTTP body limit) — the sender then never posts something the Relay must refuse.
 */
export function buildFileEnvelope(profile: Profile, input: FileEnvelopeInput, limits: TransferLimits): BuiltEnvelope {
  const r = input.record;
  const chunked = r.groupId !== '';
  const cbor = encodeFileRecord(profile, r);
  const payload = input.recipient
    ? sealPayload(profile, {
        recipientKeyId: input.recipient.keyId,
        recipientPublicKey: input.recipient.publicKey,
        plaintext: cbor,
        aad: { messageId: input.messageId, to: input.to, groupId: r.groupId, sequence: r.sequence, total: r.total },
        ...(input.seal === undefined ? {} : { ephemeral: input.seal.ephemeral, nonce: input.seal.nonce }),
      })
    : plaintextPayload(profile, cbor);
  const envelope: Record<string, unknown> = { message_id: input.messageId, to: input.to };
  if (input.tag !== undefined) envelope.tag = input.tag;
  envelope.timestamp = input.timestamp;
  if (input.ttl !== undefined) envelope.ttl = input.ttl;
  envelope.delivery_hint = chunked ? 'chunked' : 'standard';
  if (chunked) Object.assign(envelope, { message_group_id: r.groupId, sequence_number: r.sequence, total_chunks: r.total });
  envelope.payload = payload;
  if (input.sender !== undefined) signEnvelope(profile, envelope, input.sender);
  const body = JSON.stringify(envelope);
  const payloadBytes = input.recipient ? cbor.length + 16 : utf8Length(JSON.stringify(payload));
  const payloadLimit = chunked ? limits.maxChunkBytes : limits.maxUnchunkedMessageBytes;
  if (payloadBytes > payloadLimit || utf8Length(body) > limits.maxHttpEnvelopeBytes) {
    throw new TransferError('limits_too_small', `envelope ${r.sequence} would exceed the recipient's limits`);
  }
  return { envelope, body, payloadBytes };
}
