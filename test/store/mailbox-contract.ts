/**
 * The MailboxStore contract (DESIGN.md principle 5): one suite, run against every implementation
 * (mailbox-sqlite.test.ts, mailbox-postgres.test.ts). Times are injected; nothing waits on the wall clock.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { DdnError } from '../../src/base/errors.js';
import type { EnvelopeBytes, MailboxStore, NewEntry } from '../../src/cache/mailbox-store.js';
import { envelopeBuffer } from '../../src/cache/envelope-text.js';
import { chunkOf, claimOf, DID, entry, HOUR, NOW, OTHER, put, WINDOW } from './mailbox-fixtures.js';
import { ENVELOPE_PART_BYTES } from '../../src/store/sqlite/mailbox-schema.js';

/** A store under test; `another()` opens a second, independent handle on the same storage (another process). */
export interface MailboxHandle {
  store: MailboxStore;
  another(): Promise<MailboxStore>;
  /** Closes every handle and removes the storage. */
  close(): Promise<void>;
}

const isCode = (code: string) => (e: unknown) => e instanceof DdnError && e.code === code;
const ids = async (s: MailboxStore, did = DID, now = NOW) => (await s.listSummary(did, now)).map((m) => m.messageId);
const text = (b: EnvelopeBytes) => envelopeBuffer(b).toString('utf8');

