/**
 * The storage guard (src/store/storage-guard.ts) on a disk whose free space the test sets: the reserve file, going
 * degraded on a nearly full disk (at start, on a failed write, or when looked at) and back once space returns, which
 * writes are refused while degraded and which are tried once more; and the writers of the SQLite stores under it.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { DdnError } from '../../src/base/errors.js';
import { RESERVE_FILE, StorageGuard } from '../../src/store/storage-guard.js';
import { SqliteMailboxStore } from '../../src/store/sqlite/mailbox-store.js';
import { SqliteRelayStagingStore } from '../../src/store/sqlite/relay-staging-store.js';
import { req as stageReq, R, T } from './staging-contract.js';
import { claimOf, DID, entry, NOW, put } from './mailbox-fixtures.js';

const MiB = 1024 * 1024;
const isCode = (code: string) => (e: unknown) => e instanceof DdnError && e.code === code;
const diskFull = () => Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });

/** A guard over a temp dir on a disk with `disk.free` bytes free but for the reserve file (counted as taken from it). */
function guardOn(free: number, reserveBytes = 4 * MiB) {
  const dir = mkdtempSync(join(tmpdir(), 'ddn-guard-'));
  const disk = { free };
  const reservePath = join(dir, RESERVE_FILE);
  const held = () => (existsSync(reservePath) ? statSync(reservePath).size : 0);
  const freeSpace = () => disk.free - held();
  const guard = StorageGuard.open(dir, { reserveBytes, checkIntervalMs: 0, freeSpace });
  return { dir, disk, guard, held, close: () => (guard.close(), rmSync(dir, { recursive: true, force: true })) };
}

describe('StorageGuard', () => {
  it('writes its reserve on a disk with room, goes degraded on a nearly full disk giving back three quarters, and back when space returns', () => {
    const g = guardOn(100 * MiB);
    try {
      assert.equal(g.held(), 4 * MiB);
      assert.equal(g.guard.isDegraded, false);
      assert.equal(g.guard.givenBackBytes, 3 * MiB);
      g.disk.free = 6 * MiB; // 2 MiB free besides the reserve
      assert.equal(g.guard.check(), true);
      assert.equal(g.held(), MiB);
      assert.equal(4 * MiB - g.held(), g.guard.givenBackBytes, 'what it gave back is what it says it gives back');
      // room for the missing 3 MiB of the reserve but not for a whole reserve besides: still degraded
      g.disk.free = 7.5 * MiB;
      assert.equal(g.guard.check(), true);
      g.disk.free = 8 * MiB;
      assert.equal(g.guard.check(), false);
      assert.equal(g.held(), 4 * MiB);
    } finally {
      g.close();
    }
  });

  it('starts degraded on a full disk and gives back its whole reserve before any database opens', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ddn-guard-'));
    try {
      writeFileSync(join(dir, RESERVE_FILE), Buffer.alloc(MiB));
      const guard = StorageGuard.open(dir, { reserveBytes: MiB, checkIntervalMs: 0, freeSpace: () => 0 });
      assert.equal(guard.isDegraded, true);
      assert.equal(existsSync(join(dir, RESERVE_FILE)), false);
      guard.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses writes adding data while degraded; retries once a write adding none whose failure made it degraded', async () => {
    const g = guardOn(100 * MiB);
    try {
      let calls = 0;
      const failingOnce = () => {
        calls++;
        if (calls === 1) {
          g.disk.free = 5 * MiB; // the write found the disk full (1 MiB free besides the reserve)
          throw diskFull();
        }
        return 'written';
      };
      assert.equal(g.guard.write(false, failingOnce), 'written');
      assert.deepEqual([calls, g.guard.isDegraded, g.held()], [2, true, MiB]);
      assert.throws(() => g.guard.write(true, () => 'never'), isCode('insufficient_storage'));
      await assert.rejects(
        g.guard.writeAsync(true, async () => 'never'),
        isCode('insufficient_storage'),
      );
      // degraded already: a failing write is not tried again, and its raw error is a 507
      calls = 0;
      assert.throws(
        () =>
          g.guard.write(false, () => {
            calls++;
            throw diskFull();
          }),
        isCode('insufficient_storage'),
      );
      assert.equal(calls, 1);
      // other errors pass through as they are
      const other = new Error('constraint');
      assert.throws(
        () =>
          g.guard.write(false, () => {
            throw other;
          }),
        (e: unknown) => e === other,
      );
    } finally {
      g.close();
    }
  });

  it('does not go degraded when a write fails on a disk with room (a single write too large for it)', () => {
    const g = guardOn(100 * MiB);
    try {
      assert.throws(
        () =>
          g.guard.write(true, () => {
            throw diskFull();
          }),
        isCode('insufficient_storage'),
      );
      assert.equal(g.guard.isDegraded, false);
      assert.equal(
        g.guard.write(true, () => 1),
        1,
      );
    } finally {
      g.close();
    }
  });

  it('under a SQLite mailbox: stores are 507 while degraded, nonce claims and acks go on', async () => {
    const g = guardOn(100 * MiB);
    const store = SqliteMailboxStore.open(join(g.dir, 'cache.sqlite'), { guard: g.guard });
    try {
      const held = entry({ sizeBytes: 300 });
      await put(store, held);
      g.disk.free = 4 * MiB;
      g.guard.check();
      await assert.rejects(put(store, entry({ sizeBytes: 300 })), isCode('insufficient_storage'));
      const claim = claimOf(randomUUID());
      assert.equal(await store.claimNonce(claim, NOW), true);
      assert.equal(await store.claimNonce(claim, NOW), false, 'a replay is still refused');
      assert.deepEqual(await store.ack(DID, [held.messageId], NOW, claimOf(randomUUID())), [held.messageId]);
      g.disk.free = 100 * MiB;
      g.guard.check();
      assert.equal((await put(store, entry({ sizeBytes: 300 }))).deduped, false);
    } finally {
      await store.close();
      g.close();
    }
  });

  it('under the SQLite Relay store: chunks are 507 staging_persist_failed while degraded, node nonces go on', async () => {
    const g = guardOn(100 * MiB);
    const store = SqliteRelayStagingStore.open(join(g.dir, 'relay.sqlite'), { guard: g.guard });
    try {
      const roomy = { maxBytes: 10_000_000, maxSetsPerRecipient: 10 };
      await store.stage(stageReq('g1', 0, roomy));
      g.disk.free = 4 * MiB;
      g.guard.check();
      await assert.rejects(store.stage(stageReq('g1', 1, roomy)), isCode('staging_persist_failed'));
      const claim = { scope: 'node:relay', did: R, keyId: `${R}#k1`, nonce: randomUUID(), expiresAtMs: T + 60_000 };
      assert.equal(await store.claimNonce(claim, T), true);
      assert.equal(await store.claimNonce(claim, T), false, 'a replay is still refused');
      g.disk.free = 100 * MiB;
      g.guard.check();
      assert.equal((await store.stage(stageReq('g1', 1, roomy))).complete, true);
    } finally {
      await store.close();
      g.close();
    }
  });
});
