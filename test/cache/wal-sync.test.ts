/**
 * Group commit with the WAL synced off the writer's thread (`GroupCommitOptions.walSyncPath`): commits run under
 * NORMAL, a synced operation is answered only after an fsync that follows its commit, an unsynced batch waits for
 * none, a failed sync fails what it covered (507) and puts COMMIT back in charge (FULL). Real SQLite files.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, constants, mkdtempSync, open as openAsync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { DdnError } from '../../src/base/errors.js';
import { GroupCommitWriter } from '../../src/store/sqlite/group-commit.js';

const isCode = (code: string) => (e: unknown) => e instanceof DdnError && e.code === code;

/**
 * Holds every thread of libuv's pool, as DNS lookups that a slow server answers late do: each thread opens a FIFO for
 * reading, which blocks until a writer opens it. `release()` opens them for writing and waits for the threads.
 */
function holdLibuvPool(dir: string): { release(): Promise<void> } {
  const threads = Number(process.env.UV_THREADPOOL_SIZE ?? 4);
  const fifos = Array.from({ length: threads }, (_, i) => join(dir, `hold-${i}`));
  for (const f of fifos) execFileSync('mkfifo', [f]);
  const opened = fifos.map((f) => new Promise<number>((resolve, reject) => openAsync(f, 'r', (err, fd) => (err ? reject(err) : resolve(fd)))));
  return {
    async release() {
      // a reader waits in each open(): opening for writing without blocking succeeds and lets it go
      const writers = fifos.map((f) => openSync(f, constants.O_WRONLY | constants.O_NONBLOCK));
      for (const fd of await Promise.all(opened)) closeSync(fd);
      for (const fd of writers) closeSync(fd);
    },
  };
}

/** A WAL database under FULL with one table, and a writer syncing `walPath` (its own WAL unless told). */
function open(path: string, walPath = `${path}-wal`): { db: Database.Database; writer: GroupCommitWriter; errors: unknown[] } {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec('CREATE TABLE IF NOT EXISTS t (v INTEGER)');
  const errors: unknown[] = [];
  return { db, writer: new GroupCommitWriter(db, { walSyncPath: walPath, onBatchError: (e) => errors.push(e) }), errors };
}

