/**
 * Keep-alive JSON GETs (src/outbound/keepalive-json.ts), which the remote DirectoryPort asks through, against a real
 * loopback server: connections reused, statuses passed through, and every bound refused with an error.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { KeepAliveJson, MAX_ANSWER_BYTES } from '../../src/outbound/keepalive-json.js';

describe('KeepAliveJson', () => {
  let server: Server;
  let base: string;
  let connections = 0;
  const sockets = new Set<Socket>();
  const client = new KeepAliveJson();

  before(async () => {
    server = createServer((req, res) => {
      const path = req.url ?? '';
      if (path === '/hang') return;
      if (path === '/html') return void res.writeHead(200, { 'content-type': 'text/html' }).end('<html></html>');
      if (path === '/huge') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(`"${'x'.repeat(MAX_ANSWER_BYTES)}"`);
        return;
      }
      const status = path === '/missing' ? 404 : 200;
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ path, status }));
    });
    server.on('connection', (s) => {
      connections++;
      sockets.add(s);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    client.close();
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => server.close(() => r()));
  });

  it('answers status and JSON body, reusing one connection for lookups one after another', async () => {
    connections = 0;
    for (const p of ['/a', '/b', '/c']) assert.deepEqual(await client.get(`${base}${p}`, 5_000), { status: 200, body: { path: p, status: 200 } });
    assert.equal(connections, 1);
  });

  it('passes a 404 through as an answer, not an error', async () => {
    assert.deepEqual(await client.get(`${base}/missing`, 5_000), { status: 404, body: { path: '/missing', status: 404 } });
  });

  it('refuses a body that is not JSON, one over the size bound, no answer in time, and another scheme', async () => {
    await assert.rejects(client.get(`${base}/html`, 5_000), /HTTP 200 without a JSON body/);
    await assert.rejects(client.get(`${base}/huge`, 5_000), /larger than/);
    await assert.rejects(client.get(`${base}/hang`, 200), /no answer within 200 ms/);
    await assert.rejects(client.get('ftp://127.0.0.1/x', 5_000), /unsupported scheme/);
    // the client still works after each failure
    assert.equal((await client.get(`${base}/after`, 5_000)).status, 200);
  });
});
