/**
 * The budget of request bodies in flight (src/http/body-budget.ts): a process's total and one address's share,
 * refused before the body's bytes are read (503 `body_budget`, 429 `body_share`, both with `Retry-After`), given
 * back when the answer ends; and, in a real `ddn serve`, the memory of 32 slow 24 MiB bodies bounded while they
 * are open and returned after they end. Slow bodies hold back their last byte; nothing waits for a duration.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { BodyBudget, COLLECT_AFTER_BYTES, SMALL_BODY_BYTES } from '../../src/http/body-budget.js';
import { createHttpServer, json, type HttpServer } from '../../src/http/server.js';
import { serveProcess, serveScratch } from '../support/serve-process.js';
import { waitFor } from '../support/wait.js';

const MiB = 1024 * 1024;

describe('BodyBudget', () => {
  it('reserves per address and in total, refuses beyond either, and gives back on release', () => {
    const budget = new BodyBudget({ maxBytes: 10 * MiB, maxBytesPerAddress: 6 * MiB }, null);
    const a = budget.reserve('a', 4 * MiB);
    assert.ok(!(a instanceof Error));
    const share = budget.reserve('a', 3 * MiB);
    assert.ok(share instanceof Error);
    assert.equal(share.code, 'rate_limited');
    assert.equal(share.status, 429);
    assert.equal(share.details?.reason, 'body_share');
    const b = budget.reserve('b', 6 * MiB);
    assert.ok(!(b instanceof Error));
    const total = budget.reserve('c', MiB);
    assert.ok(total instanceof Error);
    assert.equal(total.code, 'service_unavailable');
    assert.equal(total.details?.reason, 'body_budget');
    assert.equal(total.details?.retry_after_seconds, 5);
    assert.equal(budget.heldBytes, 10 * MiB);
    // a chunked body grows its reservation; beyond the share it is refused and keeps what it had
    assert.ok(a.grow(3 * MiB) instanceof Error);
    a.release();
    a.release();
    assert.equal(budget.heldBytes, 6 * MiB);
    assert.equal(budget.heldBy('a'), 0);
    b.release();
    assert.equal(budget.heldBytes, 0);
    assert.deepEqual(budget.refusals, { body_budget: 1, body_share: 2 });
  });

  it('lets small bodies go an eighth beyond a total that large bodies filled', () => {
    const budget = new BodyBudget({ maxBytes: 8 * MiB, maxBytesPerAddress: 0 }, null);
    assert.ok(!(budget.reserve('big', 8 * MiB) instanceof Error));
    assert.ok(budget.reserve('late', MiB) instanceof Error, 'a large body is refused');
    // a chunked body's pieces are not small bodies: they get no headroom
    const chunked = budget.open('chunked');
    assert.ok(chunked.grow(1024) instanceof Error);
    for (let i = 0; i < 16; i++) assert.ok(!(budget.reserve(`ack${i}`, SMALL_BODY_BYTES) instanceof Error), `small body ${i}`);
    assert.ok(budget.reserve('ack', SMALL_BODY_BYTES) instanceof Error, 'beyond the headroom small bodies are refused too');
  });

  it('collects once after a burst has ended, not after small bodies', async () => {
    let collected = 0;
    const budget = new BodyBudget({ maxBytes: 0, maxBytesPerAddress: 0 }, () => collected++);
    const small = budget.reserve('a', MiB);
    assert.ok(!(small instanceof Error));
    small.release();
    const burst = Array.from({ length: 4 }, (_, i) => budget.reserve(`k${i}`, COLLECT_AFTER_BYTES / 4));
    for (const r of burst) if (!(r instanceof Error)) r.release();
    await waitFor('a collection', () => Promise.resolve(budget.collections > 0 ? true : undefined));
    assert.equal(collected, 1);
  });
});

describe('bodies in flight at a server', () => {
  const servers: HttpServer[] = [];
  const sockets: Socket[] = [];
  after(async () => {
    for (const s of sockets) s.destroy();
    for (const s of servers) await s.fastify.close();
  });

  async function start(budget: BodyBudget) {
    const server = createHttpServer({
      name: 'test-role',
      logger: false,
      bodyLimitBytes: 4 * MiB,
      tooLargeCode: 'envelope_too_large',
      connections: { requestTimeoutMs: 0 },
      bodyBudget: budget,
    });
    server.route('POST', '/echo', (ctx) => json(200, { bytes: ctx.rawBody?.length ?? 0 }));
    server.route('POST', '/relay', () => json(202, { success: true }), {
      errorBody: (err) => ({ success: false, delivery_mode: 'failed', http_status: err.status, code: err.code }),
    });
    servers.push(server);
    await server.fastify.listen({ host: '127.0.0.1', port: 0 });
    return (server.fastify.server.address() as { port: number }).port;
  }

  /** A raw connection from `localAddress`: what it received, its close. */
  function raw(port: number, localAddress: string) {
    const socket = connect({ port, host: '127.0.0.1', localAddress });
    sockets.push(socket);
    let data = '';
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => (data += c));
    socket.on('error', () => {});
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    const answered = () => waitFor('an answer', () => Promise.resolve(/\r\n\r\n\{.*\}$/s.test(data) ? data : undefined));
    return { socket, closed, answered };
  }

  const head = (path: string, length: number, extra = '') =>
    `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n${extra}\r\n`;
  /** A body of `length` bytes that holds back its last byte. */
  const slowBody = (length: number) => `{"p":"${'a'.repeat(length - 8)}"`;

  it('refuses beyond an address share with 429 and beyond the total with 503, before reading, and gives back when answers end', async () => {
    const budget = new BodyBudget({ maxBytes: 3 * MiB, maxBytesPerAddress: 2 * MiB }, null);
    const port = await start(budget);
    const slow = [];
    for (const from of ['127.0.0.1', '127.0.0.1', '127.0.0.2']) {
      const c = raw(port, from);
      c.socket.write(head('/echo', MiB) + slowBody(MiB));
      slow.push(c);
    }
    await waitFor('3 MiB held', () => Promise.resolve(budget.heldBytes === 3 * MiB ? true : undefined));

    // only headers are sent: the answer comes before any byte of the body
    const share = raw(port, '127.0.0.1');
    share.socket.write(head('/echo', MiB));
    const shareText = await share.answered();
    assert.match(shareText, /^HTTP\/1.1 429 /);
    assert.match(shareText, /\r\nretry-after: 5\r\n/i);
    assert.match(shareText, /\r\nconnection: close\r\n/i);
    const shareBody = JSON.parse(shareText.slice(shareText.indexOf('\r\n\r\n') + 4)) as { code: string; details: { reason: string } };
    assert.equal(shareBody.code, 'rate_limited');
    assert.equal(shareBody.details.reason, 'body_share');

    const total = raw(port, '127.0.0.3');
    total.socket.write(head('/relay', MiB));
    const totalText = await total.answered();
    assert.match(totalText, /^HTTP\/1.1 503 /);
    assert.match(totalText, /\r\nretry-after: 5\r\n/i);
    // a route's own error body (the Relay's DeliveryResult) carries the refusal
    assert.deepEqual(JSON.parse(totalText.slice(totalText.indexOf('\r\n\r\n') + 4)), {
      success: false,
      delivery_mode: 'failed',
      http_status: 503,
      code: 'service_unavailable',
    });

    // Expect: 100-continue is refused without a 100 Continue
    const cont = raw(port, '127.0.0.4');
    cont.socket.write(head('/echo', MiB, 'Expect: 100-continue\r\n'));
    const contText = await cont.answered();
    assert.match(contText, /^HTTP\/1.1 503 /);
    assert.doesNotMatch(contText, /100 Continue/);

    // a chunked body is refused when its bytes arrive beyond the budget
    const chunked = raw(port, '127.0.0.5');
    chunked.socket.write('POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{"a"\r\n');
    assert.match(await chunked.answered(), /^HTTP\/1.1 503 /);
    assert.equal(budget.heldBytes, 3 * MiB);
    assert.deepEqual(budget.refusals, { body_budget: 3, body_share: 1 });

    // the last byte: the first body is answered and its bytes given back; closing the others gives theirs back
    slow[0]!.socket.write('}');
    assert.match(await slow[0]!.answered(), /^HTTP\/1.1 200 /);
    for (const c of slow.slice(1)) c.socket.destroy();
    await waitFor('nothing held', () => Promise.resolve(budget.heldBytes === 0 ? true : undefined));
    const again = raw(port, '127.0.0.3');
    again.socket.write(head('/echo', 2 * MiB) + slowBody(2 * MiB) + '}');
    assert.match(await again.answered(), /^HTTP\/1.1 200 /);
    await waitFor('nothing held', () => Promise.resolve(budget.heldBytes === 0 ? true : undefined));
  });
});

