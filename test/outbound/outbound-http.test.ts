import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { LookupGate } from '../../src/outbound/lookup-gate.js';
import { OutboundError, OutboundHttp } from '../../src/outbound/outbound-http.js';

describe('outbound HTTP address guard', () => {
  let server: Server;
  let port: number;
  before(async () => {
    server = createServer((req, res) => {
      if (req.url === '/slow') return; // never answers
      if (req.url === '/large') {
        // 3 × 4 KiB in three writes: three chunks at the client
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('a'.repeat(4096));
        setTimeout(() => res.write('b'.repeat(4096)), 20);
        setTimeout(() => res.end('c'.repeat(4096)), 40);
        return;
      }
      if (req.url?.startsWith('/body/') === true) {
        const body = distinctBody(Number(req.url.slice('/body/'.length)));
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.length }).end(body);
        return;
      }
      if (req.url === '/full') {
        res.writeHead(507, { 'content-type': 'application/json' }).end('{"code":"insufficient_storage"}');
        return;
      }
      if (req.url === '/headers') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(req.rawHeaders));
        return;
      }
      res.writeHead(202, { 'content-type': 'application/json' }).end(JSON.stringify({ method: req.method, url: req.url }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });

  const isKind = (kind: string) => (e: unknown) => e instanceof OutboundError && e.kind === kind;

  it('refuses loopback literals and names resolving to loopback by default', async () => {
    const out = new OutboundHttp({ allowPrivate: false });
    await assert.rejects(out.request({ method: 'POST', url: `http://127.0.0.1:${port}/x`, headers: {}, timeoutMs: 2000 }), isKind('blocked_address'));
    await assert.rejects(out.request({ method: 'POST', url: `http://localhost:${port}/x`, headers: {}, timeoutMs: 2000 }), isKind('blocked_address'));
    await assert.rejects(out.request({ method: 'GET', url: `http://[::1]:${port}/x`, headers: {}, timeoutMs: 2000 }), isKind('blocked_address'));
    out.close();
  });

  it('reaches a local endpoint when private endpoints are allowed', async () => {
    const out = new OutboundHttp({ allowPrivate: true });
    const res = await out.request({
      method: 'POST',
      url: `http://localhost:${port}/cache/store`,
      headers: { 'content-type': 'application/json' },
      body: Buffer.from('{}'),
      timeoutMs: 2000,
    });
    assert.equal(res.status, 202);
    assert.deepEqual(JSON.parse(res.body.toString()), { method: 'POST', url: '/cache/store' });
    out.close();
  });

  it('times out and says the request may have been delivered', async () => {
    const out = new OutboundHttp({ allowPrivate: true });
    await assert.rejects(
      out.request({ method: 'POST', url: `http://127.0.0.1:${port}/slow`, headers: {}, body: Buffer.from('x'), timeoutMs: 200 }),
      (e: unknown) => e instanceof OutboundError && e.kind === 'timeout' && e.maybeDelivered,
    );
    out.close();
  });

  it('keeps an answer whole up to the bound, its first bytes past it, or fails past it when asked to', async () => {
    const whole = new OutboundHttp({ allowPrivate: true });
    const all = await whole.request({ method: 'GET', url: `http://127.0.0.1:${port}/large`, headers: {}, timeoutMs: 2000 });
    assert.equal(all.status, 200);
    assert.equal(all.body.toString(), `${'a'.repeat(4096)}${'b'.repeat(4096)}${'c'.repeat(4096)}`);
    whole.close();
    const cut = new OutboundHttp({ allowPrivate: true, maxResponseBytes: 5000 });
    const first = await cut.request({ method: 'GET', url: `http://127.0.0.1:${port}/large`, headers: {}, timeoutMs: 2000 });
    assert.equal(first.status, 200);
    assert.equal(first.body.toString(), 'a'.repeat(4096), 'the chunks that fit the bound');
    cut.close();
    const strict = new OutboundHttp({ allowPrivate: true, maxResponseBytes: 5000, oversize: 'fail' });
    await assert.rejects(
      strict.request({ method: 'GET', url: `http://127.0.0.1:${port}/large`, headers: {}, timeoutMs: 2000 }),
      (e: unknown) => e instanceof OutboundError && e.kind === 'network' && e.maybeDelivered && /larger than 5000 bytes/.test(e.message),
    );
    // the connection it aborted is not reused: the next request is answered
    assert.equal(
      (await strict.request({ method: 'POST', url: `http://127.0.0.1:${port}/x`, headers: {}, body: Buffer.from('{}'), timeoutMs: 2000 })).status,
      202,
    );
    strict.close();
  });

  it('answers any status with its body, and says when nothing was sent', async () => {
    const out = new OutboundHttp({ allowPrivate: true });
    const res = await out.request({ method: 'POST', url: `http://127.0.0.1:${port}/full`, headers: {}, body: Buffer.from('{}'), timeoutMs: 2000 });
    assert.equal(res.status, 507);
    assert.deepEqual(JSON.parse(res.body.toString()), { code: 'insufficient_storage' });
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    await assert.rejects(
      out.request({ method: 'POST', url: `http://127.0.0.1:${closedPort}/x`, headers: {}, body: Buffer.from('{}'), timeoutMs: 2000 }),
      (e: unknown) => e instanceof OutboundError && e.kind === 'network' && !e.maybeDelivered,
    );
    out.close();
  });

  it('keeps every answer of many concurrent ones byte for byte, also after later answers on the same connections', async () => {
    // a single-chunk answer is kept without a copy (outbound-http.ts): were its buffer reused by the socket or the
    // parser, a later read would overwrite an earlier answer
    const out = new OutboundHttp({ allowPrivate: true });
    const round = (from: number): Promise<Buffer[]> =>
      Promise.all(
        Array.from({ length: 300 }, (_, k) =>
          out.request({ method: 'GET', url: `http://127.0.0.1:${port}/body/${from + k}`, headers: {}, timeoutMs: 5000 }).then((r) => r.body),
        ),
      );
    const first = await round(0);
    const second = await round(300);
    const third = await round(600);
    for (const [from, bodies] of [
      [0, first],
      [300, second],
      [600, third],
    ] as const) {
      bodies.forEach((b, k) => assert.ok(b.equals(distinctBody(from + k)), `answer ${from + k} kept as sent`));
    }
    out.close();
  });

  it('sends the request id as X-Request-Id before the headers, unless the headers carry an X-Request-Id of their own in any casing', async () => {
    const out = new OutboundHttp({ allowPrivate: true });
    const url = `http://127.0.0.1:${port}/headers`;
    const sent = async (headers: Record<string, string>, requestId?: string): Promise<string[]> => {
      const res = await out.request({
        method: 'POST',
        url,
        headers,
        body: Buffer.from('{}'),
        timeoutMs: 2000,
        ...(requestId === undefined ? {} : { requestId }),
      });
      const raw = JSON.parse(res.body.toString()) as string[];
      const pairs: string[] = [];
      for (let i = 0; i < raw.length; i += 2)
        if (!['host', 'connection', 'content-length'].includes(raw[i]!.toLowerCase())) pairs.push(`${raw[i]}: ${raw[i + 1]}`);
      return pairs;
    };
    const signed = { 'X-DDN-Node-DID': 'did:platform:n', 'X-DDN-Node-Nonce': 'n-1', 'content-type': 'application/json' };
    assert.deepEqual(await sent(signed, 'req-1'), [
      'x-request-id: req-1',
      'X-DDN-Node-DID: did:platform:n',
      'X-DDN-Node-Nonce: n-1',
      'content-type: application/json',
    ]);
    assert.deepEqual(await sent({ 'x-request-id': 'mine', accept: 'application/json' }, 'req-2'), ['x-request-id: mine', 'accept: application/json']);
    assert.deepEqual(await sent({ accept: 'application/json', 'X-Request-Id': 'Mine' }, 'req-3'), ['accept: application/json', 'X-Request-Id: Mine']);
    assert.deepEqual(await sent({ accept: 'application/json' }), ['accept: application/json']);
    out.close();
  });

  it('connects to other destinations while names of a domain whose DNS does not answer wait for their one turn', async () => {
    // the outside world's resolver, behind dns.lookup's shape: names under slow.test are never answered
    const asked: string[] = [];
    const lookups = new LookupGate(
      (hostname, _family, cb) => {
        asked.push(hostname);
        if (!hostname.endsWith('.slow.test')) setImmediate(() => cb(null, [{ address: '127.0.0.1', family: 4 }]));
      },
      { maxInFlight: 2, maxWaiting: 2, waitMs: 300 },
    );
    const out = new OutboundHttp({ allowPrivate: true, connectTimeoutMs: 1_000, lookups });
    const send = (host: string) => out.request({ method: 'POST', url: `http://${host}:${port}/x`, headers: {}, body: Buffer.from('{}'), timeoutMs: 2_000 });
    const slow = ['a.slow.test', 'b.slow.test', 'c.slow.test'].map((h) =>
      send(h).then(
        () => 'answered',
        (e: unknown) => e,
      ),
    );
    const fast = await send('fast.test');
    assert.equal(fast.status, 202);
    const [first, second, third] = await Promise.all(slow);
    // the name at the resolver: undici's connect timeout; the two waiting for slow.test's turn: not looked up at all
    assert.ok(first instanceof OutboundError && first.kind === 'timeout', String(first));
    for (const e of [second, third]) {
      assert.ok(e instanceof OutboundError && e.kind === 'network' && !e.maybeDelivered, String(e));
      assert.match(e.message, /not made: no turn within 300 ms/);
    }
    assert.deepEqual(asked, ['a.slow.test', 'fast.test']);
    assert.deepEqual(lookups.refused, { full: 0, waited: 2 });
    out.close();
  });

  it('refuses other schemes and malformed URLs', async () => {
    const out = new OutboundHttp({ allowPrivate: true });
    await assert.rejects(out.request({ method: 'GET', url: 'ftp://example.com/', headers: {}, timeoutMs: 100 }), isKind('invalid_url'));
    await assert.rejects(out.request({ method: 'GET', url: 'not a url', headers: {}, timeoutMs: 100 }), isKind('invalid_url'));
    out.close();
  });
});

/** A body of its own for request `n`: 1 byte to about 20 KiB, its bytes depending on `n`. */
function distinctBody(n: number): Buffer {
  const body = Buffer.alloc(1 + ((n * 7919) % 20_000));
  for (let k = 0; k < body.length; k++) body[k] = (n * 131 + k * 7 + (k >> 8)) & 0xff;
  return body;
}
