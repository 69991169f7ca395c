/**
 * src/http/hand-over.ts over real HTTP: a process handing its writes to another (the producer) and that other one
 * taking them, each a role server of its own; the deployment's part (who produces, the token) is a plain source.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DdnError } from '../../src/base/errors.js';
import { HandOver, type HandOverPeer, type HandOverSource } from '../../src/http/hand-over.js';
import { createHttpServer, json, routeOf, type HttpServer } from '../../src/http/server.js';
import { smallRateLimits } from '../support/rate-limits.js';

const TOKEN = 'the-deployment-token-0123456789abcdef';
const closers: (() => Promise<unknown>)[] = [];
after(async () => {
  for (const close of closers.reverse()) await close();
});

/** A source whose producer and token the test sets; it records what it is told. */
class Source implements HandOverSource {
  producer: HandOverPeer | undefined;
  failures = 0;
  answers = 0;
  constructor(readonly tokenValue: string | undefined = TOKEN) {}
  peer = () => this.producer;
  token = () => this.tokenValue;
  failed = () => void this.failures++;
  answered = () => void this.answers++;
}

const originOf = (s: Server): string => `http://127.0.0.1:${(s.address() as AddressInfo).port}`;

/**
 * A role server with a write route marked for hand-over (answering who took it and the client key it saw, or a
 * refusal for `{"refuse": true}`) and a read route that is not; `handled` counts the write handler's runs.
 */
async function role(source: Source, name: string, limits = smallRateLimits({ registration: { points: 100, seconds: 60 } }), maxInFlight?: number) {
  const handOver = new HandOver({ source, timeoutMs: 2000, ...(maxInFlight === undefined ? {} : { maxInFlight }) });
  const server: HttpServer = createHttpServer({ name, logger: false, bodyLimitBytes: 4096, tooLargeCode: 'payload_too_large', rateLimits: limits, handOver });
  const handled = { writes: 0, hold: Promise.resolve() };
  server.add([
    {
      ...routeOf(
        'POST',
        '/things/:id',
        async (ctx) => {
          handled.writes++;
          if ((ctx.body as { slow?: boolean } | undefined)?.slow === true) await handled.hold;
          if ((ctx.body as { refuse?: boolean } | undefined)?.refuse === true) throw new DdnError('ledger_unavailable', 'try later');
          return json(202, { by: name, id: ctx.params.id, client: ctx.clientKey }, { 'x-thing': 'made' });
        },
        { rateClass: 'registration' },
      ),
      handOver: true,
    },
    routeOf('POST', '/reads', () => json(200, { by: name })),
  ]);
  await server.fastify.listen({ host: '127.0.0.1', port: 0 });
  closers.push(
    () => server.fastify.close(),
    () => handOver.close(),
  );
  return { server, handOver, handled, url: originOf(server.fastify.server) };
}

const post = (url: string, body: string, headers: Record<string, string> = {}) =>
  fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });

