/**
 * The store, staging and internals families of `GET /metrics` after real work over HTTP, on a combined node
 * (Directory, Relay, Cache) on SQLite files and, when DDN_TEST_PG_URL is set, on PostgreSQL (`--db`): envelopes and
 * bytes the Cache holds, its incomplete chunk sets and storage budget, the Relay's staged sets and bytes, block
 * production time; on SQLite also the writer threads' queues and commits and the verifier's queue; and the
 * rate-limit refusals of one budget.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, truncateSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { NodeMetrics } from '../../src/app/metrics.js';
import { buildInfo } from '../../src/app/version.js';
import { verifyOnThread } from '../../src/crypto/verify-thread.js';
import { SqliteMailboxStore } from '../../src/store/sqlite/mailbox-store.js';
import { detachCheckpoints, WalCheckpointer, type CheckpointerReport } from '../../src/store/sqlite/wal-checkpointer.js';
import { isoSeconds, registerRecipientAt, type Recipient } from '../cache/harness.js';
import { fetchJson, httpDirectory } from '../cache/http-support.js';
import { parseExposition, scrape, total, type Sample } from '../support/metrics.js';
import { startTestNode, type TestNode } from '../support/network.js';
import { freshPgSchema, PG_URL } from '../support/pg.js';
import { waitFor } from '../support/wait.js';

type Body = Record<string, unknown>;
const BUDGET = 50_000_000;

/** Where a node keeps its data: extra `ddn serve` arguments and what removes it afterwards. */
interface Backend {
  name: string;
  sqlite: boolean;
  open(): Promise<{ args: string[]; drop(): Promise<void> }>;
}

const backends: Backend[] = [
  { name: 'SQLite', sqlite: true, open: async () => ({ args: [], drop: async () => {} }) },
  ...(PG_URL
    ? [
        {
          name: 'PostgreSQL',
          sqlite: false,
          async open() {
            const pg = await freshPgSchema();
            return { args: ['--db', pg.url, '--db-schema', pg.schema], drop: pg.drop };
          },
        },
      ]
    : []),
];

/** A compact envelope to `to` (what the Cache and the Relay hold of it is exactly this text). */
function envelopeText(to: string, over: Body = {}): string {
  const env = {
    message_id: randomUUID(),
    to,
    tag: 'invoice',
    timestamp: isoSeconds(Date.now()),
    payload: { ciphertext_b64: Buffer.from(randomUUID()).toString('base64') },
    ...over,
  };
  return JSON.stringify(env);
}

async function post(url: string, text: string): Promise<{ status: number; body: Body }> {
  return fetchJson(url, { body: text });
}

