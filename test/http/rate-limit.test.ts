import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  addressKey,
  BoundedMemoryLimiter,
  clientAddress,
  envelopeRecipientOf,
  formatRateBudget,
  parseRateBudget,
  trustedProxyList,
  type RateLimits,
} from '../../src/http/rate-limit.js';
import { createHttpServer, json, type HttpServer } from '../../src/http/server.js';
import { smallRateLimits } from '../support/rate-limits.js';
import type { Reads } from '../../src/http/json-body.js';

const servers: HttpServer[] = [];
after(async () => {
  for (const s of servers) await s.fastify.close();
});

/** A server with a route of every kind, counting the handler calls that ran. */
function build(limits: RateLimits) {
  const server = createHttpServer({ name: 'test', logger: false, bodyLimitBytes: 1024, tooLargeCode: 'payload_too_large', rateLimits: limits });
  servers.push(server);
  const calls = { prepare: 0, submit: 0, write: 0, read: 0, relay: 0, health: 0 };
  server.route('POST', '/register-did/prepare', () => json(200, { n: ++calls.prepare }), { rateClass: 'registration' });
  server.route('POST', '/register-did', () => json(202, { n: ++calls.submit }), { rateClass: 'registration' });
  server.route('POST', '/dids/:did/aliases', () => json(202, { n: ++calls.write }), {
    rateClass: 'directory-write',
    rateTarget: (ctx) => ctx.params.did,
  });
  server.route('GET', '/resolve/:did', () => json(200, { n: ++calls.read }), { rateClass: 'read' });
  server.route('GET', '/health', () => json(200, { n: ++calls.health }));
  server.route('POST', '/relay', () => json(202, { n: ++calls.relay }), {
    rateClass: 'relay-post',
    // a made-up route's body is untyped; any JSON object reads its fields as `unknown`
    rateTarget: (ctx) => envelopeRecipientOf(ctx.body as Reads<'to' | 'recipient'> | undefined),
    errorBody: (err) => ({ success: false, delivery_mode: 'failed', http_status: err.status, code: err.code, details: err.details ?? {} }),
  });
  return { server, calls };
}

function post(server: HttpServer, url: string, body: object = {}, opts: { remoteAddress?: string; headers?: Record<string, string> } = {}) {
  return server.fastify.inject({
    method: 'POST',
    url,
    payload: JSON.stringify(body),
    headers: { 'content-type': 'application/json', ...opts.headers },
    ...(opts.remoteAddress === undefined ? {} : { remoteAddress: opts.remoteAddress }),
  });
}

function get(server: HttpServer, url: string, remoteAddress?: string) {
  return server.fastify.inject({ method: 'GET', url, ...(remoteAddress === undefined ? {} : { remoteAddress }) });
}

const WINDOW = 3600; // seconds: a window no test run outlasts

