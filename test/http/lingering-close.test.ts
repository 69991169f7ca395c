/**
 * Closing in stages (src/http/lingering-close.ts): a connection answered while its client still sends the body (a
 * body refused for the budget, or announced beyond the drain bound) delivers its answer to a client that writes its
 * whole body before it reads — the kernel would otherwise reset the connection and drop the unread answer — and a
 * request sent behind that answer is never served; so does a refusal made before any request (headers over the
 * limit). The linger ends when the client closes, or after its bound.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { maxHeaderSize } from 'node:http';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { BodyBudget } from '../../src/http/body-budget.js';
import { TOO_LARGE_DRAIN_BYTES } from '../../src/http/body-reader.js';
import { LingeringCloses } from '../../src/http/lingering-close.js';
import { createHttpServer, json, type HttpServer } from '../../src/http/server.js';
import { waitFor } from '../support/wait.js';

const MiB = 1024 * 1024;
const sockets: Socket[] = [];
after(() => {
  for (const s of sockets) s.destroy();
});

/** What a raw client received, whether its connection was reset, and its close. */
interface Outcome {
  text: string;
  reset: boolean;
}

/**
 * Sends `head` and `bodyBytes` of body (then `trailer`) without reading anything, half-closes, and only then
 * reads: the answer written meanwhile waits in the kernel, where a reset would drop it. With `keepOpen` the client
 * never closes its side, and the outcome is taken when the server's side has ended.
 */
function sendAllThenRead(port: number, head: string, bodyBytes: number, trailer = '', keepOpen = false): Promise<Outcome> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: keepOpen });
    sockets.push(socket);
    const chunks: Buffer[] = [];
    let reset = false;
    socket.pause();
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ECONNRESET' || err.code === 'EPIPE') reset = true;
    });
    socket.on(keepOpen ? 'end' : 'close', () => resolve({ text: Buffer.concat(chunks).toString('latin1'), reset }));
    socket.on('connect', () => {
      void (async () => {
        const piece = Buffer.alloc(MiB, 0x61);
        socket.write(head);
        for (let left = bodyBytes; left > 0 && !socket.destroyed; left -= piece.length) {
          if (!socket.write(left >= piece.length ? piece : piece.subarray(0, left))) {
            await new Promise<void>((r) => {
              socket.once('drain', r);
              socket.once('close', r);
            });
          }
        }
        if (!socket.destroyed && keepOpen) socket.write(trailer);
        else if (!socket.destroyed) socket.end(trailer);
        socket.resume();
      })();
    });
  });
}

