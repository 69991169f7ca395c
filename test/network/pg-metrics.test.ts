/**
 * `/metrics` and `/ready` of a combined node on PostgreSQL (`--db`): the counters move with real work on the
 * database, and readiness checks the database. Registers only when DDN_TEST_PG_URL is set.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { makeProfile } from '../../src/protocol/profile.js';
import { isoSeconds, proofHeaders, registerRecipientAt } from '../cache/harness.js';
import { fetchJson } from '../cache/http-support.js';
import { scrape, total } from '../support/metrics.js';
import { startTestNode, type TestNode } from '../support/network.js';
import { freshPgSchema, PG_URL } from '../support/pg.js';
import { waitFor } from '../support/wait.js';

const profile = makeProfile('platform');

if (PG_URL) {
  describe('metrics and readiness of a node on PostgreSQL', () => {
    let node: TestNode;
    let drop: () => Promise<void>;

    before(async () => {
      const pg = await freshPgSchema();
      drop = pg.drop;
      node = await startTestNode(['--db', pg.url, '--db-schema', pg.schema, '--allow-private-endpoints']);
      await node.identity.ready;
    });
    after(async () => {
      await node?.stop();
      await drop?.();
    });

    it('is ready with the database answering', async () => {
      const ready = await fetchJson(`${node.urls.cache}/ready`);
      assert.equal(ready.status, 200, JSON.stringify(ready.body));
      assert.deepEqual(ready.body.checks, { storage: 'ok', database: 'ok', ledger: 'ok' });
    });

    it('counts a registration, a relayed envelope and its retrieval', async () => {
      const before = await scrape(node.urls.directory!);
      const via = {
        profile,
        call: (method: string, url: string, payload?: unknown) =>
          fetchJson(`${node.urls.directory!}${url}`, { method, ...(payload === undefined ? {} : { body: payload }) }),
        settle() {
          // the node produces blocks on PostgreSQL itself
        },
      };
      const r = await registerRecipientAt(via, 93, { cacheEndpoints: [node.urls.cache!] });
      await waitFor(
        'the recipient resolves',
        async () => (await fetch(`${node.urls.directory}/resolve/${encodeURIComponent(r.did)}`)).status === 200 || undefined,
      );
      const env = { message_id: randomUUID(), to: r.did, timestamp: isoSeconds(Date.now()), payload: { ciphertext_b64: Buffer.from('pg').toString('base64') } };
      const sent = await fetchJson(`${node.urls.relay}/relay`, { body: env });
      assert.equal(sent.status, 202, JSON.stringify(sent.body));
      const headers = proofHeaders(profile, r, 'pull', '*', { endpoint: node.urls.cache!, nowMs: Date.now() });
      const pulled = await fetchJson(`${node.urls.cache}/cache/messages/${encodeURIComponent(r.did)}`, { headers });
      assert.equal(pulled.status, 200, JSON.stringify(pulled.body));
      const after = await scrape(node.urls.cache!);

      const delta = (name: string, labels: Record<string, string> = {}) => total(after, name, labels) - total(before, name, labels);
      assert.equal(delta('ddn_directory_submissions_total', { outcome: 'ok' }), 1);
      assert.equal(delta('ddn_relay_deliveries_total', { code: String(sent.body.code) }), 1);
      assert.equal(delta('ddn_cache_operations_total', { operation: 'retrieval', outcome: 'ok' }), 1);
      assert.ok(delta('ddn_ledger_head_block') >= 1, 'the registration made a block on PostgreSQL');
      assert.ok(delta('ddn_ledger_blocks_total') >= 1);
      // the shared ledger's admission lock: the registration's batch and its block took it
      assert.ok(delta('ddn_ledger_lock_transactions_total', { work: 'admission' }) >= 1);
      assert.ok(delta('ddn_ledger_lock_transactions_total', { work: 'block' }) >= 1);
      assert.ok(delta('ddn_ledger_lock_transaction_seconds_total', { work: 'admission' }) > 0);
      assert.ok(delta('ddn_ledger_lock_held_seconds_total', { work: 'block' }) > 0);
      // the node is alone on its schema: its view is never behind, so its batch was stored on it
      assert.ok(delta('ddn_ledger_view_batches_total', { outcome: 'stored' }) >= 1);
      assert.equal(delta('ddn_ledger_view_batches_total', { outcome: 'conflict' }), 0);
      // the Relay on PostgreSQL reports the live announcements it dropped (none: it is alone)
      assert.deepEqual(
        after.filter((x) => x.name === 'ddn_relay_live_announcements_dropped_total').map((x) => x.value),
        [0],
      );
      // and its asks of other processes for a recipient with no Cache service (none: it sent to a Cache)
      assert.deepEqual(
        after.filter((x) => x.name === 'ddn_relay_live_asks_total').map((x) => x.labels.outcome),
        ['none', 'reached', 'unreached', 'late', 'failed'],
      );
      // the default --ledger-admission-wait-ms: a write alone never waits for company
      assert.ok(after.some((x) => x.name === 'ddn_ledger_admission_waits_total'));
      assert.equal(delta('ddn_ledger_admission_waits_total', { found: 'alone' }), 0);
      assert.ok(
        total(after, 'ddn_ledger_lock_wait_seconds_total', { work: 'admission' }) <=
          total(after, 'ddn_ledger_lock_transaction_seconds_total', { work: 'admission' }),
      );
    });
  });
}
