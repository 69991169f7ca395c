/**
 * A PostgreSQL ledger whose admission batches fill (`--ledger-admission-fill-ms`): a batch that follows another
 * waits for the clients the previous one answered, so closed-loop clients share a batch instead of alternating in
 * two half-size ones; a lone client's batch never waits. Registers only when DDN_TEST_PG_URL is set.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { didOf, metaOf, registerCall, seedKey } from '../ledger/harness.js';
import { AdmissionLockHolder, pgLedgerDeployment, type PgLedgerProcess } from '../support/pg-ledger.js';
import { PG_URL } from '../support/pg.js';

const admit = (p: PgLedgerProcess, i: number) => {
  const call = registerCall(didOf(1300 + i), seedKey(130 + i));
  return p.ledger.admit(call, metaOf(call));
};
/** The next turn of the event loop: a client over HTTP comes back no sooner than this after its answer. */
const nextTurn = () => new Promise((r) => setImmediate(r));

/**
 * Two clients (a, b) in one batch held in the database by another session's admission lock, two more (c, d)
 * arriving meanwhile; a and b each send one more admission when answered, a turn later. Statements it took.
 */
async function closedLoop(fillMs: number | undefined): Promise<number> {
  const d = await pgLedgerDeployment(fillMs === undefined ? {} : { admissionFillMs: fillMs });
  const p = await d.start(0, false);
  const holder = await AdmissionLockHolder.open(d.url, d.schema);
  try {
    await holder.take();
    const again = (i: number) =>
      admit(p, i).then(async () => {
        await nextTurn();
        return admit(p, i + 10);
      });
    const first = [again(0), again(1)];
    // a and b's batch waits for the lock in the database
    await holder.waiter();
    const second = [admit(p, 2), admit(p, 3)];
    await holder.release();
    await Promise.all([...first, ...second]);
    assert.equal(p.ledger.pendingEntries().length, 6);
    return p.sync.viewAdmissions.stored;
  } finally {
    await holder.close();
    await p.close();
    await d.drop();
  }
}

if (PG_URL) {
  describe('ledger on PostgreSQL: admission batches that fill', () => {
    it('lets the clients a batch answered join the one that follows it', async () => {
      // a fill far longer than the test: the batch leaves when a and b are back, however slow the machine
      assert.equal(await closedLoop(60_000), 2, '[a b], [c d a′ b′]');
      const without = await closedLoop(undefined);
      assert.ok(without >= 3, `without: [a b], [c d], then a′ and b′ (${without} statements)`);
    });

    it('lets the clients of a batch that held them all come back together', async () => {
      const twoClients = async (fillMs: number | undefined) => {
        const d = await pgLedgerDeployment(fillMs === undefined ? {} : { admissionFillMs: fillMs });
        const p = await d.start(0, false);
        try {
          // a and b in one batch; each sends one more a turn after its answer
          await Promise.all(
            [0, 1].map((i) =>
              admit(p, 40 + i).then(async () => {
                await nextTurn();
                return admit(p, 50 + i);
              }),
            ),
          );
          assert.equal(p.ledger.pendingEntries().length, 4);
          return p.sync.viewAdmissions.stored;
        } finally {
          await p.close();
          await d.drop();
        }
      };
      assert.equal(await twoClients(60_000), 2, '[a b], [a′ b′]');
      assert.equal(await twoClients(undefined), 3, 'without: [a b], [a′], [b′]');
    });

    it("never holds a lone client's batch", async () => {
      const d = await pgLedgerDeployment({ admissionFillMs: 1_000 });
      const p = await d.start(0, false);
      try {
        // its next admission comes back before the batch that answered it is done
        for (let i = 0; i < 3; i++) await admit(p, 20 + i);
        assert.equal(p.sync.viewAdmissions.stored, 3);
        assert.equal(p.sync.admissionFills, 0, 'no batch waited');
      } finally {
        await p.close();
        await d.drop();
      }
    });

    it('sends a filling batch when the process closes', async () => {
      const d = await pgLedgerDeployment({ admissionFillMs: 60_000 });
      const p = await d.start(0, false);
      const holder = await AdmissionLockHolder.open(d.url, d.schema);
      try {
        await holder.take();
        const first = [admit(p, 30), admit(p, 31)];
        await holder.waiter();
        // c waits behind a and b; the batch after theirs fills for three, and a and b do not come back
        const third = admit(p, 32);
        await holder.release();
        await Promise.all(first);
        const closing = p.close();
        await third;
        await closing;
      } finally {
        await holder.close();
        await p.close();
        await d.drop();
      }
    });
  });
}