describe('handing writes to the producer', () => {
  it('relays the producer’s answer as it came — status, headers, bytes — and never reads handed-on requests itself', async () => {
    const producer = await role(new Source(), 'producer');
    const source = new Source();
    source.producer = { url: producer.url };
    const follower = await role(source, 'follower');

    const res = await post(`${follower.url}/things/a%2Fb`, '{"n":1}', { 'x-request-id': 'req-1' });
    assert.equal(res.status, 202);
    const body = (await res.json()) as Record<string, unknown>;
    assert.equal(body.by, 'producer');
    assert.equal(body.id, 'a/b', 'the path goes as sent');
    assert.equal(body.client, '127.0.0.1', 'the producer counts the client’s address as the follower saw it');
    assert.equal(res.headers.get('x-thing'), 'made');
    assert.equal(res.headers.get('x-request-id'), 'req-1');
    assert.equal(res.headers.get('x-ddn-hand-over'), null, 'the hop’s mark stays between the processes');
    assert.equal(follower.handled.writes, 0);
    assert.equal(producer.handled.writes, 1);

    // an error: its status, Retry-After and body bytes are the producer's own
    const direct = await post(`${producer.url}/things/x`, '{"refuse":true}');
    const relayed = await post(`${follower.url}/things/x`, '{"refuse":true}');
    assert.equal(relayed.status, 503);
    assert.equal(relayed.headers.get('retry-after'), direct.headers.get('retry-after'));
    assert.equal(relayed.headers.get('content-type'), direct.headers.get('content-type'));
    assert.deepEqual(Buffer.from(await relayed.arrayBuffer()), Buffer.from(await direct.arrayBuffer()));

    // a route not marked for hand-over stays here
    assert.deepEqual(await (await post(`${follower.url}/reads`, '{}')).json(), { by: 'follower' });
    assert.deepEqual(follower.handOver.counts, { handed: 2, failed: 0, busy: 0, taken: 0 });
    assert.deepEqual(producer.handOver.counts, { handed: 0, failed: 0, busy: 0, taken: 2 });
    assert.equal(source.answers, 2);
  });

  it('hands a write on before parsing its body: a body refused where it is admitted, with that answer', async () => {
    const producer = await role(new Source(), 'producer');
    const source = new Source();
    source.producer = { url: producer.url };
    const follower = await role(source, 'follower');

    // not JSON, not a JSON object, the wrong media type: the producer's refusals, relayed byte for byte
    for (const [body, headers, status] of [
      ['{"n":', {}, 400],
      ['[1]', {}, 400],
      ['{"n":1}', { 'content-type': 'text/plain' }, 415],
    ] as const) {
      const direct = await post(`${producer.url}/things/x`, body, headers);
      const relayed = await post(`${follower.url}/things/x`, body, headers);
      assert.equal(relayed.status, status);
      assert.equal(direct.status, status);
      assert.deepEqual(Buffer.from(await relayed.arrayBuffer()), Buffer.from(await direct.arrayBuffer()));
    }
    assert.deepEqual(follower.handOver.counts, { handed: 3, failed: 0, busy: 0, taken: 0 }, 'handed on, not refused by the follower');
    assert.deepEqual(producer.handOver.counts, { handed: 0, failed: 0, busy: 0, taken: 3 });

    // with no producer to hand it to, the follower parses the body itself: the same refusals, and a good body admitted
    source.producer = undefined;
    const res = await post(`${follower.url}/things/y`, '{"n":');
    assert.equal(res.status, 400);
    assert.equal(((await res.json()) as { code: string }).code, 'invalid_json');
    assert.equal((await post(`${follower.url}/things/y`, '{"n":1}', { 'content-type': 'text/plain' })).status, 415);
    const ok = await post(`${follower.url}/things/y`, '{"n":1}');
    assert.equal(ok.status, 202);
    assert.equal(((await ok.json()) as { by: string }).by, 'follower');
    assert.equal(follower.handled.writes, 1);
    assert.equal(producer.handled.writes, 0, 'no refused body reached a handler');
  });

  it('admits a write itself when no producer answers, or what answers is not a producer taking it', async () => {
    const source = new Source();
    const follower = await role(source, 'follower');
    // nothing listens there any more
    const gone = createServer();
    await new Promise<void>((resolve) => gone.listen(0, '127.0.0.1', resolve));
    const goneUrl = originOf(gone);
    await new Promise<void>((resolve) => gone.close(() => resolve()));
    source.producer = { url: goneUrl };
    let res = await post(`${follower.url}/things/1`, '{}');
    assert.equal(res.status, 202);
    assert.equal(((await res.json()) as { by: string }).by, 'follower');

    // something else listens there: its answer, without the producer's mark, is not relayed
    const other = createServer((_req, r) => r.writeHead(404, { 'content-type': 'text/plain' }).end('nothing here'));
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    closers.push(() => new Promise((resolve) => other.close(resolve)));
    source.producer = { url: originOf(other) };
    res = await post(`${follower.url}/things/2`, '{}');
    assert.equal(res.status, 202);
    assert.equal(((await res.json()) as { by: string }).by, 'follower');

    // a producer that does not know the deployment's token serves the write as any other request: not taken
    const stranger = await role(new Source('another-token'), 'stranger');
    source.producer = { url: stranger.url };
    res = await post(`${follower.url}/things/3`, '{}');
    assert.equal(((await res.json()) as { by: string }).by, 'follower');
    assert.equal(stranger.handled.writes, 1, 'it ran the write as a client’s');
    assert.deepEqual(follower.handOver.counts, { handed: 0, failed: 3, busy: 0, taken: 0 });
    assert.equal(source.failures, 3);
    assert.equal(follower.handled.writes, 3);
  });

  it('admits a write itself while as many hand-overs as allowed wait for the producer', async () => {
    const producer = await role(new Source(), 'producer');
    let release = (): void => undefined;
    producer.handled.hold = new Promise((resolve) => (release = resolve));
    const source = new Source();
    source.producer = { url: producer.url };
    const follower = await role(source, 'follower', undefined, 1);
    const slow = post(`${follower.url}/things/slow`, '{"slow":true}');
    await new Promise<void>((resolve) => {
      const check = () => (producer.handled.writes === 1 ? resolve() : setTimeout(check, 5));
      check();
    });
    const meanwhile = await post(`${follower.url}/things/next`, '{}');
    assert.equal(((await meanwhile.json()) as { by: string }).by, 'follower', 'the producer is busy: admitted here');
    release();
    assert.equal(((await (await slow).json()) as { by: string }).by, 'producer');
    assert.deepEqual(follower.handOver.counts, { handed: 1, failed: 0, busy: 1, taken: 0 });
    // with the hop free again, writes go to the producer
    assert.equal(((await (await post(`${follower.url}/things/after`, '{}')).json()) as { by: string }).by, 'producer');
  });

  it('takes a hand-over only with the token: a forged one is a client’s request, counted against the sender and handed on as one', async () => {
    const limits = smallRateLimits({ registration: { points: 2, seconds: 60 } });
    const producer = await role(new Source(), 'producer', limits);
    const handed = { 'x-ddn-hand-over': TOKEN, 'x-ddn-handed-for': '198.51.100.7' };
    // a handed write skips the client gate (the handing process counted it) and keeps the client's address
    for (let i = 0; i < 4; i++) {
      const res = await post(`${producer.url}/things/${i}`, '{}', handed);
      assert.equal(res.status, 202);
      assert.equal(res.headers.get('x-ddn-hand-over'), 'taken');
      assert.equal(((await res.json()) as { client: string }).client, '198.51.100.7');
    }
    const forged = { 'x-ddn-hand-over': 'not-the-token', 'x-ddn-handed-for': '198.51.100.7' };
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await post(`${producer.url}/things/f${i}`, '{}', forged));
    assert.deepEqual(
      answers.map((r) => r.status),
      [202, 202, 429],
    );
    assert.equal(answers[0]!.headers.get('x-ddn-hand-over'), null);
    assert.equal(((await answers[0]!.json()) as { client: string }).client, '127.0.0.1');
    assert.equal(producer.handOver.counts.taken, 4);

    // a request handed with the token is never handed on again; one with a forged header is a client's: handed on,
    // its header replaced by the token and its address by the one it came from
    const source = new Source();
    const open = await role(source, 'open-producer');
    source.producer = { url: open.url };
    const follower = await role(source, 'follower');
    const res = await post(`${follower.url}/things/loop`, '{}', handed);
    assert.equal(((await res.json()) as { by: string }).by, 'follower');
    assert.equal(follower.handOver.counts.handed, 0);
    const viaForged = await post(`${follower.url}/things/forged`, '{}', forged);
    assert.equal(viaForged.status, 202);
    assert.deepEqual(await viaForged.json(), { by: 'open-producer', id: 'forged', client: '127.0.0.1' });
    assert.equal(follower.handOver.counts.handed, 1);
    assert.equal(open.handOver.counts.taken, 1);
  });
});
