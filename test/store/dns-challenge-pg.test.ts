/**
 * The DnsChallengeStore contract on PostgreSQL, plus what only PostgreSQL has (opening by URL, migration
 * namespace, failure mapping). Each test on a fresh schema, dropped afterwards. Registers no tests when
 * DDN_TEST_PG_URL is unset (.ci/run sets it when a server answers).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { DdnError } from '../../src/base/errors.js';
import type { DnsChallenge } from '../../src/directory/dns-challenges.js';
import { openPgPool } from '../../src/store/postgres/pool.js';
import { openPgDnsChallengeStore, PgDnsChallengeStore } from '../../src/store/postgres/dns-challenge-store.js';
import { freshPgSchema, PG_URL } from '../support/pg.js';
import { dnsChallengeContract } from './dns-challenge-contract.js';

const T = 1_800_000_000_000;

const challenge = (): DnsChallenge => ({
  id: randomUUID(),
  persona: 'shop.example.org',
  operatorDid: 'did:platform:2222222222222222',
  action: 'renew_persona',
  challengeNonce: '3',
  operatorNonce: '4',
  currentOperatorDid: null,
  recordName: '_ddn.shop.example.org',
  recordValue: 'ddn-verification=xyz',
  createdAtMs: T,
  expiresAtMs: T + 1,
  status: 'pending',
  intent: null,
  usedTxHash: null,
});

if (PG_URL) {
  dnsChallengeContract('postgres', async () => {
    const db = await freshPgSchema();
    const others: PgDnsChallengeStore[] = [];
    return {
      store: await PgDnsChallengeStore.open(db.pool),
      async another() {
        // A second pool on the same schema: its own connections, as another process would have.
        const s = await openPgDnsChallengeStore(db.url, db.schema);
        others.push(s);
        return s;
      },
      async close() {
        for (const s of others) await s.close();
        await db.drop();
      },
    };
  });

  describe('PgDnsChallengeStore specifics', () => {
    it('opens by URL and schema, migrating its namespace once, and owns its pool', async () => {
      const db = await freshPgSchema();
      try {
        const c = challenge();
        const a = await openPgDnsChallengeStore(db.url, db.schema);
        await a.insert(c);
        await a.close();
        const b = await openPgDnsChallengeStore(db.url, db.schema);
        assert.deepEqual(await b.get(c.id), c);
        await b.close();
        const versions = await db.pool.query("SELECT version FROM schema_migrations WHERE namespace = 'directory'");
        assert.deepEqual(versions.rows, [{ version: 1 }]);
      } finally {
        await db.drop();
      }
    });

    it('answers 503 service_unavailable when the database fails, and recovers', async () => {
      const db = await freshPgSchema();
      const pool = await openPgPool({ url: db.url, schema: db.schema });
      try {
        const store = await PgDnsChallengeStore.open(pool);
        const c = challenge();
        await store.insert(c);
        await db.pool.query('ALTER TABLE directory_dns_challenges RENAME TO hidden');
        const unavailable = (e: unknown) => e instanceof DdnError && e.code === 'service_unavailable';
        await assert.rejects(store.get(c.id), unavailable);
        await assert.rejects(store.markUsed(c.id, '0xaa'), unavailable);
        await assert.rejects(store.insert(challenge()), unavailable);
        await db.pool.query('ALTER TABLE hidden RENAME TO directory_dns_challenges');
        assert.equal(await store.markUsed(c.id, '0xaa'), true);
      } finally {
        await pool.end();
        await db.drop();
      }
    });
  });
}
