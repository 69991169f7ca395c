/**
 * A PostgreSQL Directory whose data directory's disk is full: its SQLite replica cannot take the blocks another
 * process made. Its catch-up (a read of its pool, an admission, a refresh) fails and changes nothing — neither its
 * head nor the database's rows —, an admission through it is refused as a storage failure (507), the other
 * processes go on, and once there is room again, or at its next start, it catches up with every block. The full
 * disk is the replica's page limit (`PRAGMA max_page_count`), which SQLite reports as on a real one
 * (`SQLITE_FULL`). That state is logged once when it begins and once when it ends, not at each read, poll or
 * admission that fails on it. Registers only when DDN_TEST_PG_URL is set.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DdnError } from '../../src/base/errors.js';
import { isStorageFailure } from '../../src/base/storage-errors.js';
import { didOf, metaOf, registerCall, seedKey } from '../ledger/harness.js';
import { REPLICA_FULL_MSG, REPLICA_ROOM_MSG } from '../../src/store/postgres/replica-storage.js';
import { captureLogs } from '../support/log-capture.js';
import { pgLedgerDeployment, type PgLedgerProcess } from '../support/pg-ledger.js';
import { PG_URL } from '../support/pg.js';

/** Leaves the replica no page to grow by. */
const fill = (p: PgLedgerProcess) => p.db.pragma(`max_page_count = ${Number(p.db.pragma('page_count', { simple: true }))}`);
const makeRoom = (p: PgLedgerProcess) => p.db.pragma('max_page_count = 1073741823');
const admit = (p: PgLedgerProcess, n: number) => {
  const call = registerCall(didOf(n), seedKey(60 + (n % 10)));
  return p.ledger.admit(call, metaOf(call));
};
/** `count` registrations through `p`, then a block of them. */
async function block(p: PgLedgerProcess, from: number, count = 20): Promise<void> {
  await Promise.all(Array.from({ length: count }, (_, i) => admit(p, from + i)));
  assert.ok(await p.sync.produceOnce(), 'the producer leads');
}

if (PG_URL) {
  describe('ledger on PostgreSQL: a process whose replica disk is full', () => {
    it('fails its catch-up changing nothing, refuses its admissions as a storage failure, and catches up once there is room or at its next start', async () => {
      const d = await pgLedgerDeployment();
      const a = await d.start(0, false);
      let b = await d.start(1, false);
      try {
        await block(a, 1000);
        await b.sync.refresh();
        fill(b);
        const head = b.ledger.headRef();
        for (let k = 0; k < 3; k++) await block(a, 1100 + k * 20);

        await assert.rejects(b.sync.refresh(), isStorageFailure, 'the catch-up fails on the full disk');
        assert.deepEqual(b.ledger.headRef(), head, 'no block half-applied');
        await b.sync.freshPool();
        assert.deepEqual(b.ledger.headRef(), head, 'a read of the pool waits for the failed catch-up, then sees the pool as it is');
        await assert.rejects(admit(b, 1200), (e: unknown) => e instanceof DdnError && e.code === 'insufficient_storage', 'an admission through it: 507');
        await admit(a, 1201); // the other process goes on: nothing of b's admission holds the lock
        const pending = await a.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM ledger_txs WHERE status = 'pending'");
        assert.equal(pending.rows[0]!.n, 1, "only a's admission is pending");

        makeRoom(b);
        await b.sync.refresh();
        assert.deepEqual(b.ledger.headRef(), a.ledger.headRef(), 'caught up once there is room');
        assert.deepEqual(
          b.ledger.pendingEntries().map((e) => e.tx.txHash),
          a.ledger.pendingEntries().map((e) => e.tx.txHash),
        );
        await admit(b, 1202);

        fill(b);
        await block(a, 1300);
        await assert.rejects(b.sync.refresh(), isStorageFailure);
        await b.close();
        b = await d.start(1, false); // a new connection: no page limit, as a disk with room again
        assert.deepEqual(b.ledger.headRef(), a.ledger.headRef(), 'caught up at its next start');
      } finally {
        await a.close();
        await b.close();
        await d.drop();
      }
    });

    it('logs the full replica once when it begins and once when it ends, not at each read, poll or admission', async () => {
      const d = await pgLedgerDeployment();
      const logs = captureLogs('debug');
      const a = await d.start(0, false);
      const b = await d.start(1, false, logs.logger);
      try {
        await block(a, 2000);
        await b.sync.refresh();
        for (let episode = 1; episode <= 2; episode++) {
          fill(b);
          for (let k = 0; k < 2; k++) await block(a, 2100 + episode * 100 + k * 20);
          // reads that ask for a catch-up, admissions, and the poll's catch-ups (every 50 ms here) all fail on it
          for (let i = 0; i < 5; i++) {
            await b.sync.freshPool();
            await assert.rejects(admit(b, 2500 + episode * 10 + i), (e: unknown) => e instanceof DdnError && e.code === 'insufficient_storage');
            await new Promise((r) => setTimeout(r, 60));
          }
          assert.equal(logs.withMsg(REPLICA_FULL_MSG).length, episode, 'one line when the state begins');
          assert.equal(b.sync.replicaOutOfStorage, true, 'the state (ddn_ledger_replica_storage_full)');
          assert.equal(logs.withMsg(REPLICA_ROOM_MSG).length, episode - 1);
          makeRoom(b);
          await b.sync.refresh();
          const ended = logs.withMsg(REPLICA_ROOM_MSG);
          assert.equal(ended.length, episode, 'one line when it ends');
          assert.equal(b.sync.replicaOutOfStorage, false);
          assert.ok(Number(ended.at(-1)!.failed_catch_ups) >= 5, 'the failures meanwhile counted, not logged');
        }
        const begun = logs.withMsg(REPLICA_FULL_MSG);
        assert.ok(
          begun.every((l) => l.level === 40 && (l.err as { code?: string }).code === 'SQLITE_FULL'),
          JSON.stringify(begun),
        );
        for (const msg of ['ledger catch-up failed', 'ledger admission failed', 'block production failed']) assert.deepEqual(logs.withMsg(msg), [], msg);
        assert.deepEqual(b.ledger.headRef(), a.ledger.headRef());
      } finally {
        await a.close();
        await b.close();
        await d.drop();
      }
    });
  });
}