export function mailboxContract(name: string, open: () => Promise<MailboxHandle>): void {
  /** Runs `fn` on a fresh store, closed (and its storage removed) afterwards. */
  const withStore = (fn: (h: MailboxHandle) => Promise<void>) => async () => {
    const h = await open();
    try {
      await fn(h);
    } finally {
      await h.close();
    }
  };

  describe(`MailboxStore contract: ${name}`, () => {
    it(
      'stores an entry and returns it by id (case-insensitive) with its exact bytes and metadata',
      withStore(async ({ store }) => {
        const provenance = { policyId: 'p1', policyRevision: 3, ruleId: 'r', blockHash: '0xab' };
        const e = entry({ messageId: 'AbC-1', body: '{"message_id":"AbC-1","x":"é"}', tag: 'invoice', applicationId: 'app', provenance });
        const r = await put(store, e);
        assert.equal(r.deduped, false);
        assert.equal(r.chunkSet, null);
        const { envelope, ...meta } = e;
        assert.deepEqual(r.entry, meta);
        const got = await store.getMessage(DID, 'abc-1', NOW);
        assert.ok(got);
        assert.deepEqual(got.meta, meta);
        assert.equal(text(got.envelope), text(envelope));
        assert.equal(await store.getMessage(OTHER, 'abc-1', NOW), null, 'another recipient does not see it');
        assert.equal(await store.getMessage(DID, 'nope', NOW), null);
      }),
    );

    it(
      'returns the stored bytes exactly: multi-byte text, across a part boundary, and bytes that are not UTF-8',
      withStore(async ({ store }) => {
        // "é" (2 bytes) straddles the boundary of the first 1 MiB part where a store keeps large envelopes in parts
        const head = '{"message_id":"utf-big","pad":"';
        const big = Buffer.from(`${head}${'x'.repeat(ENVELOPE_PART_BYTES - Buffer.byteLength(head) - 1)}é€😀\ufffd"}`);
        const notUtf8 = Buffer.concat([Buffer.from('{"message_id":"raw","x":"'), Buffer.from([0xf0, 0x9f, 0x98, 0xff, 0xed, 0xa0, 0x80]), Buffer.from('"}')]);
        const written = [
          entry({ messageId: 'utf-small', body: '{"message_id":"utf-small","x":"é€😀\ufffd"}' }),
          { ...entry({ messageId: 'utf-big' }), envelope: big, sizeBytes: big.length },
          { ...entry({ messageId: 'raw' }), envelope: notUtf8, sizeBytes: notUtf8.length },
        ];
        for (const e of written) await put(store, e);
        const page = await store.listMessages(DID, NOW, 100 * 1024 * 1024);
        assert.deepEqual(
          page.entries.map((e) => envelopeBuffer(e.envelope)),
          written.map((e) => Buffer.from(e.envelope)),
        );
        for (const e of written) assert.ok(envelopeBuffer((await store.getMessage(DID, e.messageId, NOW))!.envelope).equals(e.envelope), e.messageId);
      }),
    );

    it(
      'keeps a multi-MiB envelope byte-identical through every read, and deletes it whole',
      withStore(async ({ store }) => {
        const big = (id: string, fill: number) =>
          JSON.stringify({ message_id: id, payload: { ciphertext_b64: Buffer.alloc(3 * 1024 * 1024 + 123, fill).toString('base64') } });
        const a = entry({ messageId: 'big-a', body: big('big-a', 7) });
        const group = randomUUID();
        const c0 = chunkOf(group, 0, 2, { messageId: 'big-c0', body: big('big-c0', 1) });
        const c1 = chunkOf(group, 1, 2, { messageId: 'big-c1', body: big('big-c1', 2) });
        for (const e of [a, c0, c1]) await put(store, e);
        const one = await store.getMessage(DID, 'BIG-A', NOW);
        assert.ok(one !== null && text(one.envelope) === text(a.envelope));
        const page = await store.listMessages(DID, NOW, 100 * 1024 * 1024);
        assert.deepEqual(
          page.entries.map((e) => text(e.envelope)),
          [a, c0, c1].map((e) => text(e.envelope)),
        );
        const first = await store.listMessages(DID, NOW, a.sizeBytes + c0.sizeBytes - 1);
        assert.equal(first.truncated, true);
        assert.deepEqual(
          first.entries.map((e) => text(e.envelope)),
          [text(a.envelope)],
          'a budget ending inside a large envelope stops before it',
        );
        const set = await store.getChunkSet(DID, group, NOW);
        assert.deepEqual(
          set?.entries.map((e) => text(e.envelope)),
          [c0, c1].map((e) => text(e.envelope)),
        );
        assert.deepEqual(await store.ack(DID, ['big-a'], NOW, claimOf('n-big')), ['big-a']);
        assert.equal(await store.getMessage(DID, 'big-a', NOW), null);
        await put(store, entry({ messageId: 'big-a', body: big('big-a', 9) }));
        assert.equal(text((await store.getMessage(DID, 'big-a', NOW))!.envelope), big('big-a', 9));
        await store.sweep(NOW + 2 * HOUR);
        assert.deepEqual(await ids(store, DID, NOW), []);
      }),
    );

    it(
      'deduplicates identical content under the same message_id, whatever its case',
      withStore(async ({ store }) => {
        const e = entry({ messageId: 'Msg-Dup', contentHash: 'h1' });
        await put(store, e);
        const again = await put(store, entry({ messageId: 'MSG-DUP', contentHash: 'h1', storedAtMs: NOW + 5 }), NOW + 5);
        assert.equal(again.deduped, true);
        assert.equal(again.entry.messageId, 'Msg-Dup', 'the entry first stored');
        assert.equal(again.entry.storedAtMs, NOW);
        assert.deepEqual(await ids(store), ['Msg-Dup']);
      }),
    );

    it(
      'keeps the first copy of an unchunked message_id re-sent to the same recipient with other content',
      withStore(async ({ store }) => {
        await put(store, entry({ messageId: 'm-r', contentHash: 'h1' }));
        const again = await put(store, entry({ messageId: 'M-R', contentHash: 'h2', storedAtMs: NOW + 5 }), NOW + 5);
        assert.equal(again.deduped, true);
        assert.equal(again.entry.contentHash, 'h1', 'the entry first stored');
        assert.equal(again.entry.storedAtMs, NOW);
        assert.equal((await store.getMessage(DID, 'm-r', NOW))?.meta.contentHash, 'h1');
        assert.equal((await store.listSummary(DID, NOW)).length, 1);
      }),
    );

    it(
      'refuses a live message_id reused for another recipient or by a chunk, and writes nothing',
      withStore(async ({ store }) => {
        await put(store, entry({ messageId: 'm-c', contentHash: 'h1' }));
        await assert.rejects(put(store, entry({ messageId: 'M-C', contentHash: 'h2', recipientDid: OTHER })), isCode('message_id_conflict'));
        await assert.rejects(put(store, chunkOf('g-c', 0, 2, { messageId: 'm-c', contentHash: 'h3' })), isCode('message_id_conflict'));
        await put(store, chunkOf('g-d', 0, 2, { messageId: 'm-d', contentHash: 'h4' }));
        await assert.rejects(put(store, entry({ messageId: 'm-d', contentHash: 'h5' })), isCode('message_id_conflict'));
        const got = await store.getMessage(DID, 'm-c', NOW);
        assert.equal(got?.meta.contentHash, 'h1');
        assert.equal((await store.listSummary(DID, NOW)).length, 1);
        assert.equal((await store.listSummary(OTHER, NOW)).length, 0);
      }),
    );

    it(
      'replaces an expired entry with the same message_id',
      withStore(async ({ store }) => {
        await put(store, entry({ messageId: 'm-x', contentHash: 'h1', expiresAtMs: NOW + 1_000 }));
        const later = NOW + 1_000;
        const r = await put(store, entry({ messageId: 'm-x', contentHash: 'h2', storedAtMs: later, expiresAtMs: later + HOUR }), later);
        assert.equal(r.deduped, false);
        assert.equal((await store.getMessage(DID, 'm-x', later))?.meta.contentHash, 'h2');
      }),
    );

    it(
      'keeps a recipient within its quota of unexpired bytes (storage_quota_exceeded), counting nothing else',
      withStore(async ({ store }) => {
        const a = entry({ sizeBytes: 600 });
        const quota = 1_000;
        await put(store, a, NOW, null, quota);
        await put(store, entry({ recipientDid: OTHER, sizeBytes: 900 }), NOW, null, quota); // another recipient's bytes
        const over = entry({ sizeBytes: 401 });
        await assert.rejects(
          put(store, over, NOW, null, quota),
          (e: unknown) => e instanceof DdnError && e.code === 'storage_quota_exceeded' && e.details?.used_bytes === 600 && e.details?.limit_bytes === quota,
        );
        assert.equal(await store.getMessage(DID, over.messageId, NOW), null, 'nothing written');
        assert.equal((await put(store, entry({ sizeBytes: 400 }), NOW, null, quota)).deduped, false, 'up to the quota exactly');
        assert.equal((await put(store, a, NOW, null, quota)).deduped, true, 'an identical re-store is not new bytes');
        // once the first entries expire their bytes no longer count
        const late = entry({ sizeBytes: 900, expiresAtMs: NOW + 3 * HOUR });
        assert.equal((await put(store, late, NOW + 2 * HOUR, null, quota)).deduped, false);
        // an acknowledged entry's bytes are freed at once
        await assert.rejects(put(store, entry({ sizeBytes: 200, expiresAtMs: NOW + 3 * HOUR }), NOW + 2 * HOUR, null, quota), isCode('storage_quota_exceeded'));
        assert.deepEqual(await store.ack(DID, [late.messageId], NOW + 2 * HOUR, claimOf(randomUUID(), { expiresAtMs: NOW + 3 * HOUR })), [late.messageId]);
        assert.equal((await put(store, entry({ sizeBytes: 1_000, expiresAtMs: NOW + 3 * HOUR }), NOW + 2 * HOUR, null, quota)).deduped, false);
      }),
    );

    it(
      'refuses a store beyond the storage budget with 507 insufficient_storage and writes nothing; a re-store never counts',
      withStore(async ({ store }) => {
        const a = entry({ sizeBytes: 500 });
        const withBudget = (e: NewEntry, budgetBytes: number) =>
          store.put({ entry: e, nowMs: NOW, chunkWindowMs: WINDOW, claim: null, quotaBytes: null, budgetBytes });
        assert.equal((await withBudget(a, 1 << 30)).deduped, false, 'within a large budget');
        const over = entry({ sizeBytes: 300 });
        await assert.rejects(
          withBudget(over, 1),
          (e: unknown) =>
            e instanceof DdnError && e.code === 'insufficient_storage' && e.details?.limit_bytes === 1 && typeof e.details?.used_bytes === 'number',
        );
        assert.equal(await store.getMessage(DID, over.messageId, NOW), null);
        assert.equal((await withBudget(a, 1)).deduped, true, 'an identical re-store adds nothing');
      }),
    );

    it(
      'refuses a live claim on put (proof_nonce_replayed) and writes nothing',
      withStore(async ({ store }) => {
        const c = claimOf('put-1', { scope: 'node-request' });
        await put(store, entry(), NOW, c);
        const e = entry();
        await assert.rejects(put(store, e, NOW, c), isCode('proof_nonce_replayed'));
        assert.equal(await store.getMessage(DID, e.messageId, NOW), null);
        assert.equal(await store.isNonceClaimed(c, NOW), true);
      }),
    );

    it(
      'hides a chunk set until complete, then releases it whole in sequence order',
      withStore(async ({ store }) => {
        const g = randomUUID();
        const c2 = chunkOf(g, 2, 3, { expiresAtMs: NOW + 10 * 60_000 });
        const r2 = await put(store, c2);
        assert.deepEqual(r2.chunkSet, { groupId: g, total: 3, received: 1, complete: false, retryUntilMs: NOW + 10 * 60_000 });
        const c1 = chunkOf(g, 1, 3);
        const r1 = await put(store, c1, NOW + 1);
        assert.deepEqual(r1.chunkSet, { groupId: g, total: 3, received: 2, complete: false, retryUntilMs: NOW + 10 * 60_000 });
        assert.deepEqual(await ids(store), []);
        assert.equal(await store.getMessage(DID, c1.messageId, NOW + 1), null);
        assert.equal(await store.getChunkSet(DID, g, NOW + 1), null);
        assert.deepEqual((await store.listMessages(DID, NOW + 1, 1 << 20)).entries, []);

        const dup = await put(store, c1, NOW + 2);
        assert.equal(dup.deduped, true);
        assert.deepEqual(dup.chunkSet, { groupId: g, total: 3, received: 2, complete: false, retryUntilMs: NOW + 10 * 60_000 });

        const c3 = chunkOf(g, 3, 3);
        const r3 = await put(store, c3, NOW + 3);
        assert.deepEqual(r3.chunkSet, { groupId: g, total: 3, received: 3, complete: true, retryUntilMs: null });
        assert.deepEqual(await ids(store, DID, NOW + 3), [c1.messageId, c2.messageId, c3.messageId]);
        const set = await store.getChunkSet(DID, g.toUpperCase(), NOW + 3);
        assert.ok(set);
        assert.equal(set.total, 3);
        assert.deepEqual(
          set.entries.map((x) => x.meta.chunk?.sequence),
          [1, 2, 3],
        );
        assert.equal(text(set.entries[1].envelope), text(c2.envelope));
        assert.equal((await store.getMessage(DID, c3.messageId, NOW + 3))?.meta.chunk?.total, 3);
      }),
    );

    it(
      'sets retry_until to first chunk time + staging window when that is earlier than every expiry',
      withStore(async ({ store }) => {
        const g = randomUUID();
        const r = await put(store, chunkOf(g, 1, 2, { expiresAtMs: NOW + 5 * HOUR }));
        assert.equal(r.chunkSet?.retryUntilMs, NOW + WINDOW);
        const r2 = await put(store, chunkOf(g, 2, 3, { expiresAtMs: NOW + 5 * HOUR }), NOW + 10).catch((e: unknown) => e);
        assert.ok(isCode('chunk_set_conflict')(r2), 'total_chunks differs');
      }),
    );

    it(
      'refuses a different entry at a held sequence (chunk_conflict) and a different total (chunk_set_conflict)',
      withStore(async ({ store }) => {
        const g = randomUUID();
        await put(store, chunkOf(g, 1, 2));
        await assert.rejects(put(store, chunkOf(g, 1, 2)), isCode('chunk_conflict'));
        await assert.rejects(put(store, chunkOf(g, 2, 4)), isCode('chunk_set_conflict'));
        const ok = await put(store, chunkOf(g, 2, 2));
        assert.equal(ok.chunkSet?.complete, true);
        assert.equal((await store.getChunkSet(DID, g, NOW))?.entries.length, 2);
      }),
    );

    it(
      'keeps completeness sticky after a chunk is acknowledged',
      withStore(async ({ store }) => {
        const g = randomUUID();
        const c1 = chunkOf(g, 1, 2);
        await put(store, c1);
        await put(store, chunkOf(g, 2, 2));
        assert.deepEqual(await store.ack(DID, [c1.messageId], NOW, claimOf('sticky')), [c1.messageId]);
        const set = await store.getChunkSet(DID, g, NOW);
        assert.deepEqual(
          set?.entries.map((x) => x.meta.chunk?.sequence),
          [2],
        );
        const again = await put(store, chunkOf(g, 1, 2), NOW + 1);
        assert.equal(again.chunkSet?.complete, true);
        assert.equal((await store.listSummary(DID, NOW + 1)).length, 2, 'the re-sent chunk is visible at once');
      }),
    );

    it(
      'purges an incomplete set past retry_until when a new chunk of it arrives, starting a new set',
      withStore(async ({ store }) => {
        const g = randomUUID();
        await put(store, chunkOf(g, 1, 2));
        const late = NOW + WINDOW;
        const r = await put(store, chunkOf(g, 2, 2, { storedAtMs: late, expiresAtMs: late + 5 * HOUR }), late);
        assert.deepEqual(r.chunkSet, { groupId: g, total: 2, received: 1, complete: false, retryUntilMs: late + WINDOW });
      }),
    );

    it(
      'lists in store order with sets together, and pages by envelope bytes',
      withStore(async ({ store }) => {
        const g = randomUUID();
        const a = entry({ messageId: 'a' });
        const g2 = chunkOf(g, 2, 2, { messageId: 'g2' });
        const b = entry({ messageId: 'b' });
        const g1 = chunkOf(g, 1, 2, { messageId: 'g1' });
        const c = entry({ messageId: 'c' });
        for (const e of [a, g2, b, g1, c]) await put(store, e);
        assert.deepEqual(await ids(store), ['a', 'g1', 'g2', 'b', 'c']);
        assert.deepEqual(await ids(store, OTHER), []);

        const all = await store.listMessages(DID, NOW, 1 << 20);
        assert.equal(all.truncated, false);
        assert.deepEqual(
          all.entries.map((x) => x.meta.messageId),
          ['a', 'g1', 'g2', 'b', 'c'],
        );
        assert.equal(text(all.entries[3].envelope), text(b.envelope));

        const sizes = [a, g1, g2, b, c].map((e) => e.sizeBytes);
        const three = sizes[0] + sizes[1] + sizes[2];
        const page = await store.listMessages(DID, NOW, three);
        assert.equal(page.truncated, true);
        assert.deepEqual(
          page.entries.map((x) => x.meta.messageId),
          ['a', 'g1', 'g2'],
        );
        const almost = await store.listMessages(DID, NOW, three - 1);
        assert.deepEqual(
          almost.entries.map((x) => x.meta.messageId),
          ['a', 'g1'],
        );
        const tiny = await store.listMessages(DID, NOW, 1);
        assert.equal(tiny.truncated, true);
        assert.deepEqual(
          tiny.entries.map((x) => x.meta.messageId),
          ['a'],
          'the first entry always fits',
        );
        const exact = await store.listMessages(
          DID,
          NOW,
          sizes.reduce((x, y) => x + y, 0),
        );
        assert.equal(exact.truncated, false);
        assert.equal(exact.entries.length, 5);
      }),
    );

    it(
      'acknowledges: records the claim, deletes live listed entries of the DID once, as requested',
      withStore(async ({ store }) => {
        const a = entry({ messageId: 'Ack-A' });
        const b = entry({ messageId: 'ack-b' });
        const mine = entry({ messageId: 'ack-o', recipientDid: OTHER });
        for (const e of [a, b, mine]) await put(store, e);
        const claim = claimOf('ack-1', { scope: 'proof:ack' });
        const deleted = await store.ack(DID, ['ACK-a', 'ack-a', 'missing', 'ack-o', 'ack-b'], NOW, claim);
        assert.deepEqual(deleted, ['ACK-a', 'ack-b']);
        assert.deepEqual(await ids(store), []);
        assert.deepEqual(await ids(store, OTHER), ['ack-o'], 'another recipient keeps its entry');
        assert.equal(await store.isNonceClaimed(claim, NOW), true);

        const c = entry({ messageId: 'ack-c' });
        await put(store, c);
        await assert.rejects(store.ack(DID, ['ack-c'], NOW, claim), isCode('proof_nonce_replayed'));
        assert.deepEqual(await ids(store), ['ack-c'], 'a replayed ack deletes nothing');
      }),
    );

    it(
      'hides expired entries, and sweeps expired entries, stale sets, emptied sets and expired nonces',
      withStore(async ({ store }) => {
        const short = entry({ messageId: 'short', expiresAtMs: NOW + 1_000 });
        const long = entry({ messageId: 'long', expiresAtMs: NOW + 10 * HOUR });
        const stale = randomUUID();
        const done = randomUUID();
        await put(store, short);
        await put(store, long);
        await put(store, chunkOf(stale, 1, 3, { expiresAtMs: NOW + 10 * HOUR }));
        await put(store, chunkOf(stale, 2, 3, { expiresAtMs: NOW + 10 * HOUR }));
        await put(store, chunkOf(done, 1, 1, { messageId: 'done-1', expiresAtMs: NOW + 2_000 }));
        await store.claimNonce(claimOf('n-old', { expiresAtMs: NOW + 500 }), NOW);
        await store.claimNonce(claimOf('n-new', { expiresAtMs: NOW + 10 * HOUR }), NOW);

        assert.deepEqual(await ids(store, DID, NOW + 999), ['short', 'long', 'done-1']);
        assert.deepEqual(await ids(store, DID, NOW + 1_000), ['long', 'done-1'], 'expired at expires_at exactly');
        assert.equal(await store.getMessage(DID, 'short', NOW + 1_000), null);

        const first = await store.sweep(NOW + 1_000);
        assert.deepEqual(first, { expiredEntries: 1, purgedChunkSets: 0, purgedChunks: 0, expiredNonces: 1 });
        const later = NOW + WINDOW;
        const second = await store.sweep(later);
        assert.deepEqual(second, { expiredEntries: 1, purgedChunkSets: 1, purgedChunks: 2, expiredNonces: 0 });
        assert.deepEqual(await store.sweep(later), { expiredEntries: 0, purgedChunkSets: 0, purgedChunks: 0, expiredNonces: 0 });
        assert.deepEqual(await ids(store, DID, later), ['long']);
        // The stale set is gone: its group starts afresh.
        const again = await put(store, chunkOf(stale, 1, 2, { expiresAtMs: later + HOUR }), later);
        assert.deepEqual(again.chunkSet, { groupId: stale, total: 2, received: 1, complete: false, retryUntilMs: later + HOUR });
        // The emptied complete set is gone too: a single chunk of a new total is accepted and completes it.
        const reused = await put(store, chunkOf(done, 1, 2, { expiresAtMs: later + HOUR }), later);
        assert.equal(reused.chunkSet?.complete, false);
        assert.equal(await store.isNonceClaimed(claimOf('n-new'), later), true);
        assert.equal(await store.claimNonce(claimOf('n-old', { expiresAtMs: later + 1 }), later), true);
      }),
    );

    it(
      'reports what it holds (metrics): entries, bytes and incomplete sets through stores, dedupes, acks and sweeps',
      withStore(async ({ store }) => {
        const held = async () => {
          const u = await store.usage();
          assert.ok(u.budgetUsedBytes >= u.bytes, 'the budget counts at least the envelope bytes');
          return [u.entries, u.bytes, u.incompleteChunkSets];
        };
        assert.deepEqual(await held(), [0, 0, 0]);
        const a = entry({ messageId: 'use-a' });
        const b = entry({ messageId: 'use-b', recipientDid: OTHER, expiresAtMs: NOW + 1_000 });
        const group = randomUUID();
        const [c0, c1] = [0, 1].map((seq) => chunkOf(group, seq, 2, { messageId: `use-c${seq}` }));
        for (const e of [a, b, c0!, a]) await put(store, e);
        assert.deepEqual(await held(), [3, a.sizeBytes + b.sizeBytes + c0!.sizeBytes, 1], 'a deduplicated store holds nothing more');
        await put(store, c1!);
        await store.ack(DID, ['use-a'], NOW, claimOf('use-ack', { scope: 'proof:ack' }));
        await store.sweep(NOW + 1_000);
        assert.deepEqual(await held(), [2, c0!.sizeBytes + c1!.sizeBytes, 0]);
      }),
    );

    it(
      'claims nonces once while live, per (scope, DID, key, nonce), and again once expired',
      withStore(async ({ store }) => {
        const c = claimOf('n-1');
        assert.equal(await store.isNonceClaimed(c, NOW), false);
        assert.equal(await store.claimNonce(c, NOW), true);
        assert.equal(await store.claimNonce(c, NOW + 1), false);
        assert.equal(await store.isNonceClaimed(c, NOW + 299_999), true);
        assert.equal(await store.claimNonce({ ...c, keyId: `${DID}#other` }, NOW), true);
        assert.equal(await store.claimNonce({ ...c, scope: 'node-request' }, NOW), true);
        assert.equal(await store.claimNonce({ ...c, did: OTHER }, NOW), true);
        assert.equal(await store.isNonceClaimed(c, NOW + 300_000), false);
        assert.equal(await store.claimNonce({ ...c, expiresAtMs: NOW + 900_000 }, NOW + 300_000), true);
        assert.equal(await store.claimNonce(c, NOW + 899_999), false, 'the renewed claim holds until its new expiry');
      }),
    );

    it(
      'releases exactly the claim it made, so the nonce can be claimed again',
      withStore(async ({ store }) => {
        const c = claimOf('n-release');
        assert.equal(await store.claimNonce(c, NOW), true);
        await store.releaseNonce({ ...c, expiresAtMs: c.expiresAtMs + 1 });
        assert.equal(await store.isNonceClaimed(c, NOW), true, 'a release naming another expiry leaves the claim alone');
        await store.releaseNonce({ ...c, keyId: `${DID}#other` });
        assert.equal(await store.isNonceClaimed(c, NOW), true, 'a release of another key leaves the claim alone');
        await store.releaseNonce(c);
        assert.equal(await store.isNonceClaimed(c, NOW), false);
        assert.equal(await store.claimNonce(c, NOW + 1), true);
        assert.equal(await store.claimNonce(c, NOW + 2), false);
        await store.releaseNonce(claimOf('never-claimed'));
        assert.equal(await store.isNonceClaimed(claimOf('never-claimed'), NOW), false);
      }),
    );

    it(
      'keeps what it wrote for another handle on the same storage (a restart or another process)',
      withStore(async (h) => {
        const c = claimOf('n-durable');
        const e = entry({ messageId: 'durable' });
        await put(h.store, e);
        assert.equal(await h.store.claimNonce(c, NOW), true);
        await h.store.close();
        await assert.rejects(put(h.store, entry()), isCode('service_unavailable'), 'a closed store refuses writes');
        const other = await h.another();
        assert.equal(await other.isNonceClaimed(c, NOW), true);
        assert.equal(await other.claimNonce(c, NOW + 1), false);
        assert.equal(text((await other.getMessage(DID, 'durable', NOW))?.envelope ?? new Uint8Array()), text(e.envelope));
      }),
    );

    it(
      'lets exactly one of two processes win each concurrently claimed nonce',
      withStore(async (h) => {
        const other = await h.another();
        const nonces = Array.from({ length: 20 }, (_, i) => claimOf(`race-${i}`));
        const results = await Promise.all(nonces.map(async (c) => Promise.all([h.store.claimNonce(c, NOW), other.claimNonce(c, NOW)])));
        for (const [a, b] of results) assert.equal(Number(a) + Number(b), 1, `one winner: ${a} ${b}`);
        // The same through ack and put: one succeeds, the other is a replay.
        const c = claimOf('race-ack', { scope: 'proof:ack' });
        const settled = await Promise.allSettled([h.store.ack(DID, [], NOW, c), other.ack(DID, [], NOW, c)]);
        assert.equal(settled.filter((s) => s.status === 'fulfilled').length, 1);
        const lost = settled.find((s) => s.status === 'rejected') as PromiseRejectedResult;
        assert.ok(isCode('proof_nonce_replayed')(lost.reason));
        const n = claimOf('race-put', { scope: 'node-request' });
        const puts = await Promise.allSettled([put(h.store, entry(), NOW, n), put(other, entry(), NOW, n)]);
        assert.equal(puts.filter((s) => s.status === 'fulfilled').length, 1);
        assert.equal((await h.store.listSummary(DID, NOW)).length, 1, 'only the winner stored');
      }),
    );

    it(
      'deduplicates and completes sets consistently under concurrent stores from two processes',
      withStore(async (h) => {
        const other = await h.another();
        for (let i = 0; i < 5; i++) {
          const e = entry();
          const [a, b] = await Promise.all([put(h.store, e), put(other, e)]);
          assert.equal(Number(a.deduped) + Number(b.deduped), 1, 'one stored, one deduplicated');
          // A new set started by two processes at once.
          const g = randomUUID();
          const [x, y] = await Promise.all([put(h.store, chunkOf(g, 1, 2)), put(other, chunkOf(g, 2, 2))]);
          assert.equal(Number(x.chunkSet?.complete) + Number(y.chunkSet?.complete), 1, 'exactly the later chunk completes the set');
          assert.deepEqual([x.chunkSet?.received, y.chunkSet?.received].sort(), [1, 2]);
          assert.equal((await h.store.getChunkSet(DID, g, NOW))?.entries.length, 2);
          // The last two chunks of an existing set, from two processes at once.
          const k = randomUUID();
          await put(h.store, chunkOf(k, 1, 3));
          const [u, v] = await Promise.all([put(h.store, chunkOf(k, 2, 3)), put(other, chunkOf(k, 3, 3))]);
          assert.deepEqual([u.chunkSet?.received, v.chunkSet?.received].sort(), [2, 3]);
          assert.equal(Number(u.chunkSet?.complete) + Number(v.chunkSet?.complete), 1, 'the set completes exactly once');
          assert.equal((await other.getChunkSet(DID, k, NOW))?.entries.length, 3);
        }
        assert.equal((await h.store.listSummary(DID, NOW)).length, 30);
      }),
    );

    it(
      'resolves settle() once its writes are done and refuses writes after close()',
      withStore(async ({ store }) => {
        const pending = put(store, entry({ messageId: 'settled' }));
        await store.settle();
        assert.ok((await store.listSummary(DID, NOW)).some((m) => m.messageId === 'settled'));
        await pending;
        await store.close();
        await assert.rejects(store.claimNonce(claimOf('closed'), NOW), isCode('service_unavailable'));
      }),
    );
  });
}