describe('rate limits: per client address', () => {
  it('refuses a flood of registration preparations with 429 rate_limited, Retry-After and the §0.6 body; the handler never runs', async () => {
    const { server, calls } = build(smallRateLimits({ registration: { points: 5, seconds: WINDOW } }));
    const statuses: number[] = [];
    for (let i = 0; i < 40; i++) statuses.push((await post(server, '/register-did/prepare', {}, { remoteAddress: '198.51.100.7' })).statusCode);
    assert.deepEqual(statuses, [...Array<number>(5).fill(200), ...Array<number>(35).fill(429)]);
    assert.equal(calls.prepare, 5);
    const res = await post(server, '/register-did/prepare', {}, { remoteAddress: '198.51.100.7' });
    assert.equal(res.statusCode, 429);
    const retryAfter = Number(res.headers['retry-after']);
    assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= WINDOW, String(res.headers['retry-after']));
    const body = res.json() as Record<string, unknown>;
    assert.equal(body.code, 'rate_limited');
    assert.equal(body.error, 'rate_limited');
    assert.equal(typeof body.message, 'string');
    assert.deepEqual(body.details, { retry_after_seconds: retryAfter, limit: 5, period_seconds: WINDOW });
  });

  it('counts preparation and submission against one budget', async () => {
    const { server, calls } = build(smallRateLimits({ registration: { points: 4, seconds: WINDOW } }));
    assert.equal((await post(server, '/register-did/prepare')).statusCode, 200);
    assert.equal((await post(server, '/register-did')).statusCode, 202);
    assert.equal((await post(server, '/register-did/prepare')).statusCode, 200);
    assert.equal((await post(server, '/register-did')).statusCode, 202);
    assert.equal((await post(server, '/register-did')).statusCode, 429);
    assert.equal((await post(server, '/register-did/prepare')).statusCode, 429);
    assert.deepEqual([calls.prepare, calls.submit], [2, 2]);
  });

  it('leaves a second address its own budget', async () => {
    const { server } = build(smallRateLimits({ registration: { points: 2, seconds: WINDOW } }));
    for (let i = 0; i < 3; i++) await post(server, '/register-did/prepare', {}, { remoteAddress: '203.0.113.1' });
    assert.equal((await post(server, '/register-did/prepare', {}, { remoteAddress: '203.0.113.1' })).statusCode, 429);
    assert.equal((await post(server, '/register-did/prepare', {}, { remoteAddress: '203.0.113.2' })).statusCode, 200);
    assert.equal((await post(server, '/register-did/prepare', {}, { remoteAddress: '203.0.113.2' })).statusCode, 200);
  });

  it('counts IPv6 clients per /64', async () => {
    const { server } = build(smallRateLimits({ registration: { points: 2, seconds: WINDOW } }));
    assert.equal((await post(server, '/register-did/prepare', {}, { remoteAddress: '2001:db8:1:2::1' })).statusCode, 200);
    assert.equal((await post(server, '/register-did/prepare', {}, { remoteAddress: '2001:db8:1:2:ffff::9' })).statusCode, 200);
    assert.equal((await post(server, '/register-did/prepare', {}, { remoteAddress: '2001:db8:1:2:abcd::1' })).statusCode, 429);
    assert.equal((await post(server, '/register-did/prepare', {}, { remoteAddress: '2001:db8:1:3::1' })).statusCode, 200);
  });

  it('gives reads their own, larger budget and never limits a route without a class', async () => {
    const { server, calls } = build(smallRateLimits({ registration: { points: 1, seconds: WINDOW }, read: { points: 20, seconds: WINDOW } }));
    assert.equal((await post(server, '/register-did/prepare')).statusCode, 200);
    assert.equal((await post(server, '/register-did/prepare')).statusCode, 429);
    for (let i = 0; i < 20; i++) assert.equal((await get(server, '/resolve/did:x:1')).statusCode, 200);
    const over = await get(server, '/resolve/did:x:1');
    assert.equal(over.statusCode, 429);
    assert.equal((over.json() as { code: string }).code, 'rate_limited');
    assert.ok(Number(over.headers['retry-after']) >= 1);
    assert.equal(calls.read, 20);
    for (let i = 0; i < 30; i++) assert.equal((await get(server, '/health')).statusCode, 200);
  });

  it('ignores X-Forwarded-For from an untrusted peer', async () => {
    const { server } = build(smallRateLimits({ registration: { points: 2, seconds: WINDOW } }));
    const from = (xff: string) => post(server, '/register-did/prepare', {}, { remoteAddress: '198.51.100.50', headers: { 'x-forwarded-for': xff } });
    assert.equal((await from('192.0.2.1')).statusCode, 200);
    assert.equal((await from('192.0.2.2')).statusCode, 200);
    // a new forged address each time changes nothing: the peer is counted
    assert.equal((await from('192.0.2.3')).statusCode, 429);
  });

  it('believes X-Forwarded-For from a trusted proxy, and only its right-most untrusted entry', async () => {
    const { server } = build(smallRateLimits({ registration: { points: 2, seconds: WINDOW } }, { trustedProxies: ['10.0.0.0/8'] }));
    const via = (xff: string) => post(server, '/register-did/prepare', {}, { remoteAddress: '10.1.2.3', headers: { 'x-forwarded-for': xff } });
    assert.equal((await via('192.0.2.1')).statusCode, 200);
    assert.equal((await via('192.0.2.1')).statusCode, 200);
    assert.equal((await via('192.0.2.1')).statusCode, 429);
    // another client behind the same proxy has its own budget
    assert.equal((await via('192.0.2.2')).statusCode, 200);
    // a client forging an entry to the left of its real address is still counted as itself
    assert.equal((await via('192.0.2.99, 192.0.2.1')).statusCode, 429);
    // two trusted hops: the client is the first untrusted address from the right
    assert.equal((await via('192.0.2.1, 10.9.9.9')).statusCode, 429);
  });
});

