/**
 * The RelayStagingStore contract (src/relay/staging-store.ts), run on every implementation (DESIGN.md
 * principle 5): staging rules inside the write, capacity accounting released by delivery and purge, results,
 * nonces, durability across a reopen. Each test gets its own fresh backing store (file or schema).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DdnError } from '../../src/base/errors.js';
import { successResult, NO_ATTEMPT } from '../../src/relay/delivery-result.js';
import type { RelayStagingStore, StageRequest } from '../../src/relay/staging-store.js';

export const T = 1_800_000_000_000;
export const R = 'did:platform:8DfbjXLth7APvt3qQPgtf';

/** One backing store (a SQLite file, a PostgreSQL schema): `open()` may be called again after `close()`. */
export interface StagingTarget {
  open(): Promise<RelayStagingStore>;
  /** Removes the backing store. */
  dispose(): Promise<void>;
}

export const req = (group: string, seq: number, over: Partial<StageRequest> = {}): StageRequest => ({
  recipientDid: R,
  groupId: group,
  sequence: seq,
  messageKey: `${group}-${seq}`,
  contentHash: `hash-${group}-${seq}`,
  set: { total: 2, to: R, tag: null, applicationId: null, sender: null },
  envelope: Buffer.from(`{"seq":${seq},"pad":"${'x'.repeat(500)}"}`),
  nowMs: T,
  retryUntilMs: T + 1000,
  maxBytes: 1200,
  maxSetsPerRecipient: 2,
  ...over,
});

export const isCode = (code: string) => (e: unknown) => e instanceof DdnError && e.code === code;

