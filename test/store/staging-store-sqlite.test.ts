/**
 * The RelayStagingStore contract on SQLite, a fresh file per test, with its writes on the writer thread (the
 * default for a file) and on the store's own connection; and what the writer thread adds: writes leave the event
 * loop, and a thread that dies is replaced without losing a staged chunk.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import Database from 'better-sqlite3';
import type { NonceClaim } from '../../src/ports/nonce-registry.js';
import { NO_ATTEMPT, successResult } from '../../src/relay/delivery-result.js';
import { migrate } from '../../src/store/sqlite/database.js';
import { RELAY_MIGRATIONS, SqliteRelayStagingStore, type SqliteRelayStagingOptions } from '../../src/store/sqlite/relay-staging-store.js';
import type { WorkerWriter } from '../../src/store/sqlite/worker-writer.js';
import type { OpResults, WriteOp } from '../../src/store/sqlite/op-writer.js';
import { isCode, R, req, stagingContract, T } from './staging-contract.js';

for (const [name, options] of [
  ['sqlite, writer thread', {}],
  ['sqlite, writes on the calling thread', { inThreadWriter: true }],
] as [string, SqliteRelayStagingOptions][]) {
  stagingContract(name, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ddn-relay-store-'));
    const path = join(dir, 'relay.sqlite');
    return {
      open: async () => SqliteRelayStagingStore.open(path, options),
      dispose: async () => rmSync(dir, { recursive: true, force: true }),
    };
  });
}

const writerOf = (s: SqliteRelayStagingStore) => (s as unknown as { writer: WorkerWriter<WriteOp, OpResults<WriteOp>> }).writer;
const threadNames = () => readdirSync('/proc/self/task').map((t) => readFileSync(`/proc/self/task/${t}/comm`, 'utf8').trim());

describe("the Relay store's writer thread", () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'ddn-relay-writer-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("writes a file's store on a thread of its own, named ddn-relay-w", async () => {
    const s = SqliteRelayStagingStore.open(join(dir, 'named.sqlite'));
    try {
      await s.stage(req('g', 0));
      assert.equal(writerOf(s).constructor.name, 'WorkerWriter');
      if (process.platform === 'linux') assert.ok(threadNames().includes('ddn-relay-w'), threadNames().join(', '));
      // the main connection reads what the thread committed
      assert.equal((await s.loadSet(R, 'g')).length, 1);
      assert.ok(s.writeStats.commits >= 1);
    } finally {
      await s.close();
    }
  });

  it('a thread that dies is replaced: what it was sent fails with 507 staging_persist_failed, every staged chunk is kept', async () => {
    const exits: boolean[] = [];
    const s = SqliteRelayStagingStore.open(join(dir, 'restart.sqlite'), { writer: { onThreadExit: (_e, restarted) => exits.push(restarted) } });
    try {
      const big = { maxBytes: 1e9, maxSetsPerRecipient: 1e6 };
      await s.stage(req('kept', 0, big));
      const groups = Array.from({ length: 2000 }, (_, i) => `g${i}`);
      const outcomes = groups.map((g) =>
        s.stage(req(g, 0, big)).then(
          () => 'staged',
          (e: unknown) => e,
        ),
      );
      // the batch is posted at the end of this turn; the thread is ended while it works on it
      await new Promise((r) => setImmediate(r));
      await (writerOf(s) as unknown as { worker: Worker }).worker.terminate();
      const settled = await Promise.all(outcomes);
      assert.deepEqual(exits, [true]);
      assert.ok(
        settled.some((o) => o !== 'staged'),
        'the thread ended before its batch committed',
      );
      for (const o of settled) if (o !== 'staged') assert.ok(isCode('staging_persist_failed')(o), String(o));
      for (const [i, g] of groups.entries()) {
        if (settled[i] === 'staged') assert.equal((await s.loadSet(R, g)).length, 1, `answered as staged but missing: ${g}`);
      }
      // the new thread takes the next writes; the chunk staged before the death is still there
      const again = await s.stage(req('kept', 1, big));
      assert.deepEqual({ received: again.received, complete: again.complete }, { received: 2, complete: true });
      assert.equal(await s.claimNonce({ scope: 'relay', did: R, keyId: 'k', nonce: 'n', expiresAtMs: T + 1000 }, T), true);
    } finally {
      await s.close();
    }
  });
});

describe('SqliteRelayStagingStore: nonce keys (migration 2)', () => {
  it('carries the node nonces of a file written before it over, still refused as replays, and drops the old table', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ddn-relay-nonces-'));
    const path = join(dir, 'relay.sqlite');
    const live: NonceClaim = { scope: 'node', did: R, keyId: `${R}#node`, nonce: 'live-nonce', expiresAtMs: T + 300_000 };
    const expired: NonceClaim = { ...live, nonce: 'expired-nonce', expiresAtMs: T - 1 };
    const old = new Database(path);
    migrate(
      old,
      RELAY_MIGRATIONS.filter((m) => m.version <= 1),
      'relay',
    );
    const insert = old.prepare('INSERT INTO relay_nonces (scope, did, key_id, nonce, expires_at_ms) VALUES (?, ?, ?, ?, ?)');
    for (const c of [live, expired]) insert.run(c.scope, c.did, c.keyId, c.nonce, c.expiresAtMs);
    old.close();
    const store = SqliteRelayStagingStore.open(path);
    const peek = new Database(path, { readonly: true });
    try {
      const tables = peek.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[];
      assert.ok(tables.includes('relay_nonce_keys') && !tables.includes('relay_nonces'), tables.join(', '));
      assert.equal(store.isNonceClaimed(live, T), true);
      assert.equal(await store.claimNonce(live, T), false, 'a nonce claimed before the migration is still used');
      assert.equal(store.isNonceClaimed(expired, T), false);
      assert.equal(await store.claimNonce({ ...expired, expiresAtMs: T + 300_000 }, T), true, 'an expired one is free again');
      // the four fields are told apart: the same texts in other fields are another claim
      assert.equal(await store.claimNonce({ ...live, nonce: 'x', keyId: `${live.keyId}","live-nonce` }, T), true);
      // the sweep drops expired keys
      assert.equal((await store.sweep(T + 400_000)).expiredNonces, 3);
      assert.equal(store.isNonceClaimed(live, T), false);
    } finally {
      peek.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('SqliteRelayStagingStore: staging bounds (migration 4)', () => {
  it('gives the sets of a file written before it their bytes, their sender as owner and their creation as last growth', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ddn-relay-bounds-'));
    const path = join(dir, 'relay.sqlite');
    const old = new Database(path);
    migrate(
      old,
      RELAY_MIGRATIONS.filter((m) => m.version <= 3),
      'relay',
    );
    const sender = 'did:platform:Sender1';
    old
      .prepare(
        `INSERT INTO relay_chunk_sets (recipient, group_id, total_chunks, to_value, tag, application_id, sender, created_at_ms, retry_until_ms)
         VALUES (?, 'g', 3, ?, NULL, NULL, ?, ?, ?)`,
      )
      .run(R, R, sender, T, T + 3_600_000);
    const chunk = old.prepare(
      'INSERT INTO relay_chunks (recipient, group_id, sequence_number, message_key, content_hash, size_bytes, envelope) VALUES (?, ?, ?, ?, ?, ?, ?)',
    );
    chunk.run(R, 'g', 0, 'g-0', 'h0', 300, Buffer.alloc(300));
    chunk.run(R, 'g', 1, 'g-1', 'h1', 200, Buffer.alloc(200));
    old.prepare('UPDATE relay_usage SET staged_bytes = 500').run();
    old.close();
    const store = SqliteRelayStagingStore.open(path);
    try {
      const peek = new Database(path, { readonly: true });
      assert.deepEqual(peek.prepare("SELECT owner, staged_bytes, last_chunk_ms FROM relay_chunk_sets WHERE group_id = 'g'").get(), {
        owner: `did:${sender}`,
        staged_bytes: 500,
        last_chunk_ms: T,
      });
      peek.close();
      // the old set counts against its sender, and is idle since its creation
      const set = { total: 3, to: R, tag: null, applicationId: null, sender };
      await assert.rejects(
        store.stage(req('g', 2, { set, maxBytes: 10_000, maxSetsPerRecipient: 10, owner: `did:${sender}`, maxBytesPerOwner: 600 })),
        (e: unknown) => isCode('staging_capacity_full')(e),
      );
      await store.stage(req('new', 0, { maxBytes: 800, maxSetsPerRecipient: 10, idleDropMs: 1000, nowMs: T + 1000 }));
      assert.deepEqual(await store.loadSet(R, 'g'), [], 'dropped for room once idle');
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('SqliteRelayStagingStore: remembered results in write order (migration 5)', () => {
  it('carries the results of a file written before it, found, replaced and swept as before', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ddn-relay-results-'));
    const path = join(dir, 'relay.sqlite');
    const old = new Database(path);
    migrate(
      old,
      RELAY_MIGRATIONS.filter((m) => m.version <= 4),
      'relay',
    );
    const first = successResult('cached', 'cache_fallback', 'stored', NO_ATTEMPT);
    const insert = old.prepare('INSERT INTO relay_results (message_key, content_hash, result, created_at_ms, recipient) VALUES (?, ?, ?, ?, ?)');
    insert.run('m-new', 'h-new', JSON.stringify(first), T, R);
    insert.run('m-old', 'h-old', JSON.stringify(first), T - 86_400_000, R);
    insert.run('g-0', 'h-chunk', JSON.stringify(first), T - 1, null);
    old.close();
    const store = SqliteRelayStagingStore.open(path);
    const peek = new Database(path, { readonly: true });
    try {
      const columns = peek.prepare("SELECT name FROM pragma_table_info('relay_results') ORDER BY cid").pluck().all();
      assert.deepEqual(columns, ['seq', 'message_key', 'content_hash', 'result', 'created_at_ms', 'recipient']);
      const indexes = peek.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'relay_results' ORDER BY name").pluck().all();
      assert.deepEqual(indexes, ['relay_results_created', 'sqlite_autoindex_relay_results_1']);
      // carried in the order they were written
      assert.deepEqual(peek.prepare('SELECT message_key FROM relay_results ORDER BY seq').pluck().all(), ['m-old', 'g-0', 'm-new']);
      assert.deepEqual(await store.findPrior('m-new', T, true), { result: { contentHash: 'h-new', recipientDid: R, result: first }, staged: null });
      assert.deepEqual(await store.findResult('g-0', T), { contentHash: 'h-chunk', recipientDid: null, result: first });
      assert.equal(await store.findResult('m-old', T), null, 'a day old: no longer remembered');
      // a message id remembered again replaces its result (one row per message id)
      const second = successResult('delivered', 'direct', 'pushed', NO_ATTEMPT);
      await store.saveResult('m-new', 'h-again', R, second, T + 1);
      assert.deepEqual(await store.findResult('m-new', T + 1), { contentHash: 'h-again', recipientDid: R, result: second });
      assert.equal(peek.prepare("SELECT COUNT(*) FROM relay_results WHERE message_key = 'm-new'").pluck().get(), 1);
      // new results come after the carried ones; the sweep drops what is a day old
      await store.saveResult('m-later', 'h-later', R, first, T + 2);
      assert.deepEqual(peek.prepare('SELECT message_key FROM relay_results ORDER BY seq').pluck().all(), ['m-old', 'g-0', 'm-new', 'm-later']);
      await store.sweep(T + 1);
      assert.deepEqual(peek.prepare('SELECT message_key FROM relay_results ORDER BY seq').pluck().all(), ['g-0', 'm-new', 'm-later']);
    } finally {
      peek.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
