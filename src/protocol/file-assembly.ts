/**
 * Receiving a file (http-api.md §10.9, §11.5): open each envelope's payload into its record, check the record
 * against the envelope it came in, and join a complete set into the file whose size and SHA-256 it declares.
 */
import { createHash, type Hash, type KeyObject } from 'node:crypto';
import { bytesEqual, toHex } from '../base/bytes.js';
import { sha256 } from '../crypto/hash.js';
import { decodeFileRecord, type FileRecord } from './file-record.js';
import { aadFieldsOf, openPayload } from './payload-crypto.js';
import type { Profile } from './profile.js';
import { TransferError } from './transfer-error.js';

/** What a whole file declares (its first record), and its verified digest once complete. */
export interface FileHeader {
  name: string;
  mediaType: string;
  sizeBytes: number;
  sha256: Uint8Array;
  groupId: string;
  total: number;
}

/**
 * Checks the records of one file as they arrive, in sequence order, without keeping their bytes: every record
 * repeats the first one's metadata, sequences run `0 … total − 1`, and {@link finish} checks the joined size and
 * SHA-256 (hashed incrementally). The caller writes each record's `data` as soon as {@link add} accepted it.
 */
export class FileAssembler {
  private header: FileHeader | undefined;
  private readonly hash: Hash = createHash('sha256');
  private next = 0;
  private bytes = 0;

  /** Accepts the next record (its sequence must be the next one) and returns its header. */
  add(r: FileRecord): FileHeader {
    const h = (this.header ??= { name: r.name, mediaType: r.mediaType, sizeBytes: r.sizeBytes, sha256: r.sha256, groupId: r.groupId, total: r.total });
    if (r.sequence !== this.next || r.sequence >= h.total) {
      throw new TransferError('incomplete_chunk_set', `expected chunk ${this.next} of ${h.total}, got chunk ${r.sequence}`);
    }
    const same =
      r.name === h.name &&
      r.mediaType === h.mediaType &&
      r.sizeBytes === h.sizeBytes &&
      r.total === h.total &&
      r.groupId === h.groupId &&
      bytesEqual(r.sha256, h.sha256);
    if (!same) throw new TransferError('inconsistent_chunk_set', 'chunk metadata differs within one file');
    this.bytes += r.data.length;
    if (this.bytes > h.sizeBytes) throw new TransferError('file_integrity_mismatch', `the file exceeds the ${h.sizeBytes} bytes its record declares`);
    this.hash.update(r.data);
    this.next++;
    return h;
  }

  /** Bytes accepted so far. */
  get received(): number {
    return this.bytes;
  }

  /** After the last record: the header and the lowercase hex SHA-256, once size and digest match the declaration. */
  finish(): FileHeader & { sha256Hex: string } {
    const h = this.header;
    if (h === undefined || this.next !== h.total) {
      throw new TransferError('incomplete_chunk_set', `expected ${h?.total ?? 1} chunks, got ${this.next}`);
    }
    if (this.bytes !== h.sizeBytes) throw new TransferError('file_integrity_mismatch', `the file has ${this.bytes} bytes, its record declares ${h.sizeBytes}`);
    const digest = new Uint8Array(this.hash.digest());
    if (!bytesEqual(digest, h.sha256)) throw new TransferError('file_integrity_mismatch', 'the SHA-256 of the joined file differs from the declared one');
    return { ...h, sha256Hex: toHex(digest) };
  }
}

/** A verified file. */
export interface AssembledFile {
  /** The name the sender gave (not yet checked for use as a path). */
  name: string;
  mediaType: string;
  data: Uint8Array;
  /** Lowercase hex SHA-256 of `data`. */
  sha256Hex: string;
  /** `''` when it came in one envelope. */
  groupId: string;
}

/**
 * The record inside `envelope`: decrypted with `decryptionKey` (or read from the plaintext profile), decoded,
 * and checked to sit where the envelope says (`message_group_id`, `sequence_number`, `total_chunks`).
 */
export function openFileEnvelope(profile: Profile, envelope: Readonly<Record<string, unknown>>, decryptionKey: KeyObject | null): FileRecord {
  const aad = aadFieldsOf(envelope);
  const record = decodeFileRecord(profile, openPayload(profile, envelope.payload, aad, decryptionKey));
  if (record.groupId !== aad.groupId || record.sequence !== aad.sequence || record.total !== aad.total) {
    throw new TransferError('record_mismatch', `message ${aad.messageId}: the record's chunk position differs from its envelope's`);
  }
  return record;
}

/**
 * Joins the records of one message (any order) into the file: every sequence `0 … total − 1` exactly once, the
 * same name, media type, size, SHA-256 and group in each, and the joined bytes of that size and hash.
 */
export function assembleFile(records: readonly FileRecord[]): AssembledFile {
  if (records.length === 0) throw new TransferError('incomplete_chunk_set', 'no records');
  const sorted = [...records].sort((a, b) => a.sequence - b.sequence);
  const first = sorted[0]!;
  if (sorted.length !== first.total || sorted.some((r, i) => r.sequence !== i)) {
    throw new TransferError('incomplete_chunk_set', `expected ${first.total} distinct chunks, got ${records.length}`);
  }
  for (const r of sorted) {
    const same =
      r.name === first.name &&
      r.mediaType === first.mediaType &&
      r.sizeBytes === first.sizeBytes &&
      r.total === first.total &&
      r.groupId === first.groupId &&
      bytesEqual(r.sha256, first.sha256);
    if (!same) throw new TransferError('inconsistent_chunk_set', 'chunk metadata differs within one file');
  }
  const size = sorted.reduce((n, r) => n + r.data.length, 0);
  if (size !== first.sizeBytes) throw new TransferError('file_integrity_mismatch', `the file has ${size} bytes, its record declares ${first.sizeBytes}`);
  const data = new Uint8Array(size);
  let at = 0;
  for (const r of sorted) {
    data.set(r.data, at);
    at += r.data.length;
  }
  const digest = sha256(data);
  if (!bytesEqual(digest, first.sha256)) throw new TransferError('file_integrity_mismatch', 'the SHA-256 of the joined file differs from the declared one');
  return { name: first.name, mediaType: first.mediaType, data, sha256Hex: toHex(digest), groupId: first.groupId };
}
