import { checkedNode } from '../support/contract-check.js';
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { ManualClock } from '../../src/base/clock.js';
import { loadConfig } from '../../src/app/config.js';
import { DataDirError } from '../../src/app/node-keys.js';
import { buildNode, startNode, type RunningNode } from '../../src/app/node.js';
import { injectChecked } from '../support/inject-contract.js';

const silent = pino({ level: 'silent' });
const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'ddn-node-'));
  dirs.push(d);
  return d;
}

function configFor(dataDir: string, ...extra: string[]) {
  return loadConfig(['--data-dir', dataDir, '--directory-port', '0', '--relay-port', '0', '--cache-port', '0', ...extra], {});
}

async function start(dataDir: string, ...extra: string[]): Promise<RunningNode> {
  // every answer read from it is checked against its OpenAPI documents (test/support/contract-check.ts)
  return checkedNode(
    await startNode(configFor(dataDir, ...extra), {
      logger: silent,
      autoProduce: false,
      clock: new ManualClock(1_700_000_000_000),
    }),
  );
}

interface Health {
  status: string;
  roles: string[];
  profile: string;
  chain_id: string;
  genesis_hash: string;
  head: { number: number; hash: string };
  finalized: { number: number; hash: string };
}

async function health(baseUrl: string): Promise<{ status: number; body: Health }> {
  const res = await fetch(`${baseUrl}/health`);
  return { status: res.status, body: (await res.json()) as Health };
}

