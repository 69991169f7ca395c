/**
 * The MailboxStore contract on PostgreSQL, plus what only PostgreSQL has (error mapping of server failures,
 * contention retries). Each test on a fresh schema, dropped afterwards. Registers no tests when
 * DDN_TEST_PG_URL is unset (.ci/run sets it when a server answers).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DdnError } from '../../src/base/errors.js';
import type { MailboxStore, NewEntry } from '../../src/cache/mailbox-store.js';
import { migratePg, openPgPool } from '../../src/store/postgres/pool.js';
import { openPgMailboxStore, PG_MAILBOX_MIGRATIONS, PgMailboxStore, type PgMailboxOptions } from '../../src/store/postgres/mailbox-store.js';
import { freshPgSchema, PG_URL } from '../support/pg.js';
import { mailboxContract } from './mailbox-contract.js';
import { DID, entry, NOW, OTHER } from './mailbox-fixtures.js';

const put = (s: MailboxStore, e: NewEntry) => s.put({ entry: e, nowMs: NOW, chunkWindowMs: 3_600_000, claim: null, quotaBytes: null });
const isCode = (code: string) => (e: unknown) => e instanceof DdnError && e.code === code;

/** A trigger that makes every insert into `table` fail with SQLSTATE `state`. */
const failInserts = (table: string, state: string) => `
  CREATE FUNCTION ddn_fail() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'injected failure' USING ERRCODE = '${state}'; END $$;
  CREATE TRIGGER ddn_fail BEFORE INSERT ON ${table} FOR EACH ROW EXECUTE FUNCTION ddn_fail();`;
const healInserts = (table: string) => `DROP TRIGGER ddn_fail ON ${table}; DROP FUNCTION ddn_fail();`;

async function withPg(options: PgMailboxOptions, fn: (store: PgMailboxStore, sql: (q: string) => Promise<void>) => Promise<void>) {
  const db = await freshPgSchema();
  const store = await PgMailboxStore.open(db.pool, options);
  try {
    await fn(store, async (q) => void (await db.pool.query(q)));
  } finally {
    await store.close();
    await db.drop();
  }
}

