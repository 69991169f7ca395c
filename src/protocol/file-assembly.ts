/**
 * Receiving a file (http-api.md §10.9, §11.5): open each envelope's payload into its record, check the record
 * against the envelope it came in, and join a complete set into the file whose size and SHA-256 it declares.
 */
import type { KeyObject } from 'node:crypto';
import { bytesEqual, toHex } from '../base/bytes.js';
import { sha256 } from '../crypto/hash.js';
import { decodeFileRecord, type FileRecord } from './file-record.js';
import { aadFieldsOf, openPayload } from './payload-crypto.js';
import type { Profile } from './profile.js';
import { TransferError } from './transfer-error.js';

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
    const same = r.name === first.name && r.mediaType === first.mediaType && r.sizeBytes === first.sizeBytes
      && r.total === first.total && r.groupId === first.groupId && bytesEqual(r.sha256, first.sha256);
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