/** Registers the contract every RelayStagingStore implementation passes. */
export function stagingContract(name: string, target: () => Promise<StagingTarget>): void {
  /** Runs `body` on a store of a fresh target, closing and disposing it afterwards. */
  const withStore = async (body: (s: RelayStagingStore, t: StagingTarget) => Promise<void>): Promise<void> => {
    const t = await target();
    try {
      const s = await t.open();
      try {
        await body(s, t);
      } finally {
        await s.close();
      }
    } finally {
      await t.dispose();
    }
  };

  describe(`RelayStagingStore contract: ${name}`, () => {
    it('stages, replays, refuses conflicts and message id reuse, and reports completeness', () =>
      withStore(async (s) => {
        assert.deepEqual(await s.stage(req('g', 0)), { replayed: false, received: 1, total: 2, retryUntilMs: T + 1000, complete: false });
        assert.deepEqual(await s.stage(req('g', 0, { retryUntilMs: T + 5000 })), {
          replayed: true,
          received: 1,
          total: 2,
          retryUntilMs: T + 1000,
          complete: false,
        });
        await assert.rejects(s.stage(req('g', 0, { contentHash: 'other' })), isCode('chunk_conflict'));
        await assert.rejects(s.stage(req('g', 1, { set: { total: 2, to: R, tag: 't', applicationId: null, sender: null } })), isCode('chunk_set_conflict'));
        await assert.rejects(
          s.stage(req('g', 1, { set: { total: 3, to: R, tag: null, applicationId: null, sender: null } })),
          (e: unknown) => isCode('chunk_set_conflict')(e) && (e as DdnError).details?.field === 'total_chunks' && (e as DdnError).details?.expected === 2,
        );
        await assert.rejects(s.stage(req('g', 1, { messageKey: 'g-0' })), isCode('message_id_conflict'));
        assert.deepEqual((await s.findPrior('g-0', T, true)).staged, { recipientDid: R, groupId: 'g', sequence: 0, contentHash: 'hash-g-0' });
        assert.equal((await s.findPrior('g-0', T + 1000, true)).staged, null, 'a set past retry_until no longer holds its message ids');
        assert.equal((await s.findPrior('nope', T, true)).staged, null);
        const done = await s.stage(req('g', 1));
        assert.deepEqual(done, { replayed: false, received: 2, total: 2, retryUntilMs: T + 1000, complete: true });
        const chunks = await s.loadSet(R, 'g');
        assert.deepEqual(
          chunks.map((c) => [c.sequence, c.messageKey, c.contentHash]),
          [
            [0, 'g-0', 'hash-g-0'],
            [1, 'g-1', 'hash-g-1'],
          ],
        );
        assert.deepEqual(Buffer.from(chunks[1]!.envelope), req('g', 1).envelope, 'the envelope bytes come back unchanged');
        assert.deepEqual(await s.loadSet(R, 'none'), []);
      }));

    it('drops a set past retry_until when a chunk arrives for it, and frees a message id held by an expired set', () =>
      withStore(async (s) => {
        await s.stage(req('g', 0));
        const again = await s.stage(req('g', 0, { contentHash: 'new', nowMs: T + 1000, retryUntilMs: T + 2000 }));
        assert.deepEqual(again, { replayed: false, received: 1, total: 2, retryUntilMs: T + 2000, complete: false });
        await s.stage(req('h', 0, { messageKey: 'k', nowMs: T + 1000, retryUntilMs: T + 1500 }));
        const moved = await s.stage(req('g', 1, { messageKey: 'k', nowMs: T + 1500, retryUntilMs: T + 3000 }));
        assert.equal(moved.received, 2, 'the expired set h released message id k');
        assert.deepEqual(await s.loadSet(R, 'h'), []);
        // a third chunk fit only because the dropped sets' bytes were released (3 × ~510 > maxBytes)
        const swept = await s.sweep(T + 3000);
        assert.deepEqual([swept.purgedSets, swept.purgedChunks], [1, 2], 'only g is left to purge');
      }));

    it('counts capacity and releases it when a set is delivered or purged', () =>
      withStore(async (s) => {
        await s.stage(req('a', 0));
        await s.stage(req('b', 0));
        await assert.rejects(
          s.stage(req('c', 0)),
          (e: unknown) => isCode('staging_capacity_full')(e) && (e as DdnError).details?.limit === 'sets_per_recipient',
        );
        await assert.rejects(s.stage(req('a', 1)), (e: unknown) => isCode('staging_capacity_full')(e) && (e as DdnError).details?.limit === 'bytes');
        const chunks = await s.loadSet(R, 'a');
        const result = successResult('chunk_set_delivered', 'cache_fallback', 'ok', NO_ATTEMPT);
        await s.finishSet(R, 'a', chunks, result, T);
        assert.deepEqual(await s.loadSet(R, 'a'), []);
        assert.deepEqual((await s.findResult('a-0', T))?.result, result);
        assert.equal((await s.findResult('a-0', T))?.contentHash, 'hash-a-0');
        assert.equal((await s.findResult('a-0', T))?.recipientDid, null, 'a chunk of a set has no recipient recorded');
        assert.equal(await s.findResult('never', T), null);
        await s.stage(req('c', 0));
        const bytes = (...r: StageRequest[]) => r.reduce((n, x) => n + x.envelope.byteLength, 0);
        assert.deepEqual(await s.usage(), { sets: 2, bytes: bytes(req('b', 0), req('c', 0)) }, 'what the metrics report: the delivered set is released');
        const swept = await s.sweep(T + 1000);
        assert.deepEqual([swept.purgedSets, swept.purgedChunks], [2, 2]);
        assert.deepEqual(await s.usage(), { sets: 0, bytes: 0 });
        await s.stage(req('d', 0, { nowMs: T + 1000, retryUntilMs: T + 2000 }));
        await s.stage(req('d', 1, { nowMs: T + 1000, retryUntilMs: T + 2000 }));
        assert.equal(await s.findResult('a-0', T + 86_400_000), null, 'results are remembered for 24 h');
        assert.equal((await s.sweep(T + 86_400_000)).expiredResults, 1);
      }));

    it('caps a set by its announced total, and bytes per recipient and per owner (429 naming the bound)', () =>
      withStore(async (s) => {
        const limit = (name: string) => (e: unknown) => (e as DdnError).details?.limit === name;
        const size = req('x', 0).envelope.byteLength;
        const roomy = { maxBytes: 100_000, maxSetsPerRecipient: 100 };
        const set = (total: number, sender: string | null = null) => ({ total, to: R, tag: null, applicationId: null, sender });
        // a set announcing 1,000 chunks this size can never fit 10 of them: refused at its first chunk, nothing kept
        await assert.rejects(
          s.stage(req('huge', 0, { ...roomy, set: set(1000), maxSetBytes: 10 * size })),
          (e: unknown) => isCode('payload_too_large')(e) && limit('set_bytes')(e),
        );
        assert.deepEqual(await s.usage(), { sets: 0, bytes: 0 });
        // one that announces what fits is staged up to the cap
        for (let i = 0; i < 3; i++) await s.stage(req('fits', i, { ...roomy, set: set(4), maxSetBytes: 3 * size }));
        await assert.rejects(s.stage(req('fits', 3, { ...roomy, set: set(4), maxSetBytes: 3 * size })), limit('set_bytes'));
        // per recipient: R holds 3 chunks; a new set to R is over 3.5 chunks, another recipient's is not
        const R2 = 'did:platform:Other2recipient';
        await assert.rejects(
          s.stage(req('r', 0, { ...roomy, maxBytesPerRecipient: 3.5 * size })),
          (e: unknown) => isCode('staging_capacity_full')(e) && limit('recipient_bytes')(e),
        );
        await s.stage(req('r', 0, { ...roomy, recipientDid: R2, set: { ...set(2), to: R2 }, maxBytesPerRecipient: 3.5 * size }));
        // per owner: one sender's chunks to many recipients stop at its cap; another sender still stages
        const owner = 'did:did:platform:Sender';
        const toMany = (i: number, who: string) =>
          req(`o-${who}-${i}`, 0, { ...roomy, recipientDid: `did:platform:R${i}`, owner: who, maxBytesPerOwner: 2.5 * size });
        await s.stage(toMany(0, owner));
        await s.stage(toMany(1, owner));
        await assert.rejects(s.stage(toMany(2, owner)), (e: unknown) => isCode('staging_capacity_full')(e) && limit('sender_bytes')(e));
        await s.stage(toMany(2, 'address:127.0.0.9'));
        assert.deepEqual(await s.usage(), { sets: 5, bytes: 7 * size });
        // what a delivered set held no longer counts against its owner
        await s.finishSet(
          'did:platform:R0',
          `o-${owner}-0`,
          await s.loadSet('did:platform:R0', `o-${owner}-0`),
          successResult('cached', 'cache_fallback', 'ok', NO_ATTEMPT),
          T,
        );
        await s.stage(toMany(3, owner));
      }));

    it('drops sets that stopped growing when a stage needs their room, never sets that grow', () =>
      withStore(async (s) => {
        const size = req('x', 0).envelope.byteLength;
        const idle = 60_000;
        const at = (nowMs: number, over: Partial<StageRequest> = {}) => ({
          nowMs,
          retryUntilMs: T + 3_600_000,
          maxBytes: 2 * size,
          maxSetsPerRecipient: 10,
          idleDropMs: idle,
          set: { total: 3, to: R, tag: null, applicationId: null, sender: null },
          ...over,
        });
        await s.stage(req('stalled', 0, at(T)));
        await s.stage(req('growing', 0, at(T)));
        await s.stage(req('growing', 1, at(T + idle - 1, { maxBytes: 3 * size })));
        // full: before the idle bound nothing is dropped
        await assert.rejects(s.stage(req('new', 0, at(T + idle - 1, { maxBytes: 3 * size }))), isCode('staging_capacity_full'));
        // at the bound the stalled set gives its room; the one that grew since is kept
        await s.stage(req('new', 0, at(T + idle, { maxBytes: 3 * size })));
        assert.deepEqual(await s.loadSet(R, 'stalled'), []);
        assert.equal((await s.findPrior('stalled-0', T + idle, true)).staged, null);
        assert.equal((await s.loadSet(R, 'growing')).length, 2);
        assert.deepEqual(await s.usage(), { sets: 2, bytes: 3 * size });
        // without pressure an idle set stays until retry_until
        await s.stage(req('other', 0, at(T + 10 * idle, { maxBytes: 100 * size })));
        assert.equal((await s.loadSet(R, 'growing')).length, 2);
        // a recipient at its set cap: its own idle sets make room (not other recipients')
        const R3 = 'did:platform:Third3recipient';
        await s.stage(
          req('r3', 0, at(T + 10 * idle, { recipientDid: R3, set: { total: 3, to: R3, tag: null, applicationId: null, sender: null }, maxBytes: 100 * size })),
        );
        await s.stage(req('capped', 0, at(T + 10 * idle, { maxBytes: 100 * size, maxSetsPerRecipient: 3 })));
        assert.deepEqual(await s.loadSet(R, 'growing'), [], "R's idle sets were dropped for R's own bound");
        assert.deepEqual(await s.loadSet(R, 'new'), []);
        assert.equal((await s.loadSet(R, 'other')).length, 1, 'a set that got a chunk within the bound is kept');
        assert.equal((await s.loadSet(R3, 'r3')).length, 1, "another recipient's set is kept");
      }));

    it('findPrior: the live result, else (when asked) the live staged chunk, as the two reads give them', () =>
      withStore(async (s) => {
        const none = { result: null, staged: null };
        await s.stage(req('g', 0));
        const chunk = { recipientDid: R, groupId: 'g', sequence: 0, contentHash: 'hash-g-0' };
        assert.deepEqual(await s.findPrior('g-0', T, true), { result: null, staged: chunk });
        assert.deepEqual(await s.findPrior('g-0', T, false), none, 'the staged chunk only when asked');
        assert.deepEqual(await s.findPrior('g-0', T + 1000, true), none, 'a set past retry_until holds no message id');
        assert.deepEqual(await s.findPrior('nope', T, true), none);
        const result = successResult('cached', 'cache_fallback', 'ok', NO_ATTEMPT);
        await s.saveResult('m', 'h1', R, result, T);
        assert.deepEqual(await s.findPrior('m', T, true), { result: { contentHash: 'h1', recipientDid: R, result }, staged: null });
        assert.deepEqual(await s.findPrior('m', T + 86_400_000, true), none, 'results are remembered for 24 h');
        // a result and a staged chunk under one id: the result answers
        await s.saveResult('g-0', 'h2', R, result, T);
        assert.deepEqual(await s.findPrior('g-0', T, true), { result: { contentHash: 'h2', recipientDid: R, result }, staged: null });
        assert.deepEqual(await s.findPrior('g-0', T + 86_400_000, true), none);
      }));

    it('findPrior and saveResult called together (one turn, as concurrent sends do) answer each as if alone', () =>
      withStore(async (s) => {
        const none = { result: null, staged: null };
        const ok = successResult('cached', 'cache_fallback', 'ok', NO_ATTEMPT);
        const later = successResult('delivered', 'direct', 'again', NO_ATTEMPT);
        await s.stage(req('g', 0));
        await s.saveResult('old', 'h-old', R, ok, T - 86_400_000);
        // twenty saves at once, one message id twice: the last call's row stands
        await Promise.all([
          ...Array.from({ length: 18 }, (_, i) => s.saveResult(`m${i}`, `h${i}`, R, ok, T)),
          s.saveResult('twice', 'h-first', R, ok, T),
          s.saveResult('twice', 'h-last', R, later, T),
        ]);
        const asks = await Promise.all([
          s.findPrior('m3', T, true),
          s.findPrior('g-0', T, true),
          s.findPrior('g-0', T, false),
          s.findPrior('g-0', T + 1000, true),
          s.findPrior('old', T, true),
          s.findPrior('nope', T, true),
          s.findPrior('twice', T, false),
          s.findPrior('m17', T + 86_400_000, true),
        ]);
        assert.deepEqual(asks, [
          { result: { contentHash: 'h3', recipientDid: R, result: ok }, staged: null },
          { result: null, staged: { recipientDid: R, groupId: 'g', sequence: 0, contentHash: 'hash-g-0' } },
          none,
          none,
          none,
          none,
          { result: { contentHash: 'h-last', recipientDid: R, result: later }, staged: null },
          none,
        ]);
      }));

    it('remembers the latest result saved for a message id, with its recipient', () =>
      withStore(async (s) => {
        await s.saveResult('m', 'h1', R, successResult('cached', 'cache_fallback', 'ok', NO_ATTEMPT), T);
        await s.saveResult('m', 'h2', R, successResult('delivered', 'direct', 'ok', NO_ATTEMPT), T + 10);
        const r = await s.findResult('m', T + 86_400_000);
        assert.equal(r?.contentHash, 'h2');
        assert.equal(r?.recipientDid, R);
        assert.equal(r?.result.code, 'delivered');
      }));

    it('records node nonces once while live', () =>
      withStore(async (s) => {
        const claim = { scope: 'node-request', did: R, keyId: `${R}#node`, nonce: 'n', expiresAtMs: T + 300_000 };
        assert.equal(await s.isNonceClaimed(claim, T), false);
        assert.equal(await s.claimNonce(claim, T), true);
        assert.equal(await s.isNonceClaimed(claim, T), true);
        assert.equal(await s.claimNonce(claim, T + 1), false);
        assert.equal(await s.claimNonce({ ...claim, scope: 'proof:get' }, T + 1), true, 'scopes are separate');
        assert.equal(await s.isNonceClaimed(claim, T + 300_000), false);
        assert.equal(await s.claimNonce({ ...claim, expiresAtMs: T + 600_000 }, T + 300_000), true, 'an expired nonce can be claimed again');
        assert.equal(await s.claimNonce(claim, T + 300_001), false);
        assert.equal((await s.sweep(T + 600_000)).expiredNonces, 2);
      }));

    it('keeps staged chunks and results across a reopen', async () => {
      const t = await target();
      try {
        const a = await t.open();
        await a.stage(req('g', 0));
        await a.saveResult('m', 'h', R, successResult('cached', 'cache_fallback', 'ok', NO_ATTEMPT), T);
        await a.close();
        const b = await t.open();
        try {
          assert.equal((await b.stage(req('g', 0))).replayed, true);
          assert.equal((await b.findResult('m', T))?.result.code, 'cached');
          await b.stage(req('z', 0));
          await assert.rejects(b.stage(req('z', 1)), isCode('staging_capacity_full'), 'bytes staged before the reopen still count');
        } finally {
          await b.close();
        }
      } finally {
        await t.dispose();
      }
    });
  });
}
