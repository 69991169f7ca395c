/**
 * Two combined nodes (`--roles directory,relay,cache`, the default) on one PostgreSQL schema: a DID registered
 * through one is resolved by the other, both hold the same blocks, and an envelope relayed by one is served by the
 * other's Cache. Registers only when DDN_TEST_PG_URL is set.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { copyFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ATTESTOR_KEY_FILE, GENESIS_FILE } from '../../src/app/node-keys.js';
import { makeProfile } from '../../src/protocol/profile.js';
import { isoSeconds, proofHeaders, registerRecipientAt, type Recipient } from '../cache/harness.js';
import { fetchJson } from '../cache/http-support.js';
import { freshPgSchema, PG_URL } from '../support/pg.js';
import { startTestNode, type TestNode } from '../support/network.js';
import { waitFor } from '../support/wait.js';

const profile = makeProfile('platform');

if (PG_URL) {
  describe('two combined nodes on one PostgreSQL schema', () => {
    let a: TestNode;
    let b: TestNode;
    let r: Recipient;
    let drop: () => Promise<void>;

    before(async () => {
      const pg = await freshPgSchema();
      drop = pg.drop;
      const args = ['--db', pg.url, '--db-schema', pg.schema, '--allow-private-endpoints'];
      const dirA = mkdtempSync(join(tmpdir(), 'ddn-combined-'));
      a = await startTestNode(args, dirA);
      const dirB = mkdtempSync(join(tmpdir(), 'ddn-combined-'));
      for (const f of [GENESIS_FILE, ATTESTOR_KEY_FILE]) copyFileSync(join(dirA, f), join(dirB, f));
      b = await startTestNode(args, dirB);
      await Promise.all([a.identity.ready, b.identity.ready]);
      const viaA = {
        profile,
        async call(method: string, url: string, payload?: unknown) {
          return fetchJson(`${a.urls.directory!}${url}`, { method, ...(payload === undefined ? {} : { body: payload }) });
        },
        settle() {
          // the producing node makes the blocks; finality is awaited below
        },
      };
      r = await registerRecipientAt(viaA, 97, { cacheEndpoints: [a.urls.cache!, b.urls.cache!] });
      await waitFor(
        'the recipient resolves at both nodes',
        async () =>
          (await Promise.all([a, b].map((n) => fetch(`${n.urls.directory!}/resolve/${encodeURIComponent(r.did)}`)))).every((x) => x.status === 200) ||
          undefined,
      );
    });
    after(async () => {
      for (const n of [a, b]) await n?.stop();
      await drop?.();
    });

    it('shares one chain: the same blocks at both nodes', async () => {
      await waitFor('both nodes at the same head', async () => a.ledger.headRef().hash === b.ledger.headRef().hash || undefined);
      const head = a.ledger.headRef().number;
      for (let n = 1; n <= head; n++) assert.deepEqual(a.ledger.block(n)?.block.hash, b.ledger.block(n)?.block.hash);
    });

    it('relays through one node into the shared mailbox and serves it through the other', async () => {
      const env = {
        message_id: randomUUID(),
        to: r.did,
        timestamp: isoSeconds(Date.now()),
        payload: { ciphertext_b64: Buffer.from('hello').toString('base64') },
      };
      const sent = await fetchJson(`${b.urls.relay!}/relay`, { body: env });
      assert.equal(sent.status, 202, JSON.stringify(sent.body));
      const headers = proofHeaders(profile, r, 'pull', '*', { endpoint: a.urls.cache!, nowMs: Date.now() });
      const pulled = await fetchJson(`${a.urls.cache!}/cache/messages/${encodeURIComponent(r.did)}`, { headers });
      assert.equal(pulled.status, 200, JSON.stringify(pulled.body));
      assert.deepEqual(
        (pulled.body.messages as { message_id: string }[]).map((m) => m.message_id),
        [env.message_id],
      );
    });
  });
}
