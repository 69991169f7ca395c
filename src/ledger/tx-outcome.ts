/** What the ledger records of a transaction's outcome: a failure as a record's error, a pooled one dropped. */
import type { LedgerFailure } from './errors.js';
import type { TxRecord } from './store.js';

/** A pooled transaction that failed without being included: `failed`, with its error, bytes no longer kept. */
export function droppedRecord(tx: TxRecord, failure: LedgerFailure, nowMs: number): TxRecord {
  const rec: TxRecord = { ...tx, status: 'failed', error: failureToTxError(failure), finishedAtMs: nowMs };
  delete rec.bytes;
  return rec;
}

export function failureToTxError(f: LedgerFailure): TxRecord['error'] {
  return f.reason ? { name: f.errorName, module: f.module, reason: f.reason } : { name: f.errorName, module: f.module };
}
