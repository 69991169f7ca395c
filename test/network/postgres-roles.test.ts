/**
 * Several Cache processes and several Relay processes on one PostgreSQL database (`--db`): a copy stored
 * through one Cache is served and acknowledged through the other; a retrieval proof used at one is refused at
 * the other; a chunk set staged by one Relay is completed by another. Registers only when DDN_TEST_PG_URL is set.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { makeProfile } from '../../src/protocol/profile.js';
import { ackBody, isoSeconds, proofHeaders, registerRecipientAt, type Recipient } from '../cache/harness.js';
import { fetchJson, httpDirectory } from '../cache/http-support.js';
import { startTestNode, type TestNode } from '../support/network.js';
import { freshPgSchema, PG_URL } from '../support/pg.js';
import { unusedPort } from '../support/ports.js';

const profile = makeProfile('platform');

if (PG_URL) {
  describe('Cache and Relay processes sharing one PostgreSQL database', () => {
    let dir: TestNode;
    let cacheA: TestNode;
    let cacheB: TestNode;
    let relayA: TestNode;
    let relayB: TestNode;
    let r: Recipient;
    let drop: () => Promise<void>;
    let publicCache: string;

    before(async () => {
      const pg = await freshPgSchema();
      drop = pg.drop;
      const db = ['--db', pg.url, '--db-schema', pg.schema];
      dir = await startTestNode(['--roles', 'directory']);
      // Both Caches stand behind one public URL (Cache A's address), as behind a load balancer.
      // (the shared public Cache URL must be known before the Caches start)
      const port = await unusedPort();
      publicCache = `http://127.0.0.1:${port}`;
      const cacheArgs = ['--roles', 'cache', '--directory-url', dir.urls.directory!, '--public-cache-url', publicCache, ...db];
      cacheA = await startTestNode([...cacheArgs, '--cache-port', String(port)]);
      cacheB = await startTestNode(cacheArgs);
      const relayArgs = ['--roles', 'relay', '--directory-url', dir.urls.directory!, '--allow-private-endpoints', ...db];
      relayA = await startTestNode(relayArgs);
      relayB = await startTestNode(relayArgs);
      await Promise.all([relayA.identity.ready, relayB.identity.ready]);
      r = await registerRecipientAt(httpDirectory(dir), 81, { cacheEndpoints: [publicCache] });
    });
    after(async () => {
      for (const n of [relayA, relayB, cacheA, cacheB, dir]) await n?.stop();
      await drop?.();
    });

    const envelope = (over: Record<string, unknown> = {}) => ({
      message_id: randomUUID(),
      to: r.did,
      timestamp: isoSeconds(Date.now()),
      payload: { ciphertext_b64: Buffer.from(randomUUID()).toString('base64') },
      ...over,
    });
    const proof = (op: Parameters<typeof proofHeaders>[2], subject: string, nonce?: string) =>
      proofHeaders(profile, r, op, subject, { endpoint: publicCache, nowMs: Date.now(), ...(nonce ? { nonce } : {}) });

    it('serves at Cache B what was stored through Cache A, and acknowledgement at B deletes it for both', async () => {
      const env = envelope();
      const stored = await fetchJson(`${cacheA.urls.cache}/cache/store`, { body: env });
      assert.equal(stored.status, 202, JSON.stringify(stored.body));
      const pulled = await fetchJson(`${cacheB.urls.cache}/cache/messages/${encodeURIComponent(r.did)}`, { headers: proof('pull', '*') });
      assert.equal(pulled.status, 200, JSON.stringify(pulled.body));
      assert.ok((pulled.body.messages as { message_id: string }[]).some((m) => m.message_id === env.message_id));
      const dup = await fetchJson(`${cacheB.urls.cache}/cache/store`, { body: env });
      assert.equal(dup.body.deduped, true);
      const p = proof('ack', env.message_id);
      const ack = await fetchJson(`${cacheB.urls.cache}/cache/ack`, {
        body: ackBody(p, r.did, [env.message_id]),
      });
      assert.deepEqual(ack.body, { acked: 1, message_ids: [env.message_id] });
      const after = await fetchJson(`${cacheA.urls.cache}/cache/message/${encodeURIComponent(r.did)}/${env.message_id}`, {
        headers: proof('pull_message', env.message_id),
      });
      assert.equal(after.status, 404);
    });

    it('refuses at Cache B a retrieval-proof nonce already used at Cache A', async () => {
      const nonce = randomUUID();
      const first = await fetchJson(`${cacheA.urls.cache}/cache/summary/${encodeURIComponent(r.did)}`, { headers: proof('summary', '*', nonce) });
      assert.equal(first.status, 200, JSON.stringify(first.body));
      const replay = await fetchJson(`${cacheB.urls.cache}/cache/summary/${encodeURIComponent(r.did)}`, { headers: proof('summary', '*', nonce) });
      assert.equal(replay.status, 409);
      assert.equal(replay.body.code, 'proof_nonce_replayed');
    });

    it('completes at Relay B a chunk set staged through Relay A', async () => {
      const group = randomUUID();
      const chunks = [0, 1, 2].map((seq) => envelope({ message_group_id: group, sequence_number: seq, total_chunks: 3 }));
      assert.equal((await fetchJson(`${relayA.urls.relay}/relay`, { body: chunks[0] })).body.code, 'chunk_staged');
      assert.equal((await fetchJson(`${relayA.urls.relay}/relay`, { body: chunks[1] })).body.code, 'chunk_staged');
      const done = await fetchJson(`${relayB.urls.relay}/relay`, { body: chunks[2] });
      assert.equal(done.status, 202, JSON.stringify(done.body));
      assert.equal(done.body.code, 'chunk_set_delivered');
      const set = await fetchJson(`${cacheB.urls.cache}/cache/chunks/${encodeURIComponent(r.did)}/${group}`, { headers: proof('chunks', group) });
      assert.equal(set.status, 200, JSON.stringify(set.body));
      assert.deepEqual(
        (set.body.chunks as { message_id: string }[]).map((c) => c.message_id),
        chunks.map((c) => c.message_id),
      );
    });
  });
}
