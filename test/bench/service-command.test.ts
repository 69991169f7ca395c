import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { serviceCommand } from '../../bench/service.js';

const base = { dataDir: '/tmp/x', ports: { directory: 1 }, blockTimeMs: 100, logFile: '/tmp/x.log' };

describe('the service command', () => {
  const saved = process.env.DDN_BENCH_NODE_ARGS;
  afterEach(() => {
    if (saved === undefined) delete process.env.DDN_BENCH_NODE_ARGS;
    else process.env.DDN_BENCH_NODE_ARGS = saved;
  });

  it('puts DDN_BENCH_NODE_ARGS between node and the entry script (the service gets them, not the generator)', () => {
    process.env.DDN_BENCH_NODE_ARGS = ' --cpu-prof-interval 250  --max-old-space-size=512 ';
    const cmd = serviceCommand(base);
    assert.deepEqual(cmd.slice(0, 5), ['node', '--cpu-prof-interval', '250', '--max-old-space-size=512', 'bin/ddn.js']);
  });

  it('adds nothing without it', () => {
    delete process.env.DDN_BENCH_NODE_ARGS;
    assert.deepEqual(serviceCommand(base).slice(0, 3), ['node', 'bin/ddn.js', 'serve']);
  });
});