describe('rate limits: per target', () => {
  it('limits writes to one DID across addresses; another DID is unaffected', async () => {
    const { server, calls } = build(smallRateLimits({ 'directory-write-target': { points: 3, seconds: WINDOW } }));
    for (let i = 0; i < 3; i++) {
      assert.equal((await post(server, '/dids/did:x:victim/aliases', {}, { remoteAddress: `192.0.2.${i + 1}` })).statusCode, 202);
    }
    const res = await post(server, '/dids/did:x:victim/aliases', {}, { remoteAddress: '192.0.2.77' });
    assert.equal(res.statusCode, 429);
    assert.equal((res.json() as { code: string }).code, 'rate_limited');
    assert.ok(Number(res.headers['retry-after']) >= 1);
    assert.equal((await post(server, '/dids/did:x:other/aliases', {}, { remoteAddress: '192.0.2.77' })).statusCode, 202);
    assert.equal(calls.write, 4);
  });

  it("counts Relay posts per recipient named in the body and keeps the route's error body shape", async () => {
    const { server, calls } = build(smallRateLimits({ 'relay-post-target': { points: 2, seconds: WINDOW } }));
    assert.equal((await post(server, '/relay', { to: 'did:x:bob' }, { remoteAddress: '192.0.2.1' })).statusCode, 202);
    assert.equal((await post(server, '/relay', { to: 'did:x:bob@support.example' }, { remoteAddress: '192.0.2.2' })).statusCode, 202);
    const res = await post(server, '/relay', { recipient: 'did:x:bob' }, { remoteAddress: '192.0.2.3' });
    assert.equal(res.statusCode, 429);
    const body = res.json() as Record<string, unknown>;
    assert.equal(body.success, false);
    assert.equal(body.delivery_mode, 'failed');
    assert.equal(body.http_status, 429);
    assert.equal(body.code, 'rate_limited');
    assert.equal(res.headers['retry-after'], String((body.details as { retry_after_seconds: number }).retry_after_seconds));
    assert.equal((await post(server, '/relay', { to: 'did:x:carol' }, { remoteAddress: '192.0.2.3' })).statusCode, 202);
    assert.equal(calls.relay, 3);
  });

  it('refuses a client over its budget before reading its body, and closes the connection', async () => {
    const { server, calls } = build(smallRateLimits({ 'relay-post': { points: 1, seconds: WINDOW } }));
    await server.fastify.listen({ host: '127.0.0.1', port: 0 });
    const { port } = server.fastify.server.address() as AddressInfo;
    const payload = JSON.stringify({ to: 'did:x:a', pad: 'x'.repeat(900) });
    const send = () =>
      new Promise<{ status: number; headers: Record<string, unknown>; body: string }>((resolve, reject) => {
        const headers = { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) };
        const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/relay', headers }, (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
        });
        req.on('error', reject);
        req.end(payload);
      });
    assert.equal((await send()).status, 202);
    const refused = await send();
    assert.equal(refused.status, 429);
    assert.equal(refused.headers.connection, 'close');
    assert.equal((JSON.parse(refused.body) as { code: string }).code, 'rate_limited');
    assert.equal(calls.relay, 1);
  });
});

