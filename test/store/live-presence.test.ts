/**
 * Which Relay process holds sessions of which DID (`src/store/postgres/live-presence.ts`), and asking the processes
 * that hold one to push an envelope for a recipient with no Cache service (`PgLiveFanout.pushElsewhere`): their
 * answers summed, nobody asked without a holder, a holder that does not answer waited for at most the ask's wait,
 * the asks in flight bounded. Real PostgreSQL; registers no tests when DDN_TEST_PG_URL is unset.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NO_REACH } from '../../src/relay/live-sessions.js';
import { PgLiveFanout, type PgLiveFanoutOptions } from '../../src/store/postgres/live-fanout.js';
import { ALIVE_MS, FORGET_MS, PgLivePresence } from '../../src/store/postgres/live-presence.js';
import { RecordingSessions } from '../support/live.js';
import { freshPgSchema, PG_URL } from '../support/pg.js';
import { waitFor } from '../support/wait.js';

const A = 'did:platform:1111';
const B = 'did:platform:2222';

type Pg = Awaited<ReturnType<typeof freshPgSchema>>;

/** The DIDs the presence table lists for `processId`, sorted. */
async function rowsOf(pg: Pg, processId: string): Promise<string[]> {
  const r = await pg.pool.query<{ did: string }>('SELECT did FROM relay_live_presence WHERE process_id = $1 ORDER BY did', [processId]);
  return r.rows.map((row) => row.did);
}

/** Two fan-outs on one fresh schema, each with its recorded sessions, both listening to each other. */
async function twoProcesses(o: Partial<PgLiveFanoutOptions> = {}) {
  const pg = await freshPgSchema();
  const f1 = await PgLiveFanout.open({ url: pg.url, schema: pg.schema, pool: pg.pool, ...o });
  const f2 = await PgLiveFanout.open({ url: pg.url, schema: pg.schema, pool: pg.pool, ...o });
  const s1 = new RecordingSessions();
  const s2 = new RecordingSessions();
  f1.attach(s1);
  f2.attach(s2);
  await waitFor('each process hears the other', async () => (f1.announcing && f2.announcing ? true : undefined));
  return {
    pg,
    f1,
    f2,
    s1,
    s2,
    async close() {
      await f1.close();
      await f2.close();
      await pg.drop();
    },
  };
}

