/** The mailbox's WAL checkpointer thread: checkpoints while writes go on, bounds the WAL, stops cleanly. */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setImmediate as turn } from 'node:timers/promises';
import Database from 'better-sqlite3';
import {
  boundWal,
  detachCheckpoints,
  MAILBOX_INTERVAL_MS,
  DEFAULT_PASS_AFTER_BYTES,
  mailboxCheckpoints,
  WalCheckpointer,
  type CheckpointerReport,
} from '../../src/store/sqlite/wal-checkpointer.js';
import { SqliteMailboxStore } from '../../src/store/sqlite/mailbox-store.js';
import { DID, entry, NOW } from './mailbox-fixtures.js';

/** Fails instead of hanging when the awaited report never comes. */
const LIMIT = { timeout: 60_000 };

interface Writer {
  db: Database.Database;
  rows: number;
  write(): void;
}

function openWriter(path: string): Writer {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec('CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, body BLOB NOT NULL)');
  detachCheckpoints(db);
  const insert = db.prepare('INSERT INTO t (body) VALUES (?)');
  const w: Writer = {
    db,
    rows: 0,
    write: () => {
      insert.run(Buffer.alloc(4096, w.rows));
      w.rows++;
    },
  };
  return w;
}

/** Commits one transaction per event-loop turn until a report of `c` satisfies `want`. */
function writeUntil(w: Writer, c: WalCheckpointer, want: (r: CheckpointerReport) => boolean): Promise<CheckpointerReport> {
  let found: CheckpointerReport | undefined;
  c.onReport((r) => {
    if (found === undefined && want(r)) found = r;
  });
  return (async () => {
    while (found === undefined) {
      w.write();
      await turn();
    }
    return found;
  })();
}

const framesInWal = (db: Database.Database) => (db.pragma('wal_checkpoint(PASSIVE)') as { log: number }[])[0].log;

