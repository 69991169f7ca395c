import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { OutboundError, OutboundHttp } from '../../src/outbound/outbound-http.js';

describe('outbound HTTP address guard', () => {
  let server: Server;
  let port: number;
  before(async () => {
    server = createServer((req, res) => {
      if (req.url === '/slow') return; // never answers
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

  it('refuses other schemes and malformed URLs', async () => {
    const out = new OutboundHttp({ allowPrivate: true });
    await assert.rejects(out.request({ method: 'GET', url: 'ftp://example.com/', headers: {}, timeoutMs: 100 }), isKind('invalid_url'));
    await assert.rejects(out.request({ method: 'GET', url: 'not a url', headers: {}, timeoutMs: 100 }), isKind('invalid_url'));
    out.close();
  });
});
