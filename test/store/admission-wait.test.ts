/** An admission batch's wait for company on a PostgreSQL ledger (`--ledger-admission-wait-ms`): the rule alone. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { arrived, type Arrivals, batchLeft, batchTook, batchWaitMs, MAX_SKIPPED, NO_ARRIVALS } from '../../src/store/postgres/admission-wait.js';

const CAP = 30;
/** The arrivals after admissions at each of `times` (ms), starting from `from`. */
const after = (times: readonly number[], from: Arrivals = NO_ARRIVALS): Arrivals => times.reduce((a, t) => arrived(a, CAP, t), from);
/** Admissions every `gap` ms from 0, `n` of them. */
const steady = (gap: number, n: number) => Array.from({ length: n }, (_, i) => i * gap);
const lone = (atMs: number) => ({ firstAtMs: atMs, lastAtMs: atMs, size: 1 });

describe('batchWaitMs', () => {
  it('waits nothing without a cap, with nothing forming, or with a full batch', () => {
    const a = after(steady(10, 20));
    assert.ok(batchWaitMs(CAP, a, lone(190), 256, 190) > 0, 'a steady 100/s: the batch waits');
    assert.equal(batchWaitMs(0, a, lone(190), 256, 190), 0);
    assert.equal(batchWaitMs(CAP, a, undefined, 256, 190), 0);
    assert.equal(batchWaitMs(CAP, a, { firstAtMs: 150, lastAtMs: 190, size: 256 }, 256, 190), 0);
  });

  it('sends the first admission, and one after a quiet period, at once', () => {
    assert.equal(batchWaitMs(CAP, after([0]), lone(0), 256, 0), 0, 'nothing known of the rate');
    // a steady 100/s, then a second of quiet: the write after it goes at once, however long the cap
    const quiet = after([...steady(10, 50), 1490]);
    assert.equal(batchWaitMs(CAP, quiet, lone(1490), 256, 1490), 0);
    // a gap as long as the cap is a quiet period too
    assert.equal(batchWaitMs(CAP, after([...steady(10, 50), 490 + CAP]), lone(490 + CAP), 256, 490 + CAP), 0);
  });

  it('waits two recent gaps after the last admission that joined, never beyond the cap from the first', () => {
    const a = after(steady(10, 50)); // last at 490, the average gap 10
    assert.equal(batchWaitMs(CAP, a, lone(490), 256, 490), 20);
    assert.equal(batchWaitMs(CAP, a, lone(490), 256, 505), 5);
    assert.equal(batchWaitMs(CAP, a, lone(490), 256, 515), 0);
    // one joined at 500: two gaps after it, but not beyond 490 + 30
    const b = arrived(a, CAP, 500);
    assert.equal(batchWaitMs(CAP, b, { firstAtMs: 490, lastAtMs: 500, size: 2 }, 256, 500), 20);
    assert.equal(batchWaitMs(CAP, b, { firstAtMs: 490, lastAtMs: 515, size: 3 }, 256, 515), 5);
  });

  it('shrinks the wait to the gap under load, and waits nothing for writes rarer than the cap', () => {
    const busy = after(steady(0.5, 200)); // 2,000/s
    assert.equal(batchWaitMs(CAP, busy, lone(99.5), 256, 99.5), 1);
    const rare = after(steady(40, 20)); // 25/s: company not due within 30 ms
    assert.equal(batchWaitMs(CAP, rare, lone(760), 256, 760), 0);
  });

  it('adds no wait when admissions come faster than a batch takes in the database: they fill batches anyway', () => {
    const a = after(steady(1, 100)); // 1,000/s
    assert.equal(batchWaitMs(CAP, a, lone(99), 256, 99), 2, 'batches that take no time: a wait of two gaps');
    assert.equal(batchWaitMs(CAP, batchTook(a, 0.5), lone(99), 256, 99), 2);
    assert.equal(batchWaitMs(CAP, batchTook(a, 3), lone(99), 256, 99), 0, 'batches of 3 ms');
    // batches of 3 ms do not stop the wait at 100/s, and their time is a moving average
    const b = batchTook(after(steady(10, 50)), 3);
    assert.equal(batchWaitMs(CAP, b, lone(490), 256, 490), 20);
    assert.equal(batchTook(b, 13).batchMs, 6);
  });

  it('comes back to waiting a few steady arrivals after a quiet period', () => {
    let a = after([...steady(10, 50), 1490]);
    let t = 1490;
    let n = 0;
    while (batchWaitMs(CAP, a, lone(t), 256, t) === 0) {
      t += 10;
      a = arrived(a, CAP, t);
      n++;
    }
    assert.ok(n >= 2 && n <= 8, `waits again after ${n} arrivals`);
  });
});

describe('batchLeft: the back-off of waits that found no company', () => {
  it('skips 1, 3, 7 … batches after lonely waits in a row, up to the most, and forgets them on company', () => {
    let a = after(steady(10, 20));
    const skipped: number[] = [];
    for (let i = 0; i < 8; i++) {
      assert.ok(batchWaitMs(CAP, a, lone(190), 256, 190) > 0);
      a = batchLeft(a, 1, true);
      let k = 0;
      while (batchWaitMs(CAP, a, lone(190), 256, 190) === 0) {
        a = batchLeft(a, 1, false);
        k++;
      }
      skipped.push(k);
    }
    assert.deepEqual(skipped, [1, 3, 7, 15, 31, MAX_SKIPPED, MAX_SKIPPED, MAX_SKIPPED]);
    a = batchLeft(a, 2, true);
    assert.deepEqual([a.lonelyWaits, a.skip], [0, 0]);
  });

  it('leaves the arrivals as they were after a batch that neither waited nor skipped', () => {
    const a = after(steady(10, 20));
    assert.equal(batchLeft(a, 1, false), a);
  });
});
