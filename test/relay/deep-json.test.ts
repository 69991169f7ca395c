/**
 * Deeply nested JSON at the Relay: refused with 400 `invalid_json` (`details.reason` `too_deep`) before any
 * recursive code sees it, never a 5xx; and a Cache refusing the client's envelope itself is answered as that
 * 4xx (base delivery and a plan's Store step), never as 502 `upstream_unavailable`, which senders retry.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { localCachePort } from '../../src/app/local-cache.js';
import { createHttpServer, json, type HttpServer } from '../../src/http/server.js';
import { MAX_JSON_DEPTH } from '../../src/http/json-depth.js';
import { tooDeepError } from '../../src/http/json-body.js';
import type { Recipient } from '../cache/harness.js';
import { deepArrays, deepObjects, withMember } from '../support/deep-json.js';
import { ruleOf, setDidPolicy, storePlan } from './ledger-setup.js';
import { expectFailure, expectSuccess, startRelay, type RelayHarness } from './harness.js';

type Body = Record<string, unknown>;

/** An envelope text whose `field` is the JSON text `nested` (spliced in; no serialiser recursion here). */
function withNested(env: Body, field: 'context' | 'payload', nested: string): string {
  return withMember(env, field, field === 'payload' ? `{"ciphertext_b64":"3q2+7w==","extra":${nested}}` : `{"deep":${nested}}`);
}

describe('Relay: deeply nested JSON', () => {
  let h: RelayHarness;
  let r: Recipient;
  let refusing: Recipient;
  let planned: Recipient;
  let failing: Recipient;
  let fakeCache: HttpServer;
  let failStatus = 500;

  before(async () => {
    h = await startRelay();
    // a remote Cache that refuses every store as too deep (a stricter Cache than this Relay), or fails at /fail/
    fakeCache = createHttpServer({ name: 'cache', logger: false, bodyLimitBytes: 1 << 20, tooLargeCode: 'envelope_too_large' });
    fakeCache.route('POST', '/strict/cache/store', () => {
      throw tooDeepError();
    });
    fakeCache.route('POST', '/fail/cache/store', () =>
      failStatus === 500 ? json(500, { code: 'internal_error' }) : json(failStatus, { code: 'invalid_node_signature' }),
    );
    await fakeCache.fastify.listen({ host: '127.0.0.1', port: 0 });
    const address = fakeCache.fastify.server.address();
    if (address === null || typeof address === 'string') throw new Error('not listening');
    const base = `http://127.0.0.1:${address.port}`;
    r = await h.registerRecipient(71);
    refusing = await h.registerRecipient(72, { cacheEndpoints: [`${base}/strict`] });
    planned = await h.registerRecipient(73, { cacheEndpoints: [`${base}/strict`] });
    failing = await h.registerRecipient(74, { cacheEndpoints: [`${base}/fail`] });
    setDidPolicy(h.dir.ledger, h.profile, planned, [ruleOf('plan', storePlan(planned.did, planned.serviceId))]);
    h.dir.settle();
  });
  after(async () => {
    await fakeCache.fastify.close();
    await h.close();
  });

  it('an envelope nesting thousands of objects or arrays in context or payload → 400 invalid_json too_deep, nothing stored', async () => {
    for (const field of ['context', 'payload'] as const) {
      for (const nested of [deepObjects(5000), deepArrays(10_000)]) {
        const env = h.envelope(r.did);
        const res = await h.post(withNested(env, field, nested));
        expectFailure(res, 400, 'invalid_json');
        assert.deepEqual(res.body.details, { reason: 'too_deep', max_depth: MAX_JSON_DEPTH });
        assert.equal(res.body.cache_attempted, false);
        assert.deepEqual(await h.cached(r.did), []);
      }
    }
  });

  it('nesting up to the bound is delivered', async () => {
    const env = h.envelope(r.did);
    // the envelope is depth 1, context 2, its "deep" member holds the rest
    const res = await h.post(withNested(env, 'context', deepObjects(MAX_JSON_DEPTH - 2)));
    expectSuccess(res, 'cached', 'cache_fallback');
    const over = await h.post(withNested(h.envelope(r.did), 'context', deepObjects(MAX_JSON_DEPTH - 1)));
    expectFailure(over, 400, 'invalid_json');
  });

  it("a Cache refusing the client's envelope (400 invalid_json) → the client gets that 400, not 502", async () => {
    const res = await h.post(h.envelope(refusing.did));
    expectFailure(res, 400, 'invalid_json');
    assert.equal((res.body.details as Body).reason, 'too_deep');
    assert.equal(res.body.cache_attempted, true);
    assert.equal(res.body.cache_result, 'invalid_json');
    assert.equal(res.body.retry_count, 1, 'a refusal of the envelope is not retried');
    // a Cache failing for its own reasons (500, or a 403 about the Relay) is still 502 upstream_unavailable
    for (const status of [500, 403]) {
      failStatus = status;
      expectFailure(await h.post(h.envelope(failing.did)), 502, 'upstream_unavailable');
    }
  });

  it("the same under a plan's Store step", async () => {
    const res = await h.post(h.envelope(planned.did));
    expectFailure(res, 400, 'invalid_json');
    assert.equal(res.body.cache_result, 'invalid_json');
  });

  it("the Relay's own Cache, called in-process, parses with the same bound", async () => {
    const port = localCachePort(h.cacheService, h.clock, 300, { sharedDidRecords: true });
    const env = h.envelope(r.did);
    const answer = await port.store({ bytes: Buffer.from(withNested(env, 'payload', deepObjects(5000))) }, h.identity);
    assert.ok(!answer.ok);
    assert.equal(answer.status, 400);
    assert.equal(answer.body?.code, 'invalid_json');
    assert.deepEqual(answer.body?.details, { reason: 'too_deep', max_depth: MAX_JSON_DEPTH });
  });
});
