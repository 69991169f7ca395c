/**
 * Storage exhaustion degrades, never breaks (docs/public-node.md "Storage exhaustion"): a real node on a 20 MiB disk
 * (a tmpfs where the machine allows mounting one, else an injected size — the test names say which), filled with
 * ballast. Stores answer 507 while summaries, pulls and acks go on and replays are still refused; the Directory
 * answers 507 and `/health` says degraded; a stopped node starts again on the full disk and serves reads; once
 * the ballast is gone, stores and blocks resume, and every envelope that got a 202 is still there.
 */
import { checkedNode } from '../support/contract-check.js';
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { loadConfig } from '../../src/app/config.js';
import { startNode, type RunningNode } from '../../src/app/node.js';
import { makeProfile } from '../../src/protocol/profile.js';
import { RESERVE_FILE } from '../../src/store/storage-guard.js';
import { ackBody, isoSeconds, proofHeaders, registerRecipientAt, type Recipient } from '../cache/harness.js';
import { fetchJson, httpDirectory, type FetchReply } from '../cache/http-support.js';
import { prepareRegistration, registrationSubmitBody, type Reply } from '../support/directory-flows.js';
import type { DirectoryHarness } from '../support/directory-harness.js';
import { diskMode, smallDisk, type SmallDisk } from '../support/small-disk.js';

const PUBLIC_CACHE = 'https://cache.full-disk.example';
const RESERVE = 2 * 1024 * 1024;
const profile = makeProfile('platform');
const mode = diskMode();

const cleanups: (() => void | Promise<void>)[] = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

async function start(dataDir: string, disk: SmallDisk | null, extra: string[] = []): Promise<RunningNode> {
  const node = await startNode(
    loadConfig(
      [
        '--data-dir',
        dataDir,
        '--directory-port',
        '0',
        '--relay-port',
        '0',
        '--cache-port',
        '0',
        '--public-cache-url',
        PUBLIC_CACHE,
        '--storage-reserve-bytes',
        String(RESERVE),
        ...extra,
      ],
      {},
    ),
    { logger: pino({ level: 'silent' }), autoProduce: false, ...(disk?.freeSpace === undefined ? {} : { freeSpace: disk.freeSpace }) },
  );
  // every answer read from it is checked against its OpenAPI documents (test/support/contract-check.ts)
  return checkedNode(node);
}

const envelope = (to: string, i: number) => ({
  message_id: randomUUID(),
  to,
  timestamp: isoSeconds(Date.now()),
  payload: { ciphertext_b64: Buffer.alloc(20_000, i % 251).toString('base64') },
});

const store = (node: RunningNode, env: Record<string, unknown>) => fetchJson(`${node.urls.cache!}/cache/store`, { body: env });

/** Stores envelopes to `r` until one is refused (at most `max`); `between` runs after each. */
async function storeUntilRefused(node: RunningNode, r: Recipient, max: number, between = () => {}) {
  const accepted: string[] = [];
  for (let i = 0; i < max; i++) {
    const env = envelope(r.did, i);
    const res = await store(node, env);
    if (res.status !== 202) return { accepted, refused: res };
    accepted.push(env.message_id);
    between();
  }
  return { accepted, refused: undefined };
}

/** A retrieval with a fresh proof (or the given nonce). */
function retrieve(node: RunningNode, r: Recipient, op: 'summary' | 'pull', nonce?: string): Promise<FetchReply> {
  const path = op === 'summary' ? 'summary' : 'messages';
  const headers = proofHeaders(profile, r, op, '*', { endpoint: PUBLIC_CACHE, nowMs: Date.now(), ...(nonce === undefined ? {} : { nonce }) });
  return fetchJson(`${node.urls.cache!}/cache/${path}/${encodeURIComponent(r.did)}`, { headers });
}

function ack(node: RunningNode, r: Recipient, ids: string[], nonce: string): Promise<FetchReply> {
  const sorted = [...new Set(ids)].sort();
  const headers = proofHeaders(profile, r, 'ack', sorted.join(','), { endpoint: PUBLIC_CACHE, nowMs: Date.now(), nonce });
  // §11.6: the proof in the body (and the same headers, which must agree)
  return fetchJson(`${node.urls.cache!}/cache/ack`, { body: ackBody(headers, r.did, sorted), headers });
}

