/**
 * Admissions checked on a process's own view of the shared pool (src/store/postgres/ledger-admission.ts): stored
 * in one statement when no newer block and no newer row that wrote what the checks read exists, else decided
 * again under the admission lock. Each test makes a view fall behind on purpose — the process's notification
 * session is cut and it polls once a minute — so that another process's rows arrive unseen.
 * Registers only when DDN_TEST_PG_URL is set.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { to0x } from '../../src/base/bytes.js';
import { LedgerFailure } from '../../src/ledger/errors.js';
import { encodeExtrinsic, txHashOf, type Call } from '../../src/ledger/extrinsic.js';
import { finishTxRows, insertPending, writeBlockRows } from '../../src/store/postgres/ledger-tables.js';
import { aliasCall, didOf, metaOf, registerCall, rootSigner, seedKey, T0 } from '../ledger/harness.js';
import { AdmissionLockHolder, loseSession, pgLedgerDeployment, type PgLedgerProcess } from '../support/pg-ledger.js';
import { PG_URL } from '../support/pg.js';

const admit = (p: PgLedgerProcess, call: Call) => p.ledger.admit(call, metaOf(call));

/** A pending row as another process stores it, without the checks (and, as older versions, without keys). */
function rowOf(call: Call) {
  const bytes = encodeExtrinsic(call);
  return { txHash: to0x(txHashOf(bytes)), extrinsic: call.name, status: 'pending' as const, submittedAtMs: T0, meta: metaOf(call), bytes };
}

async function refusal(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (e) {
    return e instanceof LedgerFailure ? e.errorName : String(e);
  }
  return 'admitted';
}

async function pendingCount(p: PgLedgerProcess): Promise<number> {
  const r = await p.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM ledger_txs WHERE status = 'pending'");
  return r.rows[0]!.n;
}

