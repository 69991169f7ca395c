/**
 * A hot recipient on the PostgreSQL mailbox (issue 39): many concurrent stores into ONE recipient from two store
 * instances on one schema (two pools: two processes), batched per recipient under its row lock. All succeed
 * (no 429), the quota holds exactly, entries appear in store order to a reader polling meanwhile, nonces stay
 * single-use inside and across batches, and a batch that fails at COMMIT answers nothing before it committed.
 * Registers no tests when DDN_TEST_PG_URL is unset.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { DdnError } from '../../src/base/errors.js';
import type { NewEntry, PutRequest, PutResult } from '../../src/cache/mailbox-store.js';
import { PgMailboxStore } from '../../src/store/postgres/mailbox-store.js';
import { putNewInOneTrip } from '../../src/store/postgres/mailbox-one-trip.js';
import { freshPgSchema, PG_URL } from '../support/pg.js';
import { nodeClaim, withTwo } from './mailbox-pg-two.js';
import { claimOf, DID, entry, HOUR, NOW, OTHER, put } from './mailbox-fixtures.js';

const isCode = (code: string) => (e: unknown) => e instanceof DdnError && e.code === code;

/**
 * Every query sent on a connection the store takes from `pool` from now on, in order (the pool's own `query`,
 * which the reads use, takes its connection with a callback and is not recorded).
 */
function recordQueries(pool: pg.Pool): string[] {
  const texts: string[] = [];
  const connect = pool.connect.bind(pool) as (cb?: unknown) => Promise<pg.PoolClient>;
  const wrapped = new WeakSet<pg.PoolClient>();
  (pool as { connect: (cb?: unknown) => Promise<pg.PoolClient> }).connect = async (cb?: unknown) => {
    if (cb !== undefined) return connect(cb);
    const c = await connect();
    if (!wrapped.has(c)) {
      wrapped.add(c);
      const query = c.query.bind(c) as (text: string | { text: string }, ...rest: unknown[]) => Promise<pg.QueryResult>;
      (c as { query: typeof query }).query = (text, ...rest) => {
        texts.push(typeof text === 'string' ? text : text.text);
        return query(text, ...rest);
      };
    }
    return c;
  };
  return texts;
}

/** Fixed-size entries, so a quota counts them. */
const sized = (n: number): NewEntry[] => Array.from({ length: n }, () => entry({ body: JSON.stringify({ message_id: 'x', pad: 'p'.repeat(200) }) }));

