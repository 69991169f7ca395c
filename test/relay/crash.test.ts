/**
 * Durability of chunk staging (http-api.md §10.4.3): a `ddn serve --roles relay` child process is killed with
 * SIGKILL between chunks of a set; after a restart on the same data directory the staged chunks are still
 * there (an identical retry replays the staged state) and the set completes and reaches the Cache.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadNodeKey } from '../../src/app/node-keys.js';
import { DirectoryClient } from '../../src/client/directory-client.js';
import { makeProfile } from '../../src/protocol/profile.js';
import { nodeDidFor } from '../../src/relay/node-identity.js';
import { isoSeconds, proofHeaders, registerRecipientAt } from '../cache/harness.js';
import { serveProcess, type ServeProcess } from '../support/serve-process.js';
import { fetchJson, httpDirectory } from '../cache/http-support.js';
import { startTestNode } from '../support/network.js';

const profile = makeProfile('platform');
const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** `ddn serve --roles relay` against a remote Directory, with the Relay's URL. */
type Child = ServeProcess & { url: string };

async function serveRelay(dataDir: string, directoryUrl: string): Promise<Child> {
  const p = await serveProcess([
    '--data-dir',
    dataDir,
    '--roles',
    'relay',
    '--relay-port',
    '0',
    '--directory-url',
    directoryUrl,
    '--allow-private-endpoints',
    '--log-level',
    'silent',
  ]);
  return Object.assign(p, { url: p.urls.relay! });
}

describe('relay staging crash durability', () => {
  it('keeps staged chunks across SIGKILL and completes the set after a restart', async () => {
    const node = await startTestNode(['--roles', 'directory,cache']);
    const relayDir = mkdtempSync(join(tmpdir(), 'ddn-relay-crash-'));
    dirs.push(relayDir);
    let child: Child | undefined;
    try {
      const r = await registerRecipientAt(httpDirectory(node), 95, { cacheEndpoints: [node.urls.cache!] });
      const group = randomUUID();
      const chunks = [0, 1, 2].map((seq) => ({
        message_id: randomUUID(),
        to: r.did,
        timestamp: isoSeconds(Date.now()),
        message_group_id: group,
        sequence_number: seq,
        total_chunks: 3,
        payload: { ciphertext_b64: Buffer.alloc(2000, seq + 1).toString('base64') },
      }));

      child = await serveRelay(relayDir, node.urls.directory!);
      const send = (i: number) => fetchJson(`${child!.url}/relay`, { body: chunks[i] });
      assert.equal((await send(0)).body.code, 'chunk_staged');
      const staged = await send(1);
      assert.equal(staged.body.code, 'chunk_staged');
      assert.equal((staged.body.details as Record<string, unknown>).received_chunks, 2);

      child.proc.kill('SIGKILL');
      await child.exited;
      child = await serveRelay(relayDir, node.urls.directory!);

      const replay = await send(1);
      assert.equal(replay.status, 202);
      assert.equal(replay.body.code, 'chunk_staged');
      assert.equal((replay.body.details as Record<string, unknown>).received_chunks, 2, 'both staged chunks survived the kill');

      // The restarted Relay signs as the same node DID (registered at the Directory by the first run).
      const relayDid = nodeDidFor(profile, loadNodeKey(relayDir).publicKey);
      const client = new DirectoryClient(node.urls.directory!);
      await client.waitForRegistration(relayDid, { timeoutMs: 30_000, intervalMs: 50 });

      const done = await send(2);
      assert.equal(done.status, 202, JSON.stringify(done.body));
      assert.equal(done.body.code, 'chunk_set_delivered');
      const proof = proofHeaders(profile, r, 'chunks', group, { endpoint: node.urls.cache!, nowMs: Date.now() });
      const set = await fetchJson(`${node.urls.cache}/cache/chunks/${encodeURIComponent(r.did)}/${group}`, { headers: proof });
      assert.equal(set.status, 200, JSON.stringify(set.body));
      assert.deepEqual(
        (set.body.chunks as Record<string, unknown>[]).map((c) => c.message_id),
        chunks.map((c) => c.message_id),
      );
    } finally {
      child?.proc.kill('SIGKILL');
      await child?.exited;
      await node.stop();
    }
  });
});
