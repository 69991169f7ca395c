/** KeyedBatches (src/store/postgres/keyed-batches.ts): one key's operations of one event-loop turn run as one batch. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { KeyedBatches, type Settled } from '../../src/store/postgres/keyed-batches.js';

function recording(): { batches: [string, number[]][]; run: (key: string, items: readonly number[]) => Promise<Settled<number>[]> } {
  const batches: [string, number[]][] = [];
  return {
    batches,
    run: async (key, items) => {
      batches.push([key, [...items]]);
      await new Promise((r) => setImmediate(r));
      return items.map((n) => (n < 0 ? { ok: false, error: new Error(`refused ${n}`) } : { ok: true, value: n * 10 }));
    },
  };
}

test('the operations of one turn start as one batch per key; those arriving while it runs join the next', async () => {
  const r = recording();
  const b = new KeyedBatches(r.run, { maxOps: 100, maxBytes: 1000 });
  const first = [1, 2, 3].map((n) => b.submit('a', n, 1));
  const other = b.submit('b', 7, 1);
  await new Promise((res) => setImmediate(res));
  // the first batch of `a` is in its runner now: these wait for the next one
  const later = [4, -5].map((n) => b.submit('a', n, 1));
  assert.deepEqual(await Promise.all(first), [10, 20, 30]);
  assert.equal(await other, 70);
  assert.equal(await later[0], 40);
  await assert.rejects(later[1]!, /refused -5/);
  assert.deepEqual(r.batches, [
    ['a', [1, 2, 3]],
    ['b', [7]],
    ['a', [4, -5]],
  ]);
});

test('a batch stays within its limits (a larger single operation runs alone), and a runner that throws fails its batch', async () => {
  const r = recording();
  const b = new KeyedBatches(r.run, { maxOps: 2, maxBytes: 10 });
  const answers = [b.submit('k', 1, 4), b.submit('k', 2, 4), b.submit('k', 3, 4), b.submit('k', 4, 20)];
  assert.deepEqual(await Promise.all(answers), [10, 20, 30, 40]);
  assert.deepEqual(
    r.batches.map(([, items]) => items),
    [[1, 2], [3], [4]],
  );
  const failing = new KeyedBatches<number, number>(() => Promise.reject(new Error('database gone')), { maxOps: 10, maxBytes: 100 });
  const settled = await Promise.allSettled([failing.submit('k', 1, 1), failing.submit('k', 2, 1)]);
  assert.deepEqual(
    settled.map((s) => s.status),
    ['rejected', 'rejected'],
  );
});