if (PG_URL) {
  describe('PgMailboxStore: a hot recipient', () => {
    it('takes 300 concurrent stores into one recipient from two processes: all stored, in store order, none refused', () =>
      withTwo(async (a, b, sql) => {
        const entries = sized(300);
        const seen: string[][] = [];
        let writing = true;
        // a reader polling the recipient's summary meanwhile: every answer keeps every entry the one before showed,
        // in the same order (batches of two lanes or processes commit side by side, so an entry may show up before
        // one that overlapped it in time with a lower seq — a read starts at the first entry, and skips neither)
        const reader = (async () => {
          while (writing) seen.push((await a.listSummary(DID, NOW)).map((m) => m.messageId));
        })();
        const results = await Promise.allSettled(entries.map((e, i) => put(i % 2 === 0 ? a : b, e, NOW, nodeClaim())));
        writing = false;
        await reader;
        const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected').map((r) => String((r.reason as Error).message));
        assert.deepEqual(refused, [], 'every store succeeded');
        assert.ok(results.every((r) => r.status === 'fulfilled' && !r.value.deduped));
        const final = (await b.listSummary(DID, NOW)).map((m) => m.messageId);
        assert.equal(final.length, 300);
        assert.deepEqual(new Set(final), new Set(entries.map((e) => e.messageId)));
        for (const [i, snapshot] of [...seen, final].entries()) {
          const next = [...seen, final][i + 1];
          if (next !== undefined)
            assert.deepEqual(
              next.filter((id) => snapshot.includes(id)),
              snapshot,
              'a later read keeps what an earlier one showed, in order',
            );
        }
        const seqs = await sql('SELECT seq, message_id FROM cache_entries ORDER BY seq');
        assert.deepEqual(
          seqs.map((r) => r.message_id),
          final,
          'store order is seq order, each seq once',
        );
        const [row] = await sql('SELECT bytes, entries FROM cache_recipient_totals WHERE recipient = $1', [DID]);
        assert.deepEqual([Number(row!.bytes), Number(row!.entries)], [entries.reduce((n, e) => n + e.sizeBytes, 0), 300]);
      }));

    it('holds the quota exactly under concurrent stores from two processes; refused stores keep no nonce', () =>
      withTwo(async (a, b) => {
        const entries = sized(120);
        const quota = 50 * entries[0]!.sizeBytes;
        const claims = entries.map(() => nodeClaim());
        const results = await Promise.allSettled(entries.map((e, i) => put(i % 2 === 0 ? a : b, e, NOW, claims[i]!, quota)));
        const ok = results.filter((r) => r.status === 'fulfilled').length;
        assert.equal(ok, 50, 'exactly the quota stored');
        for (const [i, r] of results.entries()) {
          if (r.status === 'rejected') {
            assert.ok(isCode('storage_quota_exceeded')(r.reason), String(r.reason));
            assert.equal(await a.isNonceClaimed(claims[i]!, NOW), false, 'a refused store releases its nonce');
          } else assert.equal(await b.isNonceClaimed(claims[i]!, NOW), true);
        }
        assert.equal((await a.usage()).bytes, quota);
      }));

    it('sends quotes, backslashes and SQL in a recipient or a nonce as plain values in the statements it builds', () =>
      withTwo(async (a, _b, sql) => {
        const hostile = "did:platform:x'); DROP TABLE cache_nonces; --\\'";
        const nonces = ["n'1", 'n\\2', "n''3'); DELETE FROM cache_nonces; --"];
        const claims = nonces.map((n) => claimOf(n, { scope: 'node-request', did: hostile }));
        const results = await Promise.all(claims.map((c) => put(a, entry({ recipientDid: hostile }), NOW, c)));
        assert.equal(results.length, 3);
        const stored = await sql('SELECT did, nonce FROM cache_nonces WHERE did = $1 ORDER BY nonce', [hostile]);
        assert.deepEqual(
          stored.map((r) => r.nonce),
          [...nonces].sort(),
        );
        const bytes = await sql('SELECT entries FROM cache_recipient_totals WHERE recipient = $1', [hostile]);
        assert.equal(Number(bytes[0]!.entries), 3);
        await assert.rejects(put(a, entry({ recipientDid: hostile }), NOW, claims[0]!), isCode('proof_nonce_replayed'));
      }));

    it('keeps a nonce single-use and a message id stored once within a batch and across processes', () =>
      withTwo(async (a, b) => {
        const shared = nodeClaim();
        const same = entry();
        const filler = sized(40);
        // one recipient's batch takes the stores waiting together: the shared nonce and the repeated id among them
        const results = await Promise.allSettled([
          ...filler.map((e, i) => put(i % 2 === 0 ? a : b, e, NOW, nodeClaim())),
          put(a, entry(), NOW, shared),
          put(a, entry(), NOW, shared),
          put(b, entry(), NOW, shared),
          put(a, same),
          put(a, same),
          put(b, same),
        ]);
        const sharedOutcomes = results.slice(40, 43);
        assert.equal(sharedOutcomes.filter((r) => r.status === 'fulfilled').length, 1, 'one store with the shared nonce wins');
        for (const r of sharedOutcomes) if (r.status === 'rejected') assert.ok(isCode('proof_nonce_replayed')(r.reason));
        const sameOutcomes = results.slice(43).map((r) => (r as PromiseFulfilledResult<PutResult>).value);
        assert.equal(sameOutcomes.filter((r) => !r.deduped).length, 1, 'stored once, deduplicated twice');
        assert.equal((await a.listSummary(DID, NOW)).length, 40 + 1 + 1);
      }));

    it('the replay checks of node-signed stores read in one turn are one statement, each answered as if alone', (t) =>
      withTwo(async (a, b) => {
        const held = Array.from({ length: 6 }, () => nodeClaim());
        for (const c of held) assert.equal(await b.claimNonce(c, NOW), true);
        const fresh = Array.from({ length: 6 }, () => nodeClaim());
        const asks: [ReturnType<typeof nodeClaim>, number][] = [
          ...held.map((c): [ReturnType<typeof nodeClaim>, number] => [c, NOW]),
          ...fresh.map((c): [ReturnType<typeof nodeClaim>, number] => [c, NOW]),
          [held[0]!, held[0]!.expiresAtMs], // expired at its expiry
          [{ ...held[1]!, scope: 'proof:pull' }, NOW], // another scope
        ];
        const statements = t.mock.method(a.pool, 'query');
        const got = await Promise.all(asks.map(([c, now]) => a.isNonceClaimed(c, now)));
        assert.equal(statements.mock.callCount(), 1, 'fourteen checks, one statement');
        assert.deepEqual(got, [...held.map(() => true), ...fresh.map(() => false), false, false]);
        assert.equal(await a.isNonceClaimed(held[2]!, NOW), true, 'alone, as before');
      }));

    it("a batch of new plain stores into one recipient is one query once its lane holds a lease: no BEGIN, no COMMIT, no recipient's lock", async () => {
      const db = await freshPgSchema();
      const s = await PgMailboxStore.open(db.pool);
      try {
        const texts = recordQueries(db.pool);
        const first = entry();
        await put(s, first, NOW, nodeClaim());
        assert.deepEqual(
          texts.map((q) => /^SELECT (\w+)\(/.exec(q)?.[1]),
          ['cache_take_lease', 'cache_put_leased'],
        );
        texts.length = 0;
        const claims = sized(20).map(() => nodeClaim());
        const entries = sized(20);
        const results = await Promise.all(entries.map((e, i) => put(s, e, NOW, claims[i]!)));
        assert.equal(results.length, 20);
        assert.equal(texts.length, 1, texts.map((q) => q.slice(0, 40)).join(' | '));
        assert.match(texts[0]!, /^SELECT cache_put_leased\(/);
        entries.unshift(first);
        for (const e of results) assert.equal(e.deduped, false);
        // committed when answered, in store order, with its nonces and the recipient's totals
        const rows = await db.pool.query<{ message_id: string; envelope: Buffer }>('SELECT message_id, envelope FROM cache_entries ORDER BY seq');
        assert.deepEqual(
          rows.rows.map((r) => r.message_id),
          entries.map((e) => e.messageId),
        );
        for (const [i, r] of rows.rows.entries()) assert.deepEqual(new Uint8Array(r.envelope), new Uint8Array(entries[i]!.envelope));
        for (const c of claims) assert.equal(await s.isNonceClaimed(c, NOW), true);
        const [lease] = (await db.pool.query<{ granted: string; spent: string }>('SELECT granted, spent FROM cache_quota_leases')).rows;
        assert.equal(
          Number(lease!.spent),
          entries.reduce((n, e) => n + e.sizeBytes, 0),
          "the lane's lease spent by both batches",
        );
        assert.equal(
          (await s.usage()).bytes,
          entries.reduce((n, e) => n + e.sizeBytes, 0),
        );
      } finally {
        await s.close();
        await db.drop();
      }
    });

    it('plans the one-query batch for each call: a session that began on an empty mailbox does not scan a large one', async () => {
      const db = await freshPgSchema();
      const s = await PgMailboxStore.open(db.pool);
      const c = await db.pool.connect();
      try {
        // no ANALYZE meanwhile (it would invalidate the session's cached plans and hide the case)
        await c.query('ALTER TABLE cache_entries SET (autovacuum_enabled = false)');
        const req = (e: NewEntry): PutRequest => ({ entry: e, nowMs: NOW, chunkWindowMs: HOUR, claim: null, quotaBytes: null });
        // the session's first calls meet an almost empty table (PL/pgSQL may keep a generic plan after five)
        for (let i = 0; i < 8; i++) assert.notEqual(await putNewInOneTrip(c, DID, [req(entry())]), null);
        await c.query(
          `INSERT INTO cache_entries (message_key, message_id, recipient, content_hash, stored_at_ms, expires_at_ms, max_ttl_s,
             applied_ttl_s, size_bytes, envelope)
           SELECT 'm' || i, 'm' || i, $1, 'h', $2, $3, 3600, 3600, 64, '\\x00'::bytea FROM generate_series(1, 20000) i`,
          [OTHER, NOW, NOW + HOUR],
        );
        // this session's scan counters (not yet reported, so they move only with its own statements) around a call
        const scans = async () =>
          (
            await c.query<{ seq: string; idx: string }>(
              `SELECT seq_scan AS seq, idx_scan AS idx FROM pg_stat_xact_user_tables WHERE relid = 'cache_entries'::regclass`,
            )
          ).rows[0]!;
        await c.query('BEGIN');
        const before = await scans();
        assert.notEqual(await putNewInOneTrip(c, DID, [req(entry())]), null);
        const after = await scans();
        await c.query('ROLLBACK');
        assert.equal(Number(after.seq) - Number(before.seq), 0, 'no sequential scan of cache_entries in the call');
        assert.ok(Number(after.idx) > Number(before.idx), 'the held-id check reads the index');
      } finally {
        c.release();
        await s.close();
        await db.drop();
      }
    });

    it('keeps its plans: a session that began on a one-row recipient table does not scan a large one (the batch, the removing trigger)', async () => {
      const db = await freshPgSchema();
      const s = await PgMailboxStore.open(db.pool);
      const c = await db.pool.connect();
      try {
        for (const t of ['cache_entries', 'cache_recipient_bytes']) await c.query(`ALTER TABLE ${t} SET (autovacuum_enabled = false)`);
        const req = (e: NewEntry): PutRequest => ({ entry: e, nowMs: NOW, chunkWindowMs: HOUR, claim: null, quotaBytes: null });
        const stored: NewEntry[] = [];
        const putOne = async () => {
          const e = entry();
          stored.push(e);
          assert.notEqual(await putNewInOneTrip(c, DID, [req(e)]), null);
        };
        const removeOne = () => c.query('DELETE FROM cache_entries WHERE message_key = $1', [stored.shift()!.messageId.toLowerCase()]);
        await putOne();
        // statistics of a one-row table: a plan costed on them reads it sequentially
        await c.query('ANALYZE cache_recipient_bytes');
        // this session's first batches and deletes meet it (PL/pgSQL may keep a generic plan after five)
        for (let i = 0; i < 8; i++) await putOne();
        for (let i = 0; i < 8; i++) await removeOne();
        await c.query(`INSERT INTO cache_recipient_bytes (recipient, bytes, entries) SELECT 'did:r' || i, 0, 0 FROM generate_series(1, 20000) i`);
        const scans = async () =>
          (await c.query<{ seq: string }>(`SELECT seq_scan AS seq FROM pg_stat_xact_user_tables WHERE relid = 'cache_recipient_bytes'::regclass`)).rows[0]!;
        await c.query('BEGIN');
        const before = await scans();
        await putOne();
        await removeOne();
        const after = await scans();
        await c.query('ROLLBACK');
        assert.equal(Number(after.seq) - Number(before.seq), 0, 'no sequential scan of cache_recipient_bytes in the batch or the delete');
        // the totals still follow the entries
        const totals = await c.query<{ bytes: string; entries: string }>('SELECT bytes, entries FROM cache_recipient_totals WHERE recipient = $1', [DID]);
        assert.deepEqual(totals.rows[0], { bytes: String(stored.reduce((n, e) => n + e.sizeBytes, 0)), entries: String(stored.length) });
      } finally {
        c.release();
        await s.close();
        await db.drop();
      }
    });

    it('a batch with an id held, or twice in it, is not taken and writes nothing', async () => {
      const db = await freshPgSchema();
      const s = await PgMailboxStore.open(db.pool);
      const c = await db.pool.connect();
      try {
        const req = (e: NewEntry): PutRequest => ({ entry: e, nowMs: NOW, chunkWindowMs: HOUR, claim: nodeClaim(), quotaBytes: null });
        const held = entry();
        assert.notEqual(await putNewInOneTrip(c, DID, [req(held)]), null);
        const twice = entry();
        const count = async () => (await c.query<{ n: string }>('SELECT count(*) AS n FROM cache_entries')).rows[0]!.n;
        const nonces = async () => (await c.query<{ n: string }>('SELECT count(*) AS n FROM cache_nonces')).rows[0]!.n;
        const [n0, c0] = [await count(), await nonces()];
        assert.equal(await putNewInOneTrip(c, DID, [req(entry()), req(held), req(entry())]), null);
        assert.equal(await putNewInOneTrip(c, DID, [req(twice), req(entry()), req(twice)]), null);
        assert.deepEqual([await count(), await nonces()], [n0, c0]);
        const totals = await c.query<{ entries: string }>('SELECT entries FROM cache_recipient_totals WHERE recipient = $1', [DID]);
        assert.equal(totals.rows[0]!.entries, '1');
      } finally {
        c.release();
        await s.close();
        await db.drop();
      }
    });

    it('a batch the one-query path does not take (a replayed nonce, a held id) runs as before: BEGIN with its claims and lock', async () => {
      const db = await freshPgSchema();
      const s = await PgMailboxStore.open(db.pool);
      try {
        const used = nodeClaim();
        await put(s, entry(), NOW, used);
        const texts = recordQueries(db.pool);
        const results = await Promise.allSettled([put(s, entry(), NOW, used), ...sized(5).map((e) => put(s, e, NOW, nodeClaim()))]);
        assert.ok(results[0]!.status === 'rejected' && isCode('proof_nonce_replayed')(results[0].reason));
        assert.equal(results.filter((r) => r.status === 'fulfilled').length, 5);
        assert.match(texts[0]!, /^SELECT cache_put_leased\(/);
        assert.match(texts[1]!, /^SELECT cache_put_new\(/);
        assert.match(texts[2]!, /^BEGIN[^]*INSERT INTO cache_nonces[^]*cache_recipient_bytes/);
        assert.match(texts.at(-1)!, /^COMMIT/);
        assert.equal((await s.listSummary(DID, NOW)).length, 6);
      } finally {
        await s.close();
        await db.drop();
      }
    });

    it('a session not READ COMMITTED by default: the one-query path declines and the batch runs in its explicit transaction', async () => {
      const db = await freshPgSchema();
      await PgMailboxStore.open(db.pool);
      const pool = new pg.Pool({ connectionString: db.url, options: `-c search_path="${db.schema}" -c default_transaction_isolation=serializable` });
      const s = await PgMailboxStore.open(pool, {}, true);
      try {
        const texts = recordQueries(pool);
        const results = await Promise.all(sized(5).map((e) => put(s, e, NOW, nodeClaim())));
        assert.equal(results.length, 5);
        assert.deepEqual(
          texts.slice(0, 3).map((q) => /^SELECT (\w+)\(/.exec(q)?.[1]),
          ['cache_take_lease', 'cache_put_leased', 'cache_put_new'],
        );
        assert.match(texts[3]!, /^BEGIN ISOLATION LEVEL READ COMMITTED/);
        assert.equal((await s.listSummary(DID, NOW)).length, 5);
      } finally {
        await s.close();
        await db.drop();
      }
    });

    it('a batch whose held id is an expired copy goes store by store: the claims sent with its BEGIN are undone first', () =>
      withTwo(async (a, b) => {
        const old = entry({ messageId: 'again', expiresAtMs: NOW + 1000 });
        await put(a, old, NOW);
        const later = NOW + 2000;
        const claims = [nodeClaim(), nodeClaim(), nodeClaim()];
        // one batch (one turn): a new copy of the expired id among fresh stores, each with its own nonce
        const results = await Promise.all([
          put(a, entry({ messageId: 'again', expiresAtMs: later + HOUR }), later, claims[0]),
          put(a, entry({ expiresAtMs: later + HOUR }), later, claims[1]),
          put(a, entry({ expiresAtMs: later + HOUR }), later, claims[2]),
        ]);
        assert.deepEqual(
          results.map((r) => r.deduped),
          [false, false, false],
          'every store taken, none refused as a replay of its own claim',
        );
        for (const c of claims) assert.equal(await b.isNonceClaimed(c, later), true);
        await assert.rejects(put(b, entry({ expiresAtMs: later + HOUR }), later, claims[1]), isCode('proof_nonce_replayed'));
        assert.equal((await a.listSummary(DID, later)).length, 3);
      }));

    it('answers no store of a batch whose COMMIT fails before it committed, and retries its stores one by one', () =>
      withTwo(async (a, b, sql) => {
        // a constraint trigger checked at COMMIT that fails the transaction holding the poisoned envelope
        await sql(`
          CREATE FUNCTION ddn_poison() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN IF NEW.message_id = 'poison' THEN RAISE EXCEPTION 'injected failure at commit' USING ERRCODE = '53100'; END IF; RETURN NULL; END $$;
          CREATE CONSTRAINT TRIGGER ddn_poison AFTER INSERT ON cache_entries DEFERRABLE INITIALLY DEFERRED
            FOR EACH ROW EXECUTE FUNCTION ddn_poison();`);
        const good = sized(60);
        const poisonClaim = nodeClaim();
        const goodStores: Promise<PutResult>[] = good.map((e, i) => put(i % 2 === 0 ? a : b, e, NOW, nodeClaim()));
        const stores = [...goodStores.slice(0, 30), put(a, entry({ messageId: 'poison' }), NOW, poisonClaim), ...goodStores.slice(30)];
        const results = await Promise.allSettled(stores);
        const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
        assert.equal(failed.length, 1, 'only the poisoned store fails');
        assert.ok(isCode('insufficient_storage')(failed[0]!.reason));
        assert.equal(await a.getMessage(DID, 'poison', NOW), null);
        assert.equal(await b.isNonceClaimed(poisonClaim, NOW), false, 'its nonce was never committed');
        // every store answered as stored is stored (none was answered from a transaction that then rolled back)
        for (const e of good) assert.ok(await b.getMessage(DID, e.messageId, NOW), e.messageId);
        assert.equal((await a.listSummary(DID, NOW)).length, 60);
      }));

    it('refuses nothing for lack of retries when the load is all on one recipient (no serialization failures)', () =>
      withTwo(async (a, b) => {
        // acknowledgements and sweeps of the same recipient while it is being stored into
        const stored: string[] = [];
        const acked = new Set<string>();
        const writes = sized(150).map(async (e, i) => {
          await put(i % 2 === 0 ? a : b, e, NOW, nodeClaim());
          stored.push(e.messageId);
        });
        const others = Array.from({ length: 10 }, async (_, i) => {
          await new Promise((r) => setTimeout(r, i * 5));
          const ids = stored.slice(0, 5);
          for (const id of await (i % 2 === 0 ? a : b).ack(DID, ids, NOW, claimOf(`ack-${i}`, { scope: 'proof:ack' }))) acked.add(id);
          await (i % 2 === 0 ? b : a).sweep(NOW);
        });
        const results = await Promise.allSettled([...writes, ...others]);
        assert.deepEqual(
          results.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason)),
          [],
        );
        const left = (await a.listSummary(DID, NOW)).map((m) => m.messageId);
        assert.deepEqual(new Set(left), new Set(stored.filter((id) => !acked.has(id))), 'exactly the acknowledged entries are gone');
      }));
  });
}
