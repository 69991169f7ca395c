/**
 * An exclusive lock on a file that the operating system releases when the process ends, however it ends (a
 * crash or `kill -9` included): SQLite's own file locking (POSIX advisory locks), held by a connection in
 * exclusive locking mode for as long as it stays open. A second holder — another process, or another connection
 * of this one — is refused at once rather than made to wait.
 */
import Database from 'better-sqlite3';

/** A lock held until {@link ExclusiveFileLock.release} or the end of the process. */
export interface ExclusiveFileLock {
  release(): void;
}

/** Takes the lock of `path` (created when absent); null when somebody holds it. */
export function tryExclusiveLock(path: string): ExclusiveFileLock | null {
  const db = new Database(path, { timeout: 0 });
  try {
    db.pragma('locking_mode = EXCLUSIVE');
    // no journal file beside the lock; the lock holds no data worth one
    db.pragma('journal_mode = MEMORY');
    // a write transaction takes the exclusive lock; in exclusive locking mode it is kept after the commit
    db.exec('BEGIN EXCLUSIVE');
    db.exec('COMMIT');
  } catch (err) {
    db.close();
    if ((err as { code?: unknown }).code === 'SQLITE_BUSY') return null;
    throw err;
  }
  let held = true;
  return {
    release() {
      if (!held) return;
      held = false;
      db.close();
    },
  };
}
