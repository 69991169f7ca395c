/** The SQLite mailbox's write path: group commit, isolation of failing operations, bounds, durability pragmas. */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { DdnError } from '../../src/base/errors.js';
import type { NewEntry } from '../../src/cache/mailbox-store.js';
import { GroupCommitWriter } from '../../src/store/sqlite/group-commit.js';
import { SqliteMailboxStore } from '../../src/store/sqlite/mailbox-store.js';
import { startCache } from './harness.js';
import { DID, entry, NOW, OTHER } from '../store/mailbox-fixtures.js';

const put = (s: SqliteMailboxStore, e: NewEntry) => s.put({ entry: e, nowMs: NOW, chunkWindowMs: 3_600_000, claim: null, quotaBytes: null });
const isCode = (code: string) => (e: unknown) => e instanceof DdnError && e.code === code;

describe('SqliteMailboxStore write path', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'ddn-cache-gc-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('opens its own WAL file with synchronous = FULL', async () => {
    const store = SqliteMailboxStore.open(join(dir, 'pragmas.sqlite'));
    await store.close();
    const db = new Database(join(dir, 'pragmas.sqlite'));
    try {
      assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
    } finally {
      db.close();
    }
    const again = SqliteMailboxStore.open(join(dir, 'pragmas.sqlite'));
    const inner = (again as unknown as { db: Database.Database }).db;
    assert.equal(inner.pragma('synchronous', { simple: true }), 2, 'FULL');
    await again.close();
  });

  it('commits concurrent stores in one transaction and answers each after the commit', async () => {
    const store = SqliteMailboxStore.open(join(dir, 'batch.sqlite'));
    try {
      const entries = Array.from({ length: 200 }, () => entry());
      const before = store.writeStats.commits;
      const results = await Promise.all(entries.map((e) => put(store, e)));
      assert.equal(store.writeStats.commits - before, 1);
      assert.equal(results.filter((r) => !r.deduped).length, 200);
      assert.equal((await store.listSummary(DID, NOW)).length, 200);
    } finally {
      await store.close();
    }
  });

  it('answers a write only once it is committed: another connection already sees it', async () => {
    const path = join(dir, 'durable.sqlite');
    const store = SqliteMailboxStore.open(path);
    const other = new Database(path, { readonly: true });
    const count = other.prepare('SELECT COUNT(*) AS n FROM cache_entries WHERE message_key = ?').pluck();
    try {
      const entries = Array.from({ length: 50 }, () => entry());
      const seen = await Promise.all(entries.map((e) => put(store, e).then(() => count.get(e.messageId.toLowerCase()))));
      assert.deepEqual(
        seen,
        entries.map(() => 1),
      );
    } finally {
      other.close();
      await store.close();
    }
  });

  it("writes on the event loop's connection by default (the WAL fsynced off it), on a thread of its own or under FULL when asked", async () => {
    const modes = [
      [{}, 'MailboxLoopWriter'],
      [{ writerThread: true }, 'WorkerWriter'],
      [{ inThreadWriter: true }, 'InThreadOpWriter'],
    ] as const;
    for (const [i, [options, kind]] of modes.entries()) {
      const store = SqliteMailboxStore.open(join(dir, `thread-${i}.sqlite`), options);
      try {
        const writer = (store as unknown as { writer: object }).writer;
        assert.equal(writer.constructor.name, kind);
        assert.equal((await put(store, entry())).deduped, false);
      } finally {
        await store.close();
      }
    }
  });

  it('isolates a failing operation of a batch', async () => {
    const store = SqliteMailboxStore.open(join(dir, 'isolate.sqlite'));
    try {
      const a = entry();
      const clash = entry({ messageId: a.messageId, contentHash: 'different', recipientDid: OTHER });
      const b = entry();
      const same = entry({ messageId: a.messageId });
      const settled = await Promise.allSettled([put(store, a), put(store, clash), put(store, b), put(store, same)]);
      assert.deepEqual(
        settled.map((s) => s.status),
        ['fulfilled', 'rejected', 'fulfilled', 'fulfilled'],
      );
      assert.ok(isCode('message_id_conflict')((settled[1] as PromiseRejectedResult).reason));
      assert.equal((settled[3] as PromiseFulfilledResult<{ deduped: boolean }>).value.deduped, true);
      assert.equal((await store.listSummary(DID, NOW)).length, 2);
    } finally {
      await store.close();
    }
  });

  it('bounds its queue (429 rate_limited) and refuses writes once closed', async () => {
    const store = SqliteMailboxStore.open(join(dir, 'bounded.sqlite'), { writer: { maxQueuedOps: 3 } });
    const first = [put(store, entry()), put(store, entry()), put(store, entry())];
    await assert.rejects(put(store, entry()), isCode('rate_limited'));
    await Promise.all(first);
    await put(store, entry());
    await store.close();
    await assert.rejects(put(store, entry()), isCode('service_unavailable'));
  });

  it('bounds its queue by bytes', async () => {
    const store = SqliteMailboxStore.open(join(dir, 'bytes.sqlite'), { writer: { maxQueuedBytes: 1_000 } });
    try {
      const big = () => entry({ envelope: Buffer.from(JSON.stringify({ pad: 'x'.repeat(600) })) });
      const ok = put(store, big());
      await assert.rejects(put(store, big()), isCode('rate_limited'));
      await ok;
    } finally {
      await store.close();
    }
  });

  it('commits a batch of unsynced operations only without an fsync, and every other batch with one', async () => {
    const db = new Database(join(dir, 'modes.sqlite'));
    try {
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = FULL');
      db.exec('CREATE TABLE t (v INTEGER)');
      const writer = new GroupCommitWriter(db);
      const mode = () => db.pragma('synchronous', { simple: true });
      const write = (sync: boolean) => writer.submit(() => (db.prepare('INSERT INTO t (v) VALUES (1)').run(), mode()), 0, sync);
      assert.deepEqual(await Promise.all([write(false), write(false)]), [1, 1], 'NORMAL: no fsync at COMMIT');
      assert.deepEqual(await Promise.all([write(false), write(true)]), [2, 2], 'one synced operation makes the batch FULL');
      assert.deepEqual(await Promise.all([write(false)]), [1]);
      assert.deepEqual(await Promise.all([write(true)]), [2], 'FULL again after a relaxed batch');
      assert.equal(db.prepare('SELECT COUNT(*) FROM t').pluck().get(), 6);
      await writer.close();
    } finally {
      db.close();
    }
  });

  it('fails every operation of a batch whose COMMIT fails (507 insufficient_storage)', async () => {
    const db = new Database(join(dir, 'commit-fail.sqlite'));
    db.pragma('foreign_keys = ON');
    db.exec(`CREATE TABLE parent (id INTEGER PRIMARY KEY);
      CREATE TABLE child (id INTEGER PRIMARY KEY, parent INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED);`);
    const writer = new GroupCommitWriter(db);
    const ins = db.prepare('INSERT INTO child (parent) VALUES (?)');
    const good = writer.submit(() => ins.run(null));
    const bad = writer.submit(() => ins.run(42)); // deferred: only COMMIT notices
    await assert.rejects(good, isCode('insufficient_storage'));
    await assert.rejects(bad, isCode('insufficient_storage'));
    assert.equal((db.prepare('SELECT COUNT(*) AS n FROM child').get() as { n: number }).n, 0);
    assert.equal(db.inTransaction, false);
    await writer.submit(() => ins.run(null));
    assert.equal((db.prepare('SELECT COUNT(*) AS n FROM child').get() as { n: number }).n, 1);
    db.close();
  });
});

describe('group commit over HTTP', () => {
  it('batches concurrent store requests into fewer transactions than requests', async () => {
    const h = await startCache();
    try {
      const r = await h.registerRecipient(61);
      const before = h.store.writeStats.commits;
      const replies = await Promise.all(Array.from({ length: 50 }, () => h.storeRaw(h.envelope(r.did))));
      assert.ok(replies.every((x) => x.status === 202));
      const commits = h.store.writeStats.commits - before;
      assert.ok(commits < 50, `${commits} commits for 50 stores`);
      assert.equal((await h.summary(r)).body.count, 50);
    } finally {
      await h.close();
    }
  });
});