describe('group commit, the WAL synced off the thread', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'ddn-wal-sync-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('commits under NORMAL and answers each synced write after a WAL sync that followed its commit', async () => {
    const path = join(dir, 'synced.sqlite');
    const { db, writer } = open(path);
    const other = new Database(path, { readonly: true });
    try {
      const ins = db.prepare('INSERT INTO t (v) VALUES (?)');
      const write = (v: number) => {
        let syncsAtCommit = -1;
        return writer
          .submit(() => {
            ins.run(v);
            syncsAtCommit = writer.walSyncs;
            return db.pragma('synchronous', { simple: true });
          })
          .then((mode) => ({ mode, syncsAtCommit, syncsAtAnswer: writer.walSyncs, seen: other.prepare('SELECT COUNT(*) FROM t WHERE v = ?').pluck().get(v) }));
      };
      // three rounds: the later ones are submitted while the earlier ones wait for their sync
      const rounds: Promise<Awaited<ReturnType<typeof write>>[]>[] = [];
      for (let r = 0; r < 3; r++) {
        rounds.push(Promise.all(Array.from({ length: 20 }, (_, i) => write(r * 100 + i))));
        await new Promise((resolve) => setImmediate(resolve));
      }
      const answers = (await Promise.all(rounds)).flat();
      assert.equal(answers.length, 60);
      for (const a of answers) {
        assert.equal(a.mode, 1, 'NORMAL: COMMIT does not sync');
        assert.ok(a.syncsAtAnswer > a.syncsAtCommit, `answered after ${a.syncsAtAnswer} syncs, committed after ${a.syncsAtCommit}`);
        assert.equal(a.seen, 1);
      }
      assert.ok(writer.walSyncs >= 1 && writer.walSyncs <= writer.stats.commits);
      await writer.close();
      assert.equal(other.prepare('SELECT COUNT(*) FROM t').pluck().get(), 60);
    } finally {
      other.close();
      db.close();
    }
  });

  it('answers a batch of unsynced operations without waiting for a sync', async () => {
    const { db, writer } = open(join(dir, 'unsynced.sqlite'));
    try {
      const ins = db.prepare('INSERT INTO t (v) VALUES (1)');
      await Promise.all([writer.submit(() => ins.run(), 0, false), writer.submit(() => ins.run(), 0, false)]);
      assert.equal(writer.walSyncs, 0);
      await writer.submit(() => ins.run());
      assert.equal(writer.walSyncs, 1);
      await writer.close();
    } finally {
      db.close();
    }
  });

  it('settles and closes only after the last sync', async () => {
    const { db, writer } = open(join(dir, 'close.sqlite'));
    try {
      const ins = db.prepare('INSERT INTO t (v) VALUES (1)');
      let answered = 0;
      for (let i = 0; i < 10; i++) void writer.submit(() => ins.run()).then(() => answered++);
      await writer.settle();
      assert.equal(answered, 10);
      const late = writer.submit(() => ins.run());
      await writer.close();
      await late;
      assert.ok(writer.walSyncs >= 1);
      await assert.rejects(
        writer.submit(() => ins.run()),
        isCode('service_unavailable'),
      );
    } finally {
      db.close();
    }
  });

  it('fails what a failed sync covered (507 insufficient_storage), then commits with FULL', async () => {
    const { db, writer, errors } = open(join(dir, 'failing.sqlite'), join(dir, 'no-such-dir', 'x-wal'));
    try {
      const ins = db.prepare('INSERT INTO t (v) VALUES (1)');
      const mode = () => db.pragma('synchronous', { simple: true });
      const first = await Promise.allSettled([writer.submit(() => (ins.run(), mode())), writer.submit(() => (ins.run(), mode()))]);
      for (const s of first) {
        assert.equal(s.status, 'rejected');
        assert.ok(isCode('insufficient_storage')(s.reason));
      }
      assert.equal(errors.length, 1);
      assert.equal(await writer.submit(() => (ins.run(), mode())), 2, 'FULL: COMMIT syncs itself again');
      assert.equal(writer.walSyncs, 0);
      await writer.close();
    } finally {
      db.close();
    }
  });

  it("answers synced writes while every thread of libuv's pool is held (the fsyncs have a thread of their own)", async () => {
    const { db, writer } = open(join(dir, 'pool-held.sqlite'));
    const ins = db.prepare('INSERT INTO t (v) VALUES (1)');
    // the thread is started (its module loaded, which reads files on the pool) and the WAL open, as in a serving node
    await writer.submit(() => ins.run());
    const pool = holdLibuvPool(dir);
    try {
      // before the pool is let go: a sync on libuv's pool would wait here until the pool is released
      const writes = Promise.all(Array.from({ length: 5 }, () => writer.submit(() => ins.run())));
      const stuck = delay(20_000, 'stuck', { ref: false });
      assert.notEqual(await Promise.race([writes, stuck]), 'stuck', 'the writes waited for the pool');
      assert.ok(writer.walSyncs >= 2);
      assert.equal(db.prepare('SELECT COUNT(*) FROM t').pluck().get(), 6);
    } finally {
      await pool.release();
      await writer.close();
      db.close();
    }
  });
  it('a fsync thread that ends fails what waited for it (507) and every later write commits with FULL', async () => {
    const { db, writer, errors } = open(join(dir, 'thread-ends.sqlite'));
    try {
      const ins = db.prepare('INSERT INTO t (v) VALUES (1)');
      const mode = () => db.pragma('synchronous', { simple: true });
      assert.equal(await writer.submit(() => (ins.run(), mode())), 1, 'NORMAL while the thread runs');
      // the thread dies as a crashed one would: ended from outside (the writer keeps it to itself)
      const thread = (writer as unknown as { walSync: { worker: Worker } }).walSync.worker;
      await thread.terminate();
      const after = await Promise.allSettled([writer.submit(() => (ins.run(), mode())), writer.submit(() => (ins.run(), mode()))]);
      for (const s of after) {
        assert.equal(s.status, 'rejected', 'committed under NORMAL with no thread left to sync it');
        assert.ok(isCode('insufficient_storage')(s.reason));
      }
      assert.equal(errors.length, 1, 'the loss reported once');
      assert.equal(await writer.submit(() => (ins.run(), mode())), 2, 'FULL: COMMIT syncs itself');
      assert.equal(await writer.submit(() => (ins.run(), mode())), 2);
      await writer.close();
      assert.equal(db.prepare('SELECT COUNT(*) FROM t').pluck().get(), 5, 'the failed writes were committed, only not answered');
    } finally {
      db.close();
    }
  });
});
