import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DirectoryProbe, registerReadyRoute, storageCheck, writesCheck, writesRefusal, type ReadinessCheck } from '../../src/app/readiness.js';
import { createHttpServer } from '../../src/http/server.js';
import { getChecked } from '../support/inject-contract.js';

const server = () => createHttpServer({ name: 'cache', logger: false, bodyLimitBytes: 1024, tooLargeCode: 'envelope_too_large' });

describe('GET /ready', () => {
  it('answers 200 with every check ok, 503 service_unavailable naming each failing one', async () => {
    let dbReason: string | null = null;
    const checks: ReadinessCheck[] = [
      { name: 'storage', check: async () => null },
      { name: 'database', check: async () => dbReason },
    ];
    let started = true;
    const s = server();
    registerReadyRoute(
      s,
      checks,
      () => started,
      writesCheck(() => null),
    );
    const ok = await getChecked(s, '/ready');
    assert.equal(ok.statusCode, 200);
    assert.deepEqual(ok.json(), { status: 'ready', checks: { storage: 'ok', database: 'ok' } });
    dbReason = 'connection refused';
    const bad = await getChecked(s, '/ready');
    assert.equal(bad.statusCode, 503);
    assert.ok(bad.headers['retry-after'] !== undefined);
    const body = bad.json<{ code: string; message: string; details: { checks: Record<string, string> } }>();
    assert.equal(body.code, 'service_unavailable');
    assert.equal(body.message, 'database: connection refused');
    assert.deepEqual(body.details.checks, { storage: 'ok', database: 'connection refused' });
    started = false;
    dbReason = null;
    const stopping = await getChecked(s, '/ready');
    assert.equal(stopping.statusCode, 503);
    assert.equal(stopping.json<{ code: string }>().code, 'service_unavailable');
    await s.fastify.close();
  });

  it('/ready/writes is 503 while the node refuses new data (a full disk), while /ready stays 200 for reads', async () => {
    const storage = { isDegraded: false };
    const s = server();
    registerReadyRoute(s, [{ name: 'storage', check: async () => null }], () => true, writesCheck(writesRefusal(storage)));
    const ok = await getChecked(s, '/ready/writes');
    assert.equal(ok.statusCode, 200);
    assert.deepEqual(ok.json(), { status: 'ready', checks: { storage: 'ok', writes: 'ok' } });
    storage.isDegraded = true;
    const refused = await getChecked(s, '/ready/writes');
    assert.equal(refused.statusCode, 503);
    assert.ok(refused.headers['retry-after'] !== undefined);
    const body = refused.json<{ code: string; details: { checks: Record<string, string> } }>();
    assert.equal(body.code, 'service_unavailable');
    assert.match(body.details.checks.writes!, /^refused: the data directory is full/);
    assert.equal((await getChecked(s, '/ready')).statusCode, 200, 'reads are still served');
    storage.isDegraded = false;
    assert.equal((await getChecked(s, '/ready/writes')).statusCode, 200);
    await s.fastify.close();
  });

  it("/ready/writes is 503 while a PostgreSQL Directory's ledger replica is out of storage (a quota the disk guard does not see)", async () => {
    const storage = { isDegraded: false };
    const replica = { replicaOutOfStorage: false };
    const s = server();
    registerReadyRoute(s, [{ name: 'storage', check: async () => null }], () => true, writesCheck(writesRefusal(storage, replica)));
    assert.equal((await getChecked(s, '/ready/writes')).statusCode, 200);
    replica.replicaOutOfStorage = true;
    const refused = await getChecked(s, '/ready/writes');
    assert.equal(refused.statusCode, 503);
    const body = refused.json<{ code: string; details: { checks: Record<string, string> } }>();
    assert.equal(body.code, 'service_unavailable');
    assert.match(body.details.checks.writes!, /^refused: this process's ledger replica is out of storage/);
    assert.equal((await getChecked(s, '/ready')).statusCode, 200, 'reads are still served');
    storage.isDegraded = true;
    assert.match(
      (await getChecked(s, '/ready/writes')).json<{ details: { checks: Record<string, string> } }>().details.checks.writes!,
      /^refused: the data directory is full/,
      'a full disk named first',
    );
    storage.isDegraded = false;
    replica.replicaOutOfStorage = false;
    assert.equal((await getChecked(s, '/ready/writes')).statusCode, 200, 'ready again once the replica caught up');
    await s.fastify.close();
  });

  it('checks that the data directory exists and is writable', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ddn-ready-'));
    assert.equal(await storageCheck(dir).check(), null);
    rmSync(dir, { recursive: true });
    assert.match(String(await storageCheck(dir).check()), /ENOENT/);
  });

  it('probes the remote Directory at most once per second, sharing one answer', async () => {
    let now = 0;
    let calls = 0;
    let up = true;
    const port = {
      currentBase: 'http://d:1',
      async health() {
        calls++;
        if (!up) throw new Error('connect ECONNREFUSED');
        return { url: 'http://d:1', body: { status: 'ok' } };
      },
    };
    const probe = new DirectoryProbe(port, { nowMs: () => now });
    const [a, b] = await Promise.all([probe.state(), probe.state()]);
    assert.equal(calls, 1);
    assert.deepEqual(a, b);
    assert.equal(a.reachable, true);
    up = false;
    now = 999;
    assert.equal((await probe.state()).reachable, true, 'reused within the second');
    now = 1000;
    const down = await probe.state();
    assert.equal(down.reachable, false);
    assert.equal(await probe.check().check(), 'the Directory at http://d:1 does not answer: connect ECONNREFUSED');
    assert.equal(calls, 2);
  });
});
