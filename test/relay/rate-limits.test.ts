import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startRelay } from './harness.js';
import { smallRateLimits } from '../support/rate-limits.js';

const WINDOW = 3600; // seconds: a window no test run outlasts

describe('Relay rate limits', () => {
  it('answers posts beyond the per-address budget with a DeliveryResult 429 rate_limited and Retry-After', async () => {
    const h = await startRelay({ rateLimits: smallRateLimits({ 'relay-post': { points: 2, seconds: WINDOW } }) });
    try {
      const r = await h.registerRecipient(1);
      assert.equal((await h.post(h.envelope(r.did))).status, 202);
      assert.equal((await h.post(h.envelope(r.did), { path: encodeURIComponent(r.did) })).status, 202);
      const refused = await h.post(h.envelope(r.did));
      assert.equal(refused.status, 429);
      assert.equal(refused.body.success, false);
      assert.equal(refused.body.delivery_mode, 'failed');
      assert.equal(refused.body.http_status, 429);
      assert.equal(refused.body.code, 'rate_limited');
      assert.equal(refused.headers['retry-after'], String(refused.body.details.retry_after_seconds));
      assert.equal((await h.cached(r.did)).length, 2, 'the refused post delivered nothing');
    } finally {
      await h.close();
    }
  });

  it('limits posts per recipient, named in the path or the body', async () => {
    const h = await startRelay({ rateLimits: smallRateLimits({ 'relay-post-target': { points: 2, seconds: WINDOW } }) });
    try {
      const victim = await h.registerRecipient(1);
      const other = await h.registerRecipient(2);
      // junk naming the victim is refused and uses up nothing of its budget (nobody can lock its senders out so)
      for (let i = 0; i < 4; i++) assert.equal((await h.post({ to: victim.did, junk: true })).status, 400);
      assert.equal((await h.post(h.envelope(victim.did))).status, 202);
      assert.equal((await h.post(h.envelope(victim.did), { path: encodeURIComponent(victim.did) })).status, 202);
      const refused = await h.post(h.envelope(victim.did));
      assert.equal(refused.status, 429);
      assert.equal(refused.body.code, 'rate_limited');
      assert.equal((await h.post(h.envelope(other.did))).status, 202);
    } finally {
      await h.close();
    }
  });
});
