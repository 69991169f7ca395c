/**
 * The DnsChallengeStore contract (src/directory/dns-challenges.ts), run on every implementation (DESIGN.md
 * principle 5): round trip, the pending → verified → used moves, single use under concurrent writers from two
 * handles (two processes), purge of expired challenges. Each test gets its own fresh backing store.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { DnsChallenge, DnsChallengeStore, VerifiedIntent } from '../../src/directory/dns-challenges.js';
import type { RequestedDeliveryConstraints } from '../../src/protocol/policy/types.js';

/** A store under test; `another()` opens a second, independent handle on the same storage (another process). */
export interface DnsChallengeHandle {
  store: DnsChallengeStore;
  another(): Promise<DnsChallengeStore>;
  /** Closes every handle and removes the storage. */
  close(): Promise<void>;
}

const T = 1_800_000_000_000;
const CONSTRAINTS: RequestedDeliveryConstraints = {
  requestedCacheSeconds: 3600,
  maxHttpEnvelopeBytes: 1_000_000,
  maxUnchunkedMessageBytes: 500_000,
  maxChunkBytes: 100_000,
  maxMessageBytes: 2_000_000,
  maxChunks: 20,
  maxReplicas: 2,
};
const HOUR = 3_600_000;

function challenge(over: Partial<DnsChallenge> = {}): DnsChallenge {
  return {
    id: randomUUID(),
    persona: 'shop.example.org',
    operatorDid: 'did:platform:2222222222222222',
    action: 'register_persona',
    challengeNonce: '0',
    operatorNonce: '18446744073709551615',
    currentOperatorDid: null,
    recordName: '_ddn.shop.example.org',
    recordValue: 'ddn-verification=abc',
    createdAtMs: T,
    expiresAtMs: T + 48 * HOUR,
    status: 'pending',
    intent: null,
    usedTxHash: null,
    ...over,
  };
}

function intent(nonce: string): VerifiedIntent {
  return {
    nonce,
    validUntil: String(T + HOUR),
    signerKeyId: 'did:platform:2222222222222222#k1',
    controllerKeys: ['did:platform:2222222222222222#k1'],
    controllerThreshold: 1,
    constraints: null,
    verificationDays: 365,
    dnsProofHash: `0x${'ab'.repeat(32)}`,
    verificationExpiresAt: T + 365 * 24 * HOUR,
    attestor: `0x${'cd'.repeat(32)}`,
    attestationSignature: `0x00${'ef'.repeat(64)}`,
    canonicalPayload: '0x0102',
    acceptancePayload: null,
    verifiedAtMs: T,
  };
}