const head = (path: string, length: number) => `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;

describe('a connection answered before its body was read', () => {
  const servers: HttpServer[] = [];
  after(async () => {
    for (const s of servers) await s.fastify.close();
  });

  async function start() {
    let served = 0;
    const server = createHttpServer({
      name: 'test-role',
      logger: false,
      bodyLimitBytes: 32 * MiB,
      tooLargeCode: 'envelope_too_large',
      connections: { requestTimeoutMs: 0 },
      // one address's share is 1 MiB: a 16 MiB body is refused before a byte of it is read
      bodyBudget: new BodyBudget({ maxBytes: 8 * MiB, maxBytesPerAddress: MiB }, null),
    });
    server.route('POST', '/echo', (ctx) => {
      served++;
      return json(200, { bytes: ctx.rawBody?.length ?? 0 });
    });
    servers.push(server);
    await server.fastify.listen({ host: '127.0.0.1', port: 0 });
    return { port: (server.fastify.server.address() as { port: number }).port, served: () => served };
  }

  it('delivers a budget refusal to a client that sends its whole body first, without a reset', async () => {
    const { port, served } = await start();
    const out = await sendAllThenRead(port, head('/echo', 16 * MiB), 16 * MiB);
    assert.match(out.text, /^HTTP\/1.1 429 /);
    assert.match(out.text, /\r\nconnection: close\r\n/i);
    assert.equal(JSON.parse(out.text.slice(out.text.indexOf('\r\n\r\n') + 4)).details.reason, 'body_share');
    assert.equal(out.reset, false);
    assert.equal(served(), 0);
  });

  it('delivers the 413 of a body announced beyond the drain bound while the client still sends', async () => {
    const { port } = await start();
    // the 413 is answered at once; the client sends 8 MiB of it before it reads
    const out = await sendAllThenRead(port, head('/echo', TOO_LARGE_DRAIN_BYTES + 1), 8 * MiB);
    assert.match(out.text, /^HTTP\/1.1 413 /);
    assert.equal(JSON.parse(out.text.slice(out.text.indexOf('\r\n\r\n') + 4)).code, 'envelope_too_large');
    assert.equal(out.reset, false);
  });

  it('delivers the 431 of headers over the limit to a client that sends several MiB of them before it reads', async () => {
    const { port, served } = await start();
    // the parser gives up after 16 KiB of headers; the rest keeps arriving while the answer waits unread
    const out = await sendAllThenRead(port, 'GET /echo HTTP/1.1\r\nHost: x\r\nX-Padding: ', 8 * MiB);
    assert.match(out.text, /^HTTP\/1.1 431 /);
    const body = JSON.parse(out.text.slice(out.text.indexOf('\r\n\r\n') + 4)) as { code: string; details: { limit: number } };
    assert.equal(body.code, 'headers_too_large');
    assert.equal(body.details.limit, maxHeaderSize);
    assert.equal(out.reset, false);
    assert.equal(served(), 0);
  });

  it('never serves a request sent behind the refused body while the connection lingers', async () => {
    const { port, served } = await start();
    const small = '{"a":1}';
    const behind = head('/echo', small.length) + small;
    // the client keeps its side open: the server's side lingers, and the request behind the body reaches it
    const out = await sendAllThenRead(port, head('/echo', 16 * MiB), 16 * MiB, behind, true);
    assert.match(out.text, /^HTTP\/1.1 429 /);
    assert.equal(out.text.match(/HTTP\/1.1 /g)?.length, 1, 'one answer only');
    // a served request would be counted within moments; the linger lasts seconds
    await assert.rejects(waitFor('the request behind served', () => Promise.resolve(served() > 0 ? true : undefined), { tries: 20 }));
  });
});

describe('LingeringCloses', () => {
  const servers: Server[] = [];
  after(() => {
    for (const s of servers) s.close();
  });

  /** A connected pair: the server's side and the client's (`halfOpen`: a client that never ends its side). */
  async function pair(halfOpen = false): Promise<{ server: Socket; client: Socket; clientClosed: Promise<void>; serverClosed: Promise<void> }> {
    const accepted = new Promise<Socket>((resolve) => {
      const srv = createServer((s) => resolve(s));
      servers.push(srv);
      srv.listen(0, '127.0.0.1', () => {
        const { port } = srv.address() as { port: number };
        client = connect({ port, host: '127.0.0.1', allowHalfOpen: halfOpen });
        client.on('error', () => {});
        clientClosed = new Promise((r) => client.on('close', () => r()));
      });
    });
    let client!: Socket;
    let clientClosed!: Promise<void>;
    const server = await accepted;
    server.on('error', () => {});
    const serverClosed = new Promise<void>((r) => server.once('close', () => r()));
    return { server, client, clientClosed, serverClosed };
  }

  it('half-closes, reads until the client closes, and stops serving the socket', async () => {
    const lingering = new LingeringCloses(60_000, 4);
    const { server, client, clientClosed, serverClosed } = await pair();
    lingering.arm(server);
    assert.ok(lingering.has(server));
    server.destroySoon();
    assert.equal(lingering.lingering, 1);
    // the server's side sent its FIN: the client sees the end, writes on, and the server keeps reading
    await new Promise<void>((r) => client.once('end', r));
    client.write(Buffer.alloc(MiB));
    assert.equal(server.destroyed, false);
    client.end();
    await clientClosed;
    await serverClosed;
    assert.equal(lingering.lingering, 0);
  });

  it('destroys a socket whose client never closes after its bound, and closes at once beyond its cap', async () => {
    const lingering = new LingeringCloses(50, 1);
    const first = await pair(true);
    const second = await pair();
    lingering.arm(first.server);
    lingering.arm(second.server);
    first.server.destroySoon();
    second.server.destroySoon();
    // beyond the cap: Node's own close (destroyed once its writes are done), not a lingering one
    assert.equal(lingering.lingering, 1);
    await second.serverClosed;
    // the first client never ends its side: the bound closes it
    await first.serverClosed;
    assert.equal(first.client.destroyed, false, 'the client kept its side open');
    assert.equal(lingering.lingering, 0);
    first.client.destroy();
  });

  it('answers a socket no request owns, counted once, and beyond its cap still writes the answer before closing', async () => {
    const lingering = new LingeringCloses(60_000, 1);
    const first = await pair();
    const second = await pair();
    const read = (client: Socket) => {
      let text = '';
      client.on('data', (c: Buffer) => (text += c.toString('latin1')));
      return () => text;
    };
    const firstText = read(first.client);
    const secondText = read(second.client);
    lingering.answerAndClose(first.server, 'first answer');
    lingering.answerAndClose(second.server, 'second answer');
    assert.ok(lingering.has(first.server) && lingering.has(second.server), 'neither is answered again');
    assert.equal(lingering.lingering, 1, 'the second is beyond the cap');
    await Promise.all([first.serverClosed, second.serverClosed, first.clientClosed, second.clientClosed]);
    assert.equal(firstText(), 'first answer');
    assert.equal(secondText(), 'second answer');
    assert.equal(lingering.lingering, 0);
  });
});
