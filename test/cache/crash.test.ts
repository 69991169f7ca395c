/**
 * Durability: a `ddn serve` child process takes a stream of stores and is killed with SIGKILL mid-stream; after
 * a restart on the same data directory every envelope that got a 202 is retrievable, byte for byte, and a proof
 * nonce used before the crash is still refused.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { loadConfig } from '../../src/app/config.js';
import { startNode } from '../../src/app/node.js';
import { makeProfile } from '../../src/protocol/profile.js';
import { isoSeconds, proofHeaders, registerRecipientAt, type Recipient } from './harness.js';
import { serveProcess, type ServeProcess } from '../support/serve-process.js';
import { fetchJson, httpDirectory } from './http-support.js';
import { checkContract, checkedNode, stopChecking, urlsOf } from '../support/contract-check.js';

const PUBLIC_CACHE = 'https://cache.crash.example';
const ACCEPTED_BEFORE_KILL = 300;
const WORKERS = 16;
const profile = makeProfile('platform');
const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** `ddn serve --roles cache` on `dataDir`, with the Cache's URL. */
async function serveCache(dataDir: string): Promise<ServeProcess & { url: string }> {
  const p = await serveProcess(['--data-dir', dataDir, '--roles', 'cache', '--cache-port', '0', '--public-cache-url', PUBLIC_CACHE, '--log-level', 'silent']);
  await checkContract(urlsOf(p));
  return Object.assign(p, { url: p.urls.cache! });
}

describe('crash durability', () => {
  it('keeps every envelope that got a 202 across SIGKILL and restart', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'ddn-cache-crash-'));
    dirs.push(dataDir);
    // Register the recipient on this data dir's ledger in-process, then hand the directory to the child.
    const setup = await checkedNode(
      await startNode(loadConfig(['--data-dir', dataDir, '--roles', 'directory', '--directory-port', '0', '--public-cache-url', PUBLIC_CACHE], {}), {
        logger: pino({ level: 'silent' }),
        autoProduce: false,
      }),
    );
    let r: Recipient;
    try {
      r = await registerRecipientAt(httpDirectory(setup), 81, { cacheEndpoints: [PUBLIC_CACHE] });
    } finally {
      await setup.close();
    }

    const first = await serveCache(dataDir);
    const sent = new Map<string, Record<string, unknown>>();
    const accepted: string[] = [];
    let stop = false;
    let killed = false;
    const usedProof = proofHeaders(profile, r, 'summary', '*', { endpoint: PUBLIC_CACHE, nowMs: Date.now() });
    const summaryUrl = (base: string) => `${base}/cache/summary/${encodeURIComponent(r.did)}`;
    assert.equal((await fetchJson(summaryUrl(first.url), { headers: usedProof })).status, 200);

    const worker = async (w: number): Promise<void> => {
      for (let i = 0; !stop; i++) {
        const env = {
          message_id: randomUUID(),
          to: r.did,
          timestamp: isoSeconds(Date.now()),
          payload: { ciphertext_b64: Buffer.alloc(i % 5 === 0 ? 48_000 : 300, (w * 31 + i) % 251).toString('base64') },
        };
        sent.set(env.message_id, env);
        let status: number;
        try {
          status = (
            await fetch(`${first.url}/cache/store`, {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify(env),
            })
          ).status;
        } catch {
          return; // the server died under this request
        }
        if (status === 202) accepted.push(env.message_id);
        else if (!killed) throw new Error(`unexpected status ${status}`);
        if (accepted.length >= ACCEPTED_BEFORE_KILL && !killed) {
          killed = true;
          first.proc.kill('SIGKILL');
        }
      }
    };
    const workers = Array.from({ length: WORKERS }, (_, w) => worker(w));
    await Promise.race([first.exited, Promise.all(workers)]);
    stop = true;
    await Promise.all(workers);
    await first.exited;
    stopChecking(urlsOf(first));
    assert.ok(killed, 'the server was killed mid-stream');
    assert.ok(accepted.length >= ACCEPTED_BEFORE_KILL);

    const second = await serveCache(dataDir);
    try {
      const replay = await fetchJson(summaryUrl(second.url), { headers: usedProof });
      assert.equal(replay.status, 409, 'a nonce used before the crash stays used');
      assert.equal(replay.body.code, 'proof_nonce_replayed');

      const pull = await fetchJson(`${second.url}/cache/messages/${encodeURIComponent(r.did)}`, {
        headers: proofHeaders(profile, r, 'pull', '*', { endpoint: PUBLIC_CACHE, nowMs: Date.now() }),
      });
      assert.equal(pull.status, 200, JSON.stringify(pull.body));
      assert.equal(pull.body.truncated, false);
      const held = new Map((pull.body.messages as { message_id: string; envelope: Record<string, unknown> }[]).map((m) => [m.message_id, m.envelope]));
      const lost = accepted.filter((id) => !held.has(id));
      assert.deepEqual(lost, [], `${lost.length} of ${accepted.length} accepted envelopes were lost`);
      for (const id of accepted) {
        const { expires_at, ...envelope } = held.get(id)!;
        assert.equal(typeof expires_at, 'string');
        assert.deepEqual(envelope, sent.get(id));
      }
    } finally {
      second.proc.kill('SIGTERM');
      await second.exited;
      stopChecking(urlsOf(second));
    }
  });
});