export function dnsChallengeContract(name: string, open: () => Promise<DnsChallengeHandle>): void {
  /** Runs `fn` on a fresh store, closed (and its storage removed) afterwards. */
  const withStore = (fn: (h: DnsChallengeHandle) => Promise<void>) => async () => {
    const h = await open();
    try {
      await fn(h);
    } finally {
      await h.close();
    }
  };

  describe(`DnsChallengeStore contract: ${name}`, () => {
    it(
      'returns an inserted challenge exactly, and nothing for an unknown id',
      withStore(async ({ store }) => {
        const plain = challenge();
        const transfer = challenge({
          action: 'transfer_persona',
          currentOperatorDid: 'did:platform:3333333333333333',
          status: 'verified',
          intent: { ...intent('7'), acceptancePayload: '0x0304', canonicalPayload: null, constraints: CONSTRAINTS },
        });
        await store.insert(plain);
        await store.insert(transfer);
        assert.deepEqual(await store.get(plain.id), plain);
        assert.deepEqual(await store.get(transfer.id), transfer);
        assert.equal(await store.get(randomUUID()), undefined);
      }),
    );

    it(
      'verifies (replacing the intent), is used once, then refuses both moves',
      withStore(async ({ store }) => {
        const c = challenge();
        await store.insert(c);
        assert.equal(await store.markVerified(c.id, intent('1')), true);
        assert.equal(await store.markVerified(c.id, intent('2')), true);
        assert.deepEqual(await store.get(c.id), { ...c, status: 'verified', intent: intent('2') });
        assert.equal(await store.markUsed(c.id, '0xaa'), true);
        assert.equal(await store.markVerified(c.id, intent('3')), false);
        assert.equal(await store.markUsed(c.id, '0xbb'), false);
        assert.deepEqual(await store.get(c.id), { ...c, status: 'used', intent: intent('2'), usedTxHash: '0xaa' });
        assert.equal(await store.markVerified(randomUUID(), intent('1')), false, 'unknown id');
        assert.equal(await store.markUsed(randomUUID(), '0xaa'), false, 'unknown id');
      }),
    );

    it(
      'shares challenges between handles: created through one, verified and used through the other',
      withStore(async (h) => {
        const b = await h.another();
        const c = challenge();
        await h.store.insert(c);
        assert.equal((await b.get(c.id))?.status, 'pending');
        assert.equal(await b.markVerified(c.id, intent('1')), true);
        assert.deepEqual((await h.store.get(c.id))?.intent, intent('1'));
        assert.equal(await h.store.markUsed(c.id, '0xaa'), true);
        assert.equal(await b.markVerified(c.id, intent('2')), false);
        assert.equal((await b.get(c.id))?.usedTxHash, '0xaa');
      }),
    );

    it(
      'lets exactly one of many concurrent markUsed calls from two handles win',
      withStore(async (h) => {
        const b = await h.another();
        const c = challenge({ status: 'verified', intent: intent('1') });
        await h.store.insert(c);
        const hashes = Array.from({ length: 16 }, (_, i) => `0x${i.toString(16).padStart(2, '0')}`);
        const won = await Promise.all(hashes.map((x, i) => (i % 2 === 0 ? h.store : b).markUsed(c.id, x)));
        assert.equal(won.filter(Boolean).length, 1);
        const stored = await b.get(c.id);
        assert.equal(stored?.status, 'used');
        assert.equal(stored?.usedTxHash, hashes[won.indexOf(true)]);
      }),
    );

    it(
      'never lets a concurrent markVerified undo a use',
      withStore(async (h) => {
        const b = await h.another();
        const c = challenge();
        await h.store.insert(c);
        const moves = Array.from({ length: 16 }, (_, i) => {
          const s = i % 2 === 0 ? h.store : b;
          return i === 7 ? s.markUsed(c.id, '0xaa') : s.markVerified(c.id, intent(String(i)));
        });
        const results = await Promise.all(moves);
        assert.equal(results[7], true, 'the only markUsed wins');
        const stored = await h.store.get(c.id);
        assert.equal(stored?.status, 'used');
        assert.equal(stored?.usedTxHash, '0xaa');
        // The stored intent is one a successful markVerified wrote (or none, when markUsed came first).
        const wrote = results.flatMap((ok, i) => (ok && i !== 7 ? [intent(String(i))] : []));
        if (stored?.intent === null) assert.equal(wrote.length, 0);
        else assert.ok(wrote.some((w) => JSON.stringify(w) === JSON.stringify(stored?.intent)));
        assert.equal(await b.markVerified(c.id, intent('99')), false);
      }),
    );

    it(
      'purges challenges that expired before the given time, whatever their status',
      withStore(async ({ store }) => {
        const old = challenge({ expiresAtMs: T - 1 });
        const oldUsed = challenge({ expiresAtMs: T - HOUR, status: 'used', usedTxHash: '0xaa' });
        const edge = challenge({ expiresAtMs: T });
        const fresh = challenge({ expiresAtMs: T + 1 });
        for (const c of [old, oldUsed, edge, fresh]) await store.insert(c);
        assert.equal(await store.purgeExpiredBefore(T), 2);
        assert.equal(await store.get(old.id), undefined);
        assert.equal(await store.get(oldUsed.id), undefined);
        assert.deepEqual(await store.get(edge.id), edge);
        assert.deepEqual(await store.get(fresh.id), fresh);
        assert.equal(await store.purgeExpiredBefore(T), 0);
      }),
    );
  });
}
