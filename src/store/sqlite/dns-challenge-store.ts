/**
 * SQLite implementation of the Directory's DNS-challenge store (http-api.md §7.2). Its own migration namespace
 * (`directory`), so it can share the ledger database file or live in a database of its own. The PostgreSQL
 * twin is ../postgres/dns-challenge-store.ts.
 */
import type { DnsChallenge, DnsChallengeStore, VerifiedIntent } from '../../directory/dns-challenges.js';
import { challengeFromRow, challengeToRow, DNS_CHALLENGE_COLUMNS, dnsChallengeTableSql, type DnsChallengeRow } from '../dns-challenge-row.js';
import { migrate, openSqlite, type Migration, type SqliteDb } from './database.js';

export const DNS_CHALLENGE_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    sql: dnsChallengeTableSql('INTEGER'),
  },
];

const MIGRATION_NAMESPACE = 'directory';

/** Single writer, synchronous statements: every method settles before it returns its promise. */
export class SqliteDnsChallengeStore implements DnsChallengeStore {
  private readonly q;

  /** Applies this store's migrations to `db` (idempotent) and prepares its statements. */
  constructor(db: SqliteDb) {
    migrate(db, DNS_CHALLENGE_MIGRATIONS, MIGRATION_NAMESPACE);
    this.q = {
      insert: db.prepare(
        `INSERT INTO directory_dns_challenges (${DNS_CHALLENGE_COLUMNS.join(', ')})
         VALUES (${DNS_CHALLENGE_COLUMNS.map((c) => `@${c}`).join(', ')})`,
      ),
      get: db.prepare('SELECT * FROM directory_dns_challenges WHERE id = ?'),
      verified: db.prepare("UPDATE directory_dns_challenges SET status = 'verified', intent = ? WHERE id = ? AND status != 'used'"),
      used: db.prepare("UPDATE directory_dns_challenges SET status = 'used', used_tx_hash = ? WHERE id = ? AND status != 'used'"),
      purge: db.prepare('DELETE FROM directory_dns_challenges WHERE expires_at_ms < ?'),
    };
  }

  /** A store in a private in-memory database (a Directory not given one; challenges then end with the process). */
  static inMemory(): SqliteDnsChallengeStore {
    return new SqliteDnsChallengeStore(openSqlite(':memory:', [], MIGRATION_NAMESPACE));
  }

  async insert(c: DnsChallenge): Promise<void> {
    this.q.insert.run(challengeToRow(c));
  }

  async get(id: string): Promise<DnsChallenge | undefined> {
    const r = this.q.get.get(id) as DnsChallengeRow | undefined;
    return r ? challengeFromRow(r) : undefined;
  }

  async markVerified(id: string, intent: VerifiedIntent): Promise<boolean> {
    return this.q.verified.run(JSON.stringify(intent), id).changes > 0;
  }

  async markUsed(id: string, txHash: string): Promise<boolean> {
    return this.q.used.run(txHash, id).changes > 0;
  }

  async purgeExpiredBefore(ms: number): Promise<number> {
    return this.q.purge.run(ms).changes;
  }
}
