/**
 * The ledger on PostgreSQL: the contract on two processes sharing one schema, and what only a shared ledger
 * has — one block producer at a time, taken over when it dies or leaves, and a pool shared by every process.
 * Registers only when DDN_TEST_PG_URL is set.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DdnError } from '../../src/base/errors.js';
import { to0x } from '../../src/base/bytes.js';
import { LedgerFailure } from '../../src/ledger/errors.js';
import { encodeExtrinsic, txHashOf, type Call } from '../../src/ledger/extrinsic.js';
import { executeCall } from '../../src/ledger/runtime/dispatch.js';
import { finishTxRows, insertPending, writeBlockRows } from '../../src/store/postgres/ledger-tables.js';
import { endTransaction } from '../../src/store/postgres/ledger-catch-up.js';
import { metaOf, patchCall, registerCall, rootSigner, didOf, seedKey, serviceOf, T0 } from '../ledger/harness.js';
import { AdmissionLockHolder, eventually, loseSession, pgLedgerDeployment, type PgLedgerProcess } from '../support/pg-ledger.js';
import { PG_URL } from '../support/pg.js';
import { ledgerContract, type ContractCluster } from './ledger-contract.js';

if (PG_URL) {
  ledgerContract('PostgreSQL, two processes', async (o = {}) => {
    // Neither process produces on its own, so pending states hold still; `settle` makes the last one produce.
    const d = await pgLedgerDeployment(o.profile === undefined ? {} : { profile: o.profile });
    const open = () => Promise.all([d.start(0, false), d.start(1, false)]);
    let procs: PgLedgerProcess[] = await open();
    const settled = () => procs.every((p) => p.ledger.pendingEntries().length === 0 && p.ledger.headRef().hash === procs[0]!.ledger.headRef().hash);
    const cluster: ContractCluster = {
      get nodes() {
        return procs;
      },
      async settle() {
        const producer = procs[procs.length - 1]!;
        await producer.sync.refresh();
        while (producer.ledger.pendingEntries().length > 0) assert.ok(await producer.sync.produceOnce(), 'the producer leads');
        await eventually(procs, settled, 'every change in a block on every process');
      },
      async sync() {
        for (const p of procs) await p.sync.refresh();
      },
      async restart() {
        for (const p of procs) await p.close();
        procs = await open();
      },
      async close() {
        for (const p of procs) await p.close();
        await d.drop();
      },
    };
    return cluster;
  });

  describe('ledger on PostgreSQL: admissions of several processes at once', () => {
    const admitAll = (p: PgLedgerProcess, calls: Call[]) => Promise.allSettled(calls.map((c) => p.ledger.admit(c, metaOf(c))));
    const refusals = (rs: PromiseSettledResult<unknown>[]) =>
      rs.flatMap((r) => (r.status === 'rejected' ? [r.reason instanceof LedgerFailure ? r.reason.errorName : String(r.reason)] : []));

    it('decides each of many concurrent admissions exactly as one pool would: distinct DIDs, conflicting ones, identical ones', async () => {
      const d = await pgLedgerDeployment();
      const procs = [await d.start(0, false), await d.start(1, false)];
      try {
        const distinct = (base: number) => Array.from({ length: 20 }, (_, i) => registerCall(didOf(base + i), seedKey(60 + (i % 10))));
        // The same DIDs through both processes with different keys: one registration of each wins.
        const contested = Array.from({ length: 5 }, (_, i) => didOf(850 + i));
        const identical = registerCall(didOf(860), seedKey(70));
        const [r0, r1] = await Promise.all([
          admitAll(procs[0]!, [...distinct(800), ...contested.map((did) => registerCall(did, seedKey(71))), identical]),
          admitAll(procs[1]!, [...distinct(820), ...contested.map((did) => registerCall(did, seedKey(72))), identical]),
        ]);
        for (const rs of [r0, r1]) for (const r of rs.slice(0, 20)) assert.equal(r.status, 'fulfilled', String(r.status === 'rejected' ? r.reason : ''));
        const contestedOutcomes = [...r0.slice(20, 25), ...r1.slice(20, 25)];
        assert.equal(contestedOutcomes.filter((r) => r.status === 'fulfilled').length, 5, 'one registration of each contested DID');
        assert.deepEqual(refusals(contestedOutcomes), Array(5).fill('DidAlreadyExists'));
        const same = [r0[25]!, r1[25]!].map((r) => {
          assert.equal(r.status, 'fulfilled');
          return (r as PromiseFulfilledResult<{ txHash: string; duplicate: boolean }>).value;
        });
        assert.equal(same[0]!.txHash, same[1]!.txHash, 'an identical change has one hash');
        assert.deepEqual(same.map((x) => x.duplicate).sort(), [false, true], 'admitted once, a duplicate the other time');

        const pending = await procs[0]!.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM ledger_txs WHERE status = 'pending'");
        assert.equal(pending.rows[0]!.n, 46, 'every admission stored once');
        await procs[1]!.sync.refresh();
        while (procs[1]!.ledger.pendingEntries().length > 0) assert.ok(await procs[1]!.sync.produceOnce());
        await eventually(
          procs,
          () => procs.every((p) => p.ledger.pendingEntries().length === 0 && p.ledger.headRef().hash === procs[1]!.ledger.headRef().hash),
          'all in blocks everywhere',
        );
        const included = await procs[0]!.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM ledger_txs WHERE status = 'included'");
        assert.equal(included.rows[0]!.n, 46, 'every admitted change is included, none fails in its block');
      } finally {
        for (const p of procs) await p.close();
        await d.drop();
      }
    });

    it('works in a schema whose name is as long as PostgreSQL allows (63 characters): the processes hear each other', async () => {
      const d = await pgLedgerDeployment({ schemaLength: 63 });
      const procs = [await d.start(0, false), await d.start(1, false)];
      try {
        // with another process listening, an admission announces its rows on the schema's channel
        const call = registerCall(didOf(870), seedKey(73));
        await procs[0]!.ledger.admit(call, metaOf(call));
        await eventually(procs, () => procs[1]!.ledger.pendingEntries().length === 1, 'the other process heard of the row');
      } finally {
        for (const p of procs) await p.close();
        await d.drop();
      }
    });

    it('keeps the pool size limit exact across processes admitting at once', async () => {
      const d = await pgLedgerDeployment({ maxPoolSize: 6 });
      const procs = [await d.start(0, false), await d.start(1, false)];
      try {
        const calls = (base: number) => Array.from({ length: 5 }, (_, i) => registerCall(didOf(base + i), seedKey(80 + i)));
        const [r0, r1] = await Promise.all([admitAll(procs[0]!, calls(900)), admitAll(procs[1]!, calls(910))]);
        const all = [...r0, ...r1];
        assert.equal(all.filter((r) => r.status === 'fulfilled').length, 6);
        assert.deepEqual(refusals(all), Array(4).fill('PoolFull'));
        const pending = await procs[0]!.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM ledger_txs WHERE status = 'pending'");
        assert.equal(pending.rows[0]!.n, 6);
      } finally {
        for (const p of procs) await p.close();
        await d.drop();
      }
    });

    it("stores with a pending row the digests of the signatures its admission verified; another process's block includes it and clears them", async () => {
      const d = await pgLedgerDeployment();
      const procs = [await d.start(0, false), await d.start(1, false)];
      try {
        const call = registerCall(didOf(960), seedKey(31));
        const { txHash } = await procs[0]!.ledger.admit(call, metaOf(call));
        const row = async () =>
          (await procs[0]!.pool.query<{ status: string; signatures: Buffer | null }>('SELECT status, signatures FROM ledger_txs WHERE tx_hash = $1', [txHash]))
            .rows[0]!;
        const pending = await row();
        assert.equal(pending.status, 'pending');
        assert.ok(pending.signatures !== null && pending.signatures.length > 0 && pending.signatures.length % 32 === 0, 'one digest per verified signature');
        await procs[1]!.sync.refresh();
        assert.equal(procs[1]!.ledger.pendingEntries()[0]?.verified.size, pending.signatures.length / 32, 'the adopting process keeps them');
        assert.ok(await procs[1]!.sync.produceOnce());
        assert.equal(procs[1]!.ledger.txView(txHash)?.tx.status, 'included');
        const finished = await row();
        assert.equal(finished.status, 'included');
        assert.equal(finished.signatures, null);
      } finally {
        for (const p of procs) await p.close();
        await d.drop();
      }
    });

    it('verifies, in the block, the signatures of a pending row stored without digests: a forged one is refused', async () => {
      const d = await pgLedgerDeployment();
      const procs = [await d.start(0, false), await d.start(1, false)];
      try {
        const did = didOf(961);
        const key = seedKey(32);
        const reg = registerCall(did, key);
        await procs[0]!.ledger.admit(reg, metaOf(reg));
        await procs[1]!.sync.refresh();
        assert.ok(await procs[1]!.sync.produceOnce());
        // a row no process admitted (no digests): its signature was never verified
        const forged = patchCall('add_service', did, serviceOf(did, 's'), rootSigner(key), { nonce: 0n, signature: new Uint8Array(64).fill(7) });
        const bytes = encodeExtrinsic(forged);
        const txHash = to0x(txHashOf(bytes));
        await insertPending(procs[0]!.pool, { txHash, extrinsic: forged.name, status: 'pending', submittedAtMs: T0, meta: metaOf(forged), bytes });
        await procs[1]!.sync.refresh();
        assert.equal(procs[1]!.ledger.pendingEntries()[0]?.verified.size, 0, 'adopted with an empty record');
        assert.ok(await procs[1]!.sync.produceOnce());
        const v = procs[1]!.ledger.txView(txHash);
        assert.equal(v?.status, 'failed');
        assert.equal(v?.tx.error?.name, 'InvalidSignature');
      } finally {
        for (const p of procs) await p.close();
        await d.drop();
      }
    });

    it('answers 503 ledger_unavailable to a batch whose connection was killed mid-transaction, drops that connection, and admits the next batch', async () => {
      const d = await pgLedgerDeployment();
      const p = await d.start(0, false);
      // another session holds the admission lock, so the batch's statement waits for it
      const holder = await AdmissionLockHolder.open(d.url, d.schema);
      try {
        let removed = 0;
        p.pool.on('remove', () => removed++);
        await holder.take();
        const batch = admitAll(
          p,
          [900, 901, 902].map((i) => registerCall(didOf(i), seedKey(i - 880))),
        );
        await holder.client.query('SELECT pg_terminate_backend($1)', [await holder.waiter()]);
        await holder.release('ROLLBACK');
        const outcomes = await batch;
        for (const o of outcomes) {
          assert.equal(o.status, 'rejected');
          assert.ok(o.reason instanceof DdnError && o.reason.code === 'ledger_unavailable', String(o.reason));
        }
        // the pool emits `remove` once the broken connection has ended
        for (let i = 0; i < 3000 && removed === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
        assert.equal(removed, 1, 'the broken connection left the pool');
        assert.equal(p.ledger.pendingEntries().length, 0, 'nothing of the failed batch stays in the pool');
        const next = registerCall(didOf(903), seedKey(23));
        const r = await p.ledger.admit(next, metaOf(next));
        assert.equal(r.duplicate, false);
        const stored = await p.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM ledger_txs WHERE status = 'pending'");
        assert.equal(stored.rows[0]!.n, 1, 'only the next admission is stored');
      } finally {
        await holder.close();
        await p.close();
        await d.drop();
      }
    });
  });

  describe('ledger on PostgreSQL: the admission lock', () => {
    it('counts the time an admission batch waited for the lock while another session held it', async () => {
      const d = await pgLedgerDeployment();
      const p = await d.start(0, false);
      const holder = await AdmissionLockHolder.open(d.url, d.schema);
      try {
        assert.deepEqual(p.sync.lockUses.admission, { transactions: 0, waitS: 0, totalS: 0, heldS: 0 });
        await holder.take();
        const call = registerCall(didOf(950), seedKey(30));
        const admitted = p.ledger.admit(call, metaOf(call));
        // the batch is seen waiting for the lock, then the lock is released
        await holder.waiter();
        await holder.release('ROLLBACK');
        assert.equal((await admitted).duplicate, false);
        const use = p.sync.lockUses.admission;
        assert.equal(use.transactions, 1);
        assert.ok(use.waitS > 0, `waited ${use.waitS} s`);
        assert.ok(use.waitS <= use.totalS, `waited ${use.waitS} s of ${use.totalS} s`);
        assert.ok(use.heldS > 0, 'the batch held the lock for its insert and commit');
        assert.deepEqual(p.sync.lockUses.block, { transactions: 0, waitS: 0, totalS: 0, heldS: 0 }, 'no block was made');
        assert.ok(await p.sync.produceOnce());
        assert.equal(p.sync.lockUses.block.transactions, 1);
        assert.ok(p.sync.lockUses.block.heldS > 0);
      } finally {
        await holder.close();
        await p.close();
        await d.drop();
      }
    });
  });

  describe('ledger on PostgreSQL: block production', () => {
    const leaders = (procs: PgLedgerProcess[]) => procs.filter((p) => p.sync.isLeader);

    it("has exactly one producer at a time, also after the producer's connection dies", async () => {
      const d = await pgLedgerDeployment();
      const procs = [await d.start(0), await d.start(1), await d.start(2)];
      try {
        await eventually(procs, () => leaders(procs).length === 1, 'one leader');
        const first = leaders(procs)[0]!;
        const a = registerCall(didOf(701), seedKey(51));
        const viaFollower = procs.find((p) => p !== first)!;
        const ra = await viaFollower.ledger.admit(a, metaOf(a));
        await eventually(procs, () => procs.every((p) => p.ledger.txView(ra.txHash)?.status === 'finalized'), 'a in a block everywhere');

        // Kill the leader's session from outside, as a SIGKILL of its process would end it.
        const pid = (first.sync as unknown as { session: { processID: number } }).session.processID;
        await first.pool.query('SELECT pg_terminate_backend($1)', [pid]);
        // The lock went with the connection; whoever takes it (the old leader reconnecting, or another) is alone.
        await eventually(procs, () => leaders(procs).length === 1, 'one leader again');
        const head = procs[0]!.ledger.headRef().number;
        const b = registerCall(didOf(702), seedKey(52));
        const rb = await first.ledger.admit(b, metaOf(b));
        await eventually(procs, () => procs.every((p) => p.ledger.txView(rb.txHash)?.status === 'finalized'), 'b in a block everywhere');
        assert.ok(procs[0]!.ledger.headRef().number > head, 'blocks continue under the new leader');
        assert.equal(leaders(procs).length, 1);
      } finally {
        for (const p of procs) await p.close();
        await d.drop();
      }
    });

    it('makes a block as soon as another process admits a change when none was made in the last interval', async () => {
      // A minute between blocks: the change is final long before a timer would have made its block.
      const d = await pgLedgerDeployment({ blockIntervalMs: 60_000 });
      const leader = await d.start(0);
      try {
        await eventually([leader], () => leader.sync.isLeader, 'a leads');
        const follower = await d.start(1, false);
        try {
          const call = registerCall(didOf(705), seedKey(55));
          const r = await follower.ledger.admit(call, metaOf(call));
          await eventually([leader, follower], () => follower.ledger.txView(r.txHash)?.status === 'finalized', 'final at the follower');
        } finally {
          await follower.close();
        }
      } finally {
        await leader.close();
        await d.drop();
      }
    });

    it('drops, as failed, pending rows no process can adopt (invalid by now, or undecodable)', async () => {
      const d = await pgLedgerDeployment();
      const procs = [await d.start(0), await d.start(1)];
      try {
        const did = didOf(704);
        const first = registerCall(did, seedKey(54));
        const r = await procs[0]!.ledger.admit(first, metaOf(first));
        await eventually(procs, () => procs.every((p) => p.ledger.txView(r.txHash)?.status === 'finalized'), 'registered');
        // Rows written past the admission checks (as a buggy or older process might): both must leave the pool.
        const again = registerCall(did, seedKey(54), { alias: 'late-comer' });
        const stale = {
          txHash: to0x(txHashOf(encodeExtrinsic(again))),
          extrinsic: again.name,
          status: 'pending' as const,
          submittedAtMs: T0,
          meta: metaOf(again),
          bytes: encodeExtrinsic(again),
        };
        const garbage = { ...stale, txHash: `0x${'ab'.repeat(32)}`, bytes: new Uint8Array([0xff, 0x00, 0x01]) };
        await insertPending(procs[0]!.pool, stale);
        await insertPending(procs[0]!.pool, garbage);
        await eventually(procs, () => procs.every((p) => p.ledger.txView(stale.txHash)?.status === 'failed'), 'the stale row failed');
        for (const p of procs) {
          assert.equal(p.ledger.txView(stale.txHash)?.tx.error?.name, 'DidAlreadyExists');
          assert.equal(p.ledger.txView(garbage.txHash)?.tx.error?.name, 'MalformedExtrinsic');
          assert.equal(p.ledger.pendingEntries().length, 0);
        }
        const left = await procs[0]!.pool.query("SELECT count(*)::int AS n FROM ledger_txs WHERE status = 'pending'");
        assert.equal(left.rows[0].n, 0);
      } finally {
        for (const p of procs) await p.close();
        await d.drop();
      }
    });

    it('rolls a block back whole when it would finish a transaction that is not pending, though its COMMIT was already sent', async () => {
      const d = await pgLedgerDeployment();
      const p = await d.start(0, false);
      const c = await p.pool.connect();
      try {
        const call = registerCall(didOf(706), seedKey(56));
        const { txHash } = await p.ledger.admit(call, metaOf(call));
        const built = p.ledger.buildBlock();
        assert.ok(built);
        const ghost = { ...built.records[0]!, txHash: `0x${'cd'.repeat(32)}` };
        await c.query('BEGIN');
        await writeBlockRows(c, built.block, built.writes, built.records, 'ddn_test_unused');
        const outcome = Promise.all([finishTxRows(c, built.block.header.number, [...built.records, ghost]), endTransaction(c, 'COMMIT')]);
        await assert.rejects(outcome, /block 1 finishes 2 pooled transactions but 1 were pending/);
        const blocks = await p.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM ledger_blocks WHERE number = 1');
        assert.equal(blocks.rows[0]!.n, 0, 'no block');
        const row = await p.pool.query<{ status: string }>('SELECT status FROM ledger_txs WHERE tx_hash = $1', [txHash]);
        assert.equal(row.rows[0]!.status, 'pending', 'the transaction is still pending');
      } finally {
        c.release();
        await p.close();
        await d.drop();
      }
    });

    it("copies a block's extrinsic bytes into a new replica once, also for blocks written before the feed's table kept them", async () => {
      const d = await pgLedgerDeployment();
      const p = await d.start(0, false);
      try {
        const calls = [registerCall(didOf(707), seedKey(57)), registerCall(didOf(708), seedKey(58))];
        await p.ledger.admit(calls[0]!, metaOf(calls[0]!));
        assert.ok(await p.sync.produceOnce());
        await p.ledger.admit(calls[1]!, metaOf(calls[1]!));
        assert.ok(await p.sync.produceOnce());
        // block 1 as an older version wrote it: its bytes only in ledger_txs
        await p.pool.query('DELETE FROM ledger_block_extrinsics WHERE block_number = 1');
        const fresh = await d.start(1, false);
        try {
          for (const [i, call] of calls.entries()) {
            const txs = fresh.ledger.block(i + 1)?.txs ?? [];
            assert.equal(txs.length, 1);
            assert.deepEqual(txs[0]!.bytes, encodeExtrinsic(call), `block ${i + 1}`);
          }
        } finally {
          await fresh.close();
        }
      } finally {
        await p.close();
        await d.drop();
      }
    });

    it("stores in a replica the database's text of each value a block wrote, as it is, not decoded and serialized again", async () => {
      const d = await pgLedgerDeployment();
      const p = await d.start(0, false);
      try {
        const call = registerCall(didOf(709), seedKey(59));
        await p.ledger.admit(call, metaOf(call));
        assert.ok(await p.sync.produceOnce());
        // the same values, spelled otherwise (JSON with indentation): a replica that serialized what it decoded
        // would store the compact text
        const rows = await p.pool.query<{ key: string; value: string }>('SELECT key, value FROM ledger_state WHERE block = 1 AND value IS NOT NULL');
        assert.ok(rows.rows.length > 0);
        const spelled = new Map(rows.rows.map((r) => [r.key, JSON.stringify(JSON.parse(r.value), null, 1)]));
        for (const [key, value] of spelled) await p.pool.query('UPDATE ledger_state SET value = $2 WHERE block = 1 AND key = $1', [key, value]);
        // a process that starts now copies block 1 from the database
        const follower = await d.start(1, false);
        try {
          assert.equal(follower.ledger.headRef().number, 1);
          for (const [key, value] of spelled) {
            const local = follower.db.prepare<[string], { value: string }>('SELECT value FROM ledger_current WHERE key = ?').get(key);
            assert.equal(local?.value, value, key);
          }
          // and what it reads back is the block's values
          for (const key of spelled.keys()) assert.deepEqual(follower.ledger.stateAt(1).get(key), p.ledger.stateAt(1).get(key), key);
        } finally {
          await follower.close();
        }
      } finally {
        await p.close();
        await d.drop();
      }
    });

    it('hands production over when the leader closes, and never produces on a process that does not compete', async () => {
      const d = await pgLedgerDeployment();
      const reader = await d.start(0, false);
      const a = await d.start(1);
      try {
        await eventually([a, reader], () => a.sync.isLeader, 'a leads');
        const b = await d.start(2);
        await a.close();
        await eventually([reader, b], () => b.sync.isLeader, 'b leads after a closed');
        assert.equal(reader.sync.isLeader, false);
        const call = registerCall(didOf(703), seedKey(53));
        const r = await reader.ledger.admit(call, metaOf(call));
        await eventually([reader, b], () => reader.ledger.txView(r.txHash)?.status === 'finalized', 'included by b');
        await b.close();
      } finally {
        await reader.close();
        await d.drop();
      }
    });
  });

  describe('ledger on PostgreSQL: what a write costs one process', () => {
    /** Counts the session's statements (the leader's: block production, notifications). */
    const sessionStatements = (p: PgLedgerProcess) => {
      const session = (p.sync as unknown as { session: { query: (...args: unknown[]) => unknown } }).session;
      const query = session.query.bind(session);
      const seen = { n: 0 };
      session.query = (...args: unknown[]) => {
        seen.n++;
        return query(...args);
      };
      return seen;
    };

    it("runs an admission's call once before storing it: its check on the process's view, signatures included", async () => {
      let runs = 0;
      const d = await pgLedgerDeployment({
        handlers: {
          register_with_proof_v2: (s, ctx, call) => {
            runs++;
            executeCall(s, ctx, call);
          },
        },
      });
      const p = await d.start(0, false);
      try {
        const call = registerCall(didOf(970), seedKey(33));
        const { txHash, duplicate } = await p.ledger.admit(call, metaOf(call));
        assert.equal(duplicate, false);
        assert.equal(runs, 1, 'one run: no dry run before the check that counts');
        assert.equal(p.ledger.pendingEntries()[0]?.verified.size, 1, 'the check verified the signature');
        const row = await p.pool.query<{ signatures: Buffer | null }>('SELECT signatures FROM ledger_txs WHERE tx_hash = $1', [txHash]);
        assert.equal(row.rows[0]!.signatures?.length, 32, "the row carries the signature's digest");
        const bad = registerCall(didOf(971), seedKey(34), { rootPubkey: seedKey(35).publicKey });
        await assert.rejects(p.ledger.admit(bad, metaOf(bad)), (e: unknown) => e instanceof LedgerFailure);
        assert.equal(runs, 2);
      } finally {
        await p.close();
        await d.drop();
      }
    });

    /** The payloads `p`'s notification session receives from now on. */
    const heardBy = (p: PgLedgerProcess) => {
      const session = (p.sync as unknown as { session: { on: (e: 'notification', f: (m: { payload?: string }) => void) => void } }).session;
      const heard: string[] = [];
      session.on('notification', (m) => heard.push(m.payload ?? ''));
      return heard;
    };
    /** Waits for `done` without any catch-up of its own (no refresh, unlike `eventually`): notifications only. */
    const until = async (done: () => boolean, what: string) => {
      for (let i = 0; i < 3000 && !done(); i++) await new Promise((r) => setTimeout(r, 10));
      assert.ok(done(), `never happened: ${what}`);
    };
    const othersListening = (p: PgLedgerProcess) => (p.sync as unknown as { othersListening: boolean }).othersListening;

    it('announces neither its admissions nor its blocks while no other process listens; one that starts to listen hears them at once', async () => {
      // no poll falls due during the test: what b learns, a notification told it
      const d = await pgLedgerDeployment({ pollMs: 600_000 });
      const a = await d.start(0, false);
      try {
        const heardByA = heardBy(a);
        const call = registerCall(didOf(990), seedKey(60));
        await a.ledger.admit(call, metaOf(call));
        assert.ok(await a.sync.produceOnce());
        await a.sync.refresh();
        // the session's next round trip comes after anything already sent to it
        assert.ok(await a.sync.produceOnce());
        assert.equal(heardByA.join(' '), '', 'a alone: nothing announced, nothing came back to it');
        const b = await d.start(1, false);
        try {
          const heardByB = heardBy(b);
          await until(() => othersListening(a), 'a hears that b listens');
          const next = registerCall(didOf(991), seedKey(61));
          const { txHash } = await a.ledger.admit(next, metaOf(next));
          await until(() => heardByB.some((m) => m.startsWith('pending:')), "b hears of a's pending change");
          // b copies it when its pool is read (a Directory route asks so before it reads)
          await b.ledger.freshPool();
          assert.equal(b.ledger.txView(txHash)?.status, 'pending', "b's pool, read, holds a's pending change");
          assert.ok(await a.sync.produceOnce());
          await until(() => b.ledger.txView(txHash)?.status === 'finalized', "b holds a's block");
          assert.ok(
            heardByA.some((m) => m.startsWith('pending:')),
            'announced while b listens (and came back to a too)',
          );
        } finally {
          await b.close();
        }
      } finally {
        await a.close();
        await d.drop();
      }
    });

    it('stops announcing once the last other process stopped listening (its poll looks at who listens)', async () => {
      const d = await pgLedgerDeployment({ pollMs: 20 });
      const a = await d.start(0, false);
      try {
        const b = await d.start(1, false);
        await until(() => othersListening(a) && othersListening(b), 'each knows of the other');
        await b.close();
        await until(() => !othersListening(a), 'a knows it is alone again');
        const heardByA = heardBy(a);
        const call = registerCall(didOf(992), seedKey(62));
        await a.ledger.admit(call, metaOf(call));
        assert.ok(await a.sync.produceOnce());
        assert.ok(await a.sync.produceOnce());
        assert.deepEqual(
          heardByA.filter((m) => !m.startsWith('listening:')),
          [],
          'nothing announced',
        );
      } finally {
        await a.close();
        await d.drop();
      }
    });

    it("copies another process's pending rows when its pool is read or a block comes, not as they are announced; its own rows stored after them join in the database's order", async () => {
      // no poll falls due during the test: every catch-up counted is one a read or a block asked for
      const d = await pgLedgerDeployment({ pollMs: 600_000 });
      const a = await d.start(0, false);
      const b = await d.start(1, false);
      try {
        await Promise.all([a.sync.refresh(), b.sync.refresh()]);
        // a started alone: until b's `listening:` reaches it, a announces nothing (b's poll would find a's rows)
        await until(() => othersListening(a) && othersListening(b), 'each knows of the other');
        const sync = b.sync as unknown as { catchUpWithPool: () => Promise<void> };
        const own = sync.catchUpWithPool.bind(sync);
        let catchUps = 0;
        sync.catchUpWithPool = () => {
          catchUps++;
          return own();
        };
        const heardByB = heardBy(b);
        const admit = async (p: PgLedgerProcess, n: number) => {
          const call = registerCall(didOf(n), seedKey(n - 900));
          return (await p.ledger.admit(call, metaOf(call))).txHash;
        };
        const x = await admit(a, 993);
        await until(() => heardByB.some((m) => m.startsWith('pending:')), "b hears of a's row");
        // b's own admission after a's row it has not copied: stored on b's view (a's row wrote nothing it read)
        const y = await admit(b, 994);
        const z = await admit(a, 995);
        await until(() => heardByB.filter((m) => m.startsWith('pending:')).length >= 3, 'b hears of every row');
        assert.equal(catchUps, 0, 'no catch-up for the announcements, nor for its own rows stored after others');
        assert.deepEqual(
          b.ledger.pendingEntries().map((e) => e.tx.txHash),
          [],
          "b's pool, not read, holds none yet (its own row waits for the rows before it)",
        );
        const read = b.ledger.freshPool();
        assert.ok(read !== undefined, 'a read of the pool waits for a catch-up');
        assert.equal(b.ledger.freshPool(), read, 'reads meanwhile wait for the same one');
        await read;
        assert.equal(catchUps, 1);
        assert.deepEqual(
          b.ledger.pendingEntries().map((e) => e.tx.txHash),
          [x, y, z],
          "b's pool holds every row in the database's order",
        );
        assert.equal(b.ledger.freshPool(), undefined, 'nothing left to copy');
        // a block: copied at once (it announces itself), with the rows pending after it
        const w = await admit(a, 996);
        assert.ok(await a.sync.produceOnce());
        await until(() => b.ledger.txView(w)?.status === 'finalized', "b copies a's block");
        assert.equal(catchUps, 2, "one catch-up: the block's");
      } finally {
        await b.close();
        await a.close();
        await d.drop();
      }
    });

    it('reads back neither its own block nor, once caught up since listening, a catch-up before each block when nothing was announced', async () => {
      // no poll falls due during the test: every catch-up counted is one a notification or a block asked for
      const d = await pgLedgerDeployment({ pollMs: 600_000 });
      const p = await d.start(0, false);
      try {
        let acquired = 0;
        p.pool.on('acquire', () => acquired++);
        const admit = async (n: number) => {
          const call = registerCall(didOf(n), seedKey(n - 940));
          return (await p.ledger.admit(call, metaOf(call))).txHash;
        };
        await admit(980);
        // the first block after the session's LISTEN catches up before it is built
        const statements = sessionStatements(p);
        assert.ok(await p.sync.produceOnce());
        // taking the leader lock and naming the session, the catch-up, then the block's transaction
        assert.equal(statements.n, 8);
        const a = await admit(981);
        // the first poll's looks (other listeners, the producer's address) run on pooled connections as the process
        // starts; on a loaded machine a new connection for one of them can still be opening here
        await until(() => p.pool.idleCount === p.pool.totalCount && p.pool.waitingCount === 0, "the start's queries are done");
        statements.n = 0;
        acquired = 0;
        assert.ok(await p.sync.produceOnce());
        const blockStatements = statements.n;
        // the block's own notification came in before its COMMIT answered: no catch-up is queued for it
        await p.sync.refresh();
        assert.equal(acquired, 1, "only refresh's catch-up took a pooled connection");
        // BEGIN with the pending rows, the block, the lock with the pending rows again, the finished rows, COMMIT
        assert.equal(blockStatements, 5, 'no catch-up before the block: nothing was announced since the last one');
        assert.equal(p.ledger.txView(a)?.status, 'finalized');
      } finally {
        await p.close();
        await d.drop();
      }
    });
  });

  describe('ledger on PostgreSQL: the session of a process', () => {
    /** The sessions (LISTEN, leader lock) of processes on `schema` (application_name `ddn-ledger… <schema> …`). */
    const sessions = async (p: PgLedgerProcess, schema: string) =>
      (
        await p.pool.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name LIKE 'ddn-ledger%' AND application_name LIKE $1",
          [`% ${schema} %`],
        )
      ).rows[0]!.n;

    it('connects one session at a time, and leaves none open once closed, also when closed while connecting', async () => {
      // the poll never falls due here: only produceOnce connects
      const d = await pgLedgerDeployment({ pollMs: 600_000 });
      const p = await d.start(0, false);
      const watcher = await d.start(1, false);
      try {
        assert.equal(await sessions(watcher, d.schema), 2);
        await loseSession(p);
        assert.equal(await sessions(watcher, d.schema), 1);
        // two callers reconnect at once: one session
        await Promise.all([p.sync.produceOnce(), p.sync.produceOnce()]);
        assert.equal(await sessions(watcher, d.schema), 2, 'one session for the two reconnects');
        await loseSession(p);
        // closed while its session connects: the connection is not kept (it would hold the process open)
        const connecting = p.sync.produceOnce().catch(() => false);
        await p.close();
        await connecting;
        assert.equal(await sessions(watcher, d.schema), 1, "only the watcher's session is left");
      } finally {
        await p.close();
        await watcher.close();
        await d.drop();
      }
    });
  });
}
