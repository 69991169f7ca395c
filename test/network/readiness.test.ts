/**
 * Truthful health and readiness of a Relay-only process (`ddn serve` children): `/health` reports the Directory it
 * asks and that Directory's chain, never a chain of its own; `/ready` answers 503 `service_unavailable` naming
 * the Directory while it is stopped, and 200 again once it is back on the same port and data directory.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildInfo } from '../../src/app/version.js';
import { fetchJson } from '../cache/http-support.js';
import { serveProcess, type ServeProcess } from '../support/serve-process.js';
import { waitFor } from '../support/wait.js';

type Body = Record<string, unknown>;

describe('a Relay-only process whose Directory stops and returns', () => {
  const dirs: string[] = [];
  const children: ServeProcess[] = [];
  after(async () => {
    for (const c of children) {
      if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill('SIGTERM');
      await c.exited;
    }
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  const dataDir = (): string => {
    const d = mkdtempSync(join(tmpdir(), 'ddn-ready-'));
    dirs.push(d);
    return d;
  };
  const start = async (args: string[]): Promise<ServeProcess> => {
    const p = await serveProcess(['--log-level', 'warn', ...args]);
    children.push(p);
    return p;
  };
  const stop = async (p: ServeProcess): Promise<void> => {
    p.proc.kill('SIGTERM');
    await p.exited;
  };

  it('answers /ready 503 while its Directory is down and 200 once it is back; /health reports that Directory', async () => {
    const dDir = dataDir();
    let directory = await start(['--roles', 'directory', '--data-dir', dDir, '--directory-port', '0']);
    const dirUrl = directory.urls.directory!;
    const relay = await start(['--roles', 'relay', '--data-dir', dataDir(), '--relay-port', '0', '--directory-url', dirUrl, '--allow-private-endpoints']);
    const relayUrl = relay.urls.relay!;

    const ready = await fetchJson(`${relayUrl}/ready`);
    assert.equal(ready.status, 200, JSON.stringify(ready.body));
    assert.deepEqual(ready.body, { status: 'ready', checks: { storage: 'ok', database: 'ok', directory: 'ok' } });
    const dirHealth = await fetchJson(`${dirUrl}/health`);
    const health = await fetchJson(`${relayUrl}/health`);
    assert.equal(health.status, 200);
    assert.equal(health.body.status, 'ok');
    assert.equal(health.body.version, buildInfo().version);
    assert.deepEqual(health.body.roles, ['relay']);
    assert.deepEqual(health.body.directory, { url: dirUrl, reachable: true });
    assert.equal(health.body.genesis_hash, dirHealth.body.genesis_hash, "the Directory's chain, not one of its own");

    await stop(directory);
    const down = await waitFor(
      'the Relay sees its Directory gone',
      async () => {
        const r = await fetchJson(`${relayUrl}/ready`);
        return r.status === 503 ? r : undefined;
      },
      { everyMs: 100 },
    );
    assert.equal(down.body.code, 'service_unavailable');
    assert.match(String(down.body.message), /directory: .*does not answer/);
    const checks = (down.body.details as Body).checks as Body;
    assert.equal(checks.storage, 'ok');
    assert.match(String(checks.directory), new RegExp(dirUrl.replace(/[.]/g, '\\.')));
    const downHealth = await fetchJson(`${relayUrl}/health`);
    assert.equal(downHealth.status, 200);
    assert.deepEqual(downHealth.body.directory, { url: dirUrl, reachable: false });
    assert.equal(downHealth.body.head, undefined, 'no chain while the Directory does not answer');
    assert.equal(downHealth.body.genesis_hash, undefined);

    directory = await start(['--roles', 'directory', '--data-dir', dDir, '--directory-port', new URL(dirUrl).port]);
    const back = await waitFor(
      'the Relay sees its Directory back',
      async () => {
        const r = await fetchJson(`${relayUrl}/ready`);
        return r.status === 200 ? r : undefined;
      },
      { everyMs: 100 },
    );
    assert.equal(back.body.status, 'ready');
    const upHealth = await fetchJson(`${relayUrl}/health`);
    assert.deepEqual(upHealth.body.directory, { url: dirUrl, reachable: true });
    assert.equal(upHealth.body.genesis_hash, dirHealth.body.genesis_hash);
    await stop(directory);
    await stop(relay);
  });
});
