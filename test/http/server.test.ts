import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { maxHeaderSize, request } from 'node:http';
import { connect } from 'node:net';
import { pino } from 'pino';
import { DdnError } from '../../src/base/errors.js';
import { createHttpServer, json, type HttpServer, type RequestContext } from '../../src/http/server.js';
import { recordAnswer } from '../support/answered-codes.js';

function echo(ctx: RequestContext) {
  return json(200, {
    method: ctx.method,
    params: ctx.params,
    query: { ...ctx.query },
    body: ctx.body ?? null,
    raw: ctx.rawBody === undefined ? null : ctx.rawBody.toString('utf8'),
    recipient: ctx.header('X-Recipient-DID') ?? null,
  });
}

function build(opts: { tooLargeCode?: 'payload_too_large' | 'envelope_too_large'; basePath?: string } = {}) {
  const logLines: string[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void logLines.push(line) });
  const server = createHttpServer({
    name: 'test-role',
    logger,
    bodyLimitBytes: 64,
    tooLargeCode: opts.tooLargeCode ?? 'payload_too_large',
    basePath: opts.basePath,
  });
  server.route('GET', '/items/:id', echo);
  server.route('POST', '/items/:id', echo);
  server.route('DELETE', '/items/:id', echo);
  server.route('PATCH', '/items/:id', echo);
  server.route('GET', '/typed/:did/services/:serviceId', (ctx) => json(200, { did: ctx.params.did, sid: ctx.params.serviceId }));
  server.route('GET', '/ddn-error', () => {
    throw new DdnError('nonce_mismatch', 'alias_nonce is 5, request used 4', { nonce_domain: 'alias_nonce' });
  });
  server.route('GET', '/crash', () => {
    throw new Error('secret internal detail');
  });
  server.route('GET', '/bigint', () => json(200, { n: 1n }));
  server.route('GET', '/bigint-later', async () => json(200, { n: 1n }));
  server.route('GET', '/crash-later', async () => {
    await Promise.resolve();
    throw new Error('secret later detail');
  });
  server.route('GET', '/rate-limited', async () => {
    throw new DdnError('rate_limited');
  });
  server.route('GET', '/unavailable', () => {
    throw new DdnError('ledger_unavailable', 'ledger not ready', { retry_after_seconds: 7 });
  });
  server.route('GET', '/busy', () => json(503, { code: 'busy' }));
  server.route('GET', '/busy-custom', () => json(429, { code: 'busy' }, { 'Retry-After': '30' }));
  server.route('POST', '/created', () => json(201, { ok: true }, { location: '/items/1' }));
  server.route(
    'POST',
    '/relay',
    () => {
      throw new DdnError('recipient_not_found');
    },
    {
      errorBody: (err) => ({ success: false, delivery_mode: 'failed', http_status: err.status, code: err.code }),
    },
  );
  return { server, logLines };
}

const servers: HttpServer[] = [];
function make(opts?: Parameters<typeof build>[0]) {
  const built = build(opts);
  servers.push(built.server);
  return built;
}
after(async () => {
  for (const s of servers) await s.fastify.close();
});

const JSON_CT = { 'content-type': 'application/json' };

/** The JSON body of an answer (its error code recorded for the registry's check, test/support/answered-codes.ts). */
function bodyOf(res: { body: string; statusCode: number }): Record<string, unknown> {
  const body = JSON.parse(res.body) as Record<string, unknown>;
  recordAnswer(res.statusCode, body);
  return body;
}