for (const backend of backends) {
  describe(`store and internals metrics on ${backend.name}`, () => {
    let node: TestNode;
    let drop: () => Promise<void> = async () => {};
    let r: Recipient;

    before(async () => {
      const data = await backend.open();
      drop = data.drop;
      node = await startTestNode(['--allow-private-endpoints', '--cache-storage-budget-bytes', String(BUDGET), ...data.args]);
      await node.identity.ready;
    });
    after(async () => {
      await node?.stop();
      await drop();
    });

    it('moves the Cache, Relay and ledger families by exactly the work done', async () => {
      const at = (): Promise<Sample[]> => scrape(node.urls.cache!);
      const start = await at();
      const delta = (now: readonly Sample[], name: string, labels: Record<string, string> = {}) => total(now, name, labels) - total(start, name, labels);

      // a recipient whose Cache is this node's (blocks come from the node's own producer on either backend)
      r = await registerRecipientAt({ ...httpDirectory(node), settle() {} }, 61, { cacheEndpoints: [node.urls.cache!] });
      await waitFor(
        'the recipient resolves',
        async () => (await fetch(`${node.urls.directory}/resolve/${encodeURIComponent(r.did)}`)).status === 200 || undefined,
      );

      // Cache: three envelopes and the first chunk of a set of two, stored directly
      const plain = [envelopeText(r.did), envelopeText(r.did, { tag: 'a-longer-tag-than-the-others' }), envelopeText(r.did, { ttl: '1h' })];
      const cacheSet = randomUUID();
      const cacheChunks = [0, 1].map((seq) => envelopeText(r.did, { message_group_id: cacheSet, sequence_number: seq, total_chunks: 2 }));
      for (const text of [...plain, cacheChunks[0]!]) {
        const res = await post(`${node.urls.cache}/cache/store`, text);
        assert.equal(res.status, 202, JSON.stringify(res.body));
      }
      // Relay: the first chunk of another set of two, staged
      const relaySet = randomUUID();
      const relayChunks = [0, 1].map((seq) => envelopeText(r.did, { message_group_id: relaySet, sequence_number: seq, total_chunks: 2 }));
      const staged = await post(`${node.urls.relay}/relay`, relayChunks[0]!);
      assert.equal(staged.body.code, 'chunk_staged', JSON.stringify(staged.body));

      const bytes = (texts: readonly string[]) => texts.reduce((n, t) => n + Buffer.byteLength(t), 0);
      const mid = await at();
      assert.equal(delta(mid, 'ddn_cache_envelopes_held'), 4);
      assert.equal(delta(mid, 'ddn_cache_envelope_bytes_held'), bytes([...plain, cacheChunks[0]!]));
      assert.equal(delta(mid, 'ddn_cache_incomplete_chunk_sets'), 1);
      assert.equal(delta(mid, 'ddn_relay_staged_chunk_sets'), 1);
      assert.equal(delta(mid, 'ddn_relay_staged_bytes'), Buffer.byteLength(relayChunks[0]!));
      assert.equal(total(mid, 'ddn_cache_storage_budget_bytes'), BUDGET);
      const used = total(mid, 'ddn_cache_storage_budget_used_bytes');
      if (backend.sqlite) assert.ok(used > 0, 'the mailbox file has pages in use');
      else assert.equal(used, total(mid, 'ddn_cache_envelope_bytes_held'), 'on PostgreSQL the budget counts envelope bytes');

      // both sets complete: the Cache's by its second chunk, the Relay's delivered (both chunks) to the Cache
      assert.equal((await post(`${node.urls.cache}/cache/store`, cacheChunks[1]!)).status, 202);
      const delivered = await post(`${node.urls.relay}/relay`, relayChunks[1]!);
      assert.equal(delivered.body.code, 'chunk_set_delivered', JSON.stringify(delivered.body));

      const end = await at();
      assert.equal(delta(end, 'ddn_cache_envelopes_held'), 7);
      assert.equal(delta(end, 'ddn_cache_envelope_bytes_held'), bytes([...plain, ...cacheChunks, ...relayChunks]));
      assert.equal(delta(end, 'ddn_cache_incomplete_chunk_sets'), 0);
      assert.equal(total(end, 'ddn_relay_staged_chunk_sets'), 0);
      assert.equal(total(end, 'ddn_relay_staged_bytes'), 0);

      // every block of the registration was produced here, and each one timed
      const blocks = delta(end, 'ddn_ledger_blocks_total');
      assert.ok(blocks >= 1);
      assert.equal(delta(end, 'ddn_ledger_block_production_seconds_count'), blocks);
      assert.ok(delta(end, 'ddn_ledger_block_production_seconds_sum') > 0);

      if (backend.sqlite) {
        // the stores and nonces went through both writer threads, each batch timed; nothing waits now
        for (const store of ['mailbox', 'relay']) {
          assert.ok(delta(end, 'ddn_sqlite_writer_commit_seconds_count', { store }) >= 1, store);
          assert.equal(total(end, 'ddn_sqlite_writer_queued_operations', { store }), 0, store);
        }
        // the mailbox's checkpointer thread copies the stores into the file (a pass a second); the writer never had
        // to, and the small ledger keeps SQLite's own checkpoints (no series)
        const checkpoints = (kind: string, from: readonly Sample[]) => total(from, 'ddn_sqlite_checkpoints_total', { store: 'mailbox', kind });
        const copied = await waitFor('a checkpointer pass', async () => {
          const samples = await scrape(node.urls.cache!);
          return checkpoints('pass', samples) >= 1 ? samples : undefined;
        });
        for (const kind of ['failed', 'rewind', 'writer']) assert.equal(checkpoints(kind, copied), 0, kind);
        assert.ok(!copied.some((s) => s.name === 'ddn_sqlite_checkpoints_total' && s.labels.store === 'ledger'), 'no ledger series');
      } else {
        assert.equal(end.filter((s) => s.name.startsWith('ddn_sqlite_')).length, 0, 'no SQLite writer or checkpoints on PostgreSQL');
      }
    });

    if (backend.sqlite) {
      it('reports the writer and verifier queues while work waits', async () => {
        // submitted in this turn, so still queued when the gauges are read (they are read in the scrape's first turn)
        const store = node.cache!.store;
        assert.ok(store instanceof SqliteMailboxStore);
        const nowMs = Date.now();
        const claims = [1, 2, 3].map((i) =>
          store.claimNonce({ scope: 'proof', did: r.did, keyId: `${r.did}#key-1`, nonce: `queued-${i}-${randomUUID()}`, expiresAtMs: nowMs + 60_000 }, nowMs),
        );
        const verdicts = [1, 2].map(() => verifyOnThread(new Uint8Array(32), [new Uint8Array(8)], new Uint8Array(64)));
        const text = node.metrics.text();
        const waiting = parseExposition(await text);
        assert.equal(total(waiting, 'ddn_sqlite_writer_queued_operations', { store: 'mailbox' }), 3);
        assert.equal(total(waiting, 'ddn_verifier_pending_signatures'), 2);
        assert.deepEqual(await Promise.all(claims), [true, true, true]);
        await Promise.all(verdicts);
        const done = parseExposition(await node.metrics.text());
        assert.equal(total(done, 'ddn_sqlite_writer_queued_operations', { store: 'mailbox' }), 0);
        assert.equal(total(done, 'ddn_verifier_pending_signatures'), 0);
      });
    }
  });
}

