/**
 * The Directory's DNS-challenge store on PostgreSQL: the same table and rules as the SQLite store
 * (`../sqlite/dns-challenge-store.ts`), shared by every Directory process on the database, so a challenge
 * created through one process can be read, verified and used through another.
 *
 * Single use across processes rests on single conditional statements: `markVerified` and `markUsed` are each one
 * `UPDATE … WHERE status <> 'used' RETURNING id` (READ COMMITTED re-checks the condition on the row a concurrent
 * writer just committed), so of two processes racing to use a challenge exactly one gets a row back.
 *
 * A database failure becomes 503 `service_unavailable` (retry later); coded and programming errors pass through.
 */
import type pg from 'pg';
import { DdnError } from '../../base/errors.js';
import type { DnsChallenge, DnsChallengeStore, VerifiedIntent } from '../../directory/dns-challenges.js';
import { challengeFromRow, challengeToRow, DNS_CHALLENGE_COLUMNS, dnsChallengeTableSql, type DnsChallengeRow } from '../dns-challenge-row.js';
import { migratePg, openPgPool, type PgMigration, type PgPool } from './pool.js';

export const DNS_CHALLENGE_PG_MIGRATIONS: readonly PgMigration[] = [
  {
    version: 1,
    sql: dnsChallengeTableSql('BIGINT'),
  },
];

/** The migration namespace in `schema_migrations` (the same name the SQLite store uses). */
export const DNS_CHALLENGE_PG_NAMESPACE = 'directory';

const INSERT = `INSERT INTO directory_dns_challenges (${DNS_CHALLENGE_COLUMNS.join(', ')})
  VALUES (${DNS_CHALLENGE_COLUMNS.map((_, i) => `$${i + 1}`).join(', ')})`;

function unavailable(err: unknown): unknown {
  if (err instanceof DdnError) return err;
  if (err instanceof TypeError || err instanceof RangeError || err instanceof ReferenceError || err instanceof SyntaxError) return err;
  return new DdnError('service_unavailable', 'the DNS-challenge store is unavailable; retry later');
}

/** {@link DnsChallengeStore} on PostgreSQL, safe to share between processes. */
export class PgDnsChallengeStore implements DnsChallengeStore {
  /** Migrates the challenge table in `pool`'s schema and returns a store on it (the pool stays the caller's unless `ownsPool`). */
  static async open(pool: PgPool, ownsPool = false): Promise<PgDnsChallengeStore> {
    await migratePg(pool, DNS_CHALLENGE_PG_MIGRATIONS, DNS_CHALLENGE_PG_NAMESPACE);
    return new PgDnsChallengeStore(pool, ownsPool);
  }

  private constructor(
    readonly pool: PgPool,
    private readonly ownsPool: boolean,
  ) {}

  async insert(c: DnsChallenge): Promise<void> {
    const row = challengeToRow(c);
    await this.query(
      INSERT,
      DNS_CHALLENGE_COLUMNS.map((k) => row[k]),
    );
  }

  async get(id: string): Promise<DnsChallenge | undefined> {
    const rows = await this.query<DnsChallengeRow>('SELECT * FROM directory_dns_challenges WHERE id = $1', [id]);
    return rows[0] === undefined ? undefined : challengeFromRow(rows[0]);
  }

  async markVerified(id: string, intent: VerifiedIntent): Promise<boolean> {
    const rows = await this.query("UPDATE directory_dns_challenges SET status = 'verified', intent = $1 WHERE id = $2 AND status <> 'used' RETURNING id", [
      JSON.stringify(intent),
      id,
    ]);
    return rows.length > 0;
  }

  async markUsed(id: string, txHash: string): Promise<boolean> {
    const rows = await this.query("UPDATE directory_dns_challenges SET status = 'used', used_tx_hash = $1 WHERE id = $2 AND status <> 'used' RETURNING id", [
      txHash,
      id,
    ]);
    return rows.length > 0;
  }

  async purgeExpiredBefore(ms: number): Promise<number> {
    return (await this.run('DELETE FROM directory_dns_challenges WHERE expires_at_ms < $1', [ms])).rowCount ?? 0;
  }

  /** Closes the pool when the store owns it. */
  async close(): Promise<void> {
    if (this.ownsPool) await this.pool.end();
  }

  private async query<R extends object = { id: string }>(sql: string, params: unknown[]): Promise<R[]> {
    return (await this.run<R>(sql, params)).rows;
  }

  private async run<R extends object = { id: string }>(sql: string, params: unknown[]): Promise<pg.QueryResult<R>> {
    try {
      return await this.pool.query<R>(sql, params);
    } catch (e) {
      throw unavailable(e);
    }
  }
}

/**
 * Opens the Directory's DNS-challenge store on PostgreSQL: a pool on `schema` (created if absent, default
 * `public`), migrated, owned by the store (closed by `close()`).
 */
export async function openPgDnsChallengeStore(url: string, schema = 'public', onPoolError?: (err: Error) => void): Promise<PgDnsChallengeStore> {
  const pool = await openPgPool({ url, schema, ...(onPoolError === undefined ? {} : { onError: onPoolError }) });
  try {
    return await PgDnsChallengeStore.open(pool, true);
  } catch (err) {
    await pool.end().catch(() => undefined);
    throw err;
  }
}
