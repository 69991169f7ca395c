/** RelayClient (http-api.md §10.3, §10.5, §12 item 9): identical-bytes retries on 429/502/503/507 only. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { RelayClient, RelayError } from '../../src/client/relay-client.js';
import { BASE, fakeFetch, fakeTiming, type FakeAnswer } from './fake-fetch.js';

const ok = {
  success: true,
  delivery_mode: 'cache_fallback',
  http_status: 202,
  code: 'cached',
  message: 'stored',
  retry_count: 1,
  cache_attempted: true,
  cache_result: 'accepted',
  details: {},
};
const failed = (status: number, code: string): FakeAnswer => ({
  status,
  body: {
    success: false,
    delivery_mode: 'failed',
    http_status: status,
    code,
    message: code,
    retry_count: 0,
    cache_attempted: false,
    cache_result: null,
    details: {},
  },
});
const BODY = '{"message_id":"6f1c2b9e-3d4a-4e5f-8a7b-1c2d3e4f5a6b","to":"did:platform:x","payload":{"ciphertext_b64":"AA=="}}';

describe('RelayClient.post', () => {
  it('retries 429, 502, 503 and 507 with the identical body, honouring Retry-After', async () => {
    const answers: FakeAnswer[] = [
      { ...failed(429, 'rate_limited'), headers: { 'Retry-After': '7' } },
      failed(502, 'upstream_unavailable'),
      { ...failed(503, 'policy_lookup_failed'), headers: { 'retry-after': '2' } },
      failed(507, 'staging_persist_failed'),
      { status: 202, body: ok },
    ];
    const { fetch, calls } = fakeFetch(() => answers.shift()!);
    const timing = fakeTiming();
    const out = await new RelayClient(BASE, { fetch, timing, backoffMs: 100 }).post(BODY);
    assert.equal(out.attempts, 5);
    assert.equal(out.result.code, 'cached');
    assert.deepEqual(timing.slept, [7000, 200, 2000, 800]);
    assert.equal(calls.length, 5);
    for (const c of calls) {
      assert.equal(c.method, 'POST');
      assert.equal(c.path, '/relay');
      assert.equal(JSON.stringify(c.body), BODY);
      assert.equal(c.headers['content-type'], 'application/json');
    }
  });

  it('does not retry other failures and reports the DeliveryResult code', async () => {
    for (const [status, code] of [
      [400, 'invalid_payload'],
      [409, 'message_id_conflict'],
      [413, 'chunk_too_large'],
      [500, 'internal_error'],
      [504, 'gateway_timeout'],
    ] as const) {
      const { fetch, calls } = fakeFetch(() => failed(status, code));
      await assert.rejects(
        new RelayClient(BASE, { fetch, timing: fakeTiming() }).post(BODY),
        (e: unknown) => e instanceof RelayError && e.code === code && e.status === status,
      );
      assert.equal(calls.length, 1, `${status} is not retried`);
    }
  });

  it('a 2xx without success: true is a failure; a plain error body keeps its code', async () => {
    const { fetch } = fakeFetch(() => ({ status: 202, body: { ...ok, success: false, code: 'odd' } }));
    await assert.rejects(new RelayClient(BASE, { fetch, timing: fakeTiming() }).post(BODY), (e: unknown) => e instanceof RelayError && e.code === 'odd');
    const f2 = fakeFetch(() => ({ status: 413, body: { code: 'envelope_too_large', error: 'envelope_too_large', message: 'too big' } }));
    await assert.rejects(
      new RelayClient(BASE, { fetch: f2.fetch, timing: fakeTiming() }).post(BODY),
      (e: unknown) => e instanceof RelayError && e.code === 'envelope_too_large',
    );
  });

  it('gives up after maxAttempts and retries network failures too', async () => {
    let n = 0;
    const { fetch, calls } = fakeFetch(() => {
      n++;
      if (n === 1) throw new TypeError('fetch failed');
      return failed(503, 'service_unavailable');
    });
    const timing = fakeTiming();
    await assert.rejects(
      new RelayClient(BASE, { fetch, timing, maxAttempts: 3, backoffMs: 10, maxWaitMs: 15 }).post(BODY),
      (e: unknown) => e instanceof RelayError && e.code === 'service_unavailable' && e.attempts === 3 && /gave up after 3 attempts/.test(e.message),
    );
    assert.equal(calls.length, 3);
    assert.deepEqual(timing.slept, [10, 15]);
  });

  it('posts to /relay/{did} when a recipient DID is given', async () => {
    const { fetch, calls } = fakeFetch(() => ({ status: 202, body: ok }));
    await new RelayClient(BASE, { fetch, timing: fakeTiming() }).post(BODY, 'did:platform:8DfbjXLth7APvt3qQPgtf');
    assert.equal(calls[0]!.path, '/relay/did%3Aplatform%3A8DfbjXLth7APvt3qQPgtf');
  });
});
