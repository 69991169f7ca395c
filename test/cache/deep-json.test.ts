/** Deeply nested JSON at the Cache: 400 `invalid_json` (`details.reason` `too_deep`) on every body route, never a 5xx. */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_JSON_DEPTH } from '../../src/http/json-depth.js';
import { deepArrays, deepObjects, withMember } from '../support/deep-json.js';
import { expectError, startCache, type CacheHarness, type RelayNode, type Recipient } from './harness.js';

describe('Cache: deeply nested JSON', () => {
  let h: CacheHarness;
  let r: Recipient;
  let relay: RelayNode;

  before(async () => {
    h = await startCache();
    r = await h.registerRecipient(81);
    relay = await h.registerRelay(82);
  });
  after(() => h.close());

  it('a node-signed store whose context or payload nests thousands of levels → 400 invalid_json too_deep, nothing stored', async () => {
    for (const nested of [deepObjects(5000), deepArrays(10_000)]) {
      for (const text of [
        withMember(h.envelope(r.did), 'context', `{"deep":${nested}}`),
        withMember(h.envelope(r.did), 'payload', `{"ciphertext_b64":"3q2+7w==","extra":${nested}}`),
      ]) {
        const res = await h.storeAsNode(relay, text);
        expectError(res, 400, 'invalid_json');
        assert.deepEqual(res.body.details, { reason: 'too_deep', max_depth: MAX_JSON_DEPTH });
      }
    }
    const pulled = await h.pull(r);
    assert.equal(pulled.status, 200);
    assert.deepEqual(pulled.body.messages, []);
  });

  it('an acknowledgement body nesting thousands of levels → 400 invalid_json too_deep', async () => {
    const res = await h.post('/cache/ack', withMember({ message_ids: [] }, 'extra', deepArrays(10_000)), h.proof(r, 'ack', '*'));
    expectError(res, 400, 'invalid_json');
    assert.equal((res.body.details as Record<string, unknown>).reason, 'too_deep');
  });
});
