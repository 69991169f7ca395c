/**
 * Connection bounds of a role's listener (src/http/connections.ts, serverFactory in src/http/server.ts): header,
 * request and keep-alive timeouts, caps per address and in total, and refusals as JSON bodies (408, 413, 417,
 * CONNECT, 503), read by raw sockets, Node's fetch and Python's urllib. Timeouts are small and configured; the
 * tests wait for the close or the answer, never for a duration.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { maxHeaderSize } from 'node:http';
import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { DdnError } from '../../src/base/errors.js';
import { ConnectionGate, type ConnectionSettings } from '../../src/http/connections.js';
import { createHttpServer, json, type HttpServer } from '../../src/http/server.js';
import { refusalResult } from '../../src/relay/delivery-result.js';
import { recordAnswer } from '../support/answered-codes.js';

const servers: HttpServer[] = [];
/** Closes the servers started so far (each suite's own hook: a file-level one would wait for an idle loop). */
async function closeServers(): Promise<void> {
  for (const s of servers.splice(0)) await s.fastify.close();
}

const SMALL: Partial<ConnectionSettings> = { headersTimeoutMs: 300, requestTimeoutMs: 300, keepAliveTimeoutMs: 300 };

async function start(opts: { connections?: Partial<ConnectionSettings>; gate?: ConnectionGate; relay?: boolean; limit?: number } = {}) {
  const server = createHttpServer({
    name: 'test-role',
    logger: false,
    bodyLimitBytes: opts.limit ?? 1024,
    tooLargeCode: 'payload_too_large',
    connections: opts.connections ?? SMALL,
    gate: opts.gate,
    ...(opts.relay === true ? { refusalBody: refusalResult } : {}),
  });
  server.route('GET', '/ping', () => json(200, { ok: true }));
  server.route('POST', '/echo', (ctx) => json(200, { body: ctx.body ?? null }));
  server.route('POST', '/relay', () => json(202, { success: true }), {
    errorBody: (err) => ({ success: false, delivery_mode: 'failed', http_status: err.status, code: err.code }),
  });
  servers.push(server);
  await server.fastify.listen({ host: '127.0.0.1', port: 0 });
  const address = server.fastify.server.address();
  if (address === null || typeof address === 'string') throw new Error('not listening');
  return { server, port: address.port };
}

/** A raw connection: everything it received, and a promise of its close. */
function rawConnection(port: number, localAddress = '127.0.0.1') {
  const socket = connect({ port, host: '127.0.0.1', localAddress });
  let data = '';
  socket.setEncoding('utf8');
  socket.on('data', (c: string) => (data += c));
  socket.on('error', () => {});
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  const connected = new Promise<void>((resolve) => socket.on('connect', () => resolve()));
  return { socket, connected, closed, received: () => data };
}

/** Status and parsed JSON body of a raw HTTP/1.1 response text (its error code recorded for the registry's check). */
function parseRaw(text: string): { status: number; headers: string; body: Record<string, unknown> } {
  const m = /^HTTP\/1\.1 (\d{3}) /.exec(text);
  assert.ok(m, `not an HTTP response: ${JSON.stringify(text.slice(0, 80))}`);
  const split = text.indexOf('\r\n\r\n');
  const status = Number(m[1]);
  const body = JSON.parse(text.slice(split + 4)) as Record<string, unknown>;
  recordAnswer(status, body);
  return { status, headers: text.slice(0, split).toLowerCase(), body };
}

/** Sends one request on `socket` and waits for a complete response with a Content-Length body. */
async function exchange(c: ReturnType<typeof rawConnection>, request: string): Promise<string> {
  const before = c.received().length;
  c.socket.write(request);
  for (;;) {
    const text = c.received().slice(before);
    const split = text.indexOf('\r\n\r\n');
    const length = /content-length: (\d+)/i.exec(text);
    if (split >= 0 && length && text.length >= split + 4 + Number(length[1])) return text;
    if (c.socket.destroyed) throw new Error(`closed after ${JSON.stringify(text)}`);
    await sleep(5);
  }
}

/** Opens a connection, writes `text`, and parses what arrived by the time the server closed it. */
async function answerBeforeClose(port: number, text: string) {
  const c = rawConnection(port);
  await c.connected;
  c.socket.write(text);
  await c.closed;
  return parseRaw(c.received());
}

