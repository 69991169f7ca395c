/**
 * The RelayStagingStore contract (src/relay/staging-store.ts), run against the SQLite implementation: staging
 * rules inside the write, capacity accounting released by delivery and purge, results, nonces, durability.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DdnError } from '../../src/base/errors.js';
import { successResult, NO_ATTEMPT } from '../../src/relay/delivery-result.js';
import type { RelayStagingStore, StageRequest } from '../../src/relay/staging-store.js';
import { SqliteRelayStagingStore } from '../../src/store/sqlite/relay-staging-store.js';

const T = 1_800_000_000_000;
const R = 'did:platform:8DfbjXLth7APvt3qQPgtf';
const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tempFile(): string {
  const d = mkdtempSync(join(tmpdir(), 'ddn-relay-store-'));
  dirs.push(d);
  return join(d, 'relay.sqlite');
}

const req = (group: string, seq: number, over: Partial<StageRequest> = {}): StageRequest => ({
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

const isCode = (code: string) => (e: unknown) => e instanceof DdnError && e.code === code;

/** The contract every RelayStagingStore implementation passes. */
function contract(name: string, open: (path: string) => RelayStagingStore): void {
  describe(`RelayStagingStore contract: ${name}`, () => {
    it('stages, replays, refuses conflicts and message id reuse, and reports completeness', async () => {
      const s = open(tempFile());
      try {
        assert.deepEqual(await s.stage(req('g', 0)), { replayed: false, received: 1, total: 2, retryUntilMs: T + 1000, complete: false });
        assert.deepEqual(await s.stage(req('g', 0, { retryUntilMs: T + 5000 })), { replayed: true, received: 1, total: 2, retryUntilMs: T + 1000, complete: false });
        await assert.rejects(s.stage(req('g', 0, { contentHash: 'other' })), isCode('chunk_conflict'));
        await assert.rejects(s.stage(req('g', 1, { set: { total: 2, to: R, tag: 't', applicationId: null, sender: null } })), isCode('chunk_set_conflict'));
        await assert.rejects(s.stage(req('g', 1, { messageKey: 'g-0' })), isCode('message_id_conflict'));
        assert.deepEqual(await s.findStagedMessage('g-0', T), { recipientDid: R, groupId: 'g', sequence: 0, contentHash: 'hash-g-0' });
        const done = await s.stage(req('g', 1));
        assert.equal(done.complete, true);
        assert.deepEqual((await s.loadSet(R, 'g')).map((c) => c.sequence), [0, 1]);
      } finally {
        await s.close();
      }
    });

    it('counts capacity and releases it when a set is delivered or purged', async () => {
      const s = open(tempFile());
      try {
        await s.stage(req('a', 0));
        await s.stage(req('b', 0));
        await assert.rejects(s.stage(req('c', 0)), isCode('staging_capacity_full'), 'two sets per recipient');
        await assert.rejects(s.stage(req('a', 1)), isCode('staging_capacity_full'), 'bytes');
        const chunks = await s.loadSet(R, 'a');
        const result = successResult('chunk_set_delivered', 'cache_fallback', 'ok', NO_ATTEMPT);
        await s.finishSet(R, 'a', chunks, result, T);
        assert.deepEqual(await s.loadSet(R, 'a'), []);
        assert.deepEqual((await s.findResult('a-0', T))?.result, result);
        assert.equal((await s.findResult('a-0', T))?.contentHash, 'hash-a-0');
        await s.stage(req('c', 0));
        const swept = await s.sweep(T + 1000);
        assert.deepEqual([swept.purgedSets, swept.purgedChunks], [2, 2]);
        await s.stage(req('d', 0, { nowMs: T + 1000, retryUntilMs: T + 2000 }));
        await s.stage(req('d', 1, { nowMs: T + 1000, retryUntilMs: T + 2000 }));
        assert.equal(await s.findResult('a-0', T + 86_400_000), null, 'results are remembered for 24 h');
        assert.equal((await s.sweep(T + 86_400_000)).expiredResults, 1);
      } finally {
        await s.close();
      }
    });

    it('records node nonces once while live', async () => {
      const s = open(tempFile());
      try {
        const claim = { scope: 'node-request', did: R, keyId: `${R}#node`, nonce: 'n', expiresAtMs: T + 300_000 };
        assert.equal(await s.claimNonce(claim, T), true);
        assert.equal(await s.isNonceClaimed(claim, T), true);
        assert.equal(await s.claimNonce(claim, T + 1), false);
        assert.equal(await s.isNonceClaimed(claim, T + 300_000), false);
        assert.equal((await s.sweep(T + 300_000)).expiredNonces, 1);
      } finally {
        await s.close();
      }
    });

    it('keeps staged chunks and results across a reopen', async () => {
      const path = tempFile();
      const a = open(path);
      await a.stage(req('g', 0));
      await a.saveResult('m', 'h', successResult('cached', 'cache_fallback', 'ok', NO_ATTEMPT), T);
      await a.close();
      const b = open(path);
      try {
        assert.equal((await b.stage(req('g', 0))).replayed, true);
        assert.equal((await b.findResult('m', T))?.result.code, 'cached');
      } finally {
        await b.close();
      }
    });
  });
}

contract('sqlite', (path) => SqliteRelayStagingStore.open(path));
