/**
 * The SQLite mailbox's read cache on a real file: after every kind of change, made through this handle or another
 * one (another process), its pages and summaries equal those of a handle without the cache; unchanged mailboxes
 * are answered from memory; and migration 5 gives a file written before it its versions.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { envelopeBuffer } from '../../src/cache/envelope-text.js';
import type { MessagePage, NewEntry } from '../../src/cache/mailbox-store.js';
import { migrate } from '../../src/store/sqlite/database.js';
import { MAILBOX_MIGRATIONS, SqliteMailboxStore } from '../../src/store/sqlite/mailbox-store.js';
import { chunkOf, claimOf, DID, entry, HOUR, NOW, OTHER, put } from './mailbox-fixtures.js';

const BUDGET = 8 * 1024 * 1024;

/** A page as comparable values: ids, metadata and envelope bytes. */
function plain(page: MessagePage): unknown {
  return { truncated: page.truncated, entries: page.entries.map((e) => ({ meta: e.meta, envelope: envelopeBuffer(e.envelope).toString('hex') })) };
}

interface Handles {
  /** With the read cache (the default). */
  cached: SqliteMailboxStore;
  /** Without it: the truth to compare with. */
  direct: SqliteMailboxStore;
  /** Another writer on the same file. */
  other: SqliteMailboxStore;
}

