/**
 * Assured chunk staging (http-api.md §10.4.3) and idempotency (§10.3 step 6): replays, delivery of the whole
 * set once, a failed delivery keeping the set staged, purge after `retry_until` (injected clock), results
 * remembered 24 h, and both surviving a restart on the same files.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Recipient } from '../cache/harness.js';
import { kid, mutate } from '../support/directory-flows.js';
import { CACHE_URL, expectFailure, expectSuccess, startRelay, type RelayHarness } from './harness.js';

type Body = Record<string, unknown>;
const HOUR = 3_600_000;

function details(res: { body: Body }): Body {
  return res.body.details as Body;
}

describe('chunk staging', () => {
  let h: RelayHarness;
  let r: Recipient;
  before(async () => {
    h = await startRelay();
    r = await h.registerRecipient(41);
  });
  after(() => h.close());

  const chunk = (group: string, seq: number, total = 3, over: Body = {}) =>
    h.envelope(r.did, { message_group_id: group, sequence_number: seq, total_chunks: total, message_id: randomUUID(), ...over });

  it('stages until complete, replays identical retries, delivers the whole set once, never pushes chunks live', async () => {
    h.live.sessions = 1;
    const group = randomUUID();
    const c = [chunk(group, 0), chunk(group, 1), chunk(group, 2)];
    const first = await h.post(c[0]!);
    expectSuccess(first, 'chunk_staged', 'staged');
    const replay = await h.post(c[0]!);
    expectSuccess(replay, 'chunk_staged', 'staged');
    assert.equal(details(replay).received_chunks, 1, 'an identical retry stages nothing new');
    assert.deepEqual(await h.cached(r.did), [], 'nothing reaches the Cache before the set is complete');
    expectSuccess(await h.post(c[1]!), 'chunk_staged', 'staged');
    const accepted = h.events.length;
    const done = await h.post(c[2]!);
    expectSuccess(done, 'chunk_set_delivered', 'cache_fallback');
    const { applied_ttl: appliedTtl, expires_at: expiresAt, ...rest } = details(done);
    assert.deepEqual(rest, {
      accepted_caches: [CACHE_URL],
      attempted_caches: [CACHE_URL],
      message_group_id: group,
      received_chunks: 3,
      expected_chunks: 3,
    });
    assert.deepEqual(
      h.events.slice(accepted).map((e) => e.type),
      ['RelayAccepted', 'RelayDelivered'],
    );
    const set = await h.mailbox.getChunkSet(r.did, group, h.clock.nowMs());
    const earliest = Math.min(...set!.entries.map((e) => e.meta.expiresAtMs));
    assert.equal(expiresAt, new Date(earliest).toISOString(), 'the copy of the set that expires first');
    assert.match(String(appliedTtl), /^PT/);
    assert.deepEqual(
      set?.entries.map((e) => e.meta.messageId),
      c.map((x) => x.message_id),
      'stored in sequence order',
    );
    assert.deepEqual(h.live.pushed, [], 'chunks are never pushed live');
    assert.deepEqual(await h.store.loadSet(r.did, group), [], 'the delivered set is no longer staged');
    const again = await h.post(c[1]!);
    expectSuccess(again, 'chunk_set_delivered', 'cache_fallback');
    assert.equal(h.events.length, accepted + 2, 'a retry after delivery answers the remembered result');
    expectFailure(await h.post({ ...c[1]!, ttl: '2h' }), 409, 'message_id_conflict');
    h.live.sessions = 0;
  });

  it('a failed delivery keeps the set staged; re-sending any chunk retries it from staging', async () => {
    const flaky = await h.registerRecipient(42, { cacheEndpoints: ['http://127.0.0.1:1'] });
    const group = randomUUID();
    const c = [0, 1].map((seq) => h.envelope(flaky.did, { message_group_id: group, sequence_number: seq, total_chunks: 2 }));
    expectSuccess(await h.post(c[0]!), 'chunk_staged', 'staged');
    const failed = await h.post(c[1]!);
    expectFailure(failed, 502, 'upstream_unavailable');
    assert.equal(details(failed).message_group_id, group);
    assert.deepEqual(details(failed).attempted_caches, ['http://127.0.0.1:1']);
    assert.equal((await h.store.loadSet(flaky.did, group)).length, 2, 'still staged');
    expectFailure(await h.post(c[0]!), 502, 'upstream_unavailable');

    // The recipient now publishes a working Cache: the next identical retry delivers from staging.
    await mutate(h.dir, flaky.did, flaky.key, 'UpdateService', {
      service: { id: flaky.serviceId, type: 'PlatformCacheService', serviceEndpoint: [CACHE_URL], authorization: [kid(flaky.did, 'key-1')] },
    });
    const done = await h.post(c[0]!);
    expectSuccess(done, 'chunk_set_delivered', 'cache_fallback');
    const set = await h.mailbox.getChunkSet(flaky.did, group, h.clock.nowMs());
    assert.equal(set?.entries.length, 2);
  });

  it('purges incomplete sets after retry_until; a late chunk starts a new set', async () => {
    const group = randomUUID();
    const c0 = chunk(group, 0, 2);
    expectSuccess(await h.post(c0), 'chunk_staged', 'staged');
    h.clock.advance(HOUR - 1);
    assert.equal((await h.service.sweep()).purgedSets, 0, 'not yet');
    h.clock.advance(1);
    const swept = await h.service.sweep();
    assert.equal(swept.purgedSets, 1);
    assert.equal(swept.purgedChunks, 1);
    assert.deepEqual(await h.store.loadSet(r.did, group), []);
    const late = await h.post(chunk(group, 1, 2));
    expectSuccess(late, 'chunk_staged', 'staged');
    assert.equal(details(late).received_chunks, 1);
  });

  it('a set past retry_until is dropped when the next chunk arrives, even before a sweep', async () => {
    const group = randomUUID();
    expectSuccess(await h.post(chunk(group, 0, 2)), 'chunk_staged', 'staged');
    h.clock.advance(HOUR);
    const res = await h.post(chunk(group, 1, 3));
    expectSuccess(res, 'chunk_staged', 'staged');
    assert.deepEqual([details(res).received_chunks, details(res).expected_chunks], [1, 3], 'a fresh set with new values');
  });

  it('remembers delivered results for 24 h', async () => {
    const env = h.envelope(r.did);
    const first = await h.post(env);
    expectSuccess(first, 'cached', 'cache_fallback');
    // the record is written after the answer; an identical request meanwhile gets the in-flight result
    assert.deepEqual((await h.post(env)).body, first.body);
    await h.store.settle();
    const key = String(env.message_id).toLowerCase();
    assert.ok(await h.store.findResult(key, h.clock.nowMs()));
    assert.deepEqual((await h.post(env)).body, first.body, 'and later the recorded one');
    h.clock.advance(24 * HOUR);
    assert.equal(await h.store.findResult(key, h.clock.nowMs()), null);
    assert.ok((await h.service.sweep()).expiredResults >= 1);
  });

  it('answers concurrent identical requests with one delivery', async () => {
    const env = h.envelope(r.did);
    const before = h.events.length;
    const [a, b] = await Promise.all([h.post(env), h.post(env)]);
    expectSuccess(a, 'cached', 'cache_fallback');
    assert.deepEqual(b.body, a.body);
    assert.equal(h.events.length - before, 2, 'one RelayAccepted and one RelayDelivered');
  });
});

describe('durable staging and idempotency across a restart', () => {
  it('keeps staged chunks and remembered results', async () => {
    const h1 = await startRelay();
    const r = await h1.registerRecipient(51);
    const env = h1.envelope(r.did);
    const delivered = await h1.post(env);
    expectSuccess(delivered, 'cached', 'cache_fallback');
    const group = randomUUID();
    const c = [0, 1].map((seq) => h1.envelope(r.did, { message_group_id: group, sequence_number: seq, total_chunks: 2 }));
    expectSuccess(await h1.post(c[0]!), 'chunk_staged', 'staged');
    await h1.close(true);

    const h2 = await startRelay({ dir: h1.dir.dir });
    try {
      h2.clock.set(h1.clock.nowMs());
      const again = await h2.post(env);
      assert.deepEqual(again.body, delivered.body, 'the stored DeliveryResult, same status');
      assert.equal(h2.events.length, 0, 'served from the record, not delivered again');
      const changed = await h2.post({ ...env, tag: 'changed' });
      assert.deepEqual(changed.body, { ...delivered.body, details: { ...details(delivered), deduped: true } }, 'its recipient is remembered too');
      assert.equal(h2.events.length, 0);
      const replay = await h2.post(c[0]!);
      expectSuccess(replay, 'chunk_staged', 'staged');
      assert.equal(details(replay).received_chunks, 1);
      expectSuccess(await h2.post(c[1]!), 'chunk_set_delivered', 'cache_fallback');
    } finally {
      await h2.close();
    }
  });
});