describe('createHttpServer: routing', () => {
  const { server } = make();
  const app = server.fastify;

  it('routes on the raw path: %2F stays inside the param', async () => {
    const res = await app.inject({ method: 'GET', url: '/items/a%2Fb%3Ac?x=1+2&y=%2B' });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^application\/json/);
    const body = bodyOf(res);
    assert.deepEqual(body.params, { id: 'a/b:c' });
    assert.deepEqual(body.query, { x: '1 2', y: '+' });
  });

  it('gives typed params by pattern name', async () => {
    const res = await app.inject({ method: 'GET', url: '/typed/did%3Ax%3Ay/services/svc%231' });
    assert.deepEqual(bodyOf(res), { did: 'did:x:y', sid: 'svc#1' });
  });

  it('unknown route → 404 with the §0.6 body', async () => {
    const res = await app.inject({ method: 'GET', url: '/nope' });
    assert.equal(res.statusCode, 404);
    assert.match(String(res.headers['content-type']), /^application\/json/);
    assert.deepEqual(bodyOf(res), { code: 'not_found', error: 'not_found', message: 'no such route' });
  });

  it('known path, wrong method → 405 with Allow', async () => {
    const res = await app.inject({ method: 'PUT', url: '/items/1', payload: '{}', headers: JSON_CT });
    assert.equal(res.statusCode, 405);
    assert.equal(res.headers.allow, 'DELETE, GET, HEAD, PATCH, POST');
    const body = bodyOf(res);
    assert.equal(body.code, 'method_not_allowed');
    assert.equal(body.error, 'method_not_allowed');
  });

  it('bad percent-encoding → 400 invalid_path', async () => {
    for (const url of ['/items/%zz', '/items/%C3%28', '/nope/%E0']) {
      const res = await app.inject({ method: 'GET', url });
      assert.equal(res.statusCode, 400, url);
      assert.equal(bodyOf(res).code, 'invalid_path', url);
    }
  });

  it('trailing slash is not significant', async () => {
    const res = await app.inject({ method: 'GET', url: '/items/1/' });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(bodyOf(res).params, { id: '1' });
  });

  it('HEAD is answered by the GET route without a body (over a real socket)', async () => {
    const { server } = make();
    await server.fastify.listen({ host: '127.0.0.1', port: 0 });
    const { port } = server.fastify.server.address() as { port: number };
    const res = await fetch(`http://127.0.0.1:${port}/items/1`, { method: 'HEAD' });
    assert.equal(res.status, 200);
    assert.equal(await res.text(), '');
  });

  it('header lookup is case-insensitive', async () => {
    const res = await app.inject({ method: 'GET', url: '/items/1', headers: { 'X-recipient-did': 'did:a:b' } });
    assert.equal(bodyOf(res).recipient, 'did:a:b');
  });

  it('handler headers and status are sent', async () => {
    const res = await app.inject({ method: 'POST', url: '/created' });
    assert.equal(res.statusCode, 201);
    assert.equal(res.headers.location, '/items/1');
    assert.deepEqual(bodyOf(res), { ok: true });
  });
});

describe('createHttpServer: request bodies (§0.3)', () => {
  const { server } = make();
  const app = server.fastify;

  it('parses a JSON body on DELETE and keeps the raw bytes', async () => {
    const payload = '{"reason":"lost","n":1}';
    const res = await app.inject({ method: 'DELETE', url: '/items/7', payload, headers: JSON_CT });
    assert.equal(res.statusCode, 200);
    const body = bodyOf(res);
    assert.deepEqual(body.body, { reason: 'lost', n: 1 });
    assert.equal(body.raw, payload);
  });

  it('parses a JSON body on PATCH', async () => {
    const res = await app.inject({ method: 'PATCH', url: '/items/7', payload: '{"a":true}', headers: JSON_CT });
    assert.deepEqual(bodyOf(res).body, { a: true });
  });

  it('accepts parameters and any case in the content type', async () => {
    for (const ct of ['application/json; charset=utf-8', 'Application/JSON;charset=UTF-8']) {
      const res = await app.inject({ method: 'POST', url: '/items/1', payload: '{"a":1}', headers: { 'Content-type': ct } });
      assert.equal(res.statusCode, 200, ct);
      assert.deepEqual(bodyOf(res).body, { a: 1 });
    }
  });

  it('a body without a JSON content type → 415', async () => {
    for (const headers of [{}, { 'content-type': 'text/plain' }, { 'content-type': 'application/x-www-form-urlencoded' }]) {
      const res = await app.inject({ method: 'POST', url: '/items/1', payload: '{"a":1}', headers });
      assert.equal(res.statusCode, 415, JSON.stringify(headers));
      assert.equal(bodyOf(res).code, 'unsupported_media_type');
      assert.equal(bodyOf(res).error, 'unsupported_media_type');
    }
  });

  it('no body → body undefined, whatever the content type', async () => {
    const res = await app.inject({ method: 'POST', url: '/items/1' });
    assert.equal(res.statusCode, 200);
    assert.equal(bodyOf(res).body, null);
    const res2 = await app.inject({ method: 'DELETE', url: '/items/1', headers: { 'content-type': 'text/plain' } });
    assert.equal(res2.statusCode, 200);
    assert.equal(bodyOf(res2).raw, null);
  });

  it('syntax errors, non-objects, non-UTF-8 and poisoned keys → 400 invalid_json', async () => {
    const payloads: (string | Buffer)[] = [
      '{"a":',
      '[1,2]',
      'null',
      '42',
      '"str"',
      Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]),
      '{"__proto__":{"admin":true}}',
      '{"a":{"\\u005f_proto__":{"admin":true}}}',
      '{"constructor":{"prototype":{"admin":true}}}',
    ];
    for (const payload of payloads) {
      const res = await app.inject({ method: 'POST', url: '/items/1', payload, headers: JSON_CT });
      assert.equal(res.statusCode, 400, String(payload));
      assert.equal(bodyOf(res).code, 'invalid_json', String(payload));
    }
  });

  it('allows an innocent constructor key', async () => {
    const res = await app.inject({ method: 'POST', url: '/items/1', payload: '{"constructor":"x"}', headers: JSON_CT });
    assert.equal(res.statusCode, 200);
  });

  it('too large → 413 payload_too_large before parsing', async () => {
    const res = await app.inject({ method: 'POST', url: '/items/1', payload: `{${'x'.repeat(100)}`, headers: JSON_CT });
    assert.equal(res.statusCode, 413);
    assert.equal(bodyOf(res).code, 'payload_too_large');
    assert.equal(bodyOf(res).error, 'payload_too_large');
  });

  it('a body of exactly the limit is accepted', async () => {
    const payload = `{"a":"${'x'.repeat(64 - 8)}"}`;
    assert.equal(payload.length, 64);
    const res = await app.inject({ method: 'POST', url: '/items/1', payload, headers: JSON_CT });
    assert.equal(res.statusCode, 200);
  });
});