const idsOf = (summary: FetchReply): string[] =>
  ((summary.body.messages ?? summary.body.entries ?? []) as { message_id: string }[]).map((m) => m.message_id).sort();

/** Submits a registration for `seed` and returns the reply (not settled). */
async function submitRegistration(dir: Pick<DirectoryHarness, 'call' | 'settle' | 'profile'>, seed: number): Promise<{ did: string; reply: Reply }> {
  const { did, key, prepared } = await prepareRegistration(dir as DirectoryHarness, seed);
  return { did, reply: await dir.call('POST', '/register-did', registrationSubmitBody(prepared, key)) };
}

describe(`a full disk (${mode === 'tmpfs' ? 'a real 20 MiB tmpfs' : 'an injected 20 MiB disk: mounting is not permitted here'})`, () => {
  it('degrades: stores 507, reads and acks go on, the Directory 507, health degraded, restart on the full disk, resume with space', async () => {
    const disk = smallDisk(20 * 1024 * 1024);
    cleanups.push(() => disk.close());
    let node = await start(disk.dataDir, disk);
    cleanups.push(() => node.close());
    assert.equal(statSync(join(disk.dataDir, RESERVE_FILE)).size, RESERVE);
    const dir = httpDirectory(node);
    const r = await registerRecipientAt(dir, 91, { cacheEndpoints: [PUBLIC_CACHE] });
    // accepted before the disk fills, still waiting for its block
    const pending = await submitRegistration(dir, 92);
    assert.equal(pending.reply.status, 202, JSON.stringify(pending.reply.body));

    // fill the disk: ballast first, then envelopes until the disk is full
    disk.fill(3 * 1024 * 1024);
    // (an injected disk is looked at after each store, as the node's own timer would)
    const { accepted, refused } = await storeUntilRefused(node, r, 400, () => void (disk.mode === 'injected' && node.storage.check()));
    assert.ok(accepted.length > 0);
    assert.equal(refused?.status, 507, JSON.stringify(refused?.body));
    assert.equal(refused?.body.code, 'insufficient_storage');
    assert.equal(node.storage.isDegraded, true);
    // further stores are refused as well
    const again = await store(node, envelope(r.did, 1));
    assert.deepEqual([again.status, again.body.code], [507, 'insufficient_storage']);

    // reads and acks go on; their nonces are still single-use
    const summaryNonce = randomUUID();
    const summary = await retrieve(node, r, 'summary', summaryNonce);
    assert.equal(summary.status, 200, JSON.stringify(summary.body));
    assert.deepEqual(idsOf(summary), [...accepted].sort());
    const replayed = await retrieve(node, r, 'summary', summaryNonce);
    assert.deepEqual([replayed.status, replayed.body.code], [409, 'proof_nonce_replayed']);
    const pull = await retrieve(node, r, 'pull');
    assert.equal(pull.status, 200, JSON.stringify(pull.body).slice(0, 300));
    const ackNonce = randomUUID();
    const acked = await ack(node, r, [accepted[0]!], ackNonce);
    assert.equal(acked.status, 200, JSON.stringify(acked.body));
    assert.equal(acked.body.acked, 1);
    const ackReplay = await ack(node, r, [accepted[1]!], ackNonce);
    assert.deepEqual([ackReplay.status, ackReplay.body.code], [409, 'proof_nonce_replayed']);
    const held = accepted.slice(1);

    // the Directory refuses new submissions with 507, never 500; reads go on; health says degraded
    const refusedRegistration = await submitRegistration(dir, 93);
    assert.deepEqual([refusedRegistration.reply.status, refusedRegistration.reply.body.code], [507, 'insufficient_storage']);
    assert.equal((await dir.call('GET', `/resolve/${encodeURIComponent(r.did)}`)).status, 200);
    for (const url of Object.values(node.urls)) {
      const health = await fetchJson(`${url}/health`);
      assert.deepEqual([health.status, health.body.status], [200, 'degraded']);
      // a load balancer sees "not accepting writes" on /ready/writes; /ready keeps the node serving reads
      assert.equal((await fetchJson(`${url}/ready`)).status, 200);
      const writes = await fetchJson(`${url}/ready/writes`);
      assert.deepEqual([writes.status, writes.body.code], [503, 'service_unavailable']);
    }

    // a clean stop, the last free pages taken, a start on the full disk: reads are served, stores refused
    await node.close();
    disk.fillAll();
    node = await start(disk.dataDir, disk);
    assert.equal(node.storage.isDegraded, true);
    assert.equal(existsSync(join(disk.dataDir, RESERVE_FILE)), false);
    const afterRestart = await retrieve(node, r, 'summary');
    assert.equal(afterRestart.status, 200, JSON.stringify(afterRestart.body));
    assert.deepEqual(idsOf(afterRestart), [...held].sort());
    const replayAfterRestart = await retrieve(node, r, 'summary', summaryNonce);
    assert.deepEqual([replayAfterRestart.status, replayAfterRestart.body.code], [409, 'proof_nonce_replayed']);
    assert.deepEqual([(await store(node, envelope(r.did, 2))).status, (await fetchJson(`${node.urls.cache!}/health`)).body.status], [507, 'degraded']);

    // space returns: the reserve is written again, stores and blocks resume, nothing that got a 202 was lost
    disk.removeBallast();
    assert.equal(node.storage.check(), false);
    assert.equal(statSync(join(disk.dataDir, RESERVE_FILE)).size, RESERVE);
    assert.equal((await fetchJson(`${node.urls.directory!}/health`)).body.status, 'ok');
    assert.equal((await fetchJson(`${node.urls.cache!}/ready/writes`)).status, 200);
    const fresh = envelope(r.did, 3);
    assert.equal((await store(node, fresh)).status, 202);
    const dir2 = httpDirectory(node);
    dir2.settle();
    assert.equal((await dir2.call('GET', `/resolve/${encodeURIComponent(pending.did)}`)).status, 200);
    const later = await submitRegistration(dir2, 93);
    assert.equal(later.reply.status, 202, JSON.stringify(later.reply.body));
    dir2.settle();
    assert.equal((await dir2.call('GET', `/resolve/${encodeURIComponent(later.did)}`)).status, 200);
    const everything = await retrieve(node, r, 'pull');
    assert.equal(everything.status, 200);
    assert.deepEqual(idsOf(everything), [...held, fresh.message_id].sort());
    await node.close();
  });
});

