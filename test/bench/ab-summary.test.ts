import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { median, medianThreads, summariseAb, threadsPerRequest, type SideRun } from '../../bench/ab-summary.js';

const run = (rate: number, cpuPerRequestUs = 100): SideRun => ({ rate, cpuPerRequestUs });

describe('median', () => {
  it('is the middle value, or the mean of the two middle ones', () => {
    assert.equal(median([3, 1, 2]), 2);
    assert.equal(median([4, 1, 3, 2]), 2.5);
    assert.throws(() => median([]));
  });
});

describe('summariseAb', () => {
  it('judges by the ratio of each round, so a slow minute that hits both sides does not decide', () => {
    // the machine halves its speed in rounds 3–4; B is 10 % faster in every round
    const a = [run(1000), run(1000), run(500), run(500)];
    const b = [run(1100, 90), run(1100, 90), run(550, 90), run(550, 90)];
    const s = summariseAb(a, b);
    assert.deepEqual(s.ratio, { median: 1.1, min: 1.1, max: 1.1 });
    assert.equal(s.bFaster, 4);
    assert.equal(s.rounds, 4);
    assert.equal(s.medianRateA, 750);
    assert.equal(s.medianRateB, 825);
    assert.equal(s.medianCpuUsA, 100);
    assert.equal(s.medianCpuUsB, 90);
  });

  it('counts the rounds B won, and shows the spread of the ratios', () => {
    const s = summariseAb([run(100), run(100), run(100)], [run(90), run(120), run(100)]);
    assert.deepEqual(s.ratio, { median: 1, min: 0.9, max: 1.2 });
    assert.equal(s.bFaster, 1);
  });

  it('refuses sides with different round counts', () => {
    assert.throws(() => summariseAb([run(1)], [run(1), run(2)]), /same/);
    assert.throws(() => summariseAb([], []), /non-zero/);
  });
});

describe('thread CPU per request', () => {
  it('divides a window by its answers, and takes the median of each name over the rounds (absent = 0)', () => {
    assert.deepEqual(threadsPerRequest([{ name: 'main', user_ms: 700, system_ms: 150 }], 10_000), [{ name: 'main', userUs: 70, systemUs: 15 }]);
    const r = (threads: SideRun['threads']): SideRun => ({ rate: 1, cpuPerRequestUs: 1, threads });
    const runs = [
      r([
        { name: 'main', userUs: 70, systemUs: 15 },
        { name: 'ddn-verify', userUs: 60, systemUs: 1 },
      ]),
      r([
        { name: 'main', userUs: 80, systemUs: 13 },
        { name: 'ddn-verify', userUs: 58, systemUs: 1 },
        { name: 'tiny', userUs: 0.2, systemUs: 0 },
      ]),
      r([{ name: 'main', userUs: 74, systemUs: 14 }]),
    ];
    assert.deepEqual(medianThreads(runs), [
      { name: 'main', userUs: 74, systemUs: 14 },
      { name: 'ddn-verify', userUs: 58, systemUs: 1 },
    ]);
    assert.deepEqual(medianThreads([{ rate: 1, cpuPerRequestUs: NaN }]), []);
  });
});
