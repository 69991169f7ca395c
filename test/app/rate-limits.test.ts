import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../src/app/config.js';
import { openRateLimits } from '../../src/app/rate-limits.js';
import { type RateLimits } from '../../src/http/rate-limit.js';
import { startTestNode, type TestNode } from '../support/network.js';
import { freshPgSchema, PG_URL } from '../support/pg.js';

const nodes: TestNode[] = [];
after(async () => {
  for (const n of nodes) await n.stop();
});

async function node(args: string[]): Promise<TestNode> {
  const n = await startTestNode(args);
  nodes.push(n);
  return n;
}

/** Statuses of `count` registration preparations over a real socket (the body is not even valid: it is counted first). */
async function prepares(url: string, count: number, headers: Record<string, string> = {}): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < count; i++) {
    const res = await fetch(`${url}/register-did/prepare`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: '{}' });
    await res.arrayBuffer();
    statuses.push(res.status);
  }
  return statuses;
}

describe('rate limits in a running node', () => {
  it('scales every default budget with --rate-limit FACTOR and answers 429 rate_limited with Retry-After over a socket', async () => {
    const n = await node(['--rate-limit', '0.01']); // registration: 300/1m → 3/1m
    assert.deepEqual(await prepares(n.urls.directory!, 3), [400, 400, 400]);
    const res = await fetch(`${n.urls.directory!}/register-did/prepare`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    assert.equal(res.status, 429);
    assert.ok(Number(res.headers.get('retry-after')) >= 1);
    assert.equal(((await res.json()) as { code: string }).code, 'rate_limited');
  });

  it('limits nothing with --rate-limit off, even with a per-budget flag', async () => {
    const n = await node(['--rate-limit', 'off', '--rate-limit-registration', '2/1h']);
    assert.deepEqual(await prepares(n.urls.directory!, 6), [400, 400, 400, 400, 400, 400]);
  });

  it('counts the clients behind a trusted proxy apart', async () => {
    const n = await node(['--rate-limit-registration', '2/1h', '--trusted-proxies', '127.0.0.0/8']);
    assert.deepEqual(await prepares(n.urls.directory!, 3, { 'x-forwarded-for': '192.0.2.1' }), [400, 400, 429]);
    assert.deepEqual(await prepares(n.urls.directory!, 2, { 'x-forwarded-for': '192.0.2.2' }), [400, 400]);
  });

  it('with the defaults, answers 300 of a flood of registration preparations from one address and refuses the rest; never limits /health', async () => {
    // the default rate limits; the connection cap (256 per address) is lifted so that all 320 connect at once
    const n = await node(['--max-connections-per-address', '0']);
    // all at once, so that the flood fits in one window however slow the machine
    const statuses = await Promise.all(Array.from({ length: 320 }, () => prepares(n.urls.directory!, 1)));
    const count = (status: number) => statuses.flat().filter((s) => s === status).length;
    assert.deepEqual([count(400), count(429)], [300, 20]);
    for (let i = 0; i < 20; i++) assert.equal((await fetch(`${n.urls.directory!}/health`)).status, 200);
  });
});

if (PG_URL) {
  describe('rate limits on PostgreSQL', () => {
    it('holds one budget across processes sharing the database (two limiters on separate pools)', async () => {
      const pg = await freshPgSchema();
      const settings = loadConfig(['--rate-limit-cache-store-target', '3/1h', '--rate-limit-read', '2/1h'], {}).rateLimit!;
      const a = await openRateLimits(settings, { url: pg.url, schema: pg.schema });
      const b = await openRateLimits(settings, { url: pg.url, schema: pg.schema });
      try {
        // a write is checked against its target's budget, then counted once it succeeded
        const admit = (l: RateLimits, target: string) =>
          (l.checkTarget({ rateClass: 'cache-store' }, target) ?? Promise.resolve())
            .then(() => l.countTarget({ rateClass: 'cache-store' }, target))
            .then(
              () => 'ok',
              (e: { code?: string }) => e.code ?? String(e),
            );
        assert.deepEqual([await admit(a!.limits, 'did:x:1'), await admit(b!.limits, 'did:x:1'), await admit(a!.limits, 'did:x:1')], ['ok', 'ok', 'ok']);
        assert.equal(await admit(b!.limits, 'did:x:1'), 'rate_limited');
        assert.equal(await admit(a!.limits, 'did:x:1'), 'rate_limited');
        assert.equal(await admit(b!.limits, 'did:x:2'), 'ok');
        const rows = await pg.pool.query<{ key: string; points: number }>('SELECT key, points FROM rate_limits ORDER BY key');
        assert.deepEqual(
          rows.rows.map((r) => [r.key, r.points]),
          [
            ['cache-store-target:did:x:1', 3],
            ['cache-store-target:did:x:2', 1],
          ],
        );
      } finally {
        await a?.close();
        await b?.close();
        await pg.drop();
      }
    });

    it('answers a key that used up its budget from memory, and keeps at most --rate-limit-max-keys such keys', async () => {
      const pg = await freshPgSchema();
      const settings = loadConfig(['--rate-limit-cache-store-target', '2/1h', '--rate-limit-max-keys', '2'], {}).rateLimit!;
      const a = await openRateLimits(settings, { url: pg.url, schema: pg.schema });
      try {
        const count = (target: string) => a!.limits.countTarget({ rateClass: 'cache-store' }, target);
        const points = async () =>
          Object.fromEntries(
            (await pg.pool.query<{ key: string; points: number }>('SELECT key, points FROM rate_limits ORDER BY key')).rows.map((r) => [
              r.key.slice(-1),
              r.points,
            ]),
          );
        for (const t of ['did:x:1', 'did:x:2']) for (let i = 0; i < 5; i++) await count(t);
        // the second count used up each budget: later ones were answered from memory, not counted in the database
        assert.deepEqual(await points(), { 1: 2, 2: 2 });
        // a third blocked key pushes the least recently blocked (did:x:1) out of memory: its next count reaches the
        // database; did:x:3 is still answered from memory
        for (let i = 0; i < 3; i++) await count('did:x:3');
        await count('did:x:1');
        await count('did:x:3');
        assert.deepEqual(await points(), { 1: 3, 2: 2, 3: 2 });
      } finally {
        await a?.close();
        await pg.drop();
      }
    });

    it('shares a limit between two nodes on one database', async () => {
      const pg = await freshPgSchema();
      try {
        const args = ['--roles', 'cache', '--db', pg.url, '--db-schema', pg.schema, '--rate-limit-cache-retrieval', '3/1h'];
        const one = await node(args);
        const two = await node(args);
        const summary = async (n: TestNode) => (await fetch(`${n.urls.cache!}/cache/summary/did:platform:abc`)).status;
        assert.deepEqual([await summary(one), await summary(two), await summary(one)], [400, 400, 400]);
        assert.equal(await summary(two), 429);
        assert.equal(await summary(one), 429);
      } finally {
        for (const n of nodes.splice(0)) await n.stop();
        await pg.drop();
      }
    });
  });
}
