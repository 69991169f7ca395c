import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { expectError, startCache } from './harness.js';
import { smallRateLimits } from '../support/rate-limits.js';

const WINDOW = 3600; // seconds: a window no test run outlasts

describe('Cache rate limits', () => {
  it('limits stores per recipient: the mailbox of a flooded DID stops filling, others do not', async () => {
    const h = await startCache({ rateLimits: smallRateLimits({ 'cache-store-target': { points: 3, seconds: WINDOW } }) });
    try {
      const victim = await h.registerRecipient(1);
      const other = await h.registerRecipient(2);
      for (let i = 0; i < 3; i++) assert.equal((await h.storeRaw(h.envelope(victim.did))).status, 202);
      const refused = await h.storeRaw(h.envelope(victim.did));
      expectError(refused, 429, 'rate_limited');
      assert.ok(Number(refused.headers['retry-after']) >= 1);
      assert.equal((await h.storeRaw(h.envelope(other.did))).status, 202);
      const pulled = await h.pull(victim);
      assert.equal((pulled.body.messages as unknown[]).length, 3, 'the refused store changed nothing');
    } finally {
      await h.close();
    }
  });

  it('limits stores per client address', async () => {
    const h = await startCache({ rateLimits: smallRateLimits({ 'cache-store': { points: 2, seconds: WINDOW } }) });
    try {
      const a = await h.registerRecipient(1);
      const b = await h.registerRecipient(2);
      assert.equal((await h.storeRaw(h.envelope(a.did))).status, 202);
      assert.equal((await h.storeRaw(h.envelope(b.did))).status, 202);
      expectError(await h.storeRaw(h.envelope(a.did)), 429, 'rate_limited');
    } finally {
      await h.close();
    }
  });

  it('limits retrievals (pull, summary, ack) per client address, apart from stores', async () => {
    const h = await startCache({
      rateLimits: smallRateLimits({ 'cache-retrieval': { points: 3, seconds: WINDOW }, 'cache-store': { points: 100, seconds: WINDOW } }),
    });
    try {
      const r = await h.registerRecipient(1);
      assert.equal((await h.storeRaw(h.envelope(r.did))).status, 202);
      assert.equal((await h.pull(r)).status, 200);
      assert.equal((await h.summary(r)).status, 200);
      assert.equal((await h.ack(r, [])).status === 429, false);
      expectError(await h.pull(r), 429, 'rate_limited');
      expectError(await h.summary(r), 429, 'rate_limited');
      assert.equal((await h.storeRaw(h.envelope(r.did))).status, 202, 'stores have their own budget');
    } finally {
      await h.close();
    }
  });
});
