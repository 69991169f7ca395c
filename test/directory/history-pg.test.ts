/**
 * History with the ledger on PostgreSQL: two Directory processes share one schema; changes submitted at one
 * are read, with what they changed, from the other's replica, and a deleted DID's history stays readable
 * there, also after that process restarts on a fresh replica. Registers only when DDN_TEST_PG_URL is set.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { DirectoryHarness } from '../support/directory-harness.js';
import { mutate, registerDid } from '../support/directory-flows.js';
import { directoryOn } from '../support/pg-directory.js';
import { eventually, pgLedgerDeployment } from '../support/pg-ledger.js';
import { PG_URL } from '../support/pg.js';

type Body = Record<string, unknown>;

if (PG_URL) {
  describe('history on PostgreSQL', () => {
    it('reads, at another process, what one process wrote; a deleted DID stays readable after a restart', async () => {
      const d = await pgLedgerDeployment();
      const a = await d.start(0, false);
      let b = await d.start(1, false);
      const ha = await directoryOn(a, d.clock);
      let hb = await directoryOn(b, d.clock);
      const settle = async () => {
        while (a.ledger.pendingEntries().length > 0) assert.ok(await a.sync.produceOnce(), 'a leads');
        await eventually([a, b], () => b.ledger.headRef().hash === a.ledger.headRef().hash, 'b follows a');
      };
      try {
        const r = await registerDid(ha, 31, { alias: 'pghist31', pending: true });
        await settle();
        await mutate(ha, r.did, r.key, 'add_device', { device_id: 'tablet' }, { pending: true });
        await settle();
        await mutate(ha, r.did, r.key, 'delete_did', {}, { pending: true });
        await settle();
        const url = `/dids/${encodeURIComponent(r.did)}/history`;
        const read = async (h: DirectoryHarness) => {
          const res = await h.call('GET', url);
          assert.equal(res.status, 200, JSON.stringify(res.body));
          return res.body;
        };
        const atB = await read(hb);
        assert.deepEqual(atB, await read(ha), 'both processes answer the same');
        const list = atB.history as Body[];
        assert.deepEqual(
          list.map((e) => e.action),
          ['delete_did', 'add_device', 'register_did'],
        );
        assert.deepEqual(
          list.map((e) => e.changes && (e.changes as Body).operation),
          ['DeleteDid', 'AddDevice', undefined],
        );
        assert.equal((list[2]!.changes as Body).alias, 'pghist31');
        assert.equal((await hb.call('GET', `/resolve/${encodeURIComponent(r.did)}`)).status, 404);

        const paged = await hb.call('GET', `${url}?limit=2`);
        assert.equal((paged.body.history as Body[]).length, 2);
        const rest = await hb.call('GET', `${url}?limit=2&cursor=${paged.body.next_cursor as string}`);
        assert.deepEqual(rest.body.history, [list[2]]);

        // b restarts on a replica rebuilt from the database: the operations' bytes come from PostgreSQL
        await hb.close();
        await b.close();
        rmSync(join(d.dir, 'replica-1.sqlite'), { force: true });
        for (const suffix of ['-wal', '-shm']) rmSync(join(d.dir, `replica-1.sqlite${suffix}`), { force: true });
        b = await d.start(1, false);
        hb = await directoryOn(b, d.clock);
        await eventually([b], () => b.ledger.headRef().hash === a.ledger.headRef().hash, 'the new replica caught up');
        assert.deepEqual(await read(hb), atB);
      } finally {
        await ha.close();
        await hb.close();
        await a.close();
        await b.close();
        await d.drop();
      }
    });
  });
}
