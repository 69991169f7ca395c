/** Chunk sets at the Cache (http-api.md §11.3): hidden until complete, conflicts, sticky completeness, purge. */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { expectError, startCache, type CacheHarness, type Recipient } from './harness.js';

const enc = encodeURIComponent;
type Body = Record<string, unknown>;

describe('chunk sets', () => {
  let h: CacheHarness;
  let r: Recipient;
  before(async () => {
    h = await startCache();
    r = await h.registerRecipient(31);
  });
  after(() => h.close());

  const chunk = (group: string, seq: number, total: number, over: Body = {}) =>
    h.envelope(r.did, {
      message_group_id: group,
      sequence_number: seq,
      total_chunks: total,
      delivery_hint: 'chunked',
      payload: { ciphertext_b64: Buffer.from(`chunk ${group} ${seq}`).toString('base64') },
      ...over,
    });
  const chunksOf = (group: string) => h.get(`/cache/chunks/${enc(r.did)}/${group}`, h.proof(r, 'chunks', group));
  const idsIn = async () => ((await h.pull(r)).body.messages as Body[]).map((m) => m.message_id);

  it('keeps an incomplete set invisible, then releases it whole when the last sequence arrives', async () => {
    const group = randomUUID();
    const c1 = chunk(group, 1, 3);
    const first = await h.storeRaw(c1);
    assert.equal(first.status, 202, first.text);
    const now = h.clock.nowMs();
    assert.equal(first.body.chunked, true);
    assert.equal(first.body.code, 'chunk_staged');
    assert.equal(first.body.complete, false);
    assert.equal(first.body.received_chunks, 1);
    assert.equal(first.body.expected_chunks, 3);
    assert.equal(first.body.retry_until, new Date(now + 3_600_000).toISOString());

    const retry = await h.storeRaw({ ...c1 });
    assert.equal(retry.status, 202);
    assert.equal(retry.body.deduped, true);
    assert.equal(retry.body.code, 'chunk_staged');
    assert.equal(retry.body.received_chunks, 1);

    const between = h.envelope(r.did);
    assert.equal((await h.storeRaw(between)).status, 202);
    h.clock.advance(1000);
    const c0 = chunk(group, 0, 3);
    const second = await h.storeRaw(c0);
    assert.equal(second.body.received_chunks, 2);
    assert.equal(second.body.retry_until, first.body.retry_until, 'the window runs from the first chunk');

    // hidden from every retrieval route
    assert.ok(!(await idsIn()).includes(c1.message_id));
    const sum = await h.summary(r);
    assert.ok(!(sum.body.messages as Body[]).some((m) => m.message_group_id === group));
    expectError(await chunksOf(group), 404, 'chunk_set_not_found');
    const id = c0.message_id as string;
    expectError(await h.get(`/cache/message/${enc(r.did)}/${id}`, h.proof(r, 'pull_message', id)), 404, 'message_not_found');

    const c2 = chunk(group, 2, 3);
    const last = await h.storeRaw(c2);
    assert.equal(last.status, 202);
    assert.equal(last.body.code, 'chunk_set_complete');
    assert.equal(last.body.complete, true);
    assert.equal(last.body.received_chunks, 3);
    assert.equal(last.body.expected_chunks, 3);
    assert.equal('retry_until' in last.body, false);

    // the set stands where its first chunk was stored, its chunks together in sequence order
    const ids = await idsIn();
    const at = ids.indexOf(c0.message_id);
    assert.deepEqual(ids.slice(at, at + 4), [c0.message_id, c1.message_id, c2.message_id, between.message_id]);
    const items = ((await h.pull(r)).body.messages as Body[]).filter((m) => m.message_group_id === group);
    assert.deepEqual(
      items.map((m) => [m.chunked, m.sequence_number, m.total_chunks]),
      [
        [true, 0, 3],
        [true, 1, 3],
        [true, 2, 3],
      ],
    );
    assert.deepEqual(Object.keys(items[0]).slice(0, 7), [
      'message_id',
      'recipient',
      'expires_at',
      'chunked',
      'message_group_id',
      'sequence_number',
      'total_chunks',
    ]);

    const summary = ((await h.summary(r)).body.messages as Body[]).filter((m) => m.message_group_id === group);
    assert.deepEqual(
      summary.map((m) => [m.sequence_number, m.total_chunks]),
      [
        [0, 3],
        [1, 3],
        [2, 3],
      ],
    );
    const set = await chunksOf(group);
    assert.equal(set.status, 200, set.text);
    assert.equal(set.body.did, r.did);
    assert.equal(set.body.message_group_id, group);
    assert.equal(set.body.complete, true);
    assert.equal(set.body.total_chunks, 3);
    const chunks = set.body.chunks as Body[];
    assert.equal(set.body.count, chunks.length);
    assert.deepEqual(
      chunks.map((c) => c.message_id),
      summary.map((m) => m.message_id),
    );
    assert.deepEqual(Object.keys(chunks[0]), ['message_id', 'sequence_number', 'expires_at', 'envelope', 'proof']);
    assert.deepEqual(chunks[1].envelope, { ...c1, expires_at: chunks[1].expires_at });
    expectError(await h.get(`/cache/chunks/${enc(r.did)}/${group}`, h.proof(r, 'chunks', '*')), 403, 'invalid_signature');
    expectError(await chunksOf(randomUUID()), 404, 'chunk_set_not_found');
    const unknown = randomUUID();
    const unknownProof = h.proof(r, 'chunks', unknown);
    expectError(await h.get(`/cache/chunks/${enc(r.did)}/${unknown}`, unknownProof), 404, 'chunk_set_not_found');
    expectError(await h.get(`/cache/chunks/${enc(r.did)}/${unknown}`, unknownProof), 409, 'proof_nonce_replayed');

    // completeness is sticky: acknowledging some chunks leaves the rest visible
    const acked = await h.ack(r, [c0.message_id as string]);
    assert.equal(acked.body.acked, 1);
    const rest = await chunksOf(group);
    assert.equal(rest.status, 200);
    assert.deepEqual(
      (rest.body.chunks as Body[]).map((c) => c.sequence_number),
      [1, 2],
    );
    assert.equal(rest.body.total_chunks, 3);
    assert.ok((await idsIn()).includes(c2.message_id));
  });

  it('refuses conflicting chunks (409 chunk_conflict, chunk_set_conflict, message_id_conflict)', async () => {
    const group = randomUUID();
    const c0 = chunk(group, 0, 2);
    assert.equal((await h.storeRaw(c0)).status, 202);
    expectError(await h.storeRaw(chunk(group, 0, 2)), 409, 'chunk_conflict');
    expectError(await h.storeRaw(chunk(group, 1, 3)), 409, 'chunk_set_conflict');
    expectError(await h.storeRaw({ ...c0, payload: { ciphertext_b64: 'AAAA' } }), 409, 'message_id_conflict');
    // the group is per recipient: another DID may use the same group id
    const other = await h.registerRecipient(32);
    const theirs = h.envelope(other.did, { message_group_id: group, sequence_number: 0, total_chunks: 5 });
    assert.equal((await h.storeRaw(theirs)).status, 202);
    const done = await h.storeRaw(chunk(group.toUpperCase(), 1, 2));
    assert.equal(done.body.code, 'chunk_set_complete', 'group ids compare case-insensitively');
  });

  it('retry_until is also bounded by the earliest expiry in the set', async () => {
    const group = randomUUID();
    const res = await h.storeRaw(chunk(group, 0, 2, { ttl: '10m' }));
    assert.equal(res.body.retry_until, res.body.expires_at);
  });

  it('purges incomplete sets after retry_until; the sequence can then start over', async () => {
    const h2 = await startCache({ chunkStagingWindowSeconds: 60 });
    try {
      const me = await h2.registerRecipient(33);
      const group = randomUUID();
      const c = (seq: number) => h2.envelope(me.did, { message_group_id: group, sequence_number: seq, total_chunks: 2, payload: { ciphertext_b64: 'AAAA' } });
      const c0 = c(0);
      assert.equal((await h2.storeRaw(c0)).status, 202);
      h2.clock.advance(59_000);
      assert.equal((await h2.service.sweep()).purgedChunkSets, 0);
      h2.clock.advance(1_000);
      assert.deepEqual(await h2.service.sweep(), { expiredEntries: 0, purgedChunkSets: 1, purgedChunks: 1, expiredNonces: 0 });
      const c1 = await h2.storeRaw(c(1));
      assert.equal(c1.body.code, 'chunk_staged');
      assert.equal(c1.body.received_chunks, 1, 'the purged chunk is gone');
      // a stale set is also dropped by the next store of its group, without waiting for the sweeper
      h2.clock.advance(60_000);
      const again = await h2.storeRaw({ ...c0, timestamp: new Date(h2.clock.nowMs()).toISOString() });
      assert.equal(again.status, 202, again.text);
      assert.equal(again.body.received_chunks, 1);
      assert.equal(again.body.deduped, false);
    } finally {
      await h2.close();
    }
  });

  it('applies max_chunk_bytes to chunks and max_unchunked_message_bytes to the rest (413 payload_too_large)', async () => {
    h.port.constraints = { maxChunkBytes: 4, maxUnchunkedMessageBytes: 8 };
    try {
      const b64 = (n: number) => Buffer.alloc(n).toString('base64');
      const group = randomUUID();
      assert.equal((await h.storeRaw(chunk(group, 0, 2, { payload: { ciphertext_b64: b64(4) } }))).status, 202);
      expectError(await h.storeRaw(chunk(group, 1, 2, { payload: { ciphertext_b64: b64(5) } })), 413, 'payload_too_large');
      assert.equal((await h.storeRaw(h.envelope(r.did, { payload: { ciphertext_b64: b64(8) } }))).status, 202);
      expectError(await h.storeRaw(h.envelope(r.did, { payload: { ciphertext_b64: b64(9) } })), 413, 'payload_too_large');
    } finally {
      h.port.constraints = {};
    }
  });
});