if (PG_URL) {
  describe('PgLivePresence: who holds live sessions of a DID', () => {
    it('writes the DIDs whose first session opened and removes those whose last one went; a process is not its own holder', async () => {
      const { pg, f1, f2, s2, close } = await twoProcesses();
      try {
        s2.set(A, true);
        s2.set(B, true);
        await f2.presence.settled();
        assert.deepEqual(await rowsOf(pg, f2.processId), [A, B]);
        assert.deepEqual(await f1.presence.holders(A), [f2.processId]);
        assert.deepEqual(await f2.presence.holders(A), [], 'not its own holder');
        s2.set(A, false);
        // closed and opened again before the write: written as it stands then
        s2.set(B, false);
        s2.set(B, true);
        await f2.presence.settled();
        assert.deepEqual(await rowsOf(pg, f2.processId), [B]);
        assert.deepEqual(await f1.presence.holders(A), []);
      } finally {
        await close();
      }
    });

    it('a process not seen lately is not a holder, one long gone is swept, and one that finds itself swept writes its DIDs again', async () => {
      const { pg, f1, f2, s2, close } = await twoProcesses();
      try {
        s2.set(A, true);
        await f2.presence.settled();
        const age = (ms: number) =>
          pg.pool.query(`UPDATE relay_live_processes SET seen_at = now() - make_interval(secs => $1) WHERE process_id = $2`, [ms / 1000, f2.processId]);
        await age(ALIVE_MS + 1_000);
        assert.deepEqual(await f1.presence.holders(A), [], 'its listener stopped beating: it would not answer');
        assert.equal(await f1.presence.sweep(), 0, 'not yet forgotten');
        await age(FORGET_MS + 1_000);
        assert.equal(await f1.presence.sweep(), 1, 'its row of A');
        assert.deepEqual(await rowsOf(pg, f2.processId), []);
        // its next beat finds its own row gone: it writes its sessions' DIDs again
        await f2.presence.beat(pg.pool);
        await waitFor('the DIDs written again', async () => ((await rowsOf(pg, f2.processId)).length === 1 ? true : undefined));
        assert.deepEqual(await f1.presence.holders(A), [f2.processId]);
        // rows of a process without its own row are swept too
        await pg.pool.query(`INSERT INTO relay_live_presence (did, process_id) VALUES ($1, 'nobody')`, [B]);
        assert.equal(await f1.presence.sweep(), 1);
      } finally {
        await close();
      }
    });

    it('a failed write is tried again with what changed since; beyond its bound the next write rewrites every DID', async (t) => {
      const pg = await freshPgSchema();
      const f = await PgLiveFanout.open({ url: pg.url, schema: pg.schema, pool: pg.pool });
      const p = new PgLivePresence(pg.pool, 'p1', { maxChanged: 2 });
      try {
        const s = new RecordingSessions();
        p.attach(s);
        s.watch((did) => p.change(did));
        const query = pg.pool.query.bind(pg.pool) as (...args: unknown[]) => Promise<unknown>;
        let fail = 1;
        const calls = t.mock.method(pg.pool, 'query', async (...args: unknown[]) => {
          if (typeof args[0] === 'string' && args[0].includes('INSERT INTO relay_live_presence') && fail-- > 0) throw new Error('the database is away');
          return query(...args);
        });
        s.set(A, true);
        await p.settled();
        assert.deepEqual(await rowsOf(pg, 'p1'), [], 'the first write failed');
        s.set(B, true);
        await waitFor('written after the retry', async () => ((await rowsOf(pg, 'p1')).length === 2 ? true : undefined));
        assert.deepEqual(await rowsOf(pg, 'p1'), [A, B]);
        const before = calls.mock.callCount();
        // more DIDs changed than the bound: one rewrite of the process's rows, as its sessions stand
        await pg.pool.query(`INSERT INTO relay_live_presence (did, process_id) VALUES ('did:platform:stale', 'p1')`);
        s.set(A, false);
        s.set(B, false);
        s.set('did:platform:3333', true);
        await p.settled();
        assert.equal(calls.mock.callCount() - before, 2, 'the INSERT above, then one write');
        assert.deepEqual(await rowsOf(pg, 'p1'), ['did:platform:3333']);
        await p.close();
        assert.deepEqual(await rowsOf(pg, 'p1'), [], 'a process that leaves removes its rows');
      } finally {
        await f.close();
        await pg.drop();
      }
    });
  });

  describe('PgLiveFanout.pushElsewhere: asking the processes that hold a session', () => {
    it("pushes to the holder's sessions, small and large, and resolves with what it reached", async () => {
      const { pg, f1, s1, s2, close } = await twoProcesses();
      try {
        s2.set(A, true);
        await waitFor('f2 listed as a holder', async () => ((await f1.presence.holders(A)).length === 1 ? true : undefined));
        const small = JSON.stringify({ to: A, n: 1 });
        assert.deepEqual(await f1.pushElsewhere(A, small), { sessions: 1, authenticated: 1 });
        const large = JSON.stringify({ to: A, payload: 'x'.repeat(9_000) });
        assert.deepEqual(await f1.pushElsewhere(A, large), { sessions: 1, authenticated: 1 });
        assert.deepEqual(s2.texts, [small, large]);
        assert.deepEqual(s1.texts, []);
        assert.equal(f1.askCounts.reached, 2);
        // an answer that is not JSON (another program on the channel) is ignored; the next ask is answered
        await pg.pool.query('SELECT pg_notify($1, $2)', [f1.channel, '{"k":not json']);
        assert.deepEqual(await f1.pushElsewhere(A, small), { sessions: 1, authenticated: 1 });
        assert.equal(f1.askCounts.reached, 3);
        s2.pushed.splice(2);
        // a DID nobody holds: nobody is asked
        assert.deepEqual(await f1.pushElsewhere(B, JSON.stringify({ to: B })), NO_REACH);
        assert.equal(f1.askCounts.none, 1);
        // the holder's session went: it is no longer listed, or (read before its row went) answers that it reached none
        s2.set(A, false);
        assert.deepEqual(await f1.pushElsewhere(A, small), NO_REACH);
        assert.deepEqual(s2.texts, [small, large]);
      } finally {
        await close();
      }
    });

    it('a holder that does not answer is waited for until the wait ends; what the others reached still counts', async () => {
      const { pg, f1, s2, close } = await twoProcesses({ askWaitMs: 300 });
      try {
        s2.set(A, true);
        // a process listed as alive that never answers (its listener is not on the channel)
        await pg.pool.query(`INSERT INTO relay_live_processes (process_id, seen_at) VALUES ('silent', now())`);
        await pg.pool.query(`INSERT INTO relay_live_presence (did, process_id) VALUES ($1, 'silent')`, [A]);
        await waitFor('both listed', async () => ((await f1.presence.holders(A)).length === 2 ? true : undefined));
        assert.deepEqual(await f1.pushElsewhere(A, '{"late":1}'), { sessions: 1, authenticated: 1 });
        assert.equal(f1.askCounts.late, 1);
        assert.deepEqual(s2.texts, ['{"late":1}']);
      } finally {
        await close();
      }
    });

    it('asks beyond the bound in flight ask nobody; a process alone asks nobody', async () => {
      const { pg, f1, f2, s2, close } = await twoProcesses({ askWaitMs: 60_000, maxOpenAsks: 1 });
      try {
        s2.set(A, true);
        await pg.pool.query(`INSERT INTO relay_live_processes (process_id, seen_at) VALUES ('silent', now())`);
        await pg.pool.query(`INSERT INTO relay_live_presence (did, process_id) VALUES ($1, 'silent')`, [A]);
        await waitFor('both listed', async () => ((await f1.presence.holders(A)).length === 2 ? true : undefined));
        // waits for the silent process's answer
        const open = f1.pushElsewhere(A, '{"first":1}');
        await s2.received(1);
        assert.deepEqual(await f1.pushElsewhere(A, '{"second":1}'), NO_REACH);
        assert.equal(f1.askCounts.failed, 1);
        assert.deepEqual(s2.texts, ['{"first":1}']);
        // closing ends the open ask, with what was answered by then (f2's answer may still be on its way)
        await f1.close();
        assert.ok((await open).sessions <= 1);
        assert.equal(f1.askCounts.late, 1);
        await f2.look();
        assert.equal(f2.announcing, false);
        assert.deepEqual(await f2.pushElsewhere(A, '{"alone":1}'), NO_REACH, 'no other process listens');
      } finally {
        await close();
      }
    });
  });
}
