/**
 * Errors that mean "the storage could not take the write": a full disk or quota (SQLite's `SQLITE_FULL`, its I/O
 * errors — on a full disk SQLite reports the write of its shared-memory or journal file as one — and Node's
 * `ENOSPC`/`EDQUOT`), and PostgreSQL's `53100 disk_full`. They answer 507 `insufficient_storage`, never 500.
 */
import { errorCodeOf } from './guards.js';
import { DdnError } from './errors.js';

/** True for an error of the storage running out of space (or failing to write) — see the module comment. */
export function isStorageFailure(err: unknown): boolean {
  const code = errorCodeOf(err);
  if (code === undefined) return false;
  return code === 'SQLITE_FULL' || code.startsWith('SQLITE_IOERR') || code === 'ENOSPC' || code === 'EDQUOT' || code === '53100';
}

/** The 507 a write gets when the storage could not take it. */
export function insufficientStorage(): DdnError {
  return new DdnError('insufficient_storage', 'the write could not be persisted; retry later');
}
