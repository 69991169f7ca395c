/**
 * HttpDirectoryPort passes the id of the request a lookup is made for as `X-Request-Id` (on every base it tries),
 * and sends none for a lookup made outside a request. Against real loopback servers that record what they are asked.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HttpDirectoryPort } from '../../src/adapters/directory-port-http.js';

interface Asked {
  path: string;
  requestId: string | string[] | undefined;
}

/** A server answering every lookup with `status` (404: the "not found" code of the path), recording each request. */
async function recordingServer(status: 404 | 503): Promise<{ server: Server; url: string; asked: Asked[] }> {
  const asked: Asked[] = [];
  const server = createServer((req, res) => {
    const path = req.url ?? '';
    asked.push({ path, requestId: req.headers['x-request-id'] });
    const code = status === 503 ? 'unavailable' : path.startsWith('/aliases/') ? 'alias_not_found' : 'did_not_found';
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ error: code, code }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, asked };
}

describe('HttpDirectoryPort passes the request id on', () => {
  let answering: Awaited<ReturnType<typeof recordingServer>>;
  let failing: Awaited<ReturnType<typeof recordingServer>>;
  before(async () => {
    answering = await recordingServer(404);
    failing = await recordingServer(503);
  });
  after(async () => {
    for (const s of [answering, failing]) await new Promise<void>((r) => s.server.close(() => r()));
  });

  it('sends X-Request-Id with each lookup made for a request, none without one', async () => {
    const port = new HttpDirectoryPort(answering.url);
    try {
      answering.asked.length = 0;
      assert.equal(await port.getDid('did:platform:a', 'req-did'), null);
      assert.equal(await port.lookupAlias('someone', 'req-alias'), null);
      assert.equal(await port.resolveDelivery('did:platform:a', 'p.example.org', 'invoice', 'req-resolve'), null);
      assert.equal(await port.getDid('did:platform:a'), null);
      assert.deepEqual(answering.asked, [
        { path: '/delivery-view/did%3Aplatform%3Aa', requestId: 'req-did' },
        { path: '/aliases/someone', requestId: 'req-alias' },
        { path: '/delivery-view/did%3Aplatform%3Aa?persona=p.example.org&tag=invoice', requestId: 'req-resolve' },
        { path: '/delivery-view/did%3Aplatform%3Aa', requestId: undefined },
      ]);
    } finally {
      port.close();
    }
  });

  it('sends it to every base a lookup tries', async () => {
    const port = new HttpDirectoryPort([failing.url, answering.url]);
    try {
      failing.asked.length = 0;
      answering.asked.length = 0;
      assert.equal(await port.getDid('did:platform:b', 'req-failover'), null);
      assert.deepEqual(failing.asked, [{ path: '/delivery-view/did%3Aplatform%3Ab', requestId: 'req-failover' }]);
      assert.deepEqual(answering.asked, [{ path: '/delivery-view/did%3Aplatform%3Ab', requestId: 'req-failover' }]);
    } finally {
      port.close();
    }
  });
});
