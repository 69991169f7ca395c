/** RecipientReadCache: what it serves again, and everything that makes it read afresh. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { MessagePage, RetrievedEntry, SummaryEntry } from '../../src/cache/mailbox-store.js';
import { RecipientReadCache, type ReadCacheLimits } from '../../src/cache/read-cache.js';

const A = 'did:platform:aaaaaaaaaaaaaaaa';
const B = 'did:platform:bbbbbbbbbbbbbbbb';
const NOW = 1_800_000_000_000;
const BUDGET = 8 * 1024 * 1024;

function item(id: string, expiresAtMs: number, envelope: RetrievedEntry['envelope'] = `{"message_id":"${id}"}`): RetrievedEntry {
  return { meta: { messageId: id, recipientDid: A, expiresAtMs, chunk: null }, envelope };
}

function summaryItem(id: string, expiresAtMs: number): SummaryEntry {
  return { messageId: id, storedAtMs: NOW, expiresAtMs, tag: null, applicationId: null, chunk: null, sizeBytes: 10 };
}

/** A reader that counts its reads and answers what `answer` holds at the time. */
function counted<T>(answer: () => T): { read: () => T; readonly reads: number } {
  let reads = 0;
  return {
    read: () => {
      reads++;
      return answer();
    },
    get reads() {
      return reads;
    },
  };
}

const page = (...entries: RetrievedEntry[]): MessagePage => ({ entries, truncated: false });

