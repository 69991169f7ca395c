/**
 * Quota leases of the PostgreSQL mailbox (`src/store/postgres/mailbox-leases.ts`, mailbox migration 8): a lane's
 * batches of new stores spend a slice of the recipient's quota without its row lock, and every rule still holds —
 * two store instances (two pools: two Cache processes) on one schema, real PostgreSQL. Registers no tests when
 * DDN_TEST_PG_URL is unset.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DdnError } from '../../src/base/errors.js';
import type { NewEntry } from '../../src/cache/mailbox-store.js';
import { migratePg } from '../../src/store/postgres/pool.js';
import { PG_MAILBOX_MIGRATIONS, PgMailboxStore } from '../../src/store/postgres/mailbox-store.js';
import { LEASE_MS } from '../../src/store/postgres/mailbox-leases.js';
import { putNewInOneTrip } from '../../src/store/postgres/mailbox-one-trip.js';
import { freshPgSchema, PG_URL } from '../support/pg.js';
import { nodeClaim, withTwo, type Sql } from './mailbox-pg-two.js';
import { claimOf, DID, entry, HOUR, NOW, put } from './mailbox-fixtures.js';

const sized = (n: number): NewEntry[] => Array.from({ length: n }, () => entry({ body: JSON.stringify({ message_id: 'x', pad: 'p'.repeat(200) }) }));
const isCode = (code: string) => (e: unknown) => e instanceof DdnError && e.code === code;

/** The recipient's row, what it holds (the view), and its leases' unspent bytes. */
async function books(sql: Sql, did = DID) {
  const [row] = await sql('SELECT bytes, entries FROM cache_recipient_bytes WHERE recipient = $1', [did]);
  const [held] = await sql('SELECT bytes, entries FROM cache_recipient_totals WHERE recipient = $1', [did]);
  const [real] = await sql('SELECT COALESCE(SUM(size_bytes), 0) AS bytes, COUNT(*) AS entries FROM cache_entries WHERE recipient = $1', [did]);
  const [leases] = await sql('SELECT COUNT(*) AS n, COALESCE(SUM(granted - spent), 0) AS unspent FROM cache_quota_leases WHERE recipient = $1', [did]);
  return {
    rowBytes: Number(row?.bytes ?? 0),
    held: [Number(held?.bytes ?? 0), Number(held?.entries ?? 0)],
    real: [Number(real!.bytes), Number(real!.entries)],
    leases: Number(leases!.n),
    unspent: Number(leases!.unspent),
  };
}