async function withHandles(fn: (h: Handles) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'ddn-read-cache-'));
  const path = join(dir, 'cache.sqlite');
  const cached = SqliteMailboxStore.open(path);
  const direct = SqliteMailboxStore.open(path, { readCache: { maxBytes: 0, maxRecipients: 0 } });
  const other = SqliteMailboxStore.open(path);
  try {
    await fn({ cached, direct, other });
  } finally {
    for (const s of [cached, direct, other]) await s.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Reads `did`'s page and summary at `nowMs` through both handles, twice through the cached one, and checks they
 * agree; returns the ids shown and whether the first cached read was a hit.
 */
async function agree(h: Handles, nowMs = NOW, did = DID): Promise<{ ids: string[]; hit: boolean }> {
  const before = h.cached.readCacheStats.hits;
  const page = await h.cached.listMessages(did, nowMs, BUDGET);
  const summary = await h.cached.listSummary(did, nowMs);
  const hit = h.cached.readCacheStats.hits - before === 2;
  assert.deepEqual(plain(page), plain(await h.direct.listMessages(did, nowMs, BUDGET)));
  assert.deepEqual(summary, await h.direct.listSummary(did, nowMs));
  const hits = h.cached.readCacheStats.hits;
  assert.equal(await h.cached.listMessages(did, nowMs, BUDGET), page, 'the unchanged page again, from memory');
  assert.equal(await h.cached.listSummary(did, nowMs), summary);
  assert.equal(h.cached.readCacheStats.hits, hits + 2);
  assert.equal(h.direct.readCacheStats.hits, 0);
  return { ids: page.entries.map((e) => e.meta.messageId), hit };
}

describe('SqliteMailboxStore: read cache', () => {
  it('answers as the file does after stores, a deduplicated store, chunk sets, acks and stores of other recipients', () =>
    withHandles(async (h) => {
      assert.deepEqual(await agree(h), { ids: [], hit: false });
      await put(h.cached, entry({ messageId: 'm1' }));
      assert.deepEqual((await agree(h)).ids, ['m1']);
      const m2 = entry({ messageId: 'm2' });
      await put(h.cached, m2);
      assert.deepEqual((await agree(h)).ids, ['m1', 'm2']);

      assert.equal((await put(h.cached, m2)).deduped, true);
      assert.deepEqual(await agree(h), { ids: ['m1', 'm2'], hit: true }, 'a deduplicated store changes nothing');
      await put(h.cached, entry({ messageId: 'o1', recipientDid: OTHER }));
      assert.deepEqual(await agree(h), { ids: ['m1', 'm2'], hit: true }, "another recipient's store changes nothing");
      assert.deepEqual((await agree(h, NOW, OTHER)).ids, ['o1']);

      const g = randomUUID();
      await put(h.cached, chunkOf(g, 1, 2, { messageId: 'c1' }));
      assert.deepEqual((await agree(h)).ids, ['m1', 'm2'], 'an incomplete set stays hidden');
      await put(h.cached, chunkOf(g, 2, 2, { messageId: 'c2' }));
      assert.deepEqual((await agree(h)).ids, ['m1', 'm2', 'c1', 'c2'], 'the completed set shows');

      assert.deepEqual(await h.cached.ack(DID, ['m1'], NOW, claimOf('ack-1', { scope: 'proof:ack' })), ['m1']);
      assert.deepEqual(await agree(h), { ids: ['m2', 'c1', 'c2'], hit: false });
      assert.deepEqual(await h.cached.ack(DID, ['nothing-here'], NOW, claimOf('ack-2', { scope: 'proof:ack' })), []);
      assert.deepEqual(await agree(h), { ids: ['m2', 'c1', 'c2'], hit: true }, 'an ack that deleted nothing changes nothing');
      // nonce claims (every retrieval makes one) leave the answers in memory
      assert.equal(await h.cached.claimNonce(claimOf('pull-1'), NOW), true);
      assert.equal((await agree(h)).hit, true);
    }));

  it('answers as the file does after another process stores, acknowledges and purges', () =>
    withHandles(async (h) => {
      await put(h.cached, entry({ messageId: 'm1' }));
      assert.deepEqual((await agree(h)).ids, ['m1']);
      await put(h.other, entry({ messageId: 'm2' }));
      assert.deepEqual(await agree(h), { ids: ['m1', 'm2'], hit: false });
      await h.other.ack(DID, ['m1'], NOW, claimOf('ack-other', { scope: 'proof:ack' }));
      assert.deepEqual((await agree(h)).ids, ['m2']);
      const g = randomUUID();
      await put(h.other, chunkOf(g, 1, 2, { messageId: 'c1' }));
      await put(h.cached, chunkOf(g, 2, 2, { messageId: 'c2' }));
      assert.deepEqual((await agree(h)).ids, ['m2', 'c1', 'c2']);
      // the other process purges the set's staging row after its entries expire: nothing of it shows either way
      await h.other.sweep(NOW + 2 * HOUR);
      assert.deepEqual((await agree(h, NOW + 2 * HOUR)).ids, []);
    }));

  it('hides an entry from the instant it expires, and answers a clock that went back from the file', () =>
    withHandles(async (h) => {
      await put(h.cached, entry({ messageId: 'soon', expiresAtMs: NOW + 1_000 }));
      await put(h.cached, entry({ messageId: 'later', expiresAtMs: NOW + HOUR }));
      assert.deepEqual((await agree(h, NOW + 999)).ids, ['soon', 'later']);
      assert.deepEqual(await agree(h, NOW + 1_000), { ids: ['later'], hit: false });
      assert.deepEqual(await agree(h, NOW + 500), { ids: ['soon', 'later'], hit: false });
    }));

  it('answers a read made while a store is in flight as the file does, and the next one too', () =>
    withHandles(async (h) => {
      await put(h.cached, entry({ messageId: 'm1' }));
      await agree(h);
      const pending = Array.from({ length: 20 }, (_, i) => put(h.cached, entry({ messageId: `p${i}` })));
      // reads race the writer thread's commits; each must still be exactly a state the file went through
      for (let i = 0; i < 20; i++) {
        const ids = (await h.cached.listMessages(DID, NOW, BUDGET)).entries.map((e) => e.meta.messageId);
        assert.deepEqual(ids, ['m1', ...Array.from({ length: ids.length - 1 }, (_, k) => `p${k}`)]);
      }
      await Promise.all(pending);
      assert.equal((await agree(h)).ids.length, 21);
    }));

  it('gives a file written before migration 5 its versions, so its first change is seen', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ddn-read-cache-migrate-'));
    const path = join(dir, 'cache.sqlite');
    const old = new Database(path);
    migrate(
      old,
      MAILBOX_MIGRATIONS.filter((m) => m.version <= 4),
      'cache',
    );
    const e: NewEntry = entry({ messageId: 'before' });
    old
      .prepare(
        `INSERT INTO cache_entries (message_key, message_id, recipient, content_hash, stored_at_ms, expires_at_ms, max_ttl_s,
        applied_ttl_s, size_bytes, envelope) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run('before', 'before', DID, e.contentHash, NOW, NOW + HOUR, 60, 60, e.envelope.byteLength, Buffer.from(e.envelope));
    old.close();
    const store = SqliteMailboxStore.open(path);
    const peek = new Database(path, { readonly: true });
    try {
      const version = () => peek.prepare('SELECT version FROM cache_recipient_bytes WHERE recipient = ?').pluck().get(DID) as number;
      assert.equal(version(), 0);
      assert.deepEqual(
        (await store.listMessages(DID, NOW, BUDGET)).entries.map((x) => x.meta.messageId),
        ['before'],
      );
      await put(store, entry({ messageId: 'after' }));
      assert.equal(version(), 1);
      assert.deepEqual(
        (await store.listSummary(DID, NOW)).map((x) => x.messageId),
        ['before', 'after'],
      );
      assert.deepEqual(
        (await store.listMessages(DID, NOW, BUDGET)).entries.map((x) => x.meta.messageId),
        ['before', 'after'],
      );
    } finally {
      peek.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
