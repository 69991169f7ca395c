import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Figure } from '../../bench/context.js';
import { medianRuns, runRatio } from '../../bench/repeats.js';

function paired(id: string, value: number, before: number, after: number): Figure {
  return { id, title: id, value, unit: 'req/s', reference: 'hello_world_rps', target: { op: '>=', ratio: 0.6 }, paired: { before, after } };
}

describe('runRatio', () => {
  it('divides by the mean of the reference beside the run, or by the figure’s own reference value', () => {
    assert.equal(runRatio(paired('resolve', 60, 90, 110)), 0.6);
    assert.equal(runRatio({ id: 'growth', title: 'g', value: 90, unit: 'req/s', reference: 'empty_store', referenceValue: 100 }), 0.9);
  });

  it('has none for an unavailable figure or one without a reference of its own', () => {
    assert.equal(runRatio({ ...paired('resolve', 60, 90, 110), value: null }), null);
    assert.equal(runRatio({ id: 'store1m', title: 's', value: 150, unit: 'MiB/s' }), null);
  });
});

describe('medianRuns', () => {
  it('reports the run with the median ratio, not the median value, with every run beside it', () => {
    // the third run has a fast minute: its value is the median value, its ratio the lowest
    const runs = [[paired('resolve', 50, 100, 100)], [paired('resolve', 70, 100, 100)], [paired('resolve', 64, 150, 170)]];
    const [f] = medianRuns(runs);
    assert.equal(f.value, 50);
    assert.deepEqual(f.repeats, { values: [50, 70, 64], ratios: [0.5, 0.7, 0.4] });
  });

  it('takes the lower middle of an even count, per figure of a measurement that yields several', () => {
    const run = (summary: number, pull: number) => [paired('summary', summary, 100, 100), paired('pull', pull, 100, 100)];
    const [summary, pull] = medianRuns([run(40, 30), run(60, 20), run(50, 35), run(45, 25)]);
    assert.equal(summary.value, 45);
    assert.equal(pull.value, 25);
  });

  it('orders figures without a ratio by value, and leaves a single run as it is', () => {
    const info = (v: number): Figure => ({ id: 'store1m', title: 's', value: v, unit: 'MiB/s' });
    assert.equal(medianRuns([[info(3)], [info(1)], [info(2)]])[0].value, 2);
    const single = [paired('resolve', 60, 100, 100)];
    assert.deepEqual(medianRuns([single]), single);
  });

  it('refuses runs that list different figures', () => {
    assert.throws(() => medianRuns([[paired('a', 1, 1, 1)], [paired('b', 1, 1, 1)]]), /disagree/);
  });
});
