/**
 * A PostgreSQL ledger whose admissions wait for company (`--ledger-admission-wait-ms`): admissions that arrive
 * within the wait share one statement, a full batch leaves at once, a close sends the waiting batch. Registers
 * only when DDN_TEST_PG_URL is set.
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

if (PG_URL) {
  describe('ledger on PostgreSQL: admissions that wait for company', () => {
    it('stores admissions that arrive within the wait in one statement, and each alone without a wait', async () => {
      // a wait far longer than the pauses between the admissions: the three arrive within it however slow the machine
      const d = await pgLedgerDeployment({ admissionWaitMs: 60_000, maxBatch: 3 });
      const p = await d.start(0, false);
      const plain = await pgLedgerDeployment();
      const q = await plain.start(0, false);
      try {
        const answers: Promise<unknown>[] = [];
        for (let i = 0; i < 3; i++) {
          answers.push(admit(p, i));
          await pause(20);
        }
        // the third filled the batch (maxBatch 3): it left without waiting out the minute
        await Promise.all(answers);
        assert.equal(p.sync.viewAdmissions.stored, 1, 'one statement for the three');
        assert.equal(p.ledger.pendingEntries().length, 3);
        for (let i = 0; i < 3; i++) {
          await admit(q, i);
          await pause(20);
        }
        assert.equal(q.sync.viewAdmissions.stored, 3, 'without a wait, one statement each');
      } finally {
        await p.close();
        await q.close();
        await d.drop();
        await plain.drop();
      }
    });

    it('sends a waiting batch when the process closes', async () => {
      const d = await pgLedgerDeployment({ admissionWaitMs: 60_000 });
      const p = await d.start(0, false);
      try {
        const answer = admit(p, 10);
        await pause(20);
        await p.close();
        const { duplicate } = (await answer) as { duplicate: boolean };
        assert.equal(duplicate, false);
        const again = await d.start(1, false);
        try {
          await again.sync.refresh();
          assert.equal(again.ledger.pendingEntries().length, 1, 'the waiting admission was stored');
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
