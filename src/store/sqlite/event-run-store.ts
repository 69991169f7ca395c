/** The event-run store ({@link EventRunStore}, http-api.md §10.9) on SQLite: file `<data-dir>/events.sqlite`. */
import type { EventRunStore } from '../../ports/event-run-store.js';
import { openSqlite, type Migration, type SqliteDb } from './database.js';

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
];

/** {@link EventRunStore} over SQLite (`synchronous = FULL`: a claim survives a crash once made). */
export class SqliteEventRunStore implements EventRunStore {
  private constructor(private readonly db: SqliteDb) {}

  static open(path: string): SqliteEventRunStore {
    return new SqliteEventRunStore(openSqlite(path, EVENT_MIGRATIONS, 'events', { synchronous: 'FULL' }));
  }

  claim(event: string, messageId: string, policyId: string, ruleId: string, nowMs: number): boolean {
    const r = this.db
      .prepare('INSERT OR IGNORE INTO event_runs (event, message_id, policy_id, rule_id, claimed_at_ms) VALUES (?, ?, ?, ?, ?)')
      .run(event, messageId.toLowerCase(), policyId, ruleId, nowMs);
    return r.changes === 1;
  }

  close(): void {
    this.db.close();
  }
}
