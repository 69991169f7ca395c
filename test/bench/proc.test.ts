import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import { cpuMsByName } from '../../bench/proc.js';

describe('CPU by process name from /proc', () => {
  it('keeps only the processes whose command line holds the text asked for (a PostgreSQL backend names its database)', async () => {
    const marker = `ddn-proc-test-${process.pid}`;
    // a child whose command line carries the marker, busy for a moment so its CPU is counted
    const child = spawn(process.execPath, ['-e', 'const t = Date.now() + 300; while (Date.now() < t); setTimeout(() => {}, 5000)', marker]);
    try {
      await new Promise((r) => setTimeout(r, 400));
      const all = cpuMsByName('node');
      const marked = cpuMsByName('node', marker);
      assert.ok(all.has(child.pid!) && all.has(process.pid));
      assert.deepEqual([...marked.keys()], [child.pid]);
      assert.ok(marked.get(child.pid!)! > 0);
      assert.equal(cpuMsByName('node', `${marker}-none`).size, 0);
    } finally {
      child.kill();
      await once(child, 'exit');
    }
  });
});
