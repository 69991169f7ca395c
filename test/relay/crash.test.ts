/**
 * Durability of chunk staging (http-api.md §10.4.3): a `ddn serve --roles relay` child process is killed with
 * SIGKILL between chunks of a set; after a restart on the same data directory the staged chunks are still
 * there (an identical retry replays the staged state) and the set completes and reaches the Cache.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadNodeKey } from '../../src/app/node-keys.js';
import { DirectoryClient } from '../../src/client/directory-client.js';
import { makeProfile } from '../../src/protocol/profile.js';
import { nodeDidFor } from '../../src/relay/node-identity.js';
import { isoSeconds, proofHeaders, registerRecipientAt } from '../cache/harness.js';
import { fetchJson, httpDirectory } from '../cache/http-support.js';
import { startTestNode } from '../support/network.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const profile = makeProfile('platform');
const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

interface Child {
  proc: ChildProcess;
  url: string;
  exited: Promise<unknown>;
}

/** `ddn serve --roles relay` against a remote Directory; resolves once it prints its listening line. */
function serveRelay(dataDir: string, directoryUrl: string): Promise<Child> {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('DDN_')) env[k] = v;
  const proc = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/cli/entry-dev.ts', 'serve', '--data-dir', dataDir, '--roles', 'relay', '--relay-port', '0',
      '--directory-url', directoryUrl, '--allow-private-endpoints', '--log-level', 'silent'],
    { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const exited = new Promise((resolve) => proc.on('close', resolve));
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    proc.stderr!.setEncoding('utf8').on('data', (s: string) => (err += s));
    proc.stdout!.setEncoding('utf8').on('data', (s: string) => {
      out += s;
      const nl = out.indexOf('\n');
      if (nl >= 0) resolve({ proc, url: (JSON.parse(out.slice(0, nl)) as { relay_url: string }).relay_url, exited });
    });
    void exited.then(() => reject(new Error(`ddn serve exited before listening:\n${err}`)));
  });
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
      assert.deepEqual((set.body.chunks as Record<string, unknown>[]).map((c) => c.message_id), chunks.map((c) => c.message_id));
    } finally {
      child?.proc.kill('SIGKILL');
      await child?.exited;
      await node.stop();
    }
  });
});
