/**
 * The ledger's WAL is copied into its database file every LEDGER_WAL_AUTOCHECKPOINT frames, not SQLite's default
 * 1,000: the copy runs inside a block's or an admission's commit, on the event loop, and a larger mark copies the
 * pages blocks rewrite (their index and interior pages) once per ten times as many frames.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { StoredBlock } from '../../src/ledger/store.js';
import { LEDGER_WAL_AUTOCHECKPOINT, LedgerFile } from '../../src/store/sqlite/ledger-file.js';
import { SqliteLedgerStore } from '../../src/store/sqlite/ledger-store.js';

function block(n: number): StoredBlock {
  const h = (b: number) => new Uint8Array(32).fill(b % 256);
  return { header: { parentHash: h(n - 1), number: n, timestampMs: 1_000 * n, extrinsicsRoot: h(0), resultsRoot: h(0) }, hash: h(n) };
}

describe('the ledger WAL', () => {
  it('is not copied into the database file before LEDGER_WAL_AUTOCHECKPOINT frames, and is after', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ddn-ledger-wal-'));
    const path = join(dir, 'ledger.sqlite');
    const file = LedgerFile.open(path, 16 * 1024 * 1024);
    const db = file.db;
    try {
      const store = new SqliteLedgerStore(db, undefined, () => file.afterCommit());
      assert.equal(db.pragma('wal_autocheckpoint', { simple: true }), LEDGER_WAL_AUTOCHECKPOINT);
      store.initGenesis(block(0));
      const walFrames = () => Math.floor((statSync(`${path}-wal`, { throwIfNoEntry: false })?.size ?? 0) / (4096 + 24));
      // blocks of 40 new keys with 2 KiB values (about 20 pages each) until the WAL holds 3,000 frames: SQLite's
      // default mark would have copied and rewound it at 1,000, so that its file never grows far past that
      let n = 0;
      const commit = () => {
        n++;
        store.commitBlock(block(n), new Map<string, unknown>(Array.from({ length: 40 }, (_, i) => [`k${n}-${i}`, 'x'.repeat(2048)])), []);
      };
      while (walFrames() < 3_000 && n < 500) commit();
      assert.ok(walFrames() >= 3_000, `the WAL holds ${walFrames()} frames after ${n} blocks`);
      // the frames are all still in the WAL: none copied yet
      const [first] = db.pragma('wal_checkpoint(PASSIVE)') as { busy: number; log: number; checkpointed: number }[];
      assert.ok(first.log >= 3_000 && first.log < LEDGER_WAL_AUTOCHECKPOINT, `log ${first.log}`);
      // that copy let the next write rewind the WAL. Past the mark, the commit that crosses it copies the WAL and the
      // writes after it start again from its first frame: the file stops growing at the mark (and one block)
      while (walFrames() < 9_000 && n < 3_000) commit();
      for (let i = 0; i < 200; i++) commit();
      assert.ok(walFrames() < LEDGER_WAL_AUTOCHECKPOINT + 100, `the WAL file holds ${walFrames()} frames`);
      const [after] = db.pragma('wal_checkpoint(PASSIVE)') as { log: number }[];
      assert.ok(after.log < LEDGER_WAL_AUTOCHECKPOINT, `log ${after.log}`);
      assert.equal(store.readState(`k${n}-0`, n), 'x'.repeat(2048));
      assert.equal(file.checkpointerThread, false, "a small file's checkpoints stay SQLite's");
    } finally {
      await file.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