if (PG_URL) {
  describe('ledger on PostgreSQL: admissions checked on a view that fell behind', () => {
    /** Two processes that produce only when told, both deaf to each other's notifications. */
    async function deaf(): Promise<{ a: PgLedgerProcess; b: PgLedgerProcess; url: string; schema: string; done: () => Promise<void> }> {
      const d = await pgLedgerDeployment({ pollMs: 60_000 });
      const a = await d.start(0, false);
      const b = await d.start(1, false);
      await loseSession(a);
      await loseSession(b);
      return {
        a,
        b,
        url: d.url,
        schema: d.schema,
        async done() {
          await a.close();
          await b.close();
          await d.drop();
        },
      };
    }

    it("stores a change no unseen row touches at once, and the pool takes it after the other process's row", async () => {
      const { a, b, done } = await deaf();
      try {
        const x = registerCall(didOf(1001), seedKey(41));
        const y = registerCall(didOf(1002), seedKey(42));
        const rx = await admit(a, x);
        const ry = await admit(b, y);
        assert.equal(ry.duplicate, false);
        assert.deepEqual(b.sync.viewAdmissions, { stored: 1, stale: 0, conflict: 0, full: 0 }, 'stored on the view, without the turn under the lock');
        assert.deepEqual(
          b.ledger.pendingEntries().map((e) => e.tx.txHash),
          [],
          'a row stored after an unseen one waits for the catch-up',
        );
        await b.sync.refresh();
        assert.deepEqual(
          b.ledger.pendingEntries().map((e) => e.tx.txHash),
          [rx.txHash, ry.txHash],
          'in the order the database holds them',
        );
        assert.ok(await b.sync.produceOnce());
        assert.equal(b.ledger.txView(rx.txHash)?.status, 'finalized');
        assert.equal(b.ledger.txView(ry.txHash)?.status, 'finalized');
      } finally {
        await done();
      }
    });

    it('takes its own change stored after an unseen row from the block when a block includes both first', async () => {
      const { a, b, done } = await deaf();
      try {
        const rx = await admit(a, registerCall(didOf(1014), seedKey(54)));
        const ry = await admit(b, registerCall(didOf(1015), seedKey(55)));
        assert.ok(await a.sync.produceOnce(), 'a makes a block of both');
        await b.sync.refresh();
        assert.equal(b.ledger.pendingEntries().length, 0);
        for (const h of [rx.txHash, ry.txHash]) assert.equal(b.ledger.txView(h)?.status, 'finalized');
        // and b's next change, to the DID it registered, sees its registration
        const next = await admit(b, aliasCall(didOf(1015), { kind: 'add', alias: 'after-block' }, rootSigner(seedKey(55))));
        assert.equal(next.duplicate, false);
      } finally {
        await done();
      }
    });

    it('refuses on a fresh view what an unseen row makes invalid: one alias for two DIDs', async () => {
      const { a, b, done } = await deaf();
      try {
        const [kx, ky] = [seedKey(43), seedKey(44)];
        const [x, y] = [didOf(1003), didOf(1004)];
        await admit(a, registerCall(x, kx));
        await admit(a, registerCall(y, ky));
        assert.ok(await a.sync.produceOnce());
        await b.sync.refresh();
        const first = await admit(a, aliasCall(x, { kind: 'add', alias: 'shared' }, rootSigner(kx)));
        assert.equal(first.duplicate, false);
        // b's view has no pending alias: alone, its checks would accept the second claim
        const second = admit(b, aliasCall(y, { kind: 'add', alias: 'shared' }, rootSigner(ky)));
        assert.equal(await refusal(second), 'AliasTaken');
        assert.equal(b.sync.viewAdmissions.conflict, 1, 'the unseen row wrote what the view read');
        assert.equal(await pendingCount(a), 1, 'only the first claim is stored');
      } finally {
        await done();
      }
    });

    it('admits on a fresh view what its old view would have refused: a change to a DID registered unseen', async () => {
      const { a, b, done } = await deaf();
      try {
        const k = seedKey(45);
        const x = didOf(1005);
        await admit(a, registerCall(x, k));
        const alias = await admit(b, aliasCall(x, { kind: 'add', alias: 'later' }, rootSigner(k)));
        assert.equal(alias.duplicate, false);
        assert.equal(b.sync.viewAdmissions.conflict, 1, 'the refusal on the view was not answered');
        assert.equal(await pendingCount(b), 2);
      } finally {
        await done();
      }
    });

    it('decides again on a fresh view when a block or a row without keys came after its view', async () => {
      const { a, b, done } = await deaf();
      try {
        await admit(a, registerCall(didOf(1006), seedKey(46)));
        assert.ok(await a.sync.produceOnce());
        await admit(b, registerCall(didOf(1007), seedKey(47)));
        assert.deepEqual(b.sync.viewAdmissions, { stored: 1, stale: 1, conflict: 0, full: 0 }, 'a block after the view, then stored on the fresh one');

        // a row as a process of an earlier version stores it: no conflict keys, so it may have written anything
        await insertPending(a.pool, rowOf(registerCall(didOf(1008), seedKey(48))));
        await admit(b, registerCall(didOf(1009), seedKey(49)));
        assert.deepEqual(b.sync.viewAdmissions, { stored: 2, stale: 1, conflict: 1, full: 0 }, 'a row without keys may have written anything');
        assert.equal(await pendingCount(b), 3);
      } finally {
        await done();
      }
    });

    it('takes the turn under the lock when its fresh view is behind again', async () => {
      const { b, url, schema, done } = await deaf();
      // another session stores rows under the admission lock while b's statements wait for it
      const holder = await AdmissionLockHolder.open(url, schema);
      try {
        await holder.take();
        await insertPending(holder.client, rowOf(registerCall(didOf(1011), seedKey(51))));
        const admitted = admit(b, registerCall(didOf(1012), seedKey(52)));
        await holder.waiter();
        // the first statement finds the first row; the lock is taken again before b's fresh view is stored
        await holder.commitAndTake();
        await insertPending(holder.client, rowOf(registerCall(didOf(1013), seedKey(53))));
        await holder.waiter();
        await holder.release();
        assert.equal((await admitted).duplicate, false);
        assert.deepEqual(b.sync.viewAdmissions, { stored: 0, stale: 0, conflict: 2, full: 0 }, 'both views were behind');
        assert.equal(b.ledger.pendingEntries().length, 3, 'the turn under the lock caught up with both rows');
        assert.equal(await pendingCount(b), 3);
      } finally {
        await holder.close();
        await done();
      }
    });

    it('a read right after a 202 whose rows could not join the pool copies them first', async () => {
      const { b, url, schema, done } = await deaf();
      const holder = await AdmissionLockHolder.open(url, schema);
      // the pool changes between the turn under the lock and the join (a block of this process, say): the join fails once
      const join = b.ledger.joinBatch.bind(b.ledger);
      let refuse = true;
      b.ledger.joinBatch = (batch) => {
        if (!refuse) return join(batch);
        refuse = false;
        return false;
      };
      try {
        // as above: both views behind, so the admission takes the turn under the lock
        await holder.take();
        await insertPending(holder.client, rowOf(registerCall(didOf(1021), seedKey(61))));
        const call = registerCall(didOf(1022), seedKey(62));
        const admitted = admit(b, call);
        await holder.waiter();
        await holder.commitAndTake();
        await insertPending(holder.client, rowOf(registerCall(didOf(1023), seedKey(63))));
        await holder.waiter();
        await holder.release();
        const { txHash } = await admitted;
        assert.equal(refuse, false, 'the join was refused');
        assert.equal(b.ledger.txView(txHash), undefined, 'answered before its row joined the pool');
        // what every Directory read route does first (routes.ts onFreshPool)
        const fresh = b.ledger.freshPool();
        assert.notEqual(fresh, undefined, 'a read waits for a catch-up');
        await fresh;
        assert.equal(b.ledger.txView(txHash)?.status, 'pending', 'the read shows the change its 202 was for');
      } finally {
        await holder.close();
        await done();
      }
    });

    it('answers a duplicate seen on the view only once the view is confirmed', async () => {
      const { a, b, done } = await deaf();
      try {
        const x = registerCall(didOf(1010), seedKey(50));
        const first = await admit(b, x);
        // the same change again through the same process: its view holds it; through the other: its view does not
        assert.deepEqual(await admit(b, x), { txHash: first.txHash, duplicate: true });
        assert.deepEqual(await admit(a, x), { txHash: first.txHash, duplicate: true });
        assert.equal(a.sync.viewAdmissions.conflict, 1, "the other process's view missed it, and its fresh view found it");
        assert.equal(await pendingCount(a), 1);
      } finally {
        await done();
      }
    });

    it('counts a row announced before a catch-up as heard when a block finished it before this process saw it pending', async () => {
      const { a, b, done } = await deaf();
      try {
        const rx = await admit(a, registerCall(didOf(1301), seedKey(71)));
        const seq = Number((await a.pool.query<{ seq: string }>('SELECT max(seq)::text AS seq FROM ledger_txs')).rows[0]!.seq);
        // b hears of the row (its session's notification, `pending:<seq>`), but a's block finishes it before b reads it
        const heard = b.sync as unknown as { notifiedPending: number; announcedUnseen(): boolean };
        heard.notifiedPending = seq;
        assert.ok(await a.sync.produceOnce());
        await b.sync.refresh();
        assert.equal(b.ledger.txView(rx.txHash)?.status, 'finalized', 'the block came with the catch-up, the row never pending at b');
        assert.equal(heard.announcedUnseen(), false, 'nothing announced is left unseen: the next block of b would not catch up first');
      } finally {
        await done();
      }
    });

    it('finds a transaction whose block commits between the reads of a catch-up: pending, or in the block', async () => {
      const { a, b, url, schema, done } = await deaf();
      const holder = await AdmissionLockHolder.open(url, schema);
      try {
        const rx = await admit(a, registerCall(didOf(1311), seedKey(72)));
        const built = a.ledger.buildBlock();
        assert.ok(built);
        // a block finishing the row, held back from committing while b's catch-up has read the blocks and waits
        // to read the state writes
        await holder.client.query('BEGIN; LOCK TABLE ledger_state IN ACCESS EXCLUSIVE MODE');
        await writeBlockRows(holder.client, built.block, built.writes, built.records, undefined);
        await finishTxRows(holder.client, built.block.header.number, built.records);
        const catchUp = b.sync.refresh();
        await holder.waiter();
        await holder.release();
        await catchUp;
        assert.equal(b.ledger.txView(rx.txHash)?.status, 'pending', 'the catch-up read one snapshot: the row still pending');
        await b.sync.refresh();
        assert.equal(b.ledger.txView(rx.txHash)?.status, 'finalized', 'the next catch-up reads the block');
      } finally {
        await holder.close();
        await done();
      }
    });
  });
}
