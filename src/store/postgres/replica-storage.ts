/**
 * Whether a PostgreSQL Directory process's ledger replica (its SQLite file in the data directory) is out of storage,
 * as its catch-ups find it. While the replica cannot take the blocks others made, every catch-up fails the same way
 * — a read of the pool asks for one, the poll every half second, each admission under the lock — and admissions
 * through the process are answered 507 (`PgLedgerSync`). That state is logged once when it begins (`warn`, the
 * first failure's `err`) and once when it ends (`info`, with the catch-ups that failed meanwhile), as the data
 * directory's {@link StorageGuard} logs its own; not at each failure.
 *
 * A failure counts when the replica's storage refused a write (SQLite's full disk or I/O error, `ENOSPC`,
 * `EDQUOT`); PostgreSQL's own `53100 disk_full` is the database's disk, not this process's, and is not this state.
 */
import type { Logger } from 'pino';
import { errorCodeOf } from '../../base/guards.js';
import { isStorageFailure } from '../../base/storage-errors.js';

/** The log message when the replica runs out of storage. */
export const REPLICA_FULL_MSG = 'ledger replica is out of storage: catch-ups fail and admissions are answered 507 until it has room';
/** The log message when a catch-up succeeds again. */
export const REPLICA_ROOM_MSG = 'ledger replica has room again: caught up';

/** True for a storage failure of this process's replica (not of the PostgreSQL database's disk). */
export function isReplicaStorageFailure(err: unknown): boolean {
  return isStorageFailure(err) && errorCodeOf(err) !== '53100';
}

/** The replica's storage state, from the catch-ups' outcomes. */
export class ReplicaStorage {
  private fullSinceMs: number | undefined;
  private failures = 0;

  constructor(private readonly logger: Logger | undefined) {}

  /** True from a catch-up that failed for want of storage until one succeeds. */
  get isFull(): boolean {
    return this.fullSinceMs !== undefined;
  }

  /**
   * A catch-up failed with `err` at `nowMs`: true when the replica's storage refused it (then it is counted, and
   * logged only if the state begins here); false for any other failure, which the caller reports itself.
   */
  failed(err: unknown, nowMs: number): boolean {
    if (!isReplicaStorageFailure(err)) return false;
    this.failures++;
    if (this.fullSinceMs === undefined) {
      this.fullSinceMs = nowMs;
      this.logger?.warn({ err }, REPLICA_FULL_MSG);
    }
    return true;
  }

  /** A catch-up took every block the database had, at `nowMs`: ends the state, if it held. */
  caughtUp(nowMs: number): void {
    if (this.fullSinceMs === undefined) return;
    this.logger?.info({ failed_catch_ups: this.failures, full_seconds: Math.round((nowMs - this.fullSinceMs) / 1000) }, REPLICA_ROOM_MSG);
    this.fullSinceMs = undefined;
    this.failures = 0;
  }
}