const GET_PING = 'GET /ping HTTP/1.1\r\nHost: x\r\n\r\n';

describe('connection timeouts', () => {
  after(closeServers);

  it('a connection that never sends a request is closed after the header timeout, without an answer', { timeout: 20_000 }, async () => {
    const { port } = await start();
    const c = rawConnection(port);
    await c.closed;
    assert.equal(c.received(), '');
  });

  it('headers that stop half-way → 408 request_timeout JSON, then closed', { timeout: 20_000 }, async () => {
    const { port } = await start();
    const r = await answerBeforeClose(port, 'GET /ping HTTP/1.1\r\nHost: x\r\n');
    assert.equal(r.status, 408);
    assert.equal(r.body.code, 'request_timeout');
    assert.equal(r.body.error, 'request_timeout');
  });

  it("a body that trickles is cut with 408 request_timeout JSON (the route's error body), then closed", { timeout: 20_000 }, async () => {
    const { port } = await start();
    for (const path of ['/echo', '/relay']) {
      const c = rawConnection(port);
      await c.connected;
      c.socket.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"a":`);
      const trickle = setInterval(() => c.socket.writable && c.socket.write(' '), 50);
      await c.closed;
      clearInterval(trickle);
      const r = parseRaw(c.received());
      assert.equal(r.status, 408);
      assert.equal(r.body.code, 'request_timeout');
      assert.match(r.headers, /connection: close/);
      if (path === '/relay') assert.equal(r.body.delivery_mode, 'failed');
      else assert.equal((r.body.details as Record<string, unknown>).timeout_ms, 300);
    }
  });

  it('an idle kept-alive connection is closed after the keep-alive timeout', { timeout: 20_000 }, async () => {
    const { port } = await start({ connections: { ...SMALL, headersTimeoutMs: 60_000 } });
    const c = rawConnection(port);
    await c.connected;
    const r = parseRaw(await exchange(c, GET_PING));
    assert.equal(r.status, 200);
    await c.closed;
  });

  it('an upgraded socket is left alone by the HTTP timeouts and stays counted by the gate', { timeout: 20_000 }, async () => {
    const gate = new ConnectionGate({ maxConnections: 0, maxConnectionsPerAddress: 1 });
    const { server, port } = await start({ gate });
    server.fastify.server.on('upgrade', (_req, socket: Socket) => {
      socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: test\r\nConnection: Upgrade\r\n\r\n');
      socket.on('data', (d: Buffer) => socket.write(d)); // echo
      socket.on('end', () => socket.end()); // the server's sockets are half-open: close when the client does
    });
    const c = rawConnection(port);
    await c.connected;
    c.socket.write('GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: test\r\nConnection: Upgrade\r\n\r\n');
    while (!c.received().includes('\r\n\r\n')) await sleep(5);
    // several header, request and keep-alive periods pass
    await sleep(1500);
    assert.equal(c.socket.destroyed, false);
    c.socket.write('still here');
    while (!c.received().endsWith('still here')) await sleep(5);
    // the upgraded socket holds the address's only slot
    const other = rawConnection(port);
    await other.closed;
    assert.equal(parseRaw(other.received()).status, 503);
    c.socket.destroy();
  });
});

describe('connection caps', () => {
  after(closeServers);

  it('beyond the per-address cap: 503 JSON and closed; other addresses and open connections are served', { timeout: 20_000 }, async () => {
    const gate = new ConnectionGate({ maxConnections: 100, maxConnectionsPerAddress: 2 });
    const { port } = await start({ gate, connections: { headersTimeoutMs: 30_000, keepAliveTimeoutMs: 30_000 } });
    const a = rawConnection(port);
    const b = rawConnection(port);
    for (const c of [a, b]) assert.equal(parseRaw(await exchange(c, GET_PING)).status, 200);
    const r = await answerBeforeClose(port, GET_PING);
    assert.equal(r.status, 503);
    assert.equal(r.body.code, 'service_unavailable');
    assert.equal((r.body.details as Record<string, unknown>).reason, 'connection_limit');
    assert.match(r.headers, /connection: close/);
    assert.match(r.headers, /retry-after: 1/);
    // another address is admitted, the admitted ones keep working
    const elsewhere = rawConnection(port, '127.0.0.2');
    assert.equal(parseRaw(await exchange(elsewhere, GET_PING)).status, 200);
    assert.equal(parseRaw(await exchange(a, GET_PING)).status, 200);
    // a closed connection frees its slot
    b.socket.destroy();
    while (gate.open > 2) await sleep(5);
    const again = rawConnection(port);
    assert.equal(parseRaw(await exchange(again, GET_PING)).status, 200);
    for (const c of [a, elsewhere, again]) c.socket.destroy();
  });

  it('counts an IPv6 client per /64, as the rate limits do, and an IPv4-mapped address as its IPv4 address', () => {
    const gate = new ConnectionGate({ maxConnections: 0, maxConnectionsPerAddress: 2 });
    const socket = (remoteAddress: string) => Object.assign(new EventEmitter(), { remoteAddress }) as unknown as Socket;
    const first = socket('2001:db8:1:2::1');
    assert.equal(gate.admit(first), true);
    assert.equal(gate.admit(socket('2001:db8:1:2:ffff::9')), true);
    assert.equal(gate.admit(socket('2001:db8:1:2:aaaa:bbbb:cccc:dddd')), false, 'a third address of the same /64 is over the cap');
    assert.equal(gate.admit(socket('2001:db8:1:3::1')), true, 'the next /64 is another client');
    first.emit('close');
    assert.equal(gate.admit(socket('2001:db8:1:2::7')), true, 'a closed connection frees its /64 slot');
    assert.equal(gate.admit(socket('::ffff:192.0.2.1')), true);
    assert.equal(gate.admit(socket('192.0.2.1')), true);
    assert.equal(gate.admit(socket('::ffff:192.0.2.1')), false, 'the mapped and the plain IPv4 address are one client');
  });

  it("beyond the total cap every address is refused; the Relay's refusal is a DeliveryResult", { timeout: 20_000 }, async () => {
    const gate = new ConnectionGate({ maxConnections: 1, maxConnectionsPerAddress: 0 });
    const { port } = await start({ gate, relay: true, connections: { headersTimeoutMs: 30_000, keepAliveTimeoutMs: 30_000 } });
    const a = rawConnection(port);
    assert.equal(parseRaw(await exchange(a, GET_PING)).status, 200);
    const refused = rawConnection(port, '127.0.0.3');
    await refused.closed;
    const r = parseRaw(refused.received());
    assert.equal(r.status, 503);
    assert.equal(r.body.success, false);
    assert.equal(r.body.delivery_mode, 'failed');
    assert.equal(r.body.http_status, 503);
    assert.equal(r.body.code, 'service_unavailable');
    assert.equal(r.body.error, 'service_unavailable');
    assert.equal(parseRaw(await exchange(a, GET_PING)).status, 200);
    a.socket.destroy();
  });
});

describe('refusals as JSON bodies', () => {
  after(closeServers);

  it("Expect other than 100-continue → 417 expectation_failed JSON (the route's error body on Relay routes)", async () => {
    const { port } = await start();
    const c = rawConnection(port);
    const plain = parseRaw(await exchange(c, 'GET /ping HTTP/1.1\r\nHost: x\r\nExpect: anything-else\r\n\r\n'));
    assert.equal(plain.status, 417);
    assert.equal(plain.body.code, 'expectation_failed');
    assert.equal(plain.body.error, 'expectation_failed');
    const relay = parseRaw(await exchange(c, 'POST /relay HTTP/1.1\r\nHost: x\r\nExpect: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}'));
    assert.equal(relay.status, 417);
    assert.deepEqual(relay.body, { success: false, delivery_mode: 'failed', http_status: 417, code: 'expectation_failed' });
    // the connection still serves
    assert.equal(parseRaw(await exchange(c, GET_PING)).status, 200);
    c.socket.destroy();
  });

  it('CONNECT → 405 method_not_allowed JSON, then closed', async () => {
    for (const relay of [false, true]) {
      const { port } = await start({ relay });
      const r = await answerBeforeClose(port, 'CONNECT example.net:443 HTTP/1.1\r\nHost: example.net:443\r\n\r\n');
      assert.equal(r.status, 405);
      assert.equal(r.body.code, 'method_not_allowed');
      if (relay) assert.equal(r.body.delivery_mode, 'failed');
    }
  });

  it('a too-large body announced by Content-Length: the 413 is read by Node fetch, and the connection serves again', async () => {
    const { port } = await start({ limit: 64 * 1024, connections: {} });
    const res = await fetch(`http://127.0.0.1:${port}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: Buffer.alloc(8 * 1024 * 1024, 0x20),
    });
    assert.equal(res.status, 413);
    const body = (await res.json()) as Record<string, unknown>;
    assert.equal(body.code, 'payload_too_large');
    assert.deepEqual(body.details, { limit_bytes: 64 * 1024 });
    const c = rawConnection(port);
    await c.connected;
    const head = `POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${200 * 1024}\r\n\r\n`;
    const r = parseRaw(await exchange(c, head + ' '.repeat(200 * 1024)));
    assert.equal(r.status, 413);
    assert.doesNotMatch(r.headers, /connection: close/);
    assert.equal(parseRaw(await exchange(c, GET_PING)).status, 200);
    c.socket.destroy();
  });

  it('Expect: 100-continue: a body announced over the limit is refused before it is sent; one within is invited', async () => {
    const { port } = await start({ limit: 64 });
    const c = rawConnection(port);
    const head = (length: number) =>
      `POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: ${length}\r\n\r\n`;
    await c.connected;
    c.socket.write(head(9));
    while (!c.received().includes('\r\n\r\n')) await sleep(5);
    assert.match(c.received(), /^HTTP\/1\.1 100 Continue\r\n\r\n$/);
    const ok = parseRaw((await exchange(c, '{"a":"b"}')).replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, ''));
    assert.deepEqual(ok.body, { body: { a: 'b' } });
    const refused = rawConnection(port);
    await refused.connected;
    refused.socket.write(head(1000));
    await refused.closed;
    assert.doesNotMatch(refused.received(), /100 Continue/, 'the body is not invited');
    const r = parseRaw(refused.received());
    assert.equal(r.status, 413);
    assert.equal(r.body.code, 'payload_too_large');
    c.socket.destroy();
  });

  it('a too-large body announced by Content-Length: the 413 is read by Python urllib', async () => {
    const { port } = await start({ limit: 64 * 1024, connections: {} });
    const script = [
      'import sys, urllib.request, urllib.error',
      `req = urllib.request.Request("http://127.0.0.1:${port}/echo", data=b" " * (16 * 1024 * 1024), headers={"Content-Type": "application/json"}, method="POST")`,
      'try:',
      '    urllib.request.urlopen(req)',
      '    print("no error")',
      'except urllib.error.HTTPError as e:',
      '    print(e.code, e.read().decode())',
    ].join('\n');
    const out = await new Promise<string>((resolve, reject) =>
      execFile('python3', ['-c', script], (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout))),
    );
    const space = out.indexOf(' ');
    assert.equal(out.slice(0, space), '413', out);
    const body = JSON.parse(out.slice(space + 1)) as Record<string, unknown>;
    assert.equal(body.code, 'payload_too_large');
  });

  it("a refusal before any route (unparseable HTTP) carries the Relay's DeliveryResult fields", async () => {
    const { port } = await start({ relay: true });
    const r = await answerBeforeClose(port, 'GARBAGE\r\n\r\n');
    assert.equal(r.status, 400);
    assert.deepEqual(
      { ...r.body },
      {
        ...refusalResult(new DdnError('invalid_request', 'malformed HTTP request')),
      },
    );
  });

  it('headers over the limit at the Relay → 431 headers_too_large with the DeliveryResult fields', async () => {
    const { port } = await start({ relay: true });
    const r = await answerBeforeClose(port, `POST /relay HTTP/1.1\r\nHost: x\r\nX-Padding: ${'a'.repeat(maxHeaderSize)}\r\n\r\n`);
    assert.equal(r.status, 431);
    assert.deepEqual(
      { ...r.body },
      {
        ...refusalResult(new DdnError('headers_too_large', `the request line and headers exceed ${maxHeaderSize} bytes`, { limit: maxHeaderSize })),
      },
    );
  });
});