if (PG_URL) {
  mailboxContract('postgres', async () => {
    const db = await freshPgSchema();
    const stores: MailboxStore[] = [await PgMailboxStore.open(db.pool)];
    return {
      store: stores[0],
      async another() {
        // A second pool on the same schema: its own connections, as another process would have.
        const pool = await openPgPool({ url: db.url, schema: db.schema });
        const s = await PgMailboxStore.open(pool, {}, true);
        stores.push(s);
        return s;
      },
      async close() {
        for (const s of stores) await s.close();
        await db.drop();
      },
    };
  });

  describe('PgMailboxStore specifics', () => {
    it('counts the entries of a mailbox written before migration 3 (metrics), and keeps counting', async () => {
      const db = await freshPgSchema();
      try {
        await migratePg(
          db.pool,
          PG_MAILBOX_MIGRATIONS.filter((m) => m.version <= 2),
          'cache',
        );
        const before = [entry(), entry(), entry({ recipientDid: OTHER })];
        for (const e of before) {
          await db.pool.query(
            `INSERT INTO cache_entries (message_key, message_id, recipient, content_hash, stored_at_ms, expires_at_ms, max_ttl_s, applied_ttl_s, size_bytes, envelope)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
            [
              e.messageId.toLowerCase(),
              e.messageId,
              e.recipientDid,
              e.contentHash,
              e.storedAtMs,
              e.expiresAtMs,
              e.maxTtlSeconds,
              e.appliedTtlSeconds,
              e.sizeBytes,
              e.envelope,
            ],
          );
        }
        const store = await PgMailboxStore.open(db.pool);
        const sizes = (es: readonly NewEntry[]) => es.reduce((n, e) => n + e.sizeBytes, 0);
        assert.deepEqual(await store.usage().then((u) => [u.entries, u.bytes]), [3, sizes(before)]);
        const later = entry();
        await put(store, later);
        await store.ack(DID, [before[0]!.messageId], NOW, { scope: 'proof:ack', did: DID, keyId: `${DID}#k1`, nonce: 'totals', expiresAtMs: NOW + 60_000 });
        assert.deepEqual(await store.usage().then((u) => [u.entries, u.bytes]), [3, sizes([...before.slice(1), later])]);
        await store.close();
      } finally {
        await db.drop();
      }
    });

    it("keeps each recipient's totals exact through batched stores, a sweep over many recipients and acks", () =>
      withPg({}, async (store) => {
        const totals = async () =>
          (
            await store.pool.query<{ recipient: string; bytes: string; entries: string }>(
              'SELECT recipient, bytes, entries FROM cache_recipient_totals ORDER BY recipient',
            )
          ).rows.map((r) => [r.recipient, Number(r.bytes), Number(r.entries)]);
        const actual = async () =>
          (
            await store.pool.query<{ recipient: string; bytes: string; entries: string }>(
              'SELECT recipient, SUM(size_bytes) AS bytes, COUNT(*) AS entries FROM cache_entries GROUP BY recipient ORDER BY recipient',
            )
          ).rows.map((r) => [r.recipient, Number(r.bytes), Number(r.entries)]);
        // stores that arrive together run as one batch (one INSERT of many rows) per recipient
        const soon = Array.from({ length: 12 }, (_, i) => entry({ recipientDid: i % 3 === 0 ? OTHER : DID, expiresAtMs: NOW + 60_000, body: `soon ${i}` }));
        const late = Array.from({ length: 9 }, (_, i) => entry({ recipientDid: i % 2 === 0 ? OTHER : DID, body: `late ${i} ${'x'.repeat(i * 10)}` }));
        await Promise.all([...soon, ...late].map((e) => put(store, e)));
        const sizes = (es: readonly NewEntry[], did: string) => es.filter((e) => e.recipientDid === did).reduce((n, e) => n + e.sizeBytes, 0);
        const count = (es: readonly NewEntry[], did: string) => es.filter((e) => e.recipientDid === did).length;
        const all = [...soon, ...late];
        assert.deepEqual(await totals(), [
          [DID, sizes(all, DID), count(all, DID)],
          [OTHER, sizes(all, OTHER), count(all, OTHER)],
        ]);
        // one DELETE removing expired rows of both recipients
        const swept = await store.sweep(NOW + 120_000);
        assert.equal(swept.expiredEntries, soon.length);
        assert.deepEqual(await totals(), [
          [DID, sizes(late, DID), count(late, DID)],
          [OTHER, sizes(late, OTHER), count(late, OTHER)],
        ]);
        const gone = late.filter((e) => e.recipientDid === DID).slice(0, 2);
        await store.ack(
          DID,
          gone.map((e) => e.messageId),
          NOW,
          { scope: 'proof:ack', did: DID, keyId: `${DID}#k1`, nonce: 'exact', expiresAtMs: NOW + 60_000 },
        );
        assert.deepEqual(await totals(), await actual());
        assert.deepEqual((await totals())[0], [DID, sizes(late, DID) - sizes(gone, DID), count(late, DID) - 2]);
      }));

    it('maps a failing database write to 507 insufficient_storage, writes nothing, and recovers', () =>
      withPg({}, async (store, sql) => {
        await sql(failInserts('cache_entries', '53100')); // disk_full
        const e = entry();
        await assert.rejects(put(store, e), isCode('insufficient_storage'));
        const claim = { scope: 'proof:ack', did: DID, keyId: 'k', nonce: 'n', expiresAtMs: NOW + 1 };
        assert.deepEqual(await store.ack(DID, [e.messageId], NOW, claim), [], 'other tables still commit');
        assert.equal(await store.getMessage(DID, e.messageId, NOW), null);
        await sql(healInserts('cache_entries'));
        assert.equal((await put(store, e)).deduped, false);
      }));

    it('retries a transaction that loses a serialization race, then answers 429 rate_limited', () =>
      withPg({ maxAttempts: 3 }, async (store, sql) => {
        await sql(failInserts('cache_nonces', '40001'));
        const claim = { scope: 'proof:pull', did: DID, keyId: 'k', nonce: 'n', expiresAtMs: NOW + 1 };
        await assert.rejects(store.claimNonce(claim, NOW), isCode('rate_limited'));
        await sql(healInserts('cache_nonces'));
        assert.equal(await store.claimNonce(claim, NOW), true);
      }));

    it('bounds the writes it has in flight (429 rate_limited)', () =>
      withPg({ maxQueuedOps: 2 }, async (store) => {
        const first = [put(store, entry()), put(store, entry())];
        await assert.rejects(put(store, entry()), isCode('rate_limited'));
        await Promise.all(first);
        await put(store, entry());
        assert.equal((await store.listSummary(DID, NOW)).length, 3);
      }));

    it('opens by URL and schema, migrating once, and owns its pool', async () => {
      const db = await freshPgSchema();
      try {
        const a = await openPgMailboxStore(db.url, db.schema);
        const e = entry();
        await put(a, e);
        await a.close();
        const b = await openPgMailboxStore(db.url, db.schema);
        assert.equal((await b.getMessage(DID, e.messageId, NOW))?.meta.messageId, e.messageId);
        await b.close();
        const versions = await db.pool.query("SELECT version FROM schema_migrations WHERE namespace = 'cache' ORDER BY version");
        assert.deepEqual(versions.rows, [
          { version: 1 },
          { version: 2 },
          { version: 3 },
          { version: 4 },
          { version: 5 },
          { version: 6 },
          { version: 7 },
          { version: 8 },
        ]);
      } finally {
        await db.drop();
      }
    });
  });
}
