/**
 * The CBOR record `<p>:binary-chunk:v1` (http-api.md §10.9) that every file-transfer and control payload wraps:
 * a map of `format`, `name`, `media_type`, `size_bytes`, `sha256` (of the whole file), `message_group_id` (`''`
 * when unchunked), `sequence_number`, `total_chunks` and `data` (this part's bytes).
 *
 * Encoding is deterministic CBOR through `cborg`: definite lengths, shortest integer heads, map keys sorted by
 * encoded length then bytewise (RFC 7049 canonical order, the order the deployed senders use). Decoding is
 * strict (no duplicate keys, no indefinite lengths, minimal heads) but does not insist on key order, and ignores
 * keys it does not know so that later record versions stay readable.
 */
import { decode, encode } from 'cborg';
import { utf8Length } from '../base/bytes.js';
import type { Profile } from './profile.js';
import { TransferError } from './transfer-error.js';

/** Longest `name` and `media_type`, in UTF-8 bytes (the deployed sender's bounds). */
export const MAX_RECORD_TEXT_BYTES = 255;

/** One record: a whole small file, or one part of a chunked one. */
export interface FileRecord {
  name: string;
  mediaType: string;
  /** Size of the whole file. */
  sizeBytes: number;
  /** SHA-256 of the whole file (32 bytes). */
  sha256: Uint8Array;
  /** `''` when the file travels in one envelope. */
  groupId: string;
  sequence: number;
  total: number;
  data: Uint8Array;
}

/** The record's CBOR bytes. */
export function encodeFileRecord(profile: Profile, r: FileRecord): Uint8Array {
  const b = encode({
    format: profile.controlRecordFormat,
    name: r.name,
    media_type: r.mediaType,
    size_bytes: r.sizeBytes,
    sha256: r.sha256,
    message_group_id: r.groupId,
    sequence_number: r.sequence,
    total_chunks: r.total,
    data: r.data,
  });
  // cborg may hand back a Buffer; callers get a plain Uint8Array view of the same bytes.
  return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
}

function invalid(message: string): never {
  throw new TransferError('invalid_file_record', message);
}

function text(m: Record<string, unknown>, key: string): string {
  const v = m[key];
  return typeof v === 'string' ? v : invalid(`record ${key} is not a text string`);
}

function uint(m: Record<string, unknown>, key: string): number {
  const v = m[key];
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : invalid(`record ${key} is not an unsigned integer`);
}

function bytes(m: Record<string, unknown>, key: string): Uint8Array {
  const v = m[key];
  return v instanceof Uint8Array ? v : invalid(`record ${key} is not a byte string`);
}

/** Decodes and checks a record; throws `invalid_file_record` on anything else. */
export function decodeFileRecord(profile: Profile, cbor: Uint8Array): FileRecord {
  let m: unknown;
  try {
    m = decode(cbor, { strict: true, rejectDuplicateMapKeys: true, allowIndefinite: false, allowUndefined: false, allowBigInt: false });
  } catch (e) {
    invalid(`record is not valid CBOR: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (typeof m !== 'object' || m === null || Array.isArray(m) || m instanceof Uint8Array) invalid('record is not a CBOR map');
  const rec = m as Record<string, unknown>;
  if (rec.format !== profile.controlRecordFormat) invalid(`record format is not ${profile.controlRecordFormat}`);
  const r: FileRecord = {
    name: text(rec, 'name'),
    mediaType: text(rec, 'media_type'),
    sizeBytes: uint(rec, 'size_bytes'),
    sha256: bytes(rec, 'sha256'),
    groupId: text(rec, 'message_group_id'),
    sequence: uint(rec, 'sequence_number'),
    total: uint(rec, 'total_chunks'),
    data: bytes(rec, 'data'),
  };
  if (r.sha256.length !== 32) invalid('record sha256 is not 32 bytes');
  if (r.total < 1 || r.sequence >= r.total) invalid('record sequence_number / total_chunks out of range');
  if (utf8Length(r.name) > MAX_RECORD_TEXT_BYTES || utf8Length(r.mediaType) > MAX_RECORD_TEXT_BYTES) invalid('record name or media_type too long');
  return r;
}
