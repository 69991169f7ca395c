/** Opens a SQLite file in WAL mode and applies numbered migrations once. */
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { errorCodeOf } from '../../base/guards.js';
import { isStorageFailure } from '../../base/storage-errors.js';

export type SqliteDb = Database.Database;

export interface Migration {
  version: number;
  sql: string;
  /** Runs after `sql`, in the same transaction: a step SQL cannot express (e.g. rewriting rows in JavaScript). */
  then?: (db: SqliteDb) => void;
}

/** Options of {@link openSqlite}. */
export interface SqliteOpenOptions {
  /**
   * `NORMAL` (default) may lose the last transactions on power loss; `FULL` syncs the WAL on every commit, for
   * stores whose writes are acknowledged as durable (the Cache's 202, DESIGN.md principle 8).
   */
  synchronous?: 'NORMAL' | 'FULL';
}

export function openSqlite(path: string, migrations: readonly Migration[], namespace: string, options: SqliteOpenOptions = {}): SqliteDb {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  try {
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${options.synchronous ?? 'NORMAL'}`);
    db.pragma('busy_timeout = 5000');
    db.pragma('foreign_keys = ON');
    migrate(db, migrations, namespace);
  } catch (err) {
    // e.g. a full disk with no room for the WAL's shared-memory file: a failed open leaves no file open
    db.close();
    throw isStorageFailure(err) ? new StoreSpaceError(path, err) : err;
  }
  return db;
}

/**
 * A SQLite file that could not be opened or brought to its schema for lack of space (a full disk, a file size
 * limit). Each migration is one transaction, so none is half-applied: the next open, with room, applies them. Its
 * `code` is SQLite's (a storage failure still, 507 where a request met it).
 */
export class StoreSpaceError extends Error {
  readonly code: string;
  constructor(path: string, cause: unknown) {
    const code = errorCodeOf(cause) ?? 'SQLITE_FULL';
    super(`${path} could not be opened or migrated: its disk is full or failed a write (${code}); nothing was changed — free some space and start again`, {
      cause,
    });
    this.name = 'StoreSpaceError';
    this.code = code;
  }
}

export function migrate(db: SqliteDb, migrations: readonly Migration[], namespace: string): void {
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (namespace TEXT NOT NULL, version INTEGER NOT NULL, PRIMARY KEY (namespace, version))');
  const done = new Set((db.prepare('SELECT version FROM schema_migrations WHERE namespace = ?').all(namespace) as { version: number }[]).map((r) => r.version));
  const record = db.prepare('INSERT INTO schema_migrations (namespace, version) VALUES (?, ?)');
  for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
    if (done.has(m.version)) continue;
    db.transaction(() => {
      db.exec(m.sql);
      m.then?.(db);
      record.run(namespace, m.version);
    })();
  }
}
