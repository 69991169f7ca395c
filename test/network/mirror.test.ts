/**
 * Read-only mirrors end to end (docs/mirrors.md): DIDs registered and changed at a primary Directory (a real
 * node), followed by a mirror started from scratch and by one restarted on its data directory; every read route
 * answers both with the same bytes, every write route at the mirror is refused with the primary's URL, and a
 * Relay reads its Directory through the mirror.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestNode, type TestNode } from '../support/network.js';
import { caughtUp, registerAndChange, sameAnswer, startTestMirror, type TestMirror } from '../support/mirror.js';

/** The read routes a mirror serves, for one DID and its transactions. */
function readPaths(did: string, alias: string, txs: readonly string[]): string[] {
  const d = encodeURIComponent(did);
  return [
    `/resolve/${d}`,
    `/registration-status/${d}`,
    `/dids/${d}/nonces`,
    `/aliases/${alias}`,
    `/delivery-view/${d}`,
    `/delivery-resolution/${d}`,
    ...txs.map((t) => `/transactions/${t}`),
    '/blocks/1',
    '/blocks/latest',
    '/resolve/did%3Aplatform%3Anobody',
    '/blocks/99999',
    '/export/genesis',
    '/export?after=0',
    '/export?after=2&count=3',
  ];
}

describe('a read-only mirror of a Directory', () => {
  let primary: TestNode;
  let mirror: TestMirror;
  let first: { did: string; txs: string[] };

  before(async () => {
    primary = await startTestNode(['--roles', 'directory']);
    first = await registerAndChange(primary.urls.directory!, 31, 'mirrored');
  });
  after(async () => {
    await mirror?.stop();
    await primary?.stop();
  });

  it('follows the primary from scratch and answers every read with the same body', async () => {
    mirror = await startTestMirror(primary.urls.directory!);
    await caughtUp(mirror, primary.urls.directory!);
    for (const path of readPaths(first.did, 'mirrored', first.txs)) await sameAnswer(primary.urls.directory!, mirror.url, path);
    const resolved = JSON.parse(await sameAnswer(primary.urls.directory!, mirror.url, `/resolve/${encodeURIComponent(first.did)}`)) as { aliases: string[] };
    assert.deepEqual(resolved.aliases, ['mirrored', 'mirrored-2']);
  });

  it('follows changes live', async () => {
    const second = await registerAndChange(primary.urls.directory!, 41, 'live-one');
    await caughtUp(mirror, primary.urls.directory!);
    for (const path of readPaths(second.did, 'live-one', second.txs)) await sameAnswer(primary.urls.directory!, mirror.url, path);
  });

  it('refuses every write with read_only_mirror and the primary URL', async () => {
    const d = encodeURIComponent(first.did);
    const writes: [string, string][] = [
      ['POST', '/register-did/prepare'],
      ['POST', '/register-did'],
      ['POST', `/dids/${d}/prepare`],
      ['POST', `/dids/${d}/aliases`],
      ['PUT', '/applications/app.example/registration'],
    ];
    for (const [method, path] of writes) {
      const res = await fetch(`${mirror.url}${path}`, { method, headers: { 'content-type': 'application/json' }, body: '{}' });
      const body = (await res.json()) as { code: string; primary_url?: string; details?: { primary_url?: string } };
      assert.equal(res.status, 403, `${method} ${path}`);
      assert.equal(body.code, 'read_only_mirror');
      assert.equal(body.primary_url ?? body.details?.primary_url, primary.urls.directory);
    }
  });

  it('resumes from its own cursor after a restart, then follows what changed meanwhile', async () => {
    const held = mirror.follower.seq;
    const dir = mirror.dataDir;
    await mirror.stop(true);
    const third = await registerAndChange(primary.urls.directory!, 51, 'while-down');
    mirror = await startTestMirror(primary.urls.directory!, dir);
    assert.equal(mirror.follower.startSeq, held, 'the restarted mirror asks for what follows what it held');
    await caughtUp(mirror, primary.urls.directory!);
    for (const path of readPaths(third.did, 'while-down', third.txs)) await sameAnswer(primary.urls.directory!, mirror.url, path);
    for (const path of readPaths(first.did, 'mirrored', first.txs)) await sameAnswer(primary.urls.directory!, mirror.url, path);
  });

  it('serves a Relay that reads its Directory through the mirror', async () => {
    const relay = await startTestNode(['--roles', 'relay', '--directory-url', mirror.url, '--directory-view-ttl-ms', '0']);
    try {
      const health = (await (await fetch(`${relay.urls.relay!}/health`)).json()) as { directory?: { url: string; reachable: boolean }; genesis_hash?: string };
      assert.deepEqual(health.directory, { url: mirror.url, reachable: true });
      const primaryHealth = (await (await fetch(`${primary.urls.directory!}/health`)).json()) as { genesis_hash: string };
      assert.equal(health.genesis_hash, primaryHealth.genesis_hash);
    } finally {
      await relay.stop();
    }
  });
});
