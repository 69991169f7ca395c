/** The SDK's JSON helper: path encoding, request shape, error mapping (http-api.md §0.3–§0.6). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DirectoryApiError, encodePath, isRetryableError, joinUrl, requestJson } from '../../src/client/http.js';
import { BASE, fakeFetch } from './fake-fetch.js';

test('encodePath percent-encodes every interpolated segment, nothing kept safe', () => {
  assert.equal(encodePath`/resolve/${'did:platform:abc'}`, '/resolve/did%3Aplatform%3Aabc');
  assert.equal(encodePath`/x/${'did:p:a#key-1'}/${'dev/1'}/${'me@host'}/${'a+b c'}`, '/x/did%3Ap%3Aa%23key-1/dev%2F1/me%40host/a%2Bb%20c');
  assert.equal(encodePath`/blocks/${5}`, '/blocks/5');
  assert.equal(encodePath`/blocks/latest`, '/blocks/latest');
});

test('joinUrl keeps a base path prefix and drops a trailing slash', () => {
  assert.equal(joinUrl('http://h/p/', '/a'), 'http://h/p/a');
  assert.equal(joinUrl('http://h', '/a'), 'http://h/a');
});

test('requestJson sends JSON with a content type only when there is a body (DELETE included)', async () => {
  const f = fakeFetch(() => ({ status: 202, body: { status: 'accepted' } }));
  const r = await requestJson(BASE, 'DELETE', '/dids/x', { a: '1' }, f.fetch);
  assert.deepEqual(r, { status: 202, body: { status: 'accepted' } });
  assert.equal(f.calls[0]!.method, 'DELETE');
  assert.equal(f.calls[0]!.headers['content-type'], 'application/json');
  assert.deepEqual(f.calls[0]!.body, { a: '1' });
  await requestJson(BASE, 'GET', '/health', undefined, f.fetch);
  assert.equal(f.calls[1]!.headers['content-type'], undefined);
  assert.equal(f.calls[1]!.body, undefined);
});

test('non-2xx throws DirectoryApiError carrying code, details, body and Retry-After', async () => {
  const body = { code: 'nonce_mismatch', error: 'nonce_mismatch', message: 'stale', details: { expected: '5' } };
  const f = fakeFetch(() => ({ status: 409, body }));
  const err = await requestJson(BASE, 'POST', '/x', {}, f.fetch).catch((e: unknown) => e);
  assert.ok(err instanceof DirectoryApiError);
  assert.equal(err.status, 409);
  assert.equal(err.code, 'nonce_mismatch');
  assert.equal(err.message, 'stale');
  assert.deepEqual(err.details, { expected: '5' });
  assert.deepEqual(err.body, body);
  assert.equal(err.retryable, false);

  const busy = fakeFetch(() => ({ status: 503, body: { code: 'ledger_unavailable' }, headers: { 'Retry-After': '2' } }));
  const e2 = await requestJson(BASE, 'GET', '/x', undefined, busy.fetch).catch((e: unknown) => e);
  assert.ok(isRetryableError(e2));
  assert.equal(e2.retryAfterSeconds, 2);
});

test('error bodies that are not the §0.6 shape still give a code', async () => {
  const html = fakeFetch(() => ({ status: 502, text: '<html>bad gateway</html>' }));
  const e1 = await requestJson(BASE, 'GET', '/x', undefined, html.fetch).catch((e: unknown) => e);
  assert.ok(e1 instanceof DirectoryApiError);
  assert.equal(e1.code, 'http_502');
  assert.equal(e1.body, '<html>bad gateway</html>');
  const legacy = fakeFetch(() => ({ status: 400, body: { error: 'invalid_did' } }));
  const e2 = await requestJson(BASE, 'GET', '/x', undefined, legacy.fetch).catch((e: unknown) => e);
  assert.equal((e2 as DirectoryApiError).code, 'invalid_did');
  const notJson = fakeFetch(() => ({ status: 200, text: 'ok' }));
  const e3 = await requestJson(BASE, 'GET', '/x', undefined, notJson.fetch).catch((e: unknown) => e);
  assert.equal((e3 as DirectoryApiError).code, 'invalid_response');
});

test('no automatic retry: a 503 is thrown after one request', async () => {
  const f = fakeFetch(() => ({ status: 503, body: { code: 'ledger_unavailable' } }));
  await assert.rejects(requestJson(BASE, 'GET', '/x', undefined, f.fetch), DirectoryApiError);
  assert.equal(f.calls.length, 1);
});
