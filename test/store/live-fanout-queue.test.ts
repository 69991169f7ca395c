/**
 * The queue of announcements a Relay process receives from the others (`src/store/postgres/live-fanout.ts`): while
 * the read of a large envelope's row does not answer, the announcements behind it wait, at most `maxQueued`; later
 * ones are dropped and counted, and those that waited are pushed in order once the read answers. Real PostgreSQL;
 * registers no tests when DDN_TEST_PG_URL is unset.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PgLiveFanout } from '../../src/store/postgres/live-fanout.js';
import { RecordingSessions } from '../support/live.js';
import { freshPgSchema, PG_URL } from '../support/pg.js';

const until = async (done: () => boolean): Promise<void> => {
  while (!done()) await new Promise((res) => setTimeout(res, 10));
};

if (PG_URL) {
  describe('PgLiveFanout: announcements waiting to be handled', () => {
    it('holds at most its bound behind a read that does not answer; later ones are dropped and counted', { timeout: 60_000 }, async (t) => {
      const pg = await freshPgSchema();
      const did = 'did:platform:1234';
      const f1 = await PgLiveFanout.open({ url: pg.url, schema: pg.schema, pool: pg.pool });
      const f2 = await PgLiveFanout.open({ url: pg.url, schema: pg.schema, pool: pg.pool, maxQueued: 3 });
      try {
        const s2 = new RecordingSessions(did);
        f2.attach(s2);
        await until(() => f1.announcing);
        // f2's read of a large body waits until released (a database that does not answer it)
        let release!: () => void;
        const held = new Promise<void>((res) => (release = res));
        const query = pg.pool.query.bind(pg.pool) as (...args: unknown[]) => Promise<unknown>;
        t.mock.method(pg.pool, 'query', async (...args: unknown[]) => {
          if (typeof args[0] === 'string' && args[0].startsWith('SELECT body FROM relay_live_bodies')) await held;
          return query(...args);
        });
        const large = JSON.stringify({ to: did, payload: 'x'.repeat(9000) });
        await f1.push(did, large);
        const small = Array.from({ length: 8 }, (_, i) => JSON.stringify({ to: did, i }));
        for (const text of small) await f1.push(did, text);
        // the large one waits for its read, two more wait behind it, the other six are dropped
        await until(() => f2.droppedAnnouncements === 6);
        assert.deepEqual(s2.texts, []);
        release();
        await until(() => s2.pushed.length === 3);
        assert.deepEqual(s2.texts, [large, small[0], small[1]]);
        // room again: the next announcement is pushed
        const later = JSON.stringify({ to: did, later: true });
        await f1.push(did, later);
        await until(() => s2.pushed.length === 4);
        assert.equal(s2.texts[3], later);
        assert.equal(f2.droppedAnnouncements, 6);
      } finally {
        await f1.close();
        await f2.close();
        await pg.drop();
      }
    });
  });
}