describe('WalCheckpointer', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'ddn-wal-ckpt-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('leaves the writer connection without automatic checkpoints', () => {
    const w = openWriter(join(dir, 'pragma.sqlite'));
    try {
      assert.equal(w.db.pragma('wal_autocheckpoint', { simple: true }), 0);
    } finally {
      w.db.close();
    }
  });

  it('copies committed frames into the database file while writes go on', LIMIT, async () => {
    const path = join(dir, 'passive.sqlite');
    const w = openWriter(path);
    const c = new WalCheckpointer(path, { intervalMs: 5 });
    try {
      await writeUntil(w, c, (x) => x.type === 'pass' && x.checkpointed > 0);
      // the writer never checkpoints and stays open (closing the thread's connection copies nothing): the database
      // file alone, read without its WAL, holds what the thread copied
      await c.stop();
      const copy = join(dir, 'passive-file-only.sqlite');
      copyFileSync(path, copy);
      const alone = new Database(copy);
      try {
        assert.equal(alone.pragma('integrity_check', { simple: true }), 'ok');
        const rows = alone.prepare('SELECT COUNT(*) FROM t').pluck().get() as number;
        assert.ok(rows > 0 && rows <= w.rows, `${rows} of ${w.rows} committed rows in the database file`);
      } finally {
        alone.close();
      }
    } finally {
      await c.stop();
      w.db.close();
    }
  });

  it('past its bound the writer rewinds the WAL while writes go on', LIMIT, async () => {
    const w = openWriter(join(dir, 'rewind.sqlite'));
    const c = new WalCheckpointer(join(dir, 'rewind.sqlite'), { intervalMs: 5, rewindFrames: 32 });
    try {
      await writeUntil(w, c, (x) => x.type === 'pass' && x.rewindDue);
      // a pass of the thread may hold the checkpoint lock: the writer tries again after its next transaction
      while (c.stats.rewinds === 0) {
        c.afterCommit(w.db);
        if (c.stats.rewinds === 0) {
          w.write();
          await turn();
        }
      }
      // no pass in progress can hold a read mark then: the first transaction writes from the start of the WAL again
      await c.stop();
      w.write();
      assert.ok(framesInWal(w.db) < 32, 'the WAL was rewound');
    } finally {
      await c.stop();
      w.db.close();
    }
  });

  it('stops: its connection is closed and the file is whole, with every committed row', LIMIT, async () => {
    const path = join(dir, 'stop.sqlite');
    const w = openWriter(path);
    const c = new WalCheckpointer(path, { intervalMs: 5 });
    await writeUntil(w, c, (x) => x.type === 'pass' && x.checkpointed > 0);
    for (let i = 0; i < 10; i++) w.write();
    await c.stop();
    const rows = w.rows;
    w.db.close();
    // SQLite removes the WAL only when the last connection closes: the checkpointer's is gone too
    assert.equal(existsSync(`${path}-wal`), false);
    const again = new Database(path, { readonly: true });
    try {
      assert.equal(again.pragma('integrity_check', { simple: true }), 'ok');
      assert.equal(again.prepare('SELECT COUNT(*) FROM t').pluck().get(), rows);
    } finally {
      again.close();
    }
  });

  it('the writer checkpoints on its own past the WAL limit', () => {
    const w = openWriter(join(dir, 'bound.sqlite'));
    try {
      for (let i = 0; i < 20; i++) w.write();
      assert.equal(boundWal(w.db, join(dir, 'bound.sqlite')), false, 'under the default limit');
      assert.equal(boundWal(w.db, join(dir, 'bound.sqlite'), 0), true);
      const row = (w.db.pragma('wal_checkpoint(PASSIVE)') as { log: number; checkpointed: number }[])[0];
      assert.equal(row.checkpointed, row.log, 'every frame was copied');
    } finally {
      w.db.close();
    }
  });

  it('counts a thread that ended on an error as a failure, and tells it', LIMIT, async () => {
    // a file the thread cannot open: its directory does not exist
    const c = new WalCheckpointer(join(dir, 'no-such-dir', 'x.sqlite'), { intervalMs: 5 });
    const reports: CheckpointerReport[] = [];
    c.onReport((r) => reports.push(r));
    await c.stop();
    assert.deepEqual(c.stats, { passes: 0, rewinds: 0, failures: 1, writerCheckpoints: 0 });
    assert.equal(reports.length, 1);
    assert.equal(reports[0]!.type, 'failed');
  });

  it('starts a thread that ended on an error again until one can open the file', LIMIT, async () => {
    const sub = join(dir, 'later');
    const path = join(sub, 'x.sqlite');
    // the thread cannot open the file (its directory does not exist yet); 10 ms, then 20, 40…
    const c = new WalCheckpointer(path, { intervalMs: 5, restartFirstMs: 10 });
    const reports: CheckpointerReport[] = [];
    c.onReport((r) => reports.push(r));
    let w: Writer | undefined;
    try {
      while (c.stats.failures < 3) await new Promise((resolve) => setTimeout(resolve, 5));
      assert.ok(reports.every((r) => r.type === 'failed'));
      // the file appears: the next thread started opens it and copies what the writer commits
      mkdirSync(sub);
      w = openWriter(path);
      const writer = w;
      const pass = await writeUntil(writer, c, (r) => r.type === 'pass');
      assert.equal(pass.type, 'pass');
      assert.ok(c.stats.passes >= 1);
    } finally {
      await c.stop();
      w?.db.close();
    }
  });

  it('stopped while waiting to start a thread again, starts none', LIMIT, async () => {
    const c = new WalCheckpointer(join(dir, 'never', 'x.sqlite'), { intervalMs: 5, restartFirstMs: 50 });
    while (c.stats.failures < 1) await new Promise((resolve) => setTimeout(resolve, 5));
    await c.stop();
    await new Promise((resolve) => setTimeout(resolve, 150));
    assert.equal(c.stats.failures, 1, 'no thread was started after stop()');
  });

  it('reports no pass while the WAL holds nothing to copy', LIMIT, async () => {
    const path = join(dir, 'idle.sqlite');
    const w = openWriter(path);
    // the table's frames copied and the WAL emptied before the thread starts
    w.db.pragma('wal_checkpoint(TRUNCATE)');
    const c = new WalCheckpointer(path, { intervalMs: 5 });
    const reports: CheckpointerReport[] = [];
    c.onReport((r) => reports.push(r));
    const sleep = () => new Promise((resolve) => setTimeout(resolve, 5));
    try {
      // passes run meanwhile (every 5 ms); none copies a frame
      for (let i = 0; i < 40; i++) await sleep();
      assert.equal(reports.length, 0, JSON.stringify(reports));
      w.write();
      while (reports.length === 0) await sleep();
      assert.equal(reports[0]!.type, 'pass');
    } finally {
      await c.stop();
      w.db.close();
    }
  });

  it('passes at once when the bytes the writer committed since it last asked reach passAfterBytes', LIMIT, async () => {
    const path = join(dir, 'bytes.sqlite');
    const w = openWriter(path);
    // the thread's own first pass is an hour away: a pass now is one the writer asked for
    const c = new WalCheckpointer(path, { intervalMs: 3_600_000, passAfterBytes: 16 * 4096 });
    const reports: CheckpointerReport[] = [];
    c.onReport((r) => reports.push(r));
    const commit = (rows: number) => {
      for (let i = 0; i < rows; i++) w.write();
      c.afterCommit(w.db, rows * 4096);
    };
    try {
      commit(15);
      // had the thread been asked, its report would come within these turns (the pass takes a millisecond or so)
      for (let i = 0; i < 20; i++) await new Promise((resolve) => setTimeout(resolve, 5));
      assert.equal(reports.length, 0, 'below the bound the thread waits for its interval');
      commit(1);
      while (reports.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
      assert.equal(reports[0]!.type, 'pass');
      assert.equal(c.stats.passes, 1);
      assert.equal(c.stats.writerCheckpoints, 0);
      assert.ok(statSync(path).size >= 16 * 4096, 'the thread copied the 16 rows into the database file');
      // the count starts again after asking: 15 rows more ask for nothing, the 16th does
      commit(15);
      for (let i = 0; i < 20; i++) await new Promise((resolve) => setTimeout(resolve, 5));
      assert.equal(reports.length, 1);
      commit(1);
      while (reports.length === 1) await new Promise((resolve) => setTimeout(resolve, 5));
      assert.equal(c.stats.passes, 2);
    } finally {
      await c.stop();
      w.db.close();
    }
  });

  it("a mailbox's passes: every 100 ms, and after half of what the storage reserve gives back", () => {
    const KiB = 1024;
    assert.deepEqual(mailboxCheckpoints(), { intervalMs: MAILBOX_INTERVAL_MS, passAfterBytes: DEFAULT_PASS_AFTER_BYTES });
    assert.equal(MAILBOX_INTERVAL_MS, 100);
    // the default reserve (8 MiB) gives back 6 MiB: 3 MiB, the default
    assert.equal(mailboxCheckpoints(6 * 1024 * KiB).passAfterBytes, 3 * 1024 * KiB);
    assert.equal(DEFAULT_PASS_AFTER_BYTES, 3 * 1024 * KiB);
    assert.equal(mailboxCheckpoints(1536 * KiB).passAfterBytes, 768 * KiB);
    // no reserve: the default; a tiny one: not a pass every few stores
    assert.equal(mailboxCheckpoints(0).passAfterBytes, DEFAULT_PASS_AFTER_BYTES);
    assert.equal(mailboxCheckpoints(3 * KiB).passAfterBytes, 64 * KiB);
  });

  it("counts the writer's own checkpoints when the thread has not copied the WAL past the writer's limit", LIMIT, async () => {
    const path = join(dir, 'behind.sqlite');
    const w = openWriter(path);
    // a thread whose first pass is an hour away: the writer's bound is all there is
    const c = new WalCheckpointer(path, { intervalMs: 3_600_000, writerLimitBytes: 256 * 1024 });
    try {
      for (let i = 0; i < 4; i++) w.write();
      c.afterCommit(w.db);
      assert.equal(c.stats.writerCheckpoints, 0, 'under the limit');
      for (let i = 0; i < 64; i++) w.write();
      c.afterCommit(w.db);
      assert.deepEqual(c.stats, { passes: 0, rewinds: 0, failures: 0, writerCheckpoints: 1 });
      // nothing else ever copied the WAL (no pass, no automatic checkpoint): the rows in the file are the writer's copy
      assert.ok(statSync(path).size >= 68 * 4096, 'the committed rows were copied into the database file');
    } finally {
      await c.stop();
      w.db.close();
    }
  });
});