describe('createHttpServer: Relay/Cache body limit', () => {
  const { server } = make({ tooLargeCode: 'envelope_too_large' });

  it('too large → 413 envelope_too_large', async () => {
    const res = await server.fastify.inject({ method: 'POST', url: '/items/1', payload: 'x'.repeat(65), headers: JSON_CT });
    assert.equal(res.statusCode, 413);
    assert.equal(bodyOf(res).code, 'envelope_too_large');
  });

  it('route errorBody replaces the §0.6 body, also for errors raised before the handler', async () => {
    const res = await server.fastify.inject({ method: 'POST', url: '/relay', payload: '{}', headers: JSON_CT });
    assert.equal(res.statusCode, 404);
    assert.deepEqual(bodyOf(res), {
      success: false,
      delivery_mode: 'failed',
      http_status: 404,
      code: 'recipient_not_found',
    });
    const big = await server.fastify.inject({ method: 'POST', url: '/relay', payload: 'x'.repeat(65), headers: JSON_CT });
    assert.equal(big.statusCode, 413);
    assert.equal(bodyOf(big).code, 'envelope_too_large');
    assert.equal(bodyOf(big).delivery_mode, 'failed');
    const bad = await server.fastify.inject({ method: 'POST', url: '/relay', payload: '[]', headers: JSON_CT });
    assert.deepEqual(bodyOf(bad), { success: false, delivery_mode: 'failed', http_status: 400, code: 'invalid_json' });
  });
});

describe('createHttpServer: error mapping (§0.6)', () => {
  const { server, logLines } = make();
  const app = server.fastify;

  it('DdnError → its status and the full body with details', async () => {
    const res = await app.inject({ method: 'GET', url: '/ddn-error' });
    assert.equal(res.statusCode, 409);
    assert.deepEqual(bodyOf(res), {
      code: 'nonce_mismatch',
      error: 'nonce_mismatch',
      message: 'alias_nonce is 5, request used 4',
      details: { nonce_domain: 'alias_nonce' },
    });
  });

  it('any other error → 500 internal_error, logged, not leaked', async () => {
    const res = await app.inject({ method: 'GET', url: '/crash' });
    assert.equal(res.statusCode, 500);
    assert.deepEqual(bodyOf(res), { code: 'internal_error', error: 'internal_error', message: 'internal error' });
    assert.doesNotMatch(res.body, /secret|stack|at /);
    assert.ok(logLines.some((l) => l.includes('secret internal detail') && l.includes('"role":"test-role"')));
  });

  it('an unserialisable response body → 500, from a synchronous or an async handler', async () => {
    for (const url of ['/bigint', '/bigint-later']) {
      const res = await app.inject({ method: 'GET', url });
      assert.equal(res.statusCode, 500, url);
      assert.equal(bodyOf(res).code, 'internal_error', url);
    }
  });

  it('an async handler that rejects → 500 internal_error, logged, not leaked', async () => {
    const res = await app.inject({ method: 'GET', url: '/crash-later' });
    assert.equal(res.statusCode, 500);
    assert.equal(bodyOf(res).code, 'internal_error');
    assert.doesNotMatch(res.body, /secret/);
    assert.ok(logLines.some((l) => l.includes('secret later detail')));
  });

  it('429 and 503 carry Retry-After (default 1, or details.retry_after_seconds)', async () => {
    const limited = await app.inject({ method: 'GET', url: '/rate-limited' });
    assert.equal(limited.statusCode, 429);
    assert.equal(limited.headers['retry-after'], '1');
    const down = await app.inject({ method: 'GET', url: '/unavailable' });
    assert.equal(down.statusCode, 503);
    assert.equal(down.headers['retry-after'], '7');
    assert.equal(bodyOf(down).code, 'ledger_unavailable');
  });

  it('handler responses with 429/503 get Retry-After unless they set it', async () => {
    const busy = await app.inject({ method: 'GET', url: '/busy' });
    assert.equal(busy.statusCode, 503);
    assert.equal(busy.headers['retry-after'], '1');
    const custom = await app.inject({ method: 'GET', url: '/busy-custom' });
    assert.equal(custom.statusCode, 429);
    assert.equal(custom.headers['retry-after'], '30');
  });

  it('other statuses carry no Retry-After', async () => {
    const res = await app.inject({ method: 'GET', url: '/ddn-error' });
    assert.equal(res.headers['retry-after'], undefined);
  });
});

