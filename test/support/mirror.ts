/** Read-only mirrors in tests: one started in-process on a temp data dir, and checks against its primary. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { startMirror, type MirrorOptions, type RunningMirror } from '../../src/app/mirror.js';
import { FEED_HEAD_HEADER } from '../../src/directory/export-routes.js';
import { DirectoryClient } from '../../src/client/directory-client.js';
import { didDocumentFor, keyPairFromSeed } from '../../src/client/keys.js';
import { generateDid } from '../../src/protocol/did.js';
import { PLATFORM } from '../../src/protocol/profile.js';
import { waitFor } from './wait.js';
import { checkedNode } from './contract-check.js';

export interface TestMirror extends RunningMirror {
  dataDir: string;
  /** Closes the mirror and removes its data dir unless `keep`. */
  stop(keep?: boolean): Promise<void>;
}

export async function startTestMirror(
  from: string,
  dataDir = mkdtempSync(join(tmpdir(), 'ddn-mirror-')),
  options: Partial<Pick<MirrorOptions, 'host' | 'metricsToken' | 'followerLimits' | 'connectionCaps' | 'bodyBudget' | 'rateLimits'>> = {},
): Promise<TestMirror> {
  const m = await startMirror({
    from,
    dataDir,
    host: '127.0.0.1',
    port: 0,
    logger: pino({ level: 'silent' }),
    retryMs: { first: 20, max: 200 },
    ...options,
  });
  // every answer read from the mirror is checked against its own document; its close() fails with the violations
  const checked = await checkedNode(Object.assign(m, { urls: { directory: m.url } }));
  return Object.assign(checked, {
    dataDir,
    async stop(keep = false) {
      await checked.close();
      if (!keep) rmSync(dataDir, { recursive: true, force: true });
    },
  });
}

/** The primary's finalized feed head (`ddn-feed-head` of `GET /export`). */
export async function feedHead(url: string): Promise<number> {
  const res = await fetch(`${url}/export?count=1`);
  assert.equal(res.status, 200);
  await res.arrayBuffer();
  return Number(res.headers.get(FEED_HEAD_HEADER));
}

/** Waits until the mirror holds every finalized entry of its primary. */
export async function caughtUp(mirror: RunningMirror, primaryUrl: string): Promise<number> {
  const head = await feedHead(primaryUrl);
  return waitFor(`the mirror reaches feed entry ${head}`, async () => {
    assert.equal(mirror.follower.status().error, undefined);
    return mirror.follower.seq >= head ? mirror.follower.seq : undefined;
  });
}

/** GET `path` on both: same status, same content type, byte-identical body. Returns the body text. */
export async function sameAnswer(primaryUrl: string, mirrorUrl: string, path: string): Promise<string> {
  const [a, b] = await Promise.all([fetch(`${primaryUrl}${path}`), fetch(`${mirrorUrl}${path}`)]);
  const [ta, tb] = await Promise.all([a.text(), b.text()]);
  assert.equal(b.status, a.status, `${path}: status`);
  assert.equal(b.headers.get('content-type'), a.headers.get('content-type'), `${path}: content type`);
  assert.equal(tb, ta, `${path}: body`);
  return ta;
}

const seed = (n: number): Uint8Array => new Uint8Array(32).fill(n);

/** A DID registered and changed at a Directory with the SDK (seeds `n`, `n + 1`), every change waited for. */
export async function registerAndChange(url: string, n: number, alias: string): Promise<{ did: string; txs: string[] }> {
  const client = new DirectoryClient(url);
  const key = keyPairFromSeed(seed(n));
  const did = generateDid(PLATFORM, seed(n).slice(0, 16));
  const txs: string[] = [];
  const wait = async (p: Promise<{ tx_hash: string }>) => {
    const { tx_hash } = await p;
    txs.push(tx_hash);
    await client.waitForTransaction(tx_hash);
  };
  await wait(client.register({ did, key, didDocument: didDocumentFor(did, key.publicKey), alias }));
  await wait(client.addAlias(did, key, 'root', { alias: `${alias}-2` }));
  await wait(client.addDevice(did, key, 'root', { device_id: 'phone' }));
  const service = { id: `${did}#cache`, type: 'PlatformCacheService', serviceEndpoint: ['https://cache.example.com'] };
  await wait(client.addService(did, key, 'root', { service }));
  return { did, txs };
}
