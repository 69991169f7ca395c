/** The MailboxStore contract on SQLite: each test on its own file in a temp dir. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import Database from 'better-sqlite3';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { MailboxStore } from '../../src/cache/mailbox-store.js';
import { ENVELOPE_PART_BYTES, SqliteMailboxStore } from '../../src/store/sqlite/mailbox-store.js';
import { mailboxContract } from './mailbox-contract.js';

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
          messageId: 'm1', recipientDid: did, contentHash: 'h', storedAtMs: now, expiresAtMs: now + 1_000, maxTtlSeconds: 1,
          appliedTtlSeconds: 1, tag: null, applicationId: null, chunk: null, sizeBytes: envelope.length, provenance: null, envelope,
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
});
