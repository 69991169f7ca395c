import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { directoryRateOptions } from '../../src/directory/rate-classes.js';
import type { HttpServer } from '../../src/http/server.js';
import { startDirectory, type DirectoryHarness } from '../support/directory-harness.js';
import {
  assertError,
  prepare,
  prepareRegistration,
  registerDid,
  registrationSubmitBody,
  type Reply,
} from '../support/directory-flows.js';
import { smallRateLimits } from '../support/rate-limits.js';

const harnesses: DirectoryHarness[] = [];
after(async () => {
  for (const h of harnesses) await h.server.fastify.close();
});

const WINDOW = 3600; // seconds: a window no test run outlasts
const enc = encodeURIComponent;

async function from(server: HttpServer, remoteAddress: string, method: 'POST' | 'GET', url: string, body?: object): Promise<Reply> {
  const res = await server.fastify.inject({
    method,
    url,
    remoteAddress,
    ...(body === undefined ? {} : { payload: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
  });
  return { status: res.statusCode, body: res.json() };
}

describe('Directory rate limits', () => {
  it('refuses registrations beyond the per-address budget (prepare and submit share it); the refused one changes nothing', async () => {
    const h = await startDirectory({ rateLimits: smallRateLimits({ registration: { points: 6, seconds: WINDOW } }) });
    harnesses.push(h);
    const prepared = [];
    for (let seed = 1; seed <= 4; seed++) prepared.push(await prepareRegistration(h, seed));
    for (const p of prepared.slice(0, 2)) assert.equal((await h.call('POST', '/register-did', registrationSubmitBody(p.prepared, p.key))).status, 202);
    const refused = await h.call('POST', '/register-did', registrationSubmitBody(prepared[2]!.prepared, prepared[2]!.key));
    assertError(refused, 429, 'rate_limited');
    assertError(await h.call('POST', '/register-did/prepare', {}), 429, 'rate_limited');
    h.settle();
    const status = async (did: string) => (await h.call('GET', `/registration-status/${enc(did)}`)).body.registration_status;
    assert.equal(await status(prepared[0]!.did), 'confirmed');
    assert.equal(await status(prepared[2]!.did), 'missing');
    // another address registers as usual
    const other = await from(h.server, '192.0.2.200', 'POST', '/register-did', registrationSubmitBody(prepared[2]!.prepared, prepared[2]!.key));
    assert.equal(other.status, 202, JSON.stringify(other.body));
  });

  it('limits changes to one DID from any address; other DIDs are unaffected', async () => {
    const h = await startDirectory({ rateLimits: smallRateLimits({ 'directory-write-target': { points: 2, seconds: WINDOW } }) });
    harnesses.push(h);
    const a = await registerDid(h, 11);
    const b = await registerDid(h, 12);
    assert.equal((await prepare(h, a.did, 'add_alias', { alias: 'first' })).status, 200);
    assert.equal((await from(h.server, '192.0.2.1', 'POST', `/dids/${enc(a.did)}/prepare`, { did: a.did, action: 'add_alias', alias: 'second' })).status, 200);
    assertError(await from(h.server, '192.0.2.2', 'POST', `/dids/${enc(a.did)}/aliases`, {}), 429, 'rate_limited');
    assertError(await prepare(h, a.did, 'add_alias', { alias: 'third' }), 429, 'rate_limited');
    assert.equal((await prepare(h, b.did, 'add_alias', { alias: 'bees' })).status, 200);
  });

  it('limits DNS challenges per address and per persona', async () => {
    const h = await startDirectory({
      rateLimits: smallRateLimits({ 'dns-challenge': { points: 3, seconds: WINDOW }, 'dns-challenge-target': { points: 2, seconds: WINDOW } }),
    });
    harnesses.push(h);
    const create = (persona: string, addr: string) => from(h.server, addr, 'POST', `/personas/${enc(persona)}/dns-challenges`, { action: 'register_persona' });
    assert.notEqual((await create('a.example.net', '192.0.2.1')).status, 429);
    assert.notEqual((await create('a.example.net', '192.0.2.2')).status, 429);
    assertError(await create('a.example.net', '192.0.2.3'), 429, 'rate_limited');
    assert.notEqual((await create('b.example.net', '192.0.2.1')).status, 429);
    assert.notEqual((await create('c.example.net', '192.0.2.1')).status, 429);
    assertError(await create('d.example.net', '192.0.2.1'), 429, 'rate_limited');
  });

  it('gives every route a class: reads, registration, DNS challenges, other writes with their path target', () => {
    assert.deepEqual(directoryRateOptions('GET', '/resolve/:did'), { rateClass: 'read' });
    assert.deepEqual(directoryRateOptions('GET', '/personas/:persona/dns-challenges/:challenge_id'), { rateClass: 'read' });
    assert.deepEqual(directoryRateOptions('POST', '/register-did/prepare'), { rateClass: 'registration' });
    assert.deepEqual(directoryRateOptions('POST', '/register-did'), { rateClass: 'registration' });
    assert.deepEqual(directoryRateOptions('POST', '/delivery-policies/prepare'), { rateClass: 'directory-write' });
    const ctx = (params: Record<string, string>) => ({ params }) as unknown as Parameters<NonNullable<ReturnType<typeof directoryRateOptions>['rateTarget']>>[0];
    const target = (method: 'POST' | 'PUT' | 'DELETE', pattern: string, params: Record<string, string>) => {
      const o = directoryRateOptions(method, pattern);
      return [o.rateClass, o.rateTarget?.(ctx(params))];
    };
    assert.deepEqual(target('POST', '/personas/:persona/dns-challenges/:challenge_id/verify', { persona: 'p.example', challenge_id: 'c' }), ['dns-challenge', 'p.example']);
    assert.deepEqual(target('DELETE', '/dids/:did/aliases/:alias', { did: 'did:x:1', alias: 'a' }), ['directory-write', 'did:x:1']);
    assert.deepEqual(target('PUT', '/policies/v3/:scope/:id', { scope: 'did', id: 'did:x:1' }), ['directory-write', 'did/did:x:1']);
    assert.deepEqual(target('PUT', '/applications/:application_id/registration', { application_id: 'app1' }), ['directory-write', 'app1']);
  });
});
