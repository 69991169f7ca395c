/**
 * The event-run store ({@link EventRunStore}, http-api.md §10.9) on SQLite: file `<data-dir>/events.sqlite`.
 *
 * A claim must be on stable storage before its rule runs (a crash after a Call must not run it again), but the
 * fsync is not made on the event loop: claims made in one turn commit together under `synchronous = NORMAL`, and
 * each is answered after an fsync of the WAL on the `ddn-wal-sync` thread (`wal-sync.ts`) — the durability of
 * `synchronous = FULL`. Before, every claim synced inside its COMMIT on the loop, and every request of the node
 * waited for the disk once per rule run. The file keeps SQLite's own checkpoints (every 1,000 WAL pages, inside a
 * commit): it is small, and a thread for them (`wal-checkpointer.ts`) pays only past a few hundred MiB.
 */
import type { EventRunStore } from '../../ports/event-run-store.js';
import { openSqlite, type Migration, type SqliteDb } from './database.js';
import { GroupCommitWriter } from './group-commit.js';

export const EVENT_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    sql: `CREATE TABLE event_runs (
      event TEXT NOT NULL,
      message_id TEXT NOT NULL,
      policy_id TEXT NOT NULL,
      rule_id TEXT NOT NULL,
      claimed_at_ms INTEGER NOT NULL,
      PRIMARY KEY (event, message_id, policy_id, rule_id)
    )`,
  },
  {
    // when a claim may be forgotten (its envelope expired everywhere); NULL, as for the claims made before: kept
    version: 2,
    sql: `ALTER TABLE event_runs ADD COLUMN forget_after_ms INTEGER;
      CREATE INDEX event_runs_forget ON event_runs (forget_after_ms)`,
  },
];

/** {@link EventRunStore} over SQLite: a claim is answered once it is on stable storage. */
export class SqliteEventRunStore implements EventRunStore {
  private readonly writer: GroupCommitWriter;
  private readonly insert;
  private readonly forget;

  private constructor(
    private readonly db: SqliteDb,
    path: string,
  ) {
    this.insert = db.prepare(
      'INSERT OR IGNORE INTO event_runs (event, message_id, policy_id, rule_id, claimed_at_ms, forget_after_ms) VALUES (?, ?, ?, ?, ?, ?)',
    );
    this.forget = db.prepare('DELETE FROM event_runs WHERE rowid IN (SELECT rowid FROM event_runs WHERE forget_after_ms <= ? LIMIT ?)');
    this.writer = new GroupCommitWriter(db, { walSyncPath: `${path}-wal` });
  }

  static open(path: string): SqliteEventRunStore {
    return new SqliteEventRunStore(openSqlite(path, EVENT_MIGRATIONS, 'events', { synchronous: 'FULL' }), path);
  }

  /** fsyncs of the WAL made for claims so far (tests: a claim is answered after one). */
  get walSyncs(): number {
    return this.writer.walSyncs;
  }

  claim(event: string, messageId: string, policyId: string, ruleId: string, nowMs: number, forgetAfterMs: number): Promise<boolean> {
    return this.writer.submit(() => this.insert.run(event, messageId.toLowerCase(), policyId, ruleId, nowMs, forgetAfterMs).changes === 1);
  }

  forgetExpired(nowMs: number, limit: number): Promise<number> {
    // no fsync of its own: a forgotten claim that comes back after a crash is only forgotten again
    return this.writer.submit(() => this.forget.run(nowMs, limit).changes, 0, false);
  }

  async close(): Promise<void> {
    await this.writer.close();
    this.db.close();
  }
}
