/**
 * The mailbox writer thread dies (here: terminated from outside) and a new one takes over: what it had been sent
 * fails with 507, what was stored before and what comes after is kept; a thread that keeps dying leaves the
 * writer refusing writes with 503.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import { DdnError } from '../../src/base/errors.js';
import type { NewEntry } from '../../src/cache/mailbox-store.js';
import { SqliteMailboxStore } from '../../src/store/sqlite/mailbox-store.js';
import { MAX_RESTARTS, type WorkerWriter } from '../../src/store/sqlite/worker-writer.js';
import type { OpResults, WriteOp } from '../../src/store/sqlite/op-writer.js';
import { DID, entry, NOW } from '../store/mailbox-fixtures.js';

const put = (s: SqliteMailboxStore, e: NewEntry) => s.put({ entry: e, nowMs: NOW, chunkWindowMs: 3_600_000, claim: null, quotaBytes: null });
const writerOf = (s: SqliteMailboxStore) => (s as unknown as { writer: WorkerWriter<WriteOp, OpResults<WriteOp>> }).writer;
/** Ends the current writer thread the way a fatal error in it would. */
const killThread = (s: SqliteMailboxStore) => (writerOf(s) as unknown as { worker: Worker }).worker.terminate();
const isCode = (code: string) => (e: unknown) => e instanceof DdnError && e.code === code;
/** Resolves once the writer has started its `n`-th replacement thread. */
async function restarted(s: SqliteMailboxStore, n: number): Promise<void> {
  for (const until = Date.now() + 10_000; writerOf(s).restarts < n;) {
    if (Date.now() > until) throw new Error(`no restart ${n} within 10 s`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('mailbox writer thread restart', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'ddn-writer-restart-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('replaces an idle thread that died: earlier and later stores are both kept', async () => {
    const exits: boolean[] = [];
    const store = SqliteMailboxStore.open(join(dir, 'idle.sqlite'), {
      writerThread: true,
      writer: { onThreadExit: (_err, restarted) => exits.push(restarted) },
    });
    try {
      const first = entry();
      await put(store, first);
      await killThread(store);
      assert.deepEqual(exits, [true]);
      // submitted before the new thread is up: it waits for it
      const second = entry();
      assert.equal((await put(store, second)).deduped, false);
      assert.equal(writerOf(store).restarts, 1);
      // the identical first envelope is recognised by the new thread: it was committed before the death
      assert.equal((await put(store, first)).deduped, true);
      const ids = (await store.listSummary(DID, NOW)).map((m) => m.messageId).sort();
      assert.deepEqual(ids, [first.messageId, second.messageId].sort());
      assert.ok(store.writeStats.operations >= 3, 'counts keep growing across the restart');
    } finally {
      await store.close();
    }
  });

  it('closes cleanly between a death and the restart, and starts no thread after closing', async () => {
    const store = SqliteMailboxStore.open(join(dir, 'close.sqlite'), { writerThread: true });
    await put(store, entry());
    await killThread(store);
    await store.close();
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(writerOf(store).restarts, 0);
    await assert.rejects(put(store, entry()), isCode('service_unavailable'));
  });

  it('fails with 507 exactly the writes the dead thread had not answered; every 202 is stored', async () => {
    const store = SqliteMailboxStore.open(join(dir, 'busy.sqlite'), { writerThread: true });
    try {
      const entries = Array.from({ length: 3000 }, () => entry());
      const outcomes = entries.map((e) =>
        put(store, e).then(
          () => 'stored',
          (err: unknown) => err,
        ),
      );
      // the batch is posted at the end of this turn; the thread is ended while it works on it
      await new Promise((r) => setImmediate(r));
      await killThread(store);
      const settled = await Promise.all(outcomes);
      const stored = entries.filter((_, i) => settled[i] === 'stored').map((e) => e.messageId);
      assert.ok(stored.length < entries.length, 'the thread ended before its batch committed');
      for (const o of settled) if (o !== 'stored') assert.ok(isCode('insufficient_storage')(o), String(o));
      const held = new Set((await store.listSummary(DID, NOW)).map((m) => m.messageId));
      for (const id of stored) assert.ok(held.has(id), `answered as stored but missing: ${id}`);
      // the refused ones can be sent again and are stored by the new thread
      const retried = entries.filter((_, i) => settled[i] !== 'stored');
      await Promise.all(retried.map((e) => put(store, e)));
      assert.equal((await store.listSummary(DID, NOW)).length, entries.length);
    } finally {
      await store.close();
    }
  });

  it(`stops restarting after ${MAX_RESTARTS} deaths in a row: writes are then refused with 503`, async () => {
    const exits: boolean[] = [];
    const store = SqliteMailboxStore.open(join(dir, 'loop.sqlite'), {
      writerThread: true,
      writer: { onThreadExit: (_err, restarted) => exits.push(restarted) },
    });
    try {
      for (let i = 1; i <= MAX_RESTARTS; i++) {
        await killThread(store);
        await restarted(store, i);
      }
      const e = entry();
      await put(store, e);
      await killThread(store);
      assert.deepEqual(exits, [...Array<boolean>(MAX_RESTARTS).fill(true), false]);
      await assert.rejects(put(store, entry()), isCode('service_unavailable'));
      // reads still work on the main thread's connection
      assert.deepEqual(
        (await store.listSummary(DID, NOW)).map((m) => m.messageId),
        [e.messageId],
      );
    } finally {
      await store.close();
    }
  });
});
