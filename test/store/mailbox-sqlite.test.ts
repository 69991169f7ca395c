/** The MailboxStore contract on SQLite: each test on its own file in a temp dir. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import Database from 'better-sqlite3';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { MailboxStore, NewEntry } from '../../src/cache/mailbox-store.js';
import { ENVELOPE_PART_BYTES, MAILBOX_MIGRATIONS, SqliteMailboxStore } from '../../src/store/sqlite/mailbox-store.js';
import { migrate } from '../../src/store/sqlite/database.js';
import type { NonceClaim } from '../../src/ports/nonce-registry.js';
import { envelopeBuffer } from '../../src/cache/envelope-text.js';
import { MailboxWrites } from '../../src/store/sqlite/mailbox-writes.js';
import { mailboxContract } from './mailbox-contract.js';
import { entry, HOUR, NOW, OTHER } from './mailbox-fixtures.js';

mailboxContract('sqlite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ddn-mailbox-'));
  const path = join(dir, 'cache.sqlite');
  const stores: MailboxStore[] = [SqliteMailboxStore.open(path)];
  return {
    store: stores[0],
    async another() {
      const s = SqliteMailboxStore.open(path);
      stores.push(s);
      return s;
    },
    async close() {
      for (const s of stores) await s.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

describe('SqliteMailboxStore: large envelopes in parts', () => {
  it('stores a large envelope in 1 MiB parts and removes the parts with their entry', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ddn-mailbox-parts-'));
    const path = join(dir, 'cache.sqlite');
    const store = SqliteMailboxStore.open(path);
    const peek = new Database(path, { readonly: true });
    const parts = () => (peek.prepare('SELECT COUNT(*) AS n FROM cache_envelope_parts').get() as { n: number }).n;
    try {
      const did = 'did:platform:2222222222222222';
      const now = 1_800_000_000_000;
      const envelope = Buffer.from(JSON.stringify({ message_id: 'm1', pad: 'x'.repeat(ENVELOPE_PART_BYTES * 2 + 5) }));
      await store.put({
        entry: {
          messageId: 'm1',
          recipientDid: did,
          contentHash: 'h',
          storedAtMs: now,
          expiresAtMs: now + 1_000,
          maxTtlSeconds: 1,
          appliedTtlSeconds: 1,
          tag: null,
          applicationId: null,
          chunk: null,
          sizeBytes: envelope.length,
          provenance: null,
          envelope,
        },
        nowMs: now,
        chunkWindowMs: 1_000,
        claim: null,
        quotaBytes: null,
      });
      assert.equal(parts(), 2);
      await store.sweep(now + 2_000);
      assert.equal(parts(), 0);
    } finally {
      peek.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a pull page reads whole envelopes, and one that holds a large envelope, byte for byte and in order', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ddn-mailbox-pages-'));
    const store = SqliteMailboxStore.open(join(dir, 'cache.sqlite'));
    try {
      const now = 1_800_000_000_000;
      const put = async (did: string, id: string, envelope: Buffer, at: number) => {
        await store.put({
          entry: {
            messageId: id,
            recipientDid: did,
            contentHash: `h-${id}`,
            storedAtMs: at,
            expiresAtMs: now + 60_000,
            maxTtlSeconds: 60,
            appliedTtlSeconds: 60,
            tag: null,
            applicationId: null,
            chunk: null,
            sizeBytes: envelope.length,
            provenance: null,
            envelope,
          },
          nowMs: at,
          chunkWindowMs: 1_000,
          claim: null,
          quotaBytes: null,
        });
      };
      const text = (id: string, padBytes: number) => Buffer.from(JSON.stringify({ message_id: id, pad: 'y'.repeat(padBytes) }));
      const small = 'did:platform:3333333333333333';
      const mixed = 'did:platform:4444444444444444';
      const sent = new Map<string, Buffer>([
        ['s1', text('s1', 100)],
        ['s2', text('s2', 200)],
        ['m1', text('m1', 300)],
        ['big', text('big', ENVELOPE_PART_BYTES + 17)],
        ['m2', text('m2', 50)],
      ]);
      await put(small, 's1', sent.get('s1')!, now);
      await put(small, 's2', sent.get('s2')!, now + 1);
      await put(mixed, 'm1', sent.get('m1')!, now + 2);
      await put(mixed, 'big', sent.get('big')!, now + 3);
      await put(mixed, 'm2', sent.get('m2')!, now + 4);
      const read = async (did: string, budget: number) => {
        const page = await store.listMessages(did, now + 10, budget);
        return { ids: page.entries.map((e) => e.meta.messageId), bytes: page.entries.map((e) => envelopeBuffer(e.envelope)), truncated: page.truncated };
      };
      for (const [did, ids] of [
        [small, ['s1', 's2']],
        [mixed, ['m1', 'big', 'm2']],
      ] as const) {
        const got = await read(did, 64 * 1024 * 1024);
        assert.deepEqual(got.ids, ids);
        assert.deepEqual(
          got.bytes,
          ids.map((id) => sent.get(id)),
        );
        assert.equal(got.truncated, false);
      }
      // the budget still cuts a page after its first entry, on either path
      assert.deepEqual(await read(small, 150), { ids: ['s1'], bytes: [sent.get('s1')], truncated: true });
      assert.deepEqual(await read(mixed, 400), { ids: ['m1'], bytes: [sent.get('m1')], truncated: true });
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('SqliteMailboxStore: nonce keys (migration 4)', () => {
  it('carries the nonces of a file written before it over, still refused as replays, and drops the old table', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ddn-mailbox-nonces-'));
    const path = join(dir, 'cache.sqlite');
    const now = 1_800_000_000_000;
    const did = 'did:platform:2222222222222222';
    const live: NonceClaim = { scope: 'proof:pull', did, keyId: `${did}#key-1`, nonce: 'live-nonce', expiresAtMs: now + 300_000 };
    const expired: NonceClaim = { ...live, nonce: 'expired-nonce', expiresAtMs: now - 1 };
    const old = new Database(path);
    migrate(
      old,
      MAILBOX_MIGRATIONS.filter((m) => m.version <= 3),
      'cache',
    );
    const insert = old.prepare('INSERT INTO cache_nonces (scope, did, key_id, nonce, expires_at_ms) VALUES (?, ?, ?, ?, ?)');
    for (const c of [live, expired]) insert.run(c.scope, c.did, c.keyId, c.nonce, c.expiresAtMs);
    old.close();
    const store = SqliteMailboxStore.open(path);
    const peek = new Database(path, { readonly: true });
    try {
      const tables = peek.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[];
      assert.ok(tables.includes('cache_nonce_keys') && !tables.includes('cache_nonces'));
      assert.equal(store.isNonceClaimed(live, now), true);
      assert.equal(await store.claimNonce(live, now), false, 'a nonce claimed before the migration is still used');
      assert.equal(store.isNonceClaimed(expired, now), false);
      assert.equal(await store.claimNonce({ ...expired, expiresAtMs: now + 300_000 }, now), true, 'an expired one is free again');
      // the four fields are told apart: the same texts in other fields are another claim
      assert.equal(await store.claimNonce({ ...live, nonce: 'x', keyId: `${live.keyId}","live-nonce` }, now), true);
    } finally {
      peek.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('SqliteMailboxStore: totals for the metrics (migration 6)', () => {
  it('counts the entries of a file written before it, and keeps counting', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ddn-mailbox-totals-'));
    const path = join(dir, 'cache.sqlite');
    const old = new Database(path);
    migrate(
      old,
      MAILBOX_MIGRATIONS.filter((m) => m.version <= 5),
      'cache',
    );
    const writes = new MailboxWrites(old);
    const before = [entry(), entry({ recipientDid: OTHER })];
    for (const e of before) writes.put({ entry: e, nowMs: NOW, chunkWindowMs: HOUR, claim: null, quotaBytes: null });
    old.close();
    const store = SqliteMailboxStore.open(path);
    try {
      const sizes = (es: readonly NewEntry[]) => es.reduce((n, e) => n + e.sizeBytes, 0);
      assert.deepEqual(await store.usage().then((u) => [u.entries, u.bytes]), [2, sizes(before)]);
      const later = entry();
      await store.put({ entry: later, nowMs: NOW, chunkWindowMs: HOUR, claim: null, quotaBytes: null });
      assert.deepEqual(await store.usage().then((u) => [u.entries, u.bytes]), [3, sizes([...before, later])]);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
