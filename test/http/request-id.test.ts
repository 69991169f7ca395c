/** Request ids (`X-Request-Id`), the access log setting and the metrics observer of the HTTP server. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolveLogFormat } from '../../src/app/logger.js';
import { DdnError } from '../../src/base/errors.js';
import { createHttpServer, json, type HttpObserver } from '../../src/http/server.js';
import { OutboundHttp } from '../../src/outbound/outbound-http.js';
import { captureLogs, type LogLine as Line } from '../support/log-capture.js';

function build(o: { accessLog?: boolean; observer?: HttpObserver } = {}) {
  const { logger, lines } = captureLogs();
  const server = createHttpServer({ name: 'relay', logger, bodyLimitBytes: 1024, tooLargeCode: 'envelope_too_large', ...o });
  server.route('GET', '/things/:id', async (ctx) => {
    ctx.log.info('before await');
    await new Promise((r) => setTimeout(r, 1));
    ctx.log.info('after await');
    return json(200, { id: ctx.params.id, request_id: ctx.requestId });
  });
  server.route('POST', '/things', () => {
    throw new DdnError('invalid_request', 'no');
  });
  return { server, lines };
}

describe('X-Request-Id', () => {
  it('echoes an incoming id, gives it to the handler and, with the access log, binds it into every log line of the request', async () => {
    const { server, lines } = build({ accessLog: true });
    const res = await server.fastify.inject({ method: 'GET', url: '/things/a%2Fb', headers: { 'x-request-id': 'client-42.x' } });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['x-request-id'], 'client-42.x');
    assert.equal(res.json<{ request_id: string }>().request_id, 'client-42.x');
    const mine = lines.filter((l) => l.msg === 'before await' || l.msg === 'after await');
    assert.equal(mine.length, 2);
    for (const l of mine) assert.equal(l.reqId, 'client-42.x');
    await server.fastify.close();
  });

  it('makes up a distinct id when none, or an unacceptable one, is sent; error answers carry it too', async () => {
    const { server } = build();
    const a = await server.fastify.inject({ method: 'GET', url: '/things/1' });
    const b = await server.fastify.inject({ method: 'GET', url: '/things/1', headers: { 'x-request-id': 'has spaces "and quotes"' } });
    const c = await server.fastify.inject({ method: 'GET', url: '/things/1', headers: { 'x-request-id': 'x'.repeat(129) } });
    const ids = [a, b, c].map((r) => String(r.headers['x-request-id']));
    for (const id of ids) assert.match(id, /^[a-z0-9]+-[a-z0-9]+$/);
    assert.equal(new Set(ids).size, 3);
    const err = await server.fastify.inject({ method: 'POST', url: '/things', headers: { 'x-request-id': 'err-1' } });
    assert.equal(err.statusCode, 400);
    assert.equal(err.headers['x-request-id'], 'err-1');
    const missing = await server.fastify.inject({ method: 'GET', url: '/nothing', headers: { 'x-request-id': 'nf-1' } });
    assert.equal(missing.statusCode, 404);
    assert.equal(missing.headers['x-request-id'], 'nf-1');
    await server.fastify.close();
  });

  it("is passed on by the Relay's outbound requests made while serving a request", async () => {
    const seen: IncomingHttpHeaders[] = [];
    const target = createServer((req, res) => {
      seen.push(req.headers);
      res.end('{}');
    });
    await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(target.address() as AddressInfo).port}/cache/store`;
    const outbound = new OutboundHttp({ allowPrivate: true });
    try {
      await outbound.request({ method: 'POST', url, headers: {}, body: Buffer.from('{}'), timeoutMs: 5000, requestId: 'relay-req-7' });
      await outbound.request({ method: 'POST', url, headers: {}, body: Buffer.from('{}'), timeoutMs: 5000 });
      assert.equal(seen[0]!['x-request-id'], 'relay-req-7');
      assert.equal(seen[1]!['x-request-id'], undefined, 'outside a request: none');
    } finally {
      outbound.close();
      target.close();
    }
  });
});

describe('access log', () => {
  it('logs no line per request by default, one with accessLog', async () => {
    const quiet = build();
    await quiet.server.fastify.inject({ method: 'GET', url: '/things/1' });
    assert.equal(quiet.lines.filter((l) => l.msg === 'request completed').length, 0);
    await quiet.server.fastify.close();

    const loud = build({ accessLog: true });
    await loud.server.fastify.inject({ method: 'GET', url: '/things/1', headers: { 'x-request-id': 'acc-1' } });
    const done = loud.lines.filter((l) => l.msg === 'request completed');
    assert.equal(done.length, 1);
    assert.equal(done[0]!.reqId, 'acc-1');
    assert.deepEqual((done[0]!.res as Line).statusCode, 200);
    await loud.server.fastify.close();
  });

  it('pretty on a terminal by default, JSON otherwise; an explicit format wins', () => {
    assert.equal(resolveLogFormat('auto', true), 'pretty');
    assert.equal(resolveLogFormat('auto', false), 'json');
    assert.equal(resolveLogFormat('json', true), 'json');
    assert.equal(resolveLogFormat('pretty', false), 'pretty');
  });
});

describe('HttpObserver', () => {
  it('is asked once per route for a recorder and told each answer with the route pattern, status and code', async () => {
    const routes: string[] = [];
    const answers: [string, number, string | undefined][] = [];
    const observer: HttpObserver = {
      route(method, pattern) {
        routes.push(`${method} ${pattern}`);
        return { record: (status, code, seconds) => void (assert.ok(seconds >= 0), answers.push([pattern, status, code])) };
      },
      unmatched: { record: (status, code) => void answers.push(['unmatched', status, code]) },
    };
    const { server } = build({ observer });
    assert.deepEqual(routes, ['GET /things/:id', 'POST /things']);
    await server.fastify.inject({ method: 'GET', url: '/things/did%3Aexample%3A1' });
    await server.fastify.inject({ method: 'POST', url: '/things', payload: {} });
    await server.fastify.inject({ method: 'GET', url: '/elsewhere' });
    assert.deepEqual(answers, [
      ['/things/:id', 200, undefined],
      ['/things', 400, 'invalid_request'],
      ['unmatched', 404, 'not_found'],
    ]);
    assert.equal(routes.length, 2, 'no recorder made per request');
    await server.fastify.close();
  });
});
