/** The node's ledger connection: its page cache, and checkpoints on a thread of their own once the file is large. */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultLedgerCacheBytes, MIN_LEDGER_CACHE_BYTES } from '../../src/store/ledger-cache-size.js';
import { LEDGER_CHECKPOINTS, LEDGER_WAL_AUTOCHECKPOINT, LedgerFile, ledgerCheckpoints } from '../../src/store/sqlite/ledger-file.js';
import { SqliteLedgerStore } from '../../src/store/sqlite/ledger-store.js';
import { CHECKPOINTER_FROM_BYTES, WAL_WRITER_LIMIT_BYTES } from '../../src/store/sqlite/wal-checkpointer.js';

const MIB = 1024 * 1024;

describe('LedgerFile', () => {
  let dir: string;
  let n = 0;
  const path = () => join(dir, `ledger-${n++}.sqlite`);
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'ddn-ledger-file-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('opens the ledger with the page cache it is given', async () => {
    const file = LedgerFile.open(path(), 8 * MIB);
    try {
      assert.equal(file.db.pragma('cache_size', { simple: true }), -8192);
      // the ledger's tables are there (migrations applied)
      assert.ok(file.db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'ledger_current'").get());
    } finally {
      await file.close();
    }
  });

  it('leaves checkpoints to SQLite below the size, and to a thread from it', async () => {
    const small = LedgerFile.open(path(), 8 * MIB, CHECKPOINTER_FROM_BYTES);
    const large = LedgerFile.open(path(), 8 * MIB, 1);
    try {
      assert.equal(small.checkpointerThread, false);
      assert.equal(small.db.pragma('wal_autocheckpoint', { simple: true }), LEDGER_WAL_AUTOCHECKPOINT);
      assert.equal(large.checkpointerThread, true);
      assert.equal(large.db.pragma('wal_autocheckpoint', { simple: true }), 0, "the writer's own checkpoints are off");
    } finally {
      await small.close();
      await large.close();
    }
  });

  it('runs the thread with the checkpoints it is given: its passes rewind the WAL past their bound', async () => {
    const file = LedgerFile.open(path(), 8 * MIB, 1, { intervalMs: 5, rewindFrames: 32 });
    try {
      const store = new SqliteLedgerStore(file.db, undefined, () => file.afterCommit());
      // commits of 4 KiB until a pass found more than 32 frames and the writer rewound the WAL after it
      for (let i = 0; i < 5_000 && file.checkpointerStats?.rewinds === 0; i++) {
        store.writeMeta(`k${i % 64}`, new Uint8Array(4096).fill(i % 256));
        await new Promise((r) => setTimeout(r, 1));
      }
      assert.ok((file.checkpointerStats?.rewinds ?? 0) > 0, 'the WAL was rewound');
      assert.equal(file.checkpointerStats?.failures, 0);
    } finally {
      await file.close();
    }
  });

  it('asks the thread for a pass once the file has grown by passAfterBytes, counting the pages the commits added', { timeout: 60_000 }, async () => {
    // the thread's own first pass is an hour away: a pass now is one the file asked for
    const file = LedgerFile.open(path(), 8 * MIB, 1, { intervalMs: 3_600_000, passAfterBytes: 64 * 1024 });
    const passes = () => file.checkpointerStats?.passes ?? 0;
    const turns = async (n: number) => {
      for (let i = 0; i < n; i++) await new Promise((r) => setTimeout(r, 5));
    };
    try {
      const store = new SqliteLedgerStore(file.db, undefined, () => file.afterCommit());
      // the same key rewritten: pages in the WAL again and again, none added to the file
      for (let i = 0; i < 64; i++) store.writeMeta('same', new Uint8Array(4096).fill(i));
      const grownByRewrites = Number(file.db.pragma('page_count', { simple: true }));
      await turns(20);
      assert.equal(passes(), 0, `rewritten pages ask for no pass (${grownByRewrites} pages)`);
      // new keys of 4 KiB: each adds a page or two, so 64 KiB is reached within 16 of them
      for (let i = 0; i < 16 && passes() === 0; i++) {
        store.writeMeta(`new${i}`, new Uint8Array(4096).fill(i));
        await turns(2);
      }
      while (passes() === 0) await turns(1);
      assert.equal(file.checkpointerStats?.failures, 0);
    } finally {
      await file.close();
    }
  });

  it("moves a small ledger's checkpoints to the thread once the file has passAfterBytes to take in", { timeout: 60_000 }, async () => {
    const p = path();
    // the thread's own first pass is an hour away: a pass now is one the file asked for
    const file = LedgerFile.open(p, 8 * MIB, CHECKPOINTER_FROM_BYTES, { intervalMs: 3_600_000, passAfterBytes: 64 * 1024 });
    const pages = () => Number(file.db.pragma('page_count', { simple: true }));
    try {
      const store = new SqliteLedgerStore(file.db, undefined, () => file.afterCommit());
      // the same key rewritten: its pages are in the WAL again and again, the file has nothing to take in
      for (let i = 0; i < 64; i++) store.writeMeta('same', new Uint8Array(4096).fill(i));
      assert.equal(file.checkpointerThread, false, 'rewritten pages start no thread');
      // new keys of 4 KiB: each adds a page or two, so 64 KiB is reached within 16 of them
      for (let i = 0; i < 16 && !file.checkpointerThread; i++) store.writeMeta(`new${i}`, new Uint8Array(4096).fill(i));
      assert.equal(file.checkpointerThread, true);
      assert.equal(file.db.pragma('wal_autocheckpoint', { simple: true }), 0, "SQLite's own checkpoints are off");
      // the thread copies the WAL into the file at once: the file holds every page
      while (statSync(p).size < pages() * 4096) await new Promise((r) => setTimeout(r, 5));
      assert.equal(file.checkpointerStats?.failures, 0);
      assert.equal(store.readMeta('same')?.[0], 63);
    } finally {
      await file.close();
    }
  });

  it("counts what SQLite's own checkpoints copied: only pages the file has yet to take in start the thread", async () => {
    const file = LedgerFile.open(path(), 8 * MIB, CHECKPOINTER_FROM_BYTES, { passAfterBytes: 64 * 1024 });
    try {
      const store = new SqliteLedgerStore(file.db, undefined, () => file.afterCommit());
      // 96 KiB of new pages, each copied at once (as SQLite's own checkpoint would have)
      for (let i = 0; i < 24; i++) {
        store.writeMeta(`copied${i}`, new Uint8Array(4096).fill(i));
        file.db.pragma('wal_checkpoint(PASSIVE)');
      }
      assert.equal(file.checkpointerThread, false, 'the file had already taken the pages in');
      for (let i = 0; i < 24 && !file.checkpointerThread; i++) store.writeMeta(`new${i}`, new Uint8Array(4096).fill(i));
      assert.equal(file.checkpointerThread, true, 'new pages not copied yet count');
    } finally {
      await file.close();
    }
  });

  it('leaves a small ledger without passAfterBytes to SQLite alone', async () => {
    const file = LedgerFile.open(path(), 8 * MIB, CHECKPOINTER_FROM_BYTES);
    try {
      const store = new SqliteLedgerStore(file.db, undefined, () => file.afterCommit());
      for (let i = 0; i < 64; i++) store.writeMeta(`k${i}`, new Uint8Array(4096).fill(i));
      assert.equal(file.checkpointerThread, false);
      assert.equal(file.db.pragma('wal_autocheckpoint', { simple: true }), LEDGER_WAL_AUTOCHECKPOINT);
    } finally {
      await file.close();
    }
  });

  it("bounds a large ledger's passes by what the storage reserve gives back", () => {
    assert.deepEqual(ledgerCheckpoints(6 * MIB), { ...LEDGER_CHECKPOINTS, passAfterBytes: 3 * MIB });
    assert.equal(ledgerCheckpoints(1.5 * MIB).passAfterBytes, 0.75 * MIB);
    assert.equal(ledgerCheckpoints().passAfterBytes, 3 * MIB);
    // the ledger keeps its own interval (the checkpointers' default, once a second)
    assert.equal(ledgerCheckpoints().intervalMs, undefined);
  });

  it("rewinds a large ledger's WAL below the writer's own limit", () => {
    // the writer's own bound (a passive checkpoint on the event loop) is only for a thread that fell behind
    assert.ok(LEDGER_CHECKPOINTS.rewindFrames * 4096 < WAL_WRITER_LIMIT_BYTES);
  });

  it("starts the thread once the store's commits grow the file past the size", async () => {
    const file = LedgerFile.open(path(), 8 * MIB, 256 * 1024);
    try {
      const store = new SqliteLedgerStore(file.db, undefined, () => file.afterCommit());
      assert.equal(file.checkpointerThread, false);
      // 128 commits of 4 KiB: past 256 KiB, and the size is looked at every 64 commits
      for (let i = 0; i < 128; i++) store.writeMeta(`k${i}`, new Uint8Array(4096).fill(i));
      assert.equal(file.checkpointerThread, true);
      assert.equal(file.db.pragma('wal_autocheckpoint', { simple: true }), 0);
      assert.equal(store.readMeta('k127')?.[0], 127);
    } finally {
      await file.close();
    }
  });
});

describe('defaultLedgerCacheBytes', () => {
  it('is 256 MiB, or a sixteenth of the memory when less, in whole MiB', () => {
    assert.equal(defaultLedgerCacheBytes(24 * 1024 * MIB), 256 * MIB);
    assert.equal(defaultLedgerCacheBytes(4096 * MIB), 256 * MIB);
    assert.equal(defaultLedgerCacheBytes(1024 * MIB), 64 * MIB);
    assert.equal(defaultLedgerCacheBytes(1000 * MIB), 62 * MIB);
    assert.equal(defaultLedgerCacheBytes(8 * MIB), MIN_LEDGER_CACHE_BYTES);
  });
});
