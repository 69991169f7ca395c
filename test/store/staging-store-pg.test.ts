/**
 * The RelayStagingStore contract on PostgreSQL (each test on a fresh schema, dropped afterwards), plus what only
 * a shared database has: two processes (separate pools) staging one set and claiming one nonce concurrently.
 * Registered only when DDN_TEST_PG_URL is set.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { type PgRelayStagingStore, openPgRelayStagingStore } from '../../src/store/postgres/relay-staging-store.js';
import type { StageRequest } from '../../src/relay/staging-store.js';
import { successResult, NO_ATTEMPT } from '../../src/relay/delivery-result.js';
import { PG_URL, freshPgSchema } from '../support/pg.js';
import { R, T, isCode, req, stagingContract } from './staging-contract.js';

if (PG_URL) {
  const url = PG_URL;
  stagingContract('postgres', async () => {
    const fresh = await freshPgSchema();
    return {
      open: () => openPgRelayStagingStore(url, fresh.schema),
      dispose: () => fresh.drop(),
    };
  });

  /** Two stores on one fresh schema, each with its own pool: two Relay processes sharing the database. */
  const twoProcesses = async (body: (a: PgRelayStagingStore, b: PgRelayStagingStore, schema: string) => Promise<void>): Promise<void> => {
    const fresh = await freshPgSchema();
    try {
      const [a, b] = await Promise.all([openPgRelayStagingStore(url, fresh.schema), openPgRelayStagingStore(url, fresh.schema)]);
      try {
        assert.notEqual(a.pool, b.pool);
        await body(a, b, fresh.schema);
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    } finally {
      await fresh.drop();
    }
  };

  const roomy: Partial<StageRequest> = { maxBytes: 10_000_000, maxSetsPerRecipient: 1_000 };

  describe('PgRelayStagingStore across processes', () => {
    it('two processes adding the last two chunks of a set concurrently: exactly one observes completion', () =>
      twoProcesses(async (a, b) => {
        const set = { total: 3, to: R, tag: null, applicationId: null, sender: null };
        const groups = Array.from({ length: 12 }, (_, i) => `g${i}`);
        for (const g of groups) await a.stage(req(g, 0, { ...roomy, set }));
        const outcomes = await Promise.all(groups.map((g) => Promise.all([a.stage(req(g, 1, { ...roomy, set })), b.stage(req(g, 2, { ...roomy, set }))])));
        for (const [x, y] of outcomes) {
          assert.deepEqual([x.received, y.received].sort(), [2, 3]);
          assert.equal([x, y].filter((o) => o.complete).length, 1);
        }
        for (const g of groups)
          assert.deepEqual(
            (await b.loadSet(R, g)).map((c) => c.sequence),
            [0, 1, 2],
          );
      }));

    it('two processes creating one set concurrently: both chunks are staged, exactly one completes it', () =>
      twoProcesses(async (a, b) => {
        const groups = Array.from({ length: 12 }, (_, i) => `n${i}`);
        const outcomes = await Promise.all(groups.map((g) => Promise.all([a.stage(req(g, 0, roomy)), b.stage(req(g, 1, roomy))])));
        for (const [x, y] of outcomes) {
          assert.deepEqual([x.received, y.received].sort(), [1, 2]);
          assert.equal([x, y].filter((o) => o.complete).length, 1);
        }
      }));

    it('two processes claiming the same nonce concurrently: exactly one wins', () =>
      twoProcesses(async (a, b) => {
        const claims = Array.from({ length: 20 }, (_, i) => ({ scope: 'node-request', did: R, keyId: `${R}#node`, nonce: `n${i}`, expiresAtMs: T + 300_000 }));
        const wins = await Promise.all(claims.map((c) => Promise.all([a.claimNonce(c, T), b.claimNonce(c, T)])));
        for (const w of wins) assert.equal(w.filter(Boolean).length, 1);
        for (const c of claims) assert.equal(await b.isNonceClaimed(c, T), true);
      }));

    it('capacity is exact across processes: concurrent new sets of one recipient never exceed the limit', () =>
      twoProcesses(async (a, b) => {
        const limits: Partial<StageRequest> = { maxBytes: 10_000_000, maxSetsPerRecipient: 3 };
        const tries = Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? a : b).stage(req(`c${i}`, 0, limits)));
        const settled = await Promise.allSettled(tries);
        assert.equal(settled.filter((r) => r.status === 'fulfilled').length, 3);
        for (const r of settled) if (r.status === 'rejected') assert.ok(isCode('staging_capacity_full')(r.reason));
      }));

    it('a chunk set staged by one process is delivered by the other', () =>
      twoProcesses(async (a, b) => {
        await a.stage(req('g', 0));
        assert.equal((await b.stage(req('g', 1))).complete, true);
        const chunks = await a.loadSet(R, 'g');
        await a.finishSet(R, 'g', chunks, successResult('chunk_set_delivered', 'direct', 'ok', NO_ATTEMPT), T);
        assert.equal((await b.findResult('g-1', T))?.contentHash, 'hash-g-1');
        assert.deepEqual(await b.loadSet(R, 'g'), []);
        await b.stage(req('x', 0));
        await b.stage(req('y', 0)); // fits only because a's delivery released the bytes of g
      }));
  });

  describe('PgRelayStagingStore per-send statements', () => {
    it('the findPrior reads and the saveResult upserts of one turn are one statement each (concurrent sends share it)', async (t) => {
      const fresh = await freshPgSchema();
      const s = await openPgRelayStagingStore(url, fresh.schema);
      try {
        const ok = successResult('cached', 'cache_fallback', 'ok', NO_ATTEMPT);
        const statements = t.mock.method(s.pool, 'query');
        await Promise.all(Array.from({ length: 20 }, (_, i) => s.saveResult(`m${i}`, `h${i}`, R, ok, T)));
        assert.equal(statements.mock.callCount(), 1, 'twenty results, one upsert');
        statements.mock.resetCalls();
        const found = await Promise.all(Array.from({ length: 20 }, (_, i) => s.findPrior(`m${i}`, T, true)));
        assert.equal(statements.mock.callCount(), 1, 'twenty reads, one statement');
        assert.deepEqual(
          found.map((f) => f.result?.contentHash),
          Array.from({ length: 20 }, (_, i) => `h${i}`),
        );
      } finally {
        await s.close();
        await fresh.drop();
      }
    });
  });

  describe('PgRelayStagingStore per-send statements: plans and commits', () => {
    it('the replay checks of one turn are one statement, each answered as if alone', async (t) => {
      const fresh = await freshPgSchema();
      const s = await openPgRelayStagingStore(url, fresh.schema);
      try {
        const claim = (n: number) => ({ scope: 'node-request', did: 'did:platform:4444444444444444', keyId: 'k1', nonce: `n${n}`, expiresAtMs: T + 1000 });
        for (let i = 0; i < 5; i++) assert.equal(await s.claimNonce(claim(i), T), true);
        const statements = t.mock.method(s.pool, 'query');
        const got = await Promise.all([
          ...Array.from({ length: 10 }, (_, i) => s.isNonceClaimed(claim(i), T)),
          s.isNonceClaimed(claim(0), T + 1000),
          s.isNonceClaimed({ ...claim(1), scope: 'proof:get' }, T),
        ]);
        assert.equal(statements.mock.callCount(), 1, 'twelve checks, one statement');
        assert.deepEqual(got, [true, true, true, true, true, false, false, false, false, false, false, false]);
      } finally {
        await s.close();
        await fresh.drop();
      }
    });

    it('a remembered result commits without waiting for its WAL flush; the durable writes on that connection still wait', async () => {
      const fresh = await freshPgSchema();
      // one connection: the results' upsert and the set's finishing write run on the same session
      const s = await openPgRelayStagingStore(url, fresh.schema, { max: 1 });
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      try {
        const q = (sql: string) => admin.query(`SET search_path TO "${fresh.schema}"; ${sql}`);
        await q(`CREATE TABLE seen (message_key TEXT, sync TEXT);
                 CREATE FUNCTION note_sync() RETURNS trigger LANGUAGE plpgsql AS $$
                   BEGIN INSERT INTO seen VALUES (NEW.message_key, current_setting('synchronous_commit')); RETURN NEW; END $$;
                 CREATE TRIGGER results_sync BEFORE INSERT ON relay_results FOR EACH ROW EXECUTE FUNCTION note_sync()`);
        const ok = successResult('cached', 'cache_fallback', 'ok', NO_ATTEMPT);
        await Promise.all([s.saveResult('m1', 'h1', R, ok, T), s.saveResult('m2', 'h2', R, ok, T)]);
        await s.stage(req('g', 0, { set: { total: 1, to: R, tag: null, applicationId: null, sender: null } }));
        const chunks = await s.loadSet(R, 'g');
        await s.finishSet(R, 'g', chunks, ok, T);
        await s.saveResult('m3', 'h3', R, ok, T);
        const rows = (await q('SELECT message_key, sync FROM seen ORDER BY message_key')) as unknown as pg.QueryResult[];
        assert.deepEqual(
          rows[1]!.rows.map((r: { message_key: string; sync: string }) => `${r.message_key}:${r.sync}`),
          [`${chunks[0]!.messageKey}:on`, 'm1:off', 'm2:off', 'm3:off'].sort(),
        );
        assert.equal((await s.findPrior('m2', T, true)).result?.contentHash, 'h2', 'visible once saved');
        assert.equal(
          (await s.pool.query<{ s: string }>("SELECT current_setting('synchronous_commit') AS s")).rows[0]!.s,
          'on',
          'the session keeps its setting',
        );
      } finally {
        await admin.end();
        await s.close();
        await fresh.drop();
      }
    });

    it('the results upsert is prepared once per connection, not parsed per batch; the findPrior read is planned per call', async () => {
      const fresh = await freshPgSchema();
      const s = await openPgRelayStagingStore(url, fresh.schema, { max: 1 });
      try {
        const ok = successResult('cached', 'cache_fallback', 'ok', NO_ATTEMPT);
        for (let round = 0; round < 8; round++) {
          const keys = Array.from({ length: 1 + (round % 4) }, (_, i) => `r${round}-${i}`);
          await Promise.all(keys.map((k) => s.findPrior(k, T, true)));
          await Promise.all(keys.map((k) => s.saveResult(k, `h-${k}`, R, ok, T)));
        }
        const r = await s.pool.query<{ name: string }>("SELECT name FROM pg_prepared_statements WHERE name LIKE 'ddn_relay_%' ORDER BY name");
        assert.deepEqual(
          r.rows.map((x) => x.name),
          ['ddn_relay_save_results'],
        );
      } finally {
        await s.close();
        await fresh.drop();
      }
    });
  });

  describe('PgRelayStagingStore failures', () => {
    it('a failed durable write is 507 staging_persist_failed (stage) / insufficient_storage (other writes), and the next write succeeds', async () => {
      const fresh = await freshPgSchema();
      const s = await openPgRelayStagingStore(url, fresh.schema);
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      try {
        const q = (sql: string) => admin.query(`SET search_path TO "${fresh.schema}"; ${sql}`);
        await q(`CREATE FUNCTION full_disk() RETURNS trigger LANGUAGE plpgsql AS $$
                   BEGIN RAISE EXCEPTION 'no space left' USING ERRCODE = 'disk_full'; END $$`);
        await q('CREATE TRIGGER chunks_full BEFORE INSERT ON relay_chunks FOR EACH ROW EXECUTE FUNCTION full_disk()');
        await q('CREATE TRIGGER results_full BEFORE INSERT ON relay_results FOR EACH ROW EXECUTE FUNCTION full_disk()');
        await assert.rejects(s.stage(req('g', 0)), isCode('staging_persist_failed'));
        await assert.rejects(s.saveResult('m', 'h', R, successResult('cached', 'cache_fallback', 'ok', NO_ATTEMPT), T), isCode('insufficient_storage'));
        assert.deepEqual(await s.loadSet(R, 'g'), [], 'the failed stage left nothing behind');
        await q('DROP TRIGGER chunks_full ON relay_chunks; DROP TRIGGER results_full ON relay_results');
        assert.equal((await s.stage(req('g', 0))).received, 1);
        await s.stage(req('h', 0));
        await assert.rejects(s.stage(req('i', 0, { maxSetsPerRecipient: 10 })), isCode('staging_capacity_full'), 'the failed stage added no bytes');
      } finally {
        await admin.end();
        await s.close();
        await fresh.drop();
      }
    });
  });
}
