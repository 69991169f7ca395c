/**
 * The event-run store (src/store/sqlite/event-run-store.ts, http-api.md §10.9): a run is claimed once, ever, across
 * a reopen; claims made together are answered each by its own outcome; every claim is answered only after an
 * fsync of the WAL made off the event loop (`ddn-wal-sync`).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SqliteEventRunStore } from '../../src/store/sqlite/event-run-store.js';

function scratch(): { path: string; done: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'ddn-event-runs-'));
  return { path: join(dir, 'events.sqlite'), done: () => rmSync(dir, { recursive: true, force: true }) };
}

describe('SqliteEventRunStore', () => {
  it('claims a run once, message ids in any case, and keeps the claim across a reopen', async () => {
    const f = scratch();
    try {
      let s = SqliteEventRunStore.open(f.path);
      assert.equal(await s.claim('CacheStored', 'M-1', 'p', 'r', 1), true);
      assert.equal(await s.claim('CacheStored', 'm-1', 'p', 'r', 2), false, 'the message id is compared lower-cased');
      assert.equal(await s.claim('RelayAccepted', 'm-1', 'p', 'r', 3), true, 'another event');
      assert.equal(await s.claim('CacheStored', 'm-1', 'p', 'r2', 4), true, 'another rule');
      await s.close();
      s = SqliteEventRunStore.open(f.path);
      assert.equal(await s.claim('CacheStored', 'm-1', 'p', 'r', 5), false, 'still claimed after a reopen');
      await s.close();
    } finally {
      f.done();
    }
  });

  it('answers claims made in one turn each by its own outcome, after an fsync of the WAL', async () => {
    const f = scratch();
    try {
      const s = SqliteEventRunStore.open(f.path);
      assert.equal(s.walSyncs, 0);
      const outcomes = await Promise.all([
        s.claim('CacheStored', 'a', 'p', 'r', 1),
        s.claim('CacheStored', 'a', 'p', 'r', 1),
        s.claim('CacheStored', 'b', 'p', 'r', 1),
      ]);
      assert.deepEqual(outcomes, [true, false, true]);
      assert.ok(s.walSyncs >= 1, 'answered after an fsync of the WAL');
      await s.close();
      // what was answered is in the file, read by another connection
      const db = new Database(f.path, { readonly: true });
      assert.deepEqual(db.prepare('SELECT message_id FROM event_runs ORDER BY message_id').pluck().all(), ['a', 'b']);
      db.close();
    } finally {
      f.done();
    }
  });

  it('refuses claims once closed', async () => {
    const f = scratch();
    try {
      const s = SqliteEventRunStore.open(f.path);
      await s.close();
      await assert.rejects(s.claim('CacheStored', 'c', 'p', 'r', 1), /closing/);
    } finally {
      f.done();
    }
  });
});