describe('RecipientReadCache', () => {
  it('serves a page and a summary again while the version holds, and reads afresh once it moves', () => {
    const cache = new RecipientReadCache();
    let current = page(item('m1', NOW + 60_000));
    const pages = counted(() => current);
    const first = cache.page(A, 1, NOW, BUDGET, pages.read);
    assert.equal(first.kept, true, 'marked as kept');
    assert.deepEqual(first.entries, current.entries);
    assert.equal(cache.page(A, 1, NOW + 5, BUDGET, pages.read), first, 'the kept page object itself');
    assert.equal(pages.reads, 1);
    current = page(item('m1', NOW + 60_000), item('m2', NOW + 60_000));
    assert.deepEqual(
      cache.page(A, 2, NOW + 6, BUDGET, pages.read).entries.map((e) => e.meta.messageId),
      ['m1', 'm2'],
    );
    assert.equal(pages.reads, 2);

    const summaries = counted(() => [summaryItem('m1', NOW + 60_000)]);
    cache.summary(A, 2, NOW, summaries.read);
    cache.summary(A, 2, NOW + 1, summaries.read);
    assert.equal(summaries.reads, 1, 'a summary is kept beside the page');
    cache.summary(A, 3, NOW + 2, summaries.read);
    assert.equal(summaries.reads, 2);
    assert.deepEqual(cache.stats, { hits: 2, misses: 4, recipients: 1, bytes: cache.stats.bytes });
  });

  it('tells a recipient with nothing stored (null) from one whose first store made version 0', () => {
    const cache = new RecipientReadCache();
    const reads = counted(() => page());
    cache.page(A, null, NOW, BUDGET, reads.read);
    cache.page(A, null, NOW, BUDGET, reads.read);
    assert.equal(reads.reads, 1);
    cache.page(A, 0, NOW, BUDGET, reads.read);
    assert.equal(reads.reads, 2);
  });

  it('reads afresh once a shown entry expires, for a clock that went back, and for another byte budget', () => {
    const cache = new RecipientReadCache();
    const pages = counted(() => page(item('soon', NOW + 1_000), item('later', NOW + 60_000)));
    cache.page(A, 1, NOW, BUDGET, pages.read);
    cache.page(A, 1, NOW + 999, BUDGET, pages.read);
    assert.equal(pages.reads, 1);
    cache.page(A, 1, NOW + 1_000, BUDGET, pages.read);
    assert.equal(pages.reads, 2, 'at the earliest expiry');
    cache.page(A, 1, NOW - 1, BUDGET, pages.read);
    assert.equal(pages.reads, 3, 'before the read it keeps');
    cache.page(A, 1, NOW, BUDGET, pages.read);
    assert.equal(pages.reads, 3, 'the page read at NOW - 1 holds at NOW');
    cache.page(A, 1, NOW, BUDGET / 2, pages.read);
    assert.equal(pages.reads, 4);

    const summaries = counted(() => [summaryItem('soon', NOW + 1_000)]);
    cache.summary(B, 1, NOW, summaries.read);
    cache.summary(B, 1, NOW + 1_000, summaries.read);
    assert.equal(summaries.reads, 2);
  });

  it('drops the other answer of a recipient once a newer version is read', () => {
    const cache = new RecipientReadCache();
    const summaries = counted(() => [summaryItem('m1', NOW + 60_000), summaryItem('m2', NOW + 60_000)]);
    cache.summary(A, 1, NOW, summaries.read);
    assert.equal(cache.stats.bytes, 2 * 256);
    const envelope = '{"message_id":"m1"}';
    cache.page(A, 2, NOW, BUDGET, () => page(item('m1', NOW + 60_000, envelope)));
    assert.equal(cache.stats.bytes, envelope.length + 256, 'the summary of version 1 is gone');
    cache.summary(A, 2, NOW, summaries.read);
    assert.equal(cache.stats.bytes, envelope.length + 256 + 2 * 256, 'both of version 2 are kept');
  });

  it('keeps recipients apart', () => {
    const cache = new RecipientReadCache();
    const a = counted(() => page(item('a', NOW + 60_000)));
    const b = counted(() => page(item('b', NOW + 60_000)));
    assert.equal(cache.page(A, 1, NOW, BUDGET, a.read).entries[0].meta.messageId, 'a');
    assert.equal(cache.page(B, 1, NOW, BUDGET, b.read).entries[0].meta.messageId, 'b');
    assert.equal(cache.page(A, 1, NOW, BUDGET, a.read).entries[0].meta.messageId, 'a');
    assert.deepEqual([a.reads, b.reads], [1, 1]);
  });

  it('does not keep a page holding an envelope read as bytes', () => {
    const cache = new RecipientReadCache();
    const pages = counted(() => page(item('text', NOW + 60_000), item('bytes', NOW + 60_000, Buffer.from('{"a":1}'))));
    assert.equal(cache.page(A, 1, NOW, BUDGET, pages.read).kept, undefined, 'not marked: it is not kept');
    cache.page(A, 1, NOW, BUDGET, pages.read);
    assert.equal(pages.reads, 2);
    assert.equal(cache.stats.recipients, 0);
  });

  it('drops the least recently used recipient beyond its recipient and byte bounds', () => {
    const limits: ReadCacheLimits = { maxBytes: 64 * 1024, maxRecipients: 2 };
    const cache = new RecipientReadCache(limits);
    const dids = ['did:platform:1', 'did:platform:2', 'did:platform:3'];
    const reads = dids.map(() => counted(() => page(item('m', NOW + 60_000))));
    cache.page(dids[0], 1, NOW, BUDGET, reads[0].read);
    cache.page(dids[1], 1, NOW, BUDGET, reads[1].read);
    cache.page(dids[0], 1, NOW, BUDGET, reads[0].read); // 0 is now the most recently used
    cache.page(dids[2], 1, NOW, BUDGET, reads[2].read); // drops 1
    assert.equal(cache.stats.recipients, 2);
    cache.page(dids[0], 1, NOW, BUDGET, reads[0].read);
    cache.page(dids[1], 1, NOW, BUDGET, reads[1].read);
    assert.deepEqual(
      reads.map((r) => r.reads),
      [1, 2, 1],
    );

    // bytes: each page is ~2 KiB; 32 KiB hold some, never more than the bound
    const big = new RecipientReadCache({ maxBytes: 32 * 1024, maxRecipients: 1_000 });
    const text = `{"pad":"${'x'.repeat(1_800)}"}`;
    for (let i = 0; i < 20; i++) big.page(`did:platform:${i}`, 1, NOW, BUDGET, () => page(item('m', NOW + 60_000, text)));
    assert.ok(big.stats.bytes <= 32 * 1024, `${big.stats.bytes} bytes kept`);
    assert.ok(big.stats.recipients >= 4 && big.stats.recipients < 20, `${big.stats.recipients} recipients kept`);
  });

  it('keeps no recipient larger than an eighth of its bytes, and nothing at all with 0 bytes', () => {
    const cache = new RecipientReadCache({ maxBytes: 8 * 1024, maxRecipients: 10 });
    const large = counted(() => page(item('m', NOW + 60_000, `{"pad":"${'x'.repeat(2_000)}"}`)));
    assert.equal(cache.page(A, 1, NOW, BUDGET, large.read).kept, undefined);
    cache.page(A, 1, NOW, BUDGET, large.read);
    assert.equal(large.reads, 2);

    const off = new RecipientReadCache({ maxBytes: 0, maxRecipients: 10 });
    const empty = counted(() => page());
    const summaries = counted((): SummaryEntry[] => []);
    for (let i = 0; i < 2; i++) {
      off.page(A, 1, NOW, BUDGET, empty.read);
      off.summary(A, 1, NOW, summaries.read);
    }
    assert.deepEqual([empty.reads, summaries.reads], [2, 2]);
    assert.deepEqual(off.stats, { hits: 0, misses: 4, recipients: 0, bytes: 0 });
  });
});