describe('createHttpServer: base path', () => {
  const { server } = make({ basePath: '/dir' });

  it('serves routes under the prefix only', async () => {
    const ok = await server.fastify.inject({ method: 'GET', url: '/dir/items/a%2Fb' });
    assert.equal(ok.statusCode, 200);
    assert.deepEqual(bodyOf(ok).params, { id: 'a/b' });
    const outside = await server.fastify.inject({ method: 'GET', url: '/items/1' });
    assert.equal(outside.statusCode, 404);
    assert.equal(bodyOf(outside).code, 'not_found');
  });
});

describe('createHttpServer: over a real socket', () => {
  const { server } = make();

  function send(path: string, method: string, chunks: string[], headers: Record<string, string>) {
    return new Promise<{ status: number; body: string }>((resolve, reject) => {
      const address = server.fastify.server.address();
      if (address === null || typeof address === 'string') throw new Error('not listening');
      const req = request({ host: '127.0.0.1', port: address.port, path, method, headers }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', reject);
      for (const c of chunks) req.write(c);
      req.end();
    });
  }

  it('keeps %2F inside a segment and enforces the limit on chunked bodies', async () => {
    await server.fastify.listen({ host: '127.0.0.1', port: 0 });
    const ok = await send('/items/phone%2Fmain?q=a+b', 'DELETE', ['{"a":', '1}'], {
      ...JSON_CT,
      'transfer-encoding': 'chunked',
    });
    assert.equal(ok.status, 200, ok.body);
    const body = JSON.parse(ok.body) as Record<string, unknown>;
    assert.deepEqual(body.params, { id: 'phone/main' });
    assert.deepEqual(body.body, { a: 1 });
    const big = await send('/items/1', 'POST', ['{"a":"', 'x'.repeat(40), 'x'.repeat(40), '"}'], JSON_CT);
    assert.equal(big.status, 413);
    assert.equal((JSON.parse(big.body) as Record<string, unknown>).code, 'payload_too_large');
  });

  /** Writes `text` on a raw connection and returns all the server sent until it closed. */
  function rawReply(text: string): Promise<string> {
    const address = server.fastify.server.address();
    if (address === null || typeof address === 'string') throw new Error('not listening');
    return new Promise<string>((resolve, reject) => {
      const socket = connect(address.port, '127.0.0.1', () => socket.write(text));
      let data = '';
      socket.setEncoding('utf8');
      socket.on('data', (c: string) => (data += c));
      socket.on('close', () => resolve(data));
      socket.on('error', reject);
    });
  }

  it('answers unparseable HTTP with a JSON error body', async () => {
    const reply = await rawReply('GARBAGE\r\n\r\n');
    assert.match(reply, /^HTTP\/1\.1 400 /);
    const body = JSON.parse(reply.slice(reply.indexOf('\r\n\r\n') + 4)) as Record<string, unknown>;
    assert.deepEqual(body, { code: 'invalid_request', error: 'invalid_request', message: 'malformed HTTP request' });
  });

  it('answers a request line and headers over the limit with 431 headers_too_large', async () => {
    const reply = await rawReply(`GET /items/1 HTTP/1.1\r\nHost: x\r\nX-Padding: ${'a'.repeat(maxHeaderSize)}\r\n\r\n`);
    assert.match(reply, /^HTTP\/1\.1 431 /);
    assert.match(reply, /\r\nconnection: close\r\n/i);
    const body = JSON.parse(reply.slice(reply.indexOf('\r\n\r\n') + 4)) as Record<string, unknown>;
    assert.deepEqual(body, {
      code: 'headers_too_large',
      error: 'headers_too_large',
      message: `the request line and headers exceed ${maxHeaderSize} bytes`,
      details: { limit: maxHeaderSize },
    });
  });
});
