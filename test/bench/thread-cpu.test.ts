import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseThreadStat, readThreadTicks, threadCpu, type ThreadTicks } from '../../bench/thread-cpu.js';

describe('thread CPU from /proc', () => {
  it('parses a stat line whose name holds spaces and parentheses', () => {
    const line = '4242 (ddn (w) x) S 1 4242 4242 0 -1 4194368 100 0 0 0 731 229 0 0 20 0 7 0 12345 0 0';
    assert.deepEqual(parseThreadStat(line), { name: 'ddn (w) x', user: 731, system: 229 });
    assert.throws(() => parseThreadStat('garbage'));
  });

  it('sums each name between two readings, counting new threads from zero, largest first', () => {
    const t = (name: string, user: number, system: number): ThreadTicks => ({ name, user, system });
    const before = new Map([
      [1, t('main', 100, 10)],
      [2, t('ddn-verify', 50, 0)],
    ]);
    const after = new Map([
      [1, t('main', 300, 60)],
      [2, t('ddn-verify', 150, 1)],
      [3, t('ddn-verify', 100, 0)],
      [4, t('idle', 0, 0)],
    ]);
    // a tick is 10 ms
    assert.deepEqual(threadCpu(before, after), [
      { name: 'main', user_ms: 2000, system_ms: 500 },
      { name: 'ddn-verify', user_ms: 2000, system_ms: 10 },
      { name: 'idle', user_ms: 0, system_ms: 0 },
    ]);
  });

  it('reads this process: its main thread by the name main', () => {
    const ticks = readThreadTicks(process.pid);
    if (process.platform !== 'linux') return assert.equal(ticks.size, 0);
    assert.equal(ticks.get(process.pid)?.name, 'main');
    assert.ok([...ticks.values()].every((x) => Number.isInteger(x.user) && Number.isInteger(x.system)));
  });
});
