/** The readings beside the Directory write figures (bench/figures/write-bounds.ts, bench/proc.ts). */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { parseLockMetrics } from '../../bench/figures/write-bounds.js';
import { cpuMsBetween, cpuMsByName, runQueueMs } from '../../bench/proc.js';

describe('parseLockMetrics', () => {
  it("reads each lock counter by work and the view batches by outcome from a node's /metrics text, and zero for a series not there yet", () => {
    const text = [
      '# HELP ddn_ledger_lock_wait_seconds_total Seconds ...',
      '# TYPE ddn_ledger_lock_wait_seconds_total counter',
      'ddn_ledger_lock_wait_seconds_total{work="admission"} 1.5',
      'ddn_ledger_lock_wait_seconds_total{work="block"} 0',
      'ddn_ledger_lock_transactions_total{work="admission"} 40',
      'ddn_ledger_lock_held_seconds_total{work="admission"} 2.25',
      'ddn_ledger_lock_transaction_seconds_total{work="admission"} 4',
      'ddn_ledger_view_batches_total{outcome="stored"} 36',
      'ddn_ledger_view_batches_total{outcome="conflict"} 3',
      'ddn_ledger_blocks_total 7',
    ].join('\n');
    assert.deepEqual(parseLockMetrics(text), {
      admission: { transactions: 40, waitS: 1.5, totalS: 4, heldS: 2.25 },
      block: { transactions: 0, waitS: 0, totalS: 0, heldS: 0 },
      view: { stored: 36, stale: 0, conflict: 3, full: 0 },
    });
  });
});

describe('CPU readings from /proc', () => {
  it('counts a process that started in between whole and leaves out one that ended', () => {
    const before = new Map([
      [1, 100],
      [2, 50],
    ]);
    const after = new Map([
      [1, 130],
      [3, 20],
    ]);
    assert.equal(cpuMsBetween(before, after), 50);
  });

  it('finds this very process by its name and reads its run-queue wait', () => {
    const name = readFileSync(`/proc/${process.pid}/comm`, 'utf8').trim();
    assert.ok(cpuMsByName(name).has(process.pid), `process ${process.pid} named ${name}`);
    assert.ok(runQueueMs([process.pid]) >= 0);
    assert.equal(runQueueMs([-1]), 0, 'a process that is not there counts nothing');
  });
});