describe('ddn_sqlite_checkpoints_total', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'ddn-ckpt-metrics-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("counts the checkpointer thread's failed passes as kind=failed", async () => {
    // a writer's committed frames, named by the WAL index, then lost from the WAL file (a damaged disk): every pass
    // of the thread reads them, and SQLite fails it with an I/O error
    const path = join(dir, 'lost-frames.sqlite');
    const writer = new Database(path);
    writer.pragma('journal_mode = WAL');
    detachCheckpoints(writer);
    writer.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB NOT NULL)');
    const insert = writer.prepare('INSERT INTO t (body) VALUES (?)');
    for (let i = 0; i < 64; i++) insert.run(Buffer.alloc(100, i));
    // the schema in the database file, and a commit that leaves its page alone (rows of the same size) in the WAL: the
    // thread's connection opens and reads the schema (a failure there would end the thread, not fail a pass)
    writer.pragma('wal_checkpoint(TRUNCATE)');
    writer.exec('UPDATE t SET body = zeroblob(100)');
    // the WAL's header is all that is left of it
    truncateSync(`${path}-wal`, 32);
    const c = new WalCheckpointer(path, { intervalMs: 5 });
    const reports: CheckpointerReport[] = [];
    c.onReport((r) => reports.push(r));
    const metrics = new NodeMetrics(buildInfo());
    metrics.sqliteCheckpoints('mailbox', () => c.stats);
    try {
      // each pass fails and the next one tries again
      await waitFor('two failed passes', async () => (reports.filter((r) => r.type === 'failed').length >= 2 ? true : undefined), { tries: 2400 });
    } finally {
      await c.stop();
      writer.close();
    }
    // stopped: nothing moves the counts any more
    const failed = reports.filter((r) => r.type === 'failed');
    assert.equal(failed.length, reports.length, 'no pass succeeded');
    for (const r of failed) assert.match(r.message, /disk I\/O error/);
    assert.equal(c.stats.failures, failed.length);
    assert.equal(c.stats.passes, 0);
    const samples = parseExposition(await metrics.text());
    const checkpoints = (kind: string) => total(samples, 'ddn_sqlite_checkpoints_total', { store: 'mailbox', kind });
    assert.equal(checkpoints('failed'), failed.length);
    for (const kind of ['pass', 'rewind', 'writer']) assert.equal(checkpoints(kind), 0, kind);
  });

  describe('of a ledger past the size from which its checkpoints run on a thread', () => {
    let node: TestNode;
    before(async () => {
      // any ledger file is past one byte: the node opens it with its checkpointer thread, as it would a 256 MiB one
      node = await startTestNode(['--roles', 'directory', '--allow-private-endpoints'], undefined, { ledgerCheckpointerFromBytes: 1 });
    });
    after(async () => {
      await node?.stop();
    });

    it('exports the store="ledger" series of the node, its passes counting up as the ledger is written', async () => {
      const ledger = (samples: readonly Sample[], kind: string) => total(samples, 'ddn_sqlite_checkpoints_total', { store: 'ledger', kind });
      const passesFrom = (least: number) =>
        waitFor(
          `more than ${least} ledger checkpointer passes`,
          async () => {
            const samples = await scrape(node.urls.directory!);
            return ledger(samples, 'pass') > least ? samples : undefined;
          },
          { tries: 2400 },
        );
      const first = await passesFrom(0);
      const kinds = first.filter((s) => s.name === 'ddn_sqlite_checkpoints_total' && s.labels.store === 'ledger').map((s) => s.labels.kind);
      assert.deepEqual(kinds.sort(), ['failed', 'pass', 'rewind', 'writer']);
      for (const kind of ['failed', 'rewind', 'writer']) assert.equal(ledger(first, kind), 0, kind);
      // a registration's blocks are new WAL frames: a later pass copies them
      await registerRecipientAt(httpDirectory(node), 62);
      await passesFrom(ledger(first, 'pass'));
    });
  });
});