describe('startNode', () => {
  it('serves /health on every role and closes', async () => {
    const dir = tempDir();
    const node = await start(dir);
    try {
      assert.deepEqual(Object.keys(node.urls).sort(), ['cache', 'directory', 'relay']);
      assert.ok(node.directoryService !== undefined);
      assert.deepEqual(node.publicUrls, { relay: [node.urls.relay], cache: [node.urls.cache] });
      const hashes = new Set<string>();
      for (const url of Object.values(node.urls)) {
        assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
        const { status, body } = await health(url);
        assert.equal(status, 200);
        assert.equal(body.status, 'ok');
        assert.deepEqual(body.roles, ['directory', 'relay', 'cache']);
        assert.equal(body.profile, 'platform');
        assert.equal(body.chain_id, 'ddn-dev');
        assert.match(body.genesis_hash, /^0x[0-9a-f]{64}$/);
        assert.deepEqual(body.head, { number: 0, hash: body.genesis_hash });
        assert.deepEqual(body.finalized, { number: 0, hash: body.genesis_hash });
        hashes.add(body.genesis_hash);
      }
      assert.equal(hashes.size, 1);
    } finally {
      await node.close();
    }
    await node.close();
    await assert.rejects(fetch(`${node.urls.directory}/health`));
  });

  it('creates the attestor key (0600) and genesis.json once, and restarts on the same chain', async () => {
    const dir = tempDir();
    const first = await start(dir);
    const { body: before } = await health(first.urls.directory!);
    await first.close();
    const key = readFileSync(join(dir, 'attestor.key'), 'utf8');
    assert.match(key, /^-----BEGIN PRIVATE KEY-----/);
    assert.equal(statSync(join(dir, 'attestor.key')).mode & 0o777, 0o600);
    const genesis = JSON.parse(readFileSync(join(dir, 'genesis.json'), 'utf8')) as Record<string, unknown>;
    assert.equal(genesis.profile, 'platform');
    assert.equal(genesis.chain_id, 'ddn-dev');
    assert.equal(genesis.genesis_time_ms, 1_700_000_000_000);

    const second = await startNode(configFor(dir), { logger: silent, autoProduce: false, clock: new ManualClock(1_800_000_000_000) });
    try {
      const { body: after } = await health(second.urls.relay!);
      assert.equal(after.genesis_hash, before.genesis_hash);
      assert.equal(readFileSync(join(dir, 'attestor.key'), 'utf8'), key, 'the key is never rewritten');
    } finally {
      await second.close();
    }
  });

  it('refuses a data directory created with another profile or chain id', async () => {
    const dir = tempDir();
    await (await start(dir, '--profile', 'openpayload')).close();
    await assert.rejects(start(dir), (err: unknown) => {
      assert.ok(err instanceof DataDirError);
      assert.match(err.message, /profile 'openpayload'/);
      assert.match(err.message, /--profile is 'platform'/);
      return true;
    });
    await assert.rejects(start(dir, '--profile', 'openpayload', '--chain-id', 'other'), /chain id 'ddn-dev'/);
    // the directory still works with the settings it was created with
    await (await start(dir, '--profile', 'openpayload')).close();
  });

  it('refuses a damaged genesis.json', async () => {
    const dir = tempDir();
    await (await start(dir)).close();
    writeFileSync(join(dir, 'genesis.json'), '{"chain_id": "ddn-dev"}');
    await assert.rejects(start(dir), (err: unknown) => err instanceof DataDirError && /malformed/.test(err.message));
  });

  it('refuses a genesis.json that no longer matches the ledger database', async () => {
    const dir = tempDir();
    await (await start(dir)).close();
    rmSync(join(dir, 'genesis.json'));
    const restart = startNode(configFor(dir), { logger: silent, autoProduce: false, clock: new ManualClock(1_800_000_000_000) });
    await assert.rejects(restart, (err: unknown) => err instanceof DataDirError && /ledger\.sqlite/.test(err.message));
  });

  it('runs only the configured roles', async () => {
    const node = await start(tempDir(), '--roles', 'relay', '--public-cache-url', 'https://cache.example');
    try {
      assert.deepEqual(Object.keys(node.urls), ['relay']);
      assert.equal(node.directoryService, undefined);
      assert.deepEqual(node.publicUrls, { relay: [node.urls.relay], cache: ['https://cache.example'] });
      const { body } = await health(node.urls.relay!);
      assert.deepEqual(body.roles, ['relay']);
    } finally {
      await node.close();
    }
  });

  it('enforces the body limits of each role with its 413 code', async () => {
    const node = await start(tempDir(), '--directory-max-body-bytes', '16', '--relay-max-envelope-bytes', '32');
    try {
      const post = (url: string, bytes: number) =>
        fetch(`${url}/health`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: 'x'.repeat(bytes) });
      const dir = await post(node.urls.directory!, 17);
      assert.equal(dir.status, 413);
      assert.equal(((await dir.json()) as { code: string }).code, 'payload_too_large');
      for (const url of [node.urls.relay!, node.urls.cache!]) {
        const res = await post(url, 33);
        assert.equal(res.status, 413);
        assert.equal(((await res.json()) as { code: string }).code, 'envelope_too_large');
      }
    } finally {
      await node.close();
    }
  });

  it('refuses plaintext payloads on profile platform and accepts them on openpayload, unless overridden', async () => {
    const plaintextTo = (p: string) => ({
      message_id: '6f1c2b9e-3d4a-4e5f-8a7b-1c2d3e4f5a6b',
      to: `did:${p}:8DfbjXLth7APvt3qQPgtf`,
      timestamp: new Date(1_700_000_000_000).toISOString(),
      payload: { profile: `${p}:plaintext-cbor:v1`, cbor_b64: 'oA==' },
    });
    const codes = async (node: RunningNode, p: string) => {
      const out: [number, string][] = [];
      for (const url of [`${node.urls.relay!}/relay`, `${node.urls.cache!}/cache/store`]) {
        const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(plaintextTo(p)) });
        out.push([res.status, ((await res.json()) as { code: string }).code]);
      }
      const limits = (await (await fetch(`${node.urls.cache!}/cache/limits`)).json()) as { allow_plaintext: boolean };
      return { codes: out, allowPlaintext: limits.allow_plaintext };
    };
    const refused = {
      codes: [
        [422, 'plaintext_not_allowed'],
        [422, 'plaintext_not_allowed'],
      ],
      allowPlaintext: false,
    };
    // accepted: the envelope passes validation and is refused later, for its unregistered recipient
    const accepted = {
      codes: [
        [404, 'recipient_not_found'],
        [404, 'recipient_not_found'],
      ],
      allowPlaintext: true,
    };
    for (const [args, p, want] of [
      [[], 'platform', refused],
      [['--profile', 'openpayload'], 'openpayload', accepted],
      [['--cache-allow-plaintext'], 'platform', accepted],
      [['--profile', 'openpayload', '--cache-allow-plaintext=false'], 'openpayload', refused],
    ] as const) {
      const node = await start(tempDir(), ...args);
      try {
        assert.deepEqual(await codes(node, p), want, args.join(' '));
      } finally {
        await node.close();
      }
    }
  });

  it('buildNode opens no socket and answers in-process; listen() binds every role once', async () => {
    const built = await buildNode(configFor(tempDir()), { logger: silent, autoProduce: false, clock: new ManualClock(1_700_000_000_000) });
    let node: RunningNode | undefined;
    try {
      assert.deepEqual([...built.servers.keys()], ['directory', 'relay', 'cache']);
      for (const server of built.servers.values()) assert.equal(server.fastify.server.listening, false);
      // routes answer in-process; the node is not ready until it listens
      const status = await injectChecked(built.servers.get('directory')!, { method: 'GET', url: '/registration-status/did:platform:8DfbjXLth7APvt3qQPgtf' });
      assert.equal(status.statusCode, 200);
      const health = await injectChecked(built.servers.get('relay')!, { method: 'GET', url: '/health' });
      assert.equal(health.statusCode, 503);
      node = await built.listen();
      for (const server of built.servers.values()) assert.equal(server.fastify.server.listening, true);
      assert.deepEqual(node.publicUrls.relay, [node.urls.relay]);
      assert.equal((await fetch(`${node.urls.relay}/health`)).status, 200);
      await assert.rejects(built.listen(), /listens already/);
    } finally {
      await (node ?? built).close();
    }
  });

  it('releases everything when a port is taken', async () => {
    const dir = tempDir();
    const a = await start(tempDir());
    try {
      const port = new URL(a.urls.relay!).port;
      await assert.rejects(start(dir, '--relay-port', port), /EADDRINUSE/);
      // the database and ports of the failed start were released: the same data dir starts again
      await (await start(dir)).close();
    } finally {
      await a.close();
    }
  });
});
