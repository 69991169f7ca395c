/**
 * Failures of the file-transfer profile (encryption, CBOR records, chunking, reassembly). These are client-side
 * outcomes, never HTTP answers, so they live outside the server's code registry; each has a stable code.
 */

export type TransferErrorCode =
  | 'unsupported_payload_profile'
  | 'invalid_encrypted_payload'
  | 'decryption_key_required'
  | 'decryption_failed'
  | 'invalid_recipient_key'
  | 'invalid_file_record'
  | 'record_mismatch'
  | 'incomplete_chunk_set'
  | 'inconsistent_chunk_set'
  | 'file_integrity_mismatch'
  | 'limits_too_small'
  | 'file_too_large'
  | 'invalid_file_metadata';

/** A file-transfer failure with a stable `code`. */
export class TransferError extends Error {
  readonly code: TransferErrorCode;
  constructor(code: TransferErrorCode, message: string) {
    super(message);
    this.name = 'TransferError';
    this.code = code;
  }
}

export function isTransferError(e: unknown): e is TransferError {
  return e instanceof TransferError;
}
