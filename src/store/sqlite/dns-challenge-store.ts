/**
 * SQLite implementation of the Directory's DNS-challenge store (http-api.md §7.2). Its own migration namespace
 * (`directory`), so it can share the ledger database file or live in a database of its own.
 */
import type { DnsChallenge, DnsChallengeStore, VerifiedIntent } from '../../directory/dns-challenges.js';
import { migrate, openSqlite, type Migration, type SqliteDb } from './database.js';

export const DNS_CHALLENGE_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    sql: `
      CREATE TABLE directory_dns_challenges (
        id TEXT PRIMARY KEY, persona TEXT NOT NULL, operator_did TEXT NOT NULL, action TEXT NOT NULL,
        challenge_nonce TEXT NOT NULL, operator_nonce TEXT NOT NULL, current_operator_did TEXT,
        record_name TEXT NOT NULL, record_value TEXT NOT NULL, created_at_ms INTEGER NOT NULL,
        expires_at_ms INTEGER NOT NULL, status TEXT NOT NULL, intent TEXT, used_tx_hash TEXT);
      CREATE INDEX directory_dns_challenges_expiry ON directory_dns_challenges (expires_at_ms);
    `,
  },
];

const MIGRATION_NAMESPACE = 'directory';

interface Row {
  id: string;
  persona: string;
  operator_did: string;
  action: string;
  challenge_nonce: string;
  operator_nonce: string;
  current_operator_did: string | null;
  record_name: string;
  record_value: string;
  created_at_ms: number;
  expires_at_ms: number;
  status: string;
  intent: string | null;
  used_tx_hash: string | null;
}

function fromRow(r: Row): DnsChallenge {
  return {
    id: r.id,
    persona: r.persona,
    operatorDid: r.operator_did,
    action: r.action as DnsChallenge['action'],
    challengeNonce: r.challenge_nonce,
    operatorNonce: r.operator_nonce,
    currentOperatorDid: r.current_operator_did,
    recordName: r.record_name,
    recordValue: r.record_value,
    createdAtMs: r.created_at_ms,
    expiresAtMs: r.expires_at_ms,
    status: r.status as DnsChallenge['status'],
    intent: r.intent === null ? null : (JSON.parse(r.intent) as VerifiedIntent),
    usedTxHash: r.used_tx_hash,
  };
}

export class SqliteDnsChallengeStore implements DnsChallengeStore {
  private readonly q;

  /** Applies this store's migrations to `db` (idempotent) and prepares its statements. */
  constructor(db: SqliteDb) {
    migrate(db, DNS_CHALLENGE_MIGRATIONS, MIGRATION_NAMESPACE);
    this.q = {
      insert: db.prepare(
        `INSERT INTO directory_dns_challenges (id, persona, operator_did, action, challenge_nonce, operator_nonce,
           current_operator_did, record_name, record_value, created_at_ms, expires_at_ms, status, intent, used_tx_hash)
         VALUES (@id, @persona, @operator_did, @action, @challenge_nonce, @operator_nonce, @current_operator_did,
           @record_name, @record_value, @created_at_ms, @expires_at_ms, @status, @intent, @used_tx_hash)`,
      ),
      get: db.prepare('SELECT * FROM directory_dns_challenges WHERE id = ?'),
      verified: db.prepare(
        "UPDATE directory_dns_challenges SET status = 'verified', intent = ? WHERE id = ? AND status != 'used'",
      ),
      used: db.prepare("UPDATE directory_dns_challenges SET status = 'used', used_tx_hash = ? WHERE id = ?"),
      purge: db.prepare('DELETE FROM directory_dns_challenges WHERE expires_at_ms < ?'),
    };
  }

  /** A store in a private in-memory database (a Directory not given one; challenges then end with the process). */
  static inMemory(): SqliteDnsChallengeStore {
    return new SqliteDnsChallengeStore(openSqlite(':memory:', [], MIGRATION_NAMESPACE));
  }

  insert(c: DnsChallenge): void {
    this.q.insert.run({
      id: c.id,
      persona: c.persona,
      operator_did: c.operatorDid,
      action: c.action,
      challenge_nonce: c.challengeNonce,
      operator_nonce: c.operatorNonce,
      current_operator_did: c.currentOperatorDid,
      record_name: c.recordName,
      record_value: c.recordValue,
      created_at_ms: c.createdAtMs,
      expires_at_ms: c.expiresAtMs,
      status: c.status,
      intent: c.intent === null ? null : JSON.stringify(c.intent),
      used_tx_hash: c.usedTxHash,
    });
  }

  get(id: string): DnsChallenge | undefined {
    const r = this.q.get.get(id) as Row | undefined;
    return r ? fromRow(r) : undefined;
  }

  markVerified(id: string, intent: VerifiedIntent): boolean {
    return this.q.verified.run(JSON.stringify(intent), id).changes > 0;
  }

  markUsed(id: string, txHash: string): void {
    this.q.used.run(txHash, id);
  }

  purgeExpiredBefore(ms: number): number {
    return this.q.purge.run(ms).changes;
  }
}