describe('SqliteMailboxStore with its checkpointer', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'ddn-wal-store-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("a small mailbox keeps SQLite's own checkpoints and a smaller cache; past the size bound the thread takes them over", LIMIT, async () => {
    const put = (s: SqliteMailboxStore, envelopeBytes?: number) =>
      s.put({
        entry: entry(envelopeBytes === undefined ? {} : { body: JSON.stringify({ payload: 'x'.repeat(envelopeBytes) }) }),
        nowMs: NOW,
        chunkWindowMs: 3_600_000,
        claim: null,
        quotaBytes: null,
      });
    const writerOf = (s: SqliteMailboxStore) => (s as unknown as { writer: { info: { checkpointerThread?: boolean; cacheKib?: number } } }).writer.info;
    const small = SqliteMailboxStore.open(join(dir, 'small.sqlite'), { writerThread: true });
    const big = SqliteMailboxStore.open(join(dir, 'big.sqlite'), { writerThread: true, checkpointerFromBytes: 0 });
    try {
      await put(small);
      await put(big);
      assert.equal(writerOf(small).checkpointerThread, false);
      assert.equal(writerOf(small).cacheKib, 8 * 1024);
      assert.equal(writerOf(big).checkpointerThread, true);
      assert.equal(writerOf(big).cacheKib, 32 * 1024);
      // a large write runs with SQLite's default cache, and the next batch has the mailbox's own again
      await put(big, 1024 * 1024 + 1);
      assert.equal(writerOf(big).cacheKib, 2 * 1024);
      await put(big);
      assert.equal(writerOf(big).cacheKib, 32 * 1024);
    } finally {
      await small.close();
      await big.close();
    }
  });

  it("writing on the event loop, checkpoints are the thread's from the start; the cache grows past the size bound", LIMIT, async () => {
    const put = (s: SqliteMailboxStore) => s.put({ entry: entry(), nowMs: NOW, chunkWindowMs: 3_600_000, claim: null, quotaBytes: null });
    const writerOf = (s: SqliteMailboxStore) => (s as unknown as { writer: { info: { checkpointerThread?: boolean; cacheKib?: number } } }).writer.info;
    const small = SqliteMailboxStore.open(join(dir, 'loop-small.sqlite'));
    const big = SqliteMailboxStore.open(join(dir, 'loop-big.sqlite'), { checkpointerFromBytes: 0 });
    try {
      await put(small);
      await put(big);
      assert.equal(writerOf(small).checkpointerThread, true);
      assert.equal(writerOf(small).cacheKib, 8 * 1024);
      assert.equal(writerOf(big).cacheKib, 32 * 1024);
      const inner = (small as unknown as { db: { pragma(p: string, o: { simple: true }): unknown } }).db;
      assert.equal(inner.pragma('wal_autocheckpoint', { simple: true }), 0, "SQLite's own checkpoints are off");
    } finally {
      await small.close();
      await big.close();
    }
  });

  it('close and reopen: every acknowledged store is there', LIMIT, async () => {
    const path = join(dir, 'cache.sqlite');
    const store = SqliteMailboxStore.open(path, { checkpointerFromBytes: 0 });
    let acknowledged = 0;
    for (let round = 0; round < 20; round++) {
      const results = await Promise.all(
        Array.from({ length: 25 }, () => store.put({ entry: entry(), nowMs: NOW, chunkWindowMs: 3_600_000, claim: null, quotaBytes: null })),
      );
      acknowledged += results.filter((r) => !r.deduped).length;
    }
    await store.close();
    const again = SqliteMailboxStore.open(path);
    try {
      assert.equal((await again.listSummary(DID, NOW)).length, acknowledged);
    } finally {
      await again.close();
    }
  });
});