describe('the Cache storage budget (--cache-storage-budget-bytes)', () => {
  it('answers 507 insufficient_storage beyond the budget on a disk with room, and takes stores again once acks freed space', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'ddn-budget-'));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const budget = 1024 * 1024;
    const node = await start(dataDir, null, ['--cache-storage-budget-bytes', String(budget)]);
    cleanups.push(() => node.close());
    const r = await registerRecipientAt(httpDirectory(node), 94, { cacheEndpoints: [PUBLIC_CACHE] });
    const { accepted, refused } = await storeUntilRefused(node, r, 200);
    assert.ok(accepted.length > 10 && accepted.length < 60, String(accepted.length));
    assert.equal(refused?.status, 507, JSON.stringify(refused?.body));
    assert.equal(refused?.body.code, 'insufficient_storage');
    const details = refused?.body.details as { limit_bytes: number; used_bytes: number };
    assert.equal(details.limit_bytes, budget);
    assert.ok(details.used_bytes <= budget && details.used_bytes > budget / 2);
    // a budget is not a full disk: the node is not degraded
    assert.equal(node.storage.isDegraded, false);
    assert.equal((await fetchJson(`${node.urls.cache!}/health`)).body.status, 'ok');

    assert.equal((await ack(node, r, accepted, randomUUID())).status, 200);
    assert.equal((await store(node, envelope(r.did, 7))).status, 202);
    await node.close();
  });
});
