import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { backoffDelay, retry, type RetryNotice } from '../../src/base/retry.js';
import { fakeTiming } from '../support/fake-timing.js';

class Transient extends Error {}
const transient = (e: unknown) => e instanceof Transient;

/** An attempt that fails with `Transient` `failures` times, then answers its attempt number. */
function flaky(failures: number) {
  const calls: number[] = [];
  const attempt = async (n: number) => {
    calls.push(n);
    if (n <= failures) throw new Transient(`failure ${n}`);
    return n;
  };
  return { attempt, calls };
}

describe('backoffDelay', () => {
  it('doubles from firstMs, capped at maxMs; a factor of 1 keeps it flat', () => {
    const b = { firstMs: 100, maxMs: 350 };
    assert.deepEqual(
      [1, 2, 3, 4].map((n) => backoffDelay(b, n)),
      [100, 200, 350, 350],
    );
    assert.deepEqual(
      [1, 2, 3].map((n) => backoffDelay({ firstMs: 300, factor: 1 }, n)),
      [300, 300, 300],
    );
  });

  it('full jitter scales the pause by the random source', () => {
    const b = { firstMs: 2, maxMs: 50, jitter: true };
    assert.equal(
      backoffDelay(b, 3, () => 0.5),
      4,
    );
    assert.equal(
      backoffDelay(b, 10, () => 0.5),
      25,
    );
    assert.equal(
      backoffDelay(b, 10, () => 0),
      0,
    );
  });
});

describe('retry', () => {
  it('retries retryable failures with the back-off and tells each pause', async () => {
    const timing = fakeTiming();
    const { attempt, calls } = flaky(2);
    const notices: RetryNotice[] = [];
    const v = await retry(attempt, { attempts: 5, retryable: transient, backoff: { firstMs: 10 }, timing, onRetry: (r) => notices.push(r) });
    assert.equal(v, 3);
    assert.deepEqual(calls, [1, 2, 3]);
    assert.deepEqual(timing.slept, [10, 20]);
    assert.deepEqual(
      notices.map((r) => [r.attempt, (r.error as Error).message, r.waitMs]),
      [
        [1, 'failure 1', 10],
        [2, 'failure 2', 20],
      ],
    );
  });

  it('rethrows the last failure when the attempts run out', async () => {
    const timing = fakeTiming();
    const { attempt, calls } = flaky(10);
    await assert.rejects(retry(attempt, { attempts: 3, retryable: transient, backoff: { firstMs: 1 }, timing }), /^Error: failure 3$/);
    assert.deepEqual(calls, [1, 2, 3]);
    assert.deepEqual(timing.slept, [1, 2]);
  });

  it('throws a failure that is not retryable at once', async () => {
    const timing = fakeTiming();
    let n = 0;
    await assert.rejects(
      retry(
        async () => {
          n++;
          throw new TypeError('bug');
        },
        { attempts: 5, retryable: transient, backoff: { firstMs: 1 }, timing },
      ),
      TypeError,
    );
    assert.equal(n, 1);
    assert.deepEqual(timing.slept, []);
  });

  it('without a back-off, the next attempt follows without a pause', async () => {
    const timing = fakeTiming();
    const { attempt, calls } = flaky(7);
    assert.equal(await retry(attempt, { attempts: 8, retryable: transient, timing }), 8);
    assert.equal(calls.length, 8);
    assert.deepEqual(timing.slept, []);
  });

  it('waitMs replaces the back-off (a Retry-After), and jitter uses the random source', async () => {
    const timing = fakeTiming();
    const { attempt } = flaky(3);
    await retry(attempt, {
      attempts: 4,
      retryable: transient,
      backoff: { firstMs: 100, jitter: true },
      random: () => 0.5,
      waitMs: (_e, n, backoffMs) => (n === 2 ? 7_000 : backoffMs),
      timing,
    });
    assert.deepEqual(timing.slept, [50, 7_000, 200]);
  });

  it('stops at the deadline, shortening the last pause to end there', async () => {
    const timing = fakeTiming(0);
    const { attempt, calls } = flaky(100);
    await assert.rejects(
      retry(attempt, { attempts: Infinity, deadlineMs: 1_000, retryable: transient, backoff: { firstMs: 300, factor: 1 }, timing }),
      /^Error: failure 5$/,
    );
    assert.deepEqual(timing.slept, [300, 300, 300, 100]);
    assert.equal(calls.length, 5);
  });

  it('an abort during a pause rejects with the reason and starts no further attempt', async () => {
    const controller = new AbortController();
    const { attempt, calls } = flaky(100);
    const running = retry(attempt, { attempts: 10, retryable: transient, backoff: { firstMs: 60_000 }, signal: controller.signal });
    setImmediate(() => controller.abort(new Error('stopped')));
    await assert.rejects(running, /stopped|aborted/);
    assert.deepEqual(calls, [1]);
  });

  it('an aborted signal starts no attempt', async () => {
    const { attempt, calls } = flaky(0);
    await assert.rejects(retry(attempt, { attempts: 3, retryable: transient, signal: AbortSignal.abort(new Error('gone')) }), /gone/);
    assert.deepEqual(calls, []);
  });
});