describe('ddn_rate_limit_refusals_total', () => {
  let node: TestNode;
  before(async () => {
    node = await startTestNode(['--roles', 'directory,cache', '--rate-limit-cache-retrieval', '1/1m']);
  });
  after(async () => {
    await node?.stop();
  });

  it('counts a refused request under its budget, and only there', async () => {
    const start = await scrape(node.urls.cache!);
    const url = `${node.urls.cache}/cache/summary/${encodeURIComponent('did:example:nobody')}`;
    const first = await fetchJson(url);
    assert.notEqual(first.status, 429, 'the first request is within the budget');
    const second = await fetchJson(url);
    assert.equal(second.status, 429);
    assert.equal(second.body.code, 'rate_limited');
    const end = await scrape(node.urls.cache!);
    const delta = (labels: Record<string, string>) =>
      total(end, 'ddn_rate_limit_refusals_total', labels) - total(start, 'ddn_rate_limit_refusals_total', labels);
    assert.equal(delta({ class: 'cache-retrieval' }), 1);
    assert.equal(delta({}), 1, 'no other budget counted it');
  });
});

describe('ddn_http_body_refusals_total and ddn_http_body_bytes_in_flight', () => {
  let node: TestNode;
  before(async () => {
    node = await startTestNode(['--roles', 'cache', '--http-body-budget-per-address-bytes', '1000']);
  });
  after(async () => {
    await node?.stop();
  });

  it('counts a body refused over its address share, and holds nothing once it is answered', async () => {
    const start = await scrape(node.urls.cache!);
    const { port } = new URL(node.urls.cache!);
    // only the headers: the refusal comes before any byte of the body
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port: Number(port) });
      let text = '';
      socket.setEncoding('utf8');
      socket.on('data', (c: string) => (text += c));
      socket.on('error', reject);
      socket.on('close', () => resolve(text));
      socket.write('POST /cache/store HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2000\r\n\r\n');
    });
    assert.match(answer, /^HTTP\/1.1 429 /);
    assert.match(answer, /"reason":"body_share"/);
    const end = await scrape(node.urls.cache!);
    const delta = (labels: Record<string, string>) => total(end, 'ddn_http_body_refusals_total', labels) - total(start, 'ddn_http_body_refusals_total', labels);
    assert.equal(delta({ reason: 'body_share' }), 1);
    assert.equal(delta({ reason: 'body_budget' }), 0);
    assert.equal(total(end, 'ddn_http_body_bytes_in_flight', {}), 0);
  });
});