if (PG_URL) {
  describe('PgMailboxStore: quota leases', () => {
    it("stores while another transaction holds the recipient's row lock: a lane with a lease never waits for it", () =>
      withTwo(async (a, _b, sql) => {
        const db = a.pool;
        await put(a, entry(), NOW, nodeClaim(), 1_000_000);
        const locker = await db.connect();
        try {
          await locker.query('BEGIN');
          await locker.query('SELECT 1 FROM cache_recipient_bytes WHERE recipient = $1 FOR UPDATE', [DID]);
          const stored = put(a, entry(), NOW, nodeClaim(), 1_000_000).then(() => 'stored');
          const late = new Promise((r) => setTimeout(() => r('waited on the lock'), 5_000).unref());
          assert.equal(await Promise.race([stored, late]), 'stored');
        } finally {
          await locker.query('ROLLBACK');
          locker.release();
        }
        const b = await books(sql);
        assert.deepEqual(b.held, b.real);
        assert.equal(b.rowBytes, b.real[0]! + b.unspent, "the row counts the lease's unspent bytes");
      }));

    it('fills the quota exactly from two processes while the other holds a lease: leases are folded before a refusal', () =>
      withTwo(async (a, b, sql) => {
        const entries = sized(40);
        const size = entries[0]!.sizeBytes;
        const quota = 30 * size;
        // a takes a lease of half the room, and goes quiet
        await put(a, entries[0]!, NOW, nodeClaim(), quota);
        assert.ok((await books(sql)).unspent >= 10 * size, 'a holds a lease');
        // b stores one at a time until refused: every byte of the quota is used, a's lease notwithstanding
        let ok = 1;
        for (const e of entries.slice(1)) {
          try {
            await put(b, e, NOW, nodeClaim(), quota);
            ok++;
          } catch (err) {
            assert.ok(isCode('storage_quota_exceeded')(err), String(err));
          }
        }
        assert.equal(ok, 30, 'exactly the quota stored');
        const after = await books(sql);
        assert.deepEqual(after.held, [quota, 30]);
        assert.deepEqual(after.real, [quota, 30]);
        assert.equal((await a.usage()).bytes, quota);
        // a's next store finds its lease gone and is refused (full) like any other
        await assert.rejects(put(a, entry(), NOW, nodeClaim(), quota), isCode('storage_quota_exceeded'));
      }));

    it('keeps the totals exact and the row at least the entries under concurrent leased stores, acks and a sweep', () =>
      withTwo(async (a, b, sql) => {
        const entries = sized(200);
        await Promise.all(entries.map((e, i) => put(i % 2 === 0 ? a : b, e, NOW, nodeClaim(), 10_000_000)));
        let x = await books(sql);
        assert.deepEqual(x.held, x.real);
        assert.deepEqual(x.real, [entries.reduce((n, e) => n + e.sizeBytes, 0), 200]);
        assert.ok(x.leases >= 2, 'each process holds a lease');
        assert.ok(x.rowBytes >= x.real[0]!, 'a reader of the row alone (an older process) never sees less than the entries');
        const gone = entries.slice(0, 50).map((e) => e.messageId);
        assert.equal((await a.ack(DID, gone, NOW, claimOf('ack-1', { scope: 'proof:ack' }))).length, 50);
        x = await books(sql);
        assert.deepEqual(x.held, x.real);
        assert.equal(x.real[1], 150);
        assert.equal((await b.usage()).entries, 150);
        // the sweep folds the leases once expired (a stopped process's); the row is then the entries exactly
        await a.sweep(NOW + LEASE_MS + 1);
        x = await books(sql);
        assert.equal(x.leases, 0);
        assert.equal(x.rowBytes, x.real[0]);
        assert.deepEqual(x.held, x.real);
        // and stores go on: a new lease
        await put(b, entry(), NOW + LEASE_MS + 2, nodeClaim(), 10_000_000);
        x = await books(sql);
        assert.deepEqual(x.held, x.real);
        assert.equal(x.leases, 1);
      }));

    it('a duplicate id or a replayed nonce in a leased batch is answered by the other paths, the lease unspent by it', () =>
      withTwo(async (a, _b, sql) => {
        const held = entry();
        const used = nodeClaim();
        await put(a, held, NOW, used, 1_000_000);
        const before = await books(sql);
        const results = await Promise.allSettled([
          put(a, held, NOW, nodeClaim(), 1_000_000),
          put(a, entry(), NOW, used, 1_000_000),
          put(a, entry(), NOW, nodeClaim(), 1_000_000),
        ]);
        assert.ok(results[0]!.status === 'fulfilled' && results[0].value.deduped);
        assert.ok(results[1]!.status === 'rejected' && isCode('proof_nonce_replayed')(results[1].reason));
        assert.equal(results[2]!.status, 'fulfilled');
        const after = await books(sql);
        assert.deepEqual(after.held, after.real);
        assert.equal(after.real[1], 2);
        assert.equal(after.unspent, before.unspent, 'the batch the lease path declined spent nothing of it');
      }));

    it('migrates a database that holds entries at migration 7: its totals stand, and stores go on with leases', async () => {
      const db = await freshPgSchema();
      try {
        await migratePg(
          db.pool,
          PG_MAILBOX_MIGRATIONS.filter((m) => m.version <= 7),
          'cache',
        );
        const c = await db.pool.connect();
        const old = sized(5);
        try {
          const req = (e: NewEntry) => ({ entry: e, nowMs: NOW, chunkWindowMs: HOUR, claim: nodeClaim(), quotaBytes: null });
          assert.notEqual(await putNewInOneTrip(c, DID, old.map(req)), null);
        } finally {
          c.release();
        }
        const s = await PgMailboxStore.open(db.pool);
        const sql: Sql = async (q, p) => (await db.pool.query(q, p)).rows as Record<string, unknown>[];
        assert.deepEqual((await books(sql)).held, [old.reduce((n, e) => n + e.sizeBytes, 0), 5]);
        await Promise.all(sized(7).map((e) => put(s, e, NOW, nodeClaim(), 1_000_000)));
        const x = await books(sql);
        assert.deepEqual(x.held, x.real);
        assert.equal(x.real[1], 12);
        assert.equal(x.leases, 1);
        await s.close();
      } finally {
        await db.drop();
      }
    });
  });
}