describe('rate limits: parts', () => {
  it('reads the client address: peer, mapped IPv4, trusted hops, garbage', () => {
    const trusted = trustedProxyList(['127.0.0.1', '10.0.0.0/8', 'fd00::/8']);
    assert.equal(clientAddress('::ffff:192.0.2.1', undefined, undefined), '192.0.2.1');
    assert.equal(clientAddress('192.0.2.1', '198.51.100.1', trusted), '192.0.2.1');
    assert.equal(clientAddress('127.0.0.1', '198.51.100.1', trusted), '198.51.100.1');
    assert.equal(clientAddress('127.0.0.1', '198.51.100.1, 10.0.0.2', trusted), '198.51.100.1');
    assert.equal(clientAddress('fd00::1', '2001:db8::5', trusted), '2001:db8::5');
    assert.equal(clientAddress('127.0.0.1', 'nonsense, 10.0.0.2', trusted), '10.0.0.2');
    assert.equal(clientAddress('127.0.0.1', '10.0.0.3, 10.0.0.2', trusted), '10.0.0.3');
    assert.equal(clientAddress(undefined, undefined, undefined), 'unknown');
    assert.throws(() => trustedProxyList(['10.0.0.0/33']), /not an IP address or CIDR block/);
    assert.throws(() => trustedProxyList(['proxy.example']), /not an IP address or CIDR block/);
  });

  it('keys IPv6 addresses by their /64', () => {
    assert.equal(addressKey('2001:db8:1:2:3:4:5:6'), '2001:db8:1:2::/64');
    assert.equal(addressKey('2001:db8::1'), '2001:db8:0:0::/64');
    assert.equal(addressKey('::1'), '0:0:0:0::/64');
    assert.equal(addressKey('::ffff:1.2.3.4'), '0:0:0:0::/64');
    assert.equal(addressKey('192.0.2.1'), '192.0.2.1');
  });

  it('parses and formats budgets', () => {
    assert.deepEqual(parseRateBudget('300/1m'), { points: 300, seconds: 60 });
    assert.deepEqual(parseRateBudget('20/10s'), { points: 20, seconds: 10 });
    assert.deepEqual(parseRateBudget('1000/h'), { points: 1000, seconds: 3600 });
    assert.equal(parseRateBudget('off'), null);
    for (const bad of ['', '0/1m', '10', '10/', '10/2d', '10/25h', '-1/1m', '1.5/1m']) assert.equal(parseRateBudget(bad), undefined, bad);
    assert.equal(formatRateBudget({ points: 300, seconds: 60 }), '300/1m');
    assert.equal(formatRateBudget({ points: 5, seconds: 10 }), '5/10s');
    assert.equal(formatRateBudget(null), 'off');
  });

  it('tracks a bounded number of keys; keys beyond the bound share one budget', async () => {
    const limiter = new BoundedMemoryLimiter({ points: 3, seconds: WINDOW }, 10);
    for (let i = 0; i < 5; i++) await limiter.consume(`k${i}`);
    assert.equal(limiter.trackedKeys, 5);
    // three more new keys fit in the overflow budget, the fourth does not
    const results: string[] = [];
    for (let i = 5; i < 9; i++)
      results.push(
        await limiter.consume(`k${i}`).then(
          () => 'ok',
          () => 'refused',
        ),
      );
    assert.deepEqual(results, ['ok', 'ok', 'ok', 'refused']);
    assert.equal(limiter.trackedKeys, 5);
    // keys already tracked keep their own budgets
    assert.equal(
      await limiter.consume('k0').then(
        () => 'ok',
        () => 'refused',
      ),
      'ok',
    );
  });

  it('forgets the previous generation after two windows', async () => {
    let now = 1_000_000;
    const limiter = new BoundedMemoryLimiter({ points: 3, seconds: 1 }, 4, () => now);
    await limiter.consume('a');
    await limiter.consume('b');
    assert.equal(limiter.trackedKeys, 2);
    now += 1000;
    await limiter.consume('c');
    assert.equal(limiter.trackedKeys, 3);
    now += 2000;
    await limiter.consume('d');
    assert.equal(limiter.trackedKeys, 1);
  });
});
