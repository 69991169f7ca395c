/** Client-side failures that are not HTTP answers (those are `DirectoryApiError`, in http.ts). */
import type { LedgerErrorJson, TransactionResponse } from './types.js';

/**
 * The server handed back something the SDK refuses to sign: a `payload_to_sign` that differs from the bytes
 * rebuilt with the shared codec, or a prepared `request` that does not match what was asked for.
 */
export class PayloadCheckError extends Error {
  readonly code = 'payload_check_failed';
  constructor(message: string) {
    super(message);
    this.name = 'PayloadCheckError';
  }
}

/** A polled transaction ended `failed` (http-api.md §3.4); `code` is the §1.1 code of its `error`. */
export class TransactionFailedError extends Error {
  readonly code: string;
  readonly ledgerError: string | undefined;
  readonly txHash: string;
  readonly transaction: TransactionResponse;
  constructor(transaction: TransactionResponse) {
    const err: Partial<LedgerErrorJson> = transaction.error ?? {};
    super(`transaction ${transaction.tx_hash} failed: ${err.code ?? 'unknown'}${err.message ? ` (${err.message})` : ''}`);
    this.name = 'TransactionFailedError';
    this.code = err.code ?? 'chain_submission_rejected';
    this.ledgerError = err.ledger_error;
    this.txHash = transaction.tx_hash;
    this.transaction = transaction;
  }
}

/** A registration ended `missing` with a `last_error` (http-api.md §3.2). */
export class RegistrationFailedError extends Error {
  readonly code: string;
  readonly did: string;
  constructor(did: string, lastError: { code: string; message: string }) {
    super(`registration of ${did} failed: ${lastError.code} (${lastError.message})`);
    this.name = 'RegistrationFailedError';
    this.code = lastError.code;
    this.did = did;
  }
}

/** A poller gave up; `last` is the last value it saw (undefined when every poll was a retryable error). */
export class WaitTimeoutError extends Error {
  readonly code = 'wait_timeout';
  readonly last: unknown;
  constructor(what: string, timeoutMs: number, last: unknown) {
    super(`timed out after ${timeoutMs} ms waiting for ${what}`);
    this.name = 'WaitTimeoutError';
    this.last = last;
  }
}
