/**
 * The event-run store (src/store/sqlite/event-run-store.ts, http-api.md §10.9): a run is claimed once, across a
 * reopen, until its claim may be forgotten; claims made together are answered each by its own outcome; every claim
 * is answered only after an fsync of the WAL made off the event loop (`ddn-wal-sync`). Expired claims are forgotten
 * in bounded statements, by the store and by the node's periodic sweep (src/events/claim-sweep.ts); a file written
 * before claims had an expiry keeps its claims.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { ManualClock } from '../../src/base/clock.js';
import { sweepClaims } from '../../src/events/claim-sweep.js';
import { SqliteEventRunStore } from '../../src/store/sqlite/event-run-store.js';
import { waitFor } from '../support/wait.js';

const DAY = 86_400_000;

function scratch(): { path: string; done: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'ddn-event-runs-'));
  return { path: join(dir, 'events.sqlite'), done: () => rmSync(dir, { recursive: true, force: true }) };
}

/** The message ids of the claims in the file, read by a connection of their own. */
function claimed(path: string): string[] {
  const db = new Database(path, { readonly: true });
  try {
    return db.prepare('SELECT message_id FROM event_runs ORDER BY message_id').pluck().all() as string[];
  } finally {
    db.close();
  }
}

describe('SqliteEventRunStore', () => {
  it('claims a run once, message ids in any case, and keeps the claim across a reopen', async () => {
    const f = scratch();
    try {
      let s = SqliteEventRunStore.open(f.path);
      assert.equal(await s.claim('CacheStored', 'M-1', 'p', 'r', 1, DAY), true);
      assert.equal(await s.claim('CacheStored', 'm-1', 'p', 'r', 2, DAY), false, 'the message id is compared lower-cased');
      assert.equal(await s.claim('RelayAccepted', 'm-1', 'p', 'r', 3, DAY), true, 'another event');
      assert.equal(await s.claim('CacheStored', 'm-1', 'p', 'r2', 4, DAY), true, 'another rule');
      await s.close();
      s = SqliteEventRunStore.open(f.path);
      assert.equal(await s.claim('CacheStored', 'm-1', 'p', 'r', 5, DAY), false, 'still claimed after a reopen');
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
        s.claim('CacheStored', 'a', 'p', 'r', 1, DAY),
        s.claim('CacheStored', 'a', 'p', 'r', 1, DAY),
        s.claim('CacheStored', 'b', 'p', 'r', 1, DAY),
      ]);
      assert.deepEqual(outcomes, [true, false, true]);
      assert.ok(s.walSyncs >= 1, 'answered after an fsync of the WAL');
      await s.close();
      assert.deepEqual(claimed(f.path), ['a', 'b'], 'what was answered is in the file');
    } finally {
      f.done();
    }
  });

  it('forgets the claims whose time passed, at most the limit a statement; a forgotten run can be claimed again', async () => {
    const f = scratch();
    try {
      const s = SqliteEventRunStore.open(f.path);
      for (const [id, forget] of [
        ['x1', 100],
        ['x2', 200],
        ['x3', 300],
        ['live', 10 * DAY],
      ] as const) {
        assert.equal(await s.claim('CacheStored', id, 'p', 'r', 1, forget), true);
      }
      assert.equal(await s.forgetExpired(250, 1), 1, 'one a statement');
      assert.equal(await s.forgetExpired(250, 10), 1, 'x2 (x3 is not due before 300)');
      assert.equal(await s.forgetExpired(250, 10), 0);
      assert.deepEqual(claimed(f.path), ['live', 'x3']);
      assert.equal(await s.claim('CacheStored', 'x1', 'p', 'r', 400, 500), true, 'claimed again once forgotten');
      await s.close();
    } finally {
      f.done();
    }
  });

  it('keeps the claims of a file written before claims had an expiry (migration 2)', async () => {
    const f = scratch();
    try {
      const old = new Database(f.path);
      old.pragma('journal_mode = WAL');
      old.exec(`CREATE TABLE schema_migrations (namespace TEXT NOT NULL, version INTEGER NOT NULL, PRIMARY KEY (namespace, version));
        INSERT INTO schema_migrations VALUES ('events', 1);
        CREATE TABLE event_runs (event TEXT NOT NULL, message_id TEXT NOT NULL, policy_id TEXT NOT NULL, rule_id TEXT NOT NULL,
          claimed_at_ms INTEGER NOT NULL, PRIMARY KEY (event, message_id, policy_id, rule_id));
        INSERT INTO event_runs VALUES ('CacheStored', 'before', 'p', 'r', 1);`);
      old.close();
      const s = SqliteEventRunStore.open(f.path);
      assert.equal(await s.forgetExpired(Number.MAX_SAFE_INTEGER, 10), 0, 'no expiry: kept');
      assert.equal(await s.claim('CacheStored', 'before', 'p', 'r', 2, DAY), false, 'still claimed');
      await s.close();
    } finally {
      f.done();
    }
  });

  it("the node's sweep forgets every expired claim, batch after batch, on its own timer", async () => {
    const f = scratch();
    const s = SqliteEventRunStore.open(f.path);
    const clock = new ManualClock(1_000);
    const sweep = sweepClaims(s, clock, { everyMs: 20, batch: 2 });
    try {
      for (let i = 0; i < 5; i++) await s.claim('RelayAccepted', `old-${i}`, 'p', 'r', 1, 2_000 + i);
      await s.claim('RelayAccepted', 'young', 'p', 'r', 1, 50_000);
      clock.advance(10_000);
      await waitFor('the expired claims forgotten', async () => (claimed(f.path).length === 1 ? true : undefined));
      assert.deepEqual(claimed(f.path), ['young']);
      assert.equal(await sweep.sweep(), 0, 'nothing more to forget');
    } finally {
      await sweep.stop();
      await s.close();
      f.done();
    }
  });

  it('refuses claims once closed', async () => {
    const f = scratch();
    try {
      const s = SqliteEventRunStore.open(f.path);
      await s.close();
      await assert.rejects(s.claim('CacheStored', 'c', 'p', 'r', 1, DAY), /closing/);
    } finally {
      f.done();
    }
  });
});
