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

test('with two lanes a key runs two batches at once, each told its lane, never more; a lane freed is taken again', async () => {
  const running: number[] = [];
  let most = 0;
  const release: (() => void)[] = [];
  const seen: [number, number[]][] = [];
  const b = new KeyedBatches<number, number>(
    async (_key, items, lane) => {
      assert.ok(!running.includes(lane), `lane ${lane} runs one batch at a time`);
      running.push(lane);
      most = Math.max(most, running.length);
      seen.push([lane, [...items]]);
      await new Promise<void>((r) => release.push(r));
      running.splice(running.indexOf(lane), 1);
      return items.map((n) => ({ ok: true, value: n }));
    },
    { maxOps: 100, maxBytes: 1000, lanes: 2 },
  );
  const tick = () => new Promise((r) => setImmediate(r));
  const first = [1, 2].map((n) => b.submit('k', n, 1));
  await tick();
  const second = [3, 4].map((n) => b.submit('k', n, 1));
  await tick();
  // both lanes busy: these wait for one of them
  const third = [5, 6].map((n) => b.submit('k', n, 1));
  await tick();
  assert.deepEqual(seen, [
    [0, [1, 2]],
    [1, [3, 4]],
  ]);
  release.shift()!();
  assert.deepEqual(await Promise.all(first), [1, 2]);
  await tick();
  assert.deepEqual(seen.at(-1), [0, [5, 6]], 'the freed lane takes what waited');
  for (const r of release.splice(0)) r();
  await tick();
  for (const r of release.splice(0)) r();
  assert.deepEqual(await Promise.all([...second, ...third]), [3, 4, 5, 6]);
  assert.equal(most, 2);
});

/** A runner whose batches end when the test says so, recording each batch's items. */
function held(): { seen: number[][]; release: (() => void)[]; run: (key: string, items: readonly number[]) => Promise<Settled<number>[]> } {
  const seen: number[][] = [];
  const release: (() => void)[] = [];
  return {
    seen,
    release,
    run: async (_key, items) => {
      seen.push([...items]);
      await new Promise<void>((r) => release.push(r));
      return items.map((n) => ({ ok: true, value: n }));
    },
  };
}

/** Two callers answered by a batch while two others waited: they come back, as a client answered sends its next. */
async function comeBack(fillMs: number | undefined, returning: number[], fillOps?: number): Promise<number[][]> {
  const r = held();
  const b = new KeyedBatches(r.run, {
    maxOps: 100,
    maxBytes: 1000,
    ...(fillMs === undefined ? {} : { fillMs }),
    ...(fillOps === undefined ? {} : { fillOps }),
  });
  const tick = () => new Promise((res) => setImmediate(res));
  const first = [1, 2].map((n) => b.submit('k', n, 1));
  await tick();
  const waited = [3, 4].map((n) => b.submit('k', n, 1));
  await tick();
  r.release.shift()!();
  await Promise.all(first);
  const back = returning.map((n) => b.submit('k', n, 1));
  while (r.seen.length < 2) await tick();
  for (;;) {
    for (const f of r.release.splice(0)) f();
    const settled = await Promise.race([Promise.all([...waited, ...back]).then(() => true), tick().then(() => false)]);
    if (settled) break;
  }
  return r.seen;
}

test('fill: a batch after another waits for the callers that batch answered, so they share one batch', async () => {
  // without it the callers split into two alternating batches of half the size
  assert.deepEqual(await comeBack(undefined, [5, 6]), [
    [1, 2],
    [3, 4],
    [5, 6],
  ]);
  assert.deepEqual(await comeBack(10_000, [5, 6]), [
    [1, 2],
    [3, 4, 5, 6],
  ]);
});

test('fill: a caller that does not come back holds the next batch no longer than the fill time', async () => {
  // one of the two answered callers is gone: the batch starts at the fill time with those there (no timing is asserted)
  assert.deepEqual(await comeBack(5, [5]), [
    [1, 2],
    [3, 4, 5],
  ]);
});

test('fill: a batch already as large as fillOps does not wait', async () => {
  // two waiting reach fillOps: the batch starts without the answered callers, as it would without fill
  assert.deepEqual(await comeBack(10_000, [5, 6], 2), [
    [1, 2],
    [3, 4],
    [5, 6],
  ]);
});

/** Runs `steps` against a fill of `fillMs` (a runner that waits for release), releasing batches until `done`. */
async function driven(
  fillMs: number,
  steps: (b: KeyedBatches<number, number>, batchesSeen: (n: number) => Promise<void>) => Promise<Promise<number>[]>,
): Promise<number[][]> {
  const r = held();
  const b = new KeyedBatches(r.run, { maxOps: 100, maxBytes: 1000, fillMs });
  const tick = () => new Promise((res) => setImmediate(res));
  let done = false;
  const releasing = (async () => {
    while (!done) {
      for (const f of r.release.splice(0)) f();
      await tick();
    }
  })();
  const seen = async (n: number) => {
    while (r.seen.length < n) await tick();
  };
  await Promise.all(await steps(b, seen));
  done = true;
  await releasing;
  return r.seen;
}

test('fill: the callers of a batch that left none waiting come back to one batch, one turn apart', async () => {
  // without it the key's queue ended with the batch: the first caller back started a batch of its own
  const tick = () => new Promise((res) => setImmediate(res));
  const seen = await driven(10_000, async (b) => {
    await Promise.all([1, 2].map((n) => b.submit('k', n, 1)));
    const three = b.submit('k', 3, 1);
    await tick();
    await tick();
    return [three, b.submit('k', 4, 1)];
  });
  assert.deepEqual(seen, [
    [1, 2],
    [3, 4],
  ]);
});

test('fill: a caller late for one batch is still waited for by the next', async () => {
  // four callers; the fourth misses the second batch (it starts at the fill time with three) and comes back while
  // the next three are back: the count the fill waits for stays at four, not the three the second batch had
  const tick = () => new Promise((res) => setImmediate(res));
  const seen = await driven(100, async (b, batchesSeen) => {
    await Promise.all([1, 2, 3, 4].map((n) => b.submit('k', n, 1)));
    const second = [5, 6, 7].map((n) => b.submit('k', n, 1));
    await batchesSeen(2);
    await Promise.all(second);
    const third = [9, 10, 11].map((n) => b.submit('k', n, 1));
    await tick();
    return [...second, ...third, b.submit('k', 12, 1)];
  });
  assert.deepEqual(seen, [
    [1, 2, 3, 4],
    [5, 6, 7],
    [9, 10, 11, 12],
  ]);
});
