/** The TTL- and size-bounded answer cache (src/base/ttl-answers.ts). */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../src/base/clock.js';
import { TtlAnswers } from '../../src/base/ttl-answers.js';

/** A load whose answer the test settles; counts its calls. */
function loader<T>() {
  let calls = 0;
  let settle: { resolve: (v: T | null) => void; reject: (e: unknown) => void } | undefined;
  const load = (): Promise<T | null> => {
    calls++;
    return new Promise<T | null>((resolve, reject) => {
      settle = { resolve, reject };
    });
  };
  return { load, calls: () => calls, settle: () => settle! };
}

const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('TtlAnswers', () => {
  it('shares a lookup in flight, then keeps its answer for the TTL', async () => {
    const clock = new ManualClock(1_000);
    const answers = new TtlAnswers(clock, { ttlMs: 100, maxEntries: 10 });
    const l = loader<string>();
    const first = answers.get('k', l.load);
    assert.equal(answers.get('k', l.load), first);
    l.settle().resolve('v');
    assert.equal(await first, 'v');
    assert.equal(await answers.get('k', l.load), 'v');
    assert.equal(l.calls(), 1);
    assert.equal(answers.size, 1);
    clock.advance(100);
    const again = answers.get('k', l.load);
    assert.equal(l.calls(), 2);
    l.settle().resolve('w');
    assert.equal(await again, 'w');
    assert.deepEqual([answers.hits, answers.misses], [2, 2]);
  });

  it('keeps neither failures nor null answers (unless asked) nor answers whose own TTL is 0', async () => {
    const clock = new ManualClock(1_000);
    const answers = new TtlAnswers(clock, { ttlMs: 100, maxEntries: 10 });
    const l = loader<string>();
    const failed = answers.get('k', l.load);
    l.settle().reject(new Error('down'));
    await assert.rejects(failed, /down/);
    await turn();
    assert.equal(answers.size, 0);
    const none = answers.get('k', l.load);
    l.settle().resolve(null);
    assert.equal(await none, null);
    await turn();
    assert.equal(answers.size, 0);
    const once = answers.get('k', l.load, () => 0);
    l.settle().resolve('v');
    assert.equal(await once, 'v');
    await turn();
    assert.equal(answers.size, 0);
    const short = answers.get('k', l.load, () => 10);
    l.settle().resolve('v');
    await short;
    assert.equal(answers.size, 1);
    clock.advance(10);
    void answers.get('k', l.load);
    assert.equal(l.calls(), 5);

    const keepNull = new TtlAnswers(clock, { ttlMs: 100, maxEntries: 10, keepNull: true });
    const n = loader<string>();
    const kept = keepNull.get('k', n.load);
    n.settle().resolve(null);
    await kept;
    assert.equal(await keepNull.get('k', n.load), null);
    assert.equal(n.calls(), 1);
  });

  it('forgets a key, even in flight, and holds at most maxEntries answers', async () => {
    const clock = new ManualClock(1_000);
    const answers = new TtlAnswers(clock, { ttlMs: 100, maxEntries: 2 });
    const l = loader<string>();
    const inFlight = answers.get('k', l.load);
    answers.delete('k');
    assert.equal(answers.size, 0);
    l.settle().resolve('v');
    await inFlight;
    await turn();
    assert.equal(answers.size, 0, 'a forgotten lookup is not kept when it arrives');
    for (const key of ['a', 'b', 'c']) await answers.get(key, async () => key);
    await turn();
    assert.equal(answers.size, 2);
    await answers.get('a', async () => 'again');
    assert.equal(await answers.get('a', async () => 'x'), 'again', 'the least recently used went first');
  });
});
