/**
 * A PostgreSQL ledger whose admissions wait for company (`--ledger-admission-wait-ms`, the cap of an adaptive
 * wait): the first admission and one after a quiet period go at once; admissions at a steady pace (slower than a batch takes
 * in the database) share statements and leave a few of their gaps after the last, not at the cap; a close sends the waiting batch. Registers only
 * when DDN_TEST_PG_URL is set.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { didOf, metaOf, registerCall, seedKey } from '../ledger/harness.js';
import { pgLedgerDeployment, type PgLedgerProcess } from '../support/pg-ledger.js';
import { PG_URL } from '../support/pg.js';

const admit = (p: PgLedgerProcess, i: number) => {
  const call = registerCall(didOf(1200 + i), seedKey(120 + i));
  return p.ledger.admit(call, metaOf(call));
};
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Admissions `from`… `from + n - 1`, `gapMs` apart; their answers. */
const steadily = async (p: PgLedgerProcess, from: number, n: number, gapMs: number) => {
  const answers: Promise<unknown>[] = [];
  for (let i = 0; i < n; i++) {
    answers.push(admit(p, from + i));
    if (i < n - 1) await pause(gapMs);
  }
  return Promise.all(answers);
};

if (PG_URL) {
  // a cap of a minute: a batch that waited out the cap would outlast the test's time
  describe('ledger on PostgreSQL: admissions that wait for company', { timeout: 30_000 }, () => {
    it('stores the first admission at once, then a steady stream a few to a statement, well before the cap', async () => {
      const d = await pgLedgerDeployment({ admissionWaitMs: 60_000 });
      const p = await d.start(0, false);
      try {
        await admit(p, 0);
        assert.deepEqual([p.sync.viewAdmissions.stored, p.sync.admissionWaits.batches], [1, 0], 'nothing known of the rate: no wait');
        await pause(50);
        await steadily(p, 1, 8, 50);
        assert.equal(p.ledger.pendingEntries().length, 9);
        const statements = p.sync.viewAdmissions.stored - 1;
        assert.ok(statements < 8, `the 8 shared statements (${statements})`);
        assert.ok(p.sync.admissionWaits.batches >= 1);
      } finally {
        await p.close();
        await d.drop();
      }
    });

    it('sends an admission after a quiet period longer than the cap at once', async () => {
      const d = await pgLedgerDeployment({ admissionWaitMs: 300 });
      const p = await d.start(0, false);
      try {
        await steadily(p, 0, 6, 50);
        const waits = p.sync.admissionWaits.batches;
        assert.ok(waits >= 1, 'the steady ones waited');
        await pause(1_100);
        await admit(p, 6);
        assert.equal(p.sync.admissionWaits.batches, waits, 'the lone one did not wait');
        assert.equal(p.ledger.pendingEntries().length, 7);
      } finally {
        await p.close();
        await d.drop();
      }
    });

    it('sends a waiting batch when the process closes', async () => {
      const d = await pgLedgerDeployment({ admissionWaitMs: 60_000 });
      const p = await d.start(0, false);
      try {
        await admit(p, 10);
        await pause(100);
        // 100 ms after the last (a batch takes less in the database): this one waits, and the close sends it
        const answer = admit(p, 11);
        await p.close();
        const { duplicate } = (await answer) as { duplicate: boolean };
        assert.equal(duplicate, false);
        assert.equal(p.sync.admissionWaits.batches, 1);
        const again = await d.start(1, false);
        try {
          await again.sync.refresh();
          assert.equal(again.ledger.pendingEntries().length, 2, 'the waiting admission was stored');
        } finally {
          await again.close();
        }
      } finally {
        await p.close();
        await d.drop();
      }
    });
  });
}
