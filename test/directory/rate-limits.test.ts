import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { HttpServer } from '../../src/http/server.js';
import { startDirectory, type DirectoryHarness } from '../support/directory-harness.js';
import { assertError, prepareRegistration, prepareSigned, registerDid, registrationSubmitBody, submit, type Reply } from '../support/directory-flows.js';
import { smallRateLimits } from '../support/rate-limits.js';
import { injectChecked } from '../support/inject-contract.js';

const harnesses: DirectoryHarness[] = [];
after(async () => {
  for (const h of harnesses) await h.server.fastify.close();
});

const WINDOW = 3600; // seconds: a window no test run outlasts
const enc = encodeURIComponent;

async function from(server: HttpServer, remoteAddress: string, method: 'POST' | 'GET', url: string, body?: object): Promise<Reply> {
  const res = await injectChecked(server, {
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

  it("limits accepted changes to one DID; strangers' invalid changes and preparations naming it use up nothing; other DIDs are unaffected", async () => {
    const h = await startDirectory({ rateLimits: smallRateLimits({ 'directory-write-target': { points: 2, seconds: WINDOW } }) });
    harnesses.push(h);
    const a = await registerDid(h, 11);
    const b = await registerDid(h, 12);
    // a stranger trying to lock the owner out: unsigned changes and preparations from many addresses
    for (let i = 0; i < 5; i++) {
      assert.equal((await from(h.server, `192.0.2.${10 + i}`, 'POST', `/dids/${enc(a.did)}/aliases`, {})).status, 400);
      assert.equal(
        (await from(h.server, `192.0.2.${10 + i}`, 'POST', `/dids/${enc(a.did)}/prepare`, { did: a.did, action: 'add_alias', alias: `x${i}` })).status,
        200,
      );
    }
    const change = async (r: { did: string; key: typeof a.key }, alias: string) => submit(h, await prepareSigned(h, r.did, r.key, 'add_alias', { alias }));
    assert.equal((await change(a, 'first')).status, 202);
    assert.equal((await change(a, 'second')).status, 202);
    assertError(await change(a, 'third'), 429, 'rate_limited');
    assert.equal((await change(b, 'bees')).status, 202);
  });

  it('limits DNS challenges per address and per persona (a persona counts only challenges made)', async () => {
    const h = await startDirectory({
      rateLimits: smallRateLimits({ 'dns-challenge': { points: 3, seconds: WINDOW }, 'dns-challenge-target': { points: 2, seconds: WINDOW } }),
    });
    harnesses.push(h);
    const op = await registerDid(h, 21);
    const create = (persona: string, addr: string, body: object = { operator_did: op.did, action: 'register_persona' }) =>
      from(h.server, addr, 'POST', `/personas/${enc(persona)}/dns-challenges`, body);
    // refused requests naming a persona do not use up its budget
    for (let i = 0; i < 3; i++) assert.equal((await create('a.example.net', `192.0.2.${20 + i}`, { action: 'register_persona' })).status, 400);
    assert.equal((await create('a.example.net', '192.0.2.1')).status, 201);
    assert.equal((await create('a.example.net', '192.0.2.2')).status, 201);
    assertError(await create('a.example.net', '192.0.2.3'), 429, 'rate_limited');
    assert.equal((await create('b.example.net', '192.0.2.1')).status, 201);
    assert.equal((await create('c.example.net', '192.0.2.1')).status, 201);
    assertError(await create('d.example.net', '192.0.2.1'), 429, 'rate_limited');
  });

  it('gives every route a class: reads, registration, DNS challenges, other writes with their path target', async () => {
    const h = await startDirectory();
    harnesses.push(h);
    const routes = h.server.routes();
    const of = (method: string, url: string) => {
      const r = routes.find((x) => x.method === method && x.url === url);
      assert.ok(r, `${method} ${url}`);
      return r;
    };
    for (const r of routes) if (r.url !== '/openapi.json') assert.ok(r.rateClass !== undefined, `${r.method} ${r.url} has a rate class`);
    const options = (method: string, url: string) => {
      const r = of(method, url);
      return r.rateTarget === undefined ? { rateClass: r.rateClass } : { rateClass: r.rateClass, target: true };
    };
    assert.deepEqual(options('GET', '/resolve/:did'), { rateClass: 'read' });
    assert.deepEqual(options('GET', '/personas/:persona/dns-challenges/:challenge_id'), { rateClass: 'read' });
    assert.deepEqual(options('POST', '/register-did/prepare'), { rateClass: 'registration' });
    assert.deepEqual(options('POST', '/register-did'), { rateClass: 'registration' });
    assert.deepEqual(options('POST', '/delivery-policies/prepare'), { rateClass: 'directory-write' });
    const ctx = (params: Record<string, string>) => ({ params }) as unknown as Parameters<NonNullable<(typeof routes)[number]['rateTarget']>>[0];
    const target = (method: 'POST' | 'PUT' | 'DELETE', url: string, params: Record<string, string>) => {
      const r = of(method, url);
      return [r.rateClass, r.rateTarget?.(ctx(params))];
    };
    assert.deepEqual(target('POST', '/personas/:persona/dns-challenges/:challenge_id/verify', { persona: 'p.example', challenge_id: 'c' }), [
      'dns-challenge',
      'p.example',
    ]);
    assert.deepEqual(target('DELETE', '/dids/:did/aliases/:alias', { did: 'did:x:1', alias: 'a' }), ['directory-write', 'did:x:1']);
    assert.deepEqual(target('PUT', '/policies/v3/:scope/:id', { scope: 'did', id: 'did:x:1' }), ['directory-write', 'did/did:x:1']);
    assert.deepEqual(target('PUT', '/applications/:application_id/registration', { application_id: 'app1' }), ['directory-write', 'app1']);
  });
});
