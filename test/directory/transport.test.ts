/**
 * The Directory's HTTP transport rules (http-api.md §0.3–§0.6): content type, body size, JSON objects, routing
 * errors and the error body shape, on the real Directory routes.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startDirectory, type DirectoryHarness } from '../support/directory-harness.js';
import {
  assertAccepted,
  assertError,
  didOf,
  prepareRegistration,
  prepareSigned,
  registerDid,
  registrationSubmitBody,
  resolve,
} from '../support/directory-flows.js';
import { injectChecked } from '../support/inject-contract.js';

type Body = Record<string, unknown>;

describe('Directory transport', () => {
  let h: DirectoryHarness;
  before(async () => {
    h = await startDirectory();
  });
  after(() => h.close());

  async function raw(method: string, url: string, payload?: string | Buffer, headers: Record<string, string> = {}) {
    const res = await injectChecked(h.server, { method: method as 'POST', url, headers, ...(payload === undefined ? {} : { payload }) });
    return { status: res.statusCode, headers: res.headers, body: res.json() as Body };
  }

  function assertErrorBody(res: { status: number; headers: Record<string, unknown>; body: Body }, status: number, code: string) {
    assert.equal(res.status, status, JSON.stringify(res.body));
    assert.match(String(res.headers['content-type']), /^application\/json/);
    assert.equal(res.body.code, code);
    assert.equal(res.body.error, code);
    assert.equal(typeof res.body.message, 'string');
    for (const k of Object.keys(res.body)) assert.ok(['code', 'error', 'message', 'details'].includes(k), k);
  }

  it('answers 415 unsupported_media_type to a submit without a JSON content type', async () => {
    const { key, prepared } = await prepareRegistration(h, 1);
    const json = JSON.stringify(registrationSubmitBody(prepared, key));
    assertErrorBody(await raw('POST', '/register-did', json), 415, 'unsupported_media_type');
    assertErrorBody(await raw('POST', '/register-did', json, { 'content-type': 'text/plain' }), 415, 'unsupported_media_type');
    assertErrorBody(await raw('POST', '/register-did', json, { 'content-type': 'application/jsonx' }), 415, 'unsupported_media_type');
    const did = prepared.request as Body;
    assert.equal((await h.call('GET', `/registration-status/${did.did}`)).body.registration_status, 'missing');
    // parameters and header-name case are tolerated
    const ok = await raw('POST', '/register-did', json, { 'Content-type': 'Application/JSON; charset=utf-8' });
    assert.equal(ok.status, 202, JSON.stringify(ok.body));
    h.settle();
  });

  it('answers 415 on a DID mutation route too, before looking at the body', async () => {
    const r = await registerDid(h, 2);
    const p = await prepareSigned(h, r.did, r.key, 'add_alias', { alias: 'x' });
    assertErrorBody(
      await raw('POST', p.route.url, JSON.stringify(p.body), { 'content-type': 'application/x-www-form-urlencoded' }),
      415,
      'unsupported_media_type',
    );
    assertErrorBody(await raw('DELETE', `/dids/${encodeURIComponent(r.did)}`, '{}', { 'content-type': 'text/json' }), 415, 'unsupported_media_type');
    assert.deepEqual((await resolve(h, r.did)).aliases, []);
  });

  it('answers 413 payload_too_large above 1 MiB', async () => {
    const { key, prepared } = await prepareRegistration(h, 3);
    const body = { ...registrationSubmitBody(prepared, key), padding: 'x'.repeat(1_048_576) };
    const res = await raw('POST', '/register-did', JSON.stringify(body), { 'content-type': 'application/json' });
    assertErrorBody(res, 413, 'payload_too_large');
    const just = JSON.stringify({ ...registrationSubmitBody(prepared, key), padding: '' });
    const fill = 'x'.repeat(1_048_576 - Buffer.byteLength(just));
    const atLimit = JSON.stringify({ ...registrationSubmitBody(prepared, key), padding: fill });
    assert.equal(Buffer.byteLength(atLimit), 1_048_576);
    const ok = await raw('POST', '/register-did', atLimit, { 'content-type': 'application/json' });
    assert.equal(ok.status, 202, 'exactly 1 MiB is accepted; unknown keys are ignored');
    h.settle();
  });

  it('answers 400 invalid_json to malformed JSON and to JSON that is not an object', async () => {
    const headers = { 'content-type': 'application/json' };
    for (const bad of ['{bad', '[1,2]', '"text"', 'null', '42', '{"a":1', '\xff\xfe']) {
      assertErrorBody(await raw('POST', '/register-did/prepare', bad, headers), 400, 'invalid_json');
    }
    assertErrorBody(await raw('POST', `/dids/${didOf(1)}/prepare`, '[]', headers), 400, 'invalid_json');
    assertErrorBody(await raw('POST', '/register-did', Buffer.from([0x7b, 0xc3, 0x28, 0x7d]), headers), 400, 'invalid_json');
  });

  it('answers 404 not_found for an unknown route and 405 method_not_allowed for a wrong method', async () => {
    for (const url of ['/nope', '/dids', `/dids/${didOf(1)}/unknown`, '/resolve', `/resolve/${didOf(1)}/extra`]) {
      assertErrorBody(await raw('GET', url), 404, 'not_found');
    }
    const m = await raw('GET', '/register-did');
    assertErrorBody(m, 405, 'method_not_allowed');
    assert.equal(m.headers.allow, 'POST');
    const put = await raw('PUT', `/resolve/${didOf(1)}`, '{}', { 'content-type': 'application/json' });
    assertErrorBody(put, 405, 'method_not_allowed');
    assert.match(String(put.headers.allow), /GET/);
    assertErrorBody(await raw('PATCH', `/dids/${didOf(1)}/devices`, '{}', { 'content-type': 'application/json' }), 405, 'method_not_allowed');
  });

  it('answers 400 invalid_path for bad percent-encoding and ignores a trailing slash', async () => {
    assertErrorBody(await raw('GET', '/resolve/%ZZ'), 400, 'invalid_path');
    assertErrorBody(await raw('GET', '/resolve/%C3'), 400, 'invalid_path');
    const r = await registerDid(h, 4);
    const slash = await raw('GET', `/resolve/${encodeURIComponent(r.did)}/`);
    assert.equal(slash.status, 200);
    assert.equal(slash.body.did, r.did);
  });

  it('answers every error of a mutation route in the §0.6 shape', async () => {
    const r = await registerDid(h, 5);
    const p = await prepareSigned(h, r.did, r.key, 'add_alias', { alias: 'shape' });
    const res = await raw('POST', p.route.url, JSON.stringify({ ...p.body, nonce: '5' }), { 'content-type': 'application/json' });
    // the body is self-consistent except for the canonical payload, which was built for nonce 0
    assertErrorBody(res, 403, 'canonical_payload_mismatch');
    // A second change prepared with the same nonce, submitted after the first: its nonce is stale.
    const second = await prepareSigned(h, r.did, r.key, 'add_alias', { alias: 'shape2' });
    assertAccepted(await h.call(p.route.method, p.route.url, { ...p.body, unknown_key: { ignored: true } }));
    const nm = await h.call(second.route.method, second.route.url, second.body);
    assertError(nm, 409, 'nonce_mismatch');
    assert.deepEqual(nm.body.details, { ledger_error: 'InvalidAliasNonce', nonce_domain: 'alias_nonce', expected: '1', received: '0' });
    assert.equal(nm.body.message, 'alias_nonce is 1, request used 0');
    h.settle();
  });
});
