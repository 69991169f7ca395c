/**
 * One process per data directory (docs/operations.md): a second `ddn serve` or `ddn mirror` on a directory in use
 * exits 1 naming the directory and the other process, and the lock of a process killed with SIGKILL does not
 * block the next start. Real processes.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ddnToExit, serveProcess, serveScratch } from '../support/serve-process.js';
import { startTestNode } from '../support/network.js';

const scratch = serveScratch('ddn-dir-lock-');
const PORTS = ['--directory-port', '0', '--relay-port', '0', '--cache-port', '0', '--log-level', 'silent'];

describe('one process per data directory', () => {
  it('refuses a second ddn serve on the directory, and a restart after kill -9 starts', async () => {
    const dir = scratch.tempDir();
    const first = await serveProcess(['--data-dir', dir, ...PORTS]);
    scratch.children.push(first);
    const second = await ddnToExit(['--data-dir', dir, ...PORTS]);
    assert.equal(second.code, 1, second.stderr);
    assert.equal(
      second.stderr,
      `ddn serve: the data directory ${dir} is in use by another ddn process (pid ${first.pid}); stop it, or give this one its own --data-dir\n`,
    );
    // the first one was not disturbed
    assert.equal((await fetch(`${first.urls.directory}/health`)).status, 200);

    first.proc.kill('SIGKILL');
    await first.exited;
    const again = await serveProcess(['--data-dir', dir, ...PORTS]);
    scratch.children.push(again);
    assert.equal((await fetch(`${again.urls.directory}/health`)).status, 200);
    again.proc.kill('SIGTERM');
    assert.equal(await again.exited, 0);
  });

  it('refuses a ddn mirror on the directory of a running node', async () => {
    const primary = await startTestNode(['--roles', 'directory']);
    try {
      const dir = scratch.tempDir();
      const mirror = await serveProcess(['--from', primary.urls.directory!, '--data-dir', dir, '--port', '0', '--log-level', 'silent'], 'mirror');
      scratch.children.push(mirror);
      const second = await ddnToExit(['--from', primary.urls.directory!, '--data-dir', dir, '--port', '0'], 'mirror');
      assert.equal(second.code, 1, second.stderr);
      assert.match(second.stderr, new RegExp(`^ddn mirror: the data directory ${dir} is in use by another ddn process \\(pid ${mirror.pid}\\)`));
      const serve = await ddnToExit(['--data-dir', dir, ...PORTS]);
      assert.equal(serve.code, 1, serve.stderr);
      assert.match(serve.stderr, /is in use by another ddn process/);
      mirror.proc.kill('SIGTERM');
      assert.equal(await mirror.exited, 0);
    } finally {
      await primary.stop();
    }
  });

  it('refuses a second node on the directory within one process, and starts once the first closed', async () => {
    const dir = scratch.tempDir();
    const a = await startTestNode(['--roles', 'directory'], dir);
    await assert.rejects(startTestNode(['--roles', 'directory'], dir), /is in use by another ddn process \(pid \d+\)/);
    await a.stop(true);
    const b = await startTestNode(['--roles', 'directory'], dir);
    await b.stop(true);
  });
});