describe('a real node under slow large bodies', () => {
  const scratch = serveScratch('ddn-body-budget-');

  const rssMiB = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

  it('holds at most its body budget for 32 slow 24 MiB bodies from 32 addresses, and gives the memory back after', async () => {
    const node = await serveProcess(['--data-dir', scratch.tempDir(), '--roles', 'cache', '--cache-port', '0', '--log-level', 'silent']);
    scratch.children.push(node);
    // raw sockets from 32 source addresses: to the child itself, not its contract-checking proxy (whose one
    // address and own buffering the budget would see instead)
    const port = Number(new URL(node.direct.cache!).port);
    // a few requests first, so the baseline includes what serving costs
    for (let i = 0; i < 3; i++) await fetch(`${node.urls.cache!}/health`).then((r) => r.arrayBuffer());
    const before = rssMiB(node.pid);
    const LEN = 24 * MiB;
    const piece = Buffer.alloc(MiB, 0x61);
    /** Each client's answer status, once one came. */
    const statuses: string[] = [];
    /** Clients whose connection the server closed (a refusal closes it; an admitted body's stays open). */
    let closedByServer = 0;
    let destroying = false;
    const clients = Array.from({ length: 32 }, (_, i) => {
      const socket = connect({ port, host: '127.0.0.1', localAddress: `127.0.1.${i + 1}` });
      let data = '';
      let answered = false;
      socket.setEncoding('utf8');
      socket.on('data', (c: string) => {
        data += c;
        if (!answered && /^HTTP\/1.1 \d+/.test(data)) {
          answered = true;
          statuses.push(data.slice(9, 12));
        }
      });
      socket.on('error', () => {});
      socket.on('close', () => {
        if (!destroying) closedByServer++;
      });
      const sent = new Promise<void>((resolve) => {
        socket.on('close', () => resolve());
        socket.on('connect', () => {
          void (async () => {
            socket.write(`POST /cache/store HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${LEN}\r\n\r\n`);
            for (let left = LEN - 1; left > 0 && !socket.destroyed && data === ''; left -= piece.length) {
              if (!socket.write(left >= piece.length ? piece : piece.subarray(0, left))) {
                await new Promise<void>((r) => {
                  const go = () => {
                    socket.off('drain', go);
                    socket.off('close', go);
                    r();
                  };
                  socket.on('drain', go);
                  socket.on('close', go);
                });
              }
            }
            resolve();
          })();
        });
      });
      return { socket, sent };
    });
    await Promise.all(clients.map((c) => c.sent));
    // every refused client was answered; the admitted ones have handed all their bytes but one to the kernel, and
    // the server reads them: the peak is taken once RSS stopped growing for a few looks
    let peak = rssMiB(node.pid);
    let steady = 0;
    await waitFor('RSS steady', () => {
      const now = rssMiB(node.pid);
      steady = now > peak + 1 ? 0 : steady + 1;
      peak = Math.max(peak, now);
      return Promise.resolve(steady >= 8 ? true : undefined);
    });
    // A refusal answers 503 while its client is still sending, and the connection closes in stages
    // (src/http/lingering-close.ts), so every refused client reads its answer before the close.
    await waitFor('every refused connection closed', () => Promise.resolve(closedByServer >= 22 ? true : undefined));
    assert.equal(closedByServer, 22, `10 bodies of 24 MiB fit the 256 MiB budget; answers: ${statuses.join(',')}`);
    assert.deepEqual(
      statuses,
      Array.from({ length: 22 }, () => '503'),
    );
    // ten bodies are held (240 MiB); without the budget 32 would be (768 MiB)
    assert.ok(peak - before > 150, `the admitted bodies are held: ${before} → ${peak} MiB`);
    assert.ok(peak - before < 420, `RSS grew from ${before} to ${peak} MiB`);
    destroying = true;
    for (const c of clients) c.socket.destroy();
    const afterRss = await waitFor('memory given back', () => {
      const now = rssMiB(node.pid);
      return Promise.resolve(now < before + 100 ? now : undefined);
    });
    assert.ok(afterRss < before + 100);
  });
});
