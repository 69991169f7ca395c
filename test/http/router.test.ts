import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DdnError, type ErrorCode } from '../../src/base/errors.js';
import { createHttpServer, json, type HttpMethod } from '../../src/http/server.js';
import { decodePathSegments, parseQuery, percentDecode, splitTarget } from '../../src/http/url.js';

function throwsCode(fn: () => unknown, code: string): DdnError {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof DdnError, `expected DdnError ${code}, got ${String(caught)}`);
  assert.equal(caught.code, code);
  return caught;
}

async function rejectsCode(p: Promise<unknown>, code: string): Promise<DdnError> {
  let caught: unknown;
  try {
    await p;
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof DdnError, `expected DdnError ${code}, got ${String(caught)}`);
  assert.equal(caught.code, code);
  return caught;
}

/** Routes on a role's fastify server; `match` answers what route (and params) a request reaches, or its error. */
class Routes {
  private readonly server;
  constructor(basePath?: string) {
    this.server = createHttpServer({ name: 'test', logger: false, bodyLimitBytes: 1024, tooLargeCode: 'payload_too_large', basePath });
  }

  add(method: HttpMethod, pattern: string, value: string): void {
    this.server.route(method, pattern, (ctx) => json(200, { value, params: ctx.params }, { 'x-route': value }));
  }

  async match(method: string, path: string): Promise<{ value: string; params: Record<string, string> }> {
    const res = await this.server.fastify.inject({ method: method as HttpMethod, url: path });
    if (method === 'HEAD') return { value: String(res.headers['x-route']), params: {} };
    const body = JSON.parse(res.body) as { value: string; params: Record<string, string>; code: ErrorCode; message: string; details?: Record<string, unknown> };
    if (res.statusCode !== 200) throw new DdnError(body.code, body.message, body.details);
    return { value: body.value, params: { ...body.params } };
  }
}

function directoryRouter(basePath?: string): Routes {
  const r = new Routes(basePath);
  r.add('GET', '/health', 'health');
  r.add('GET', '/resolve/:did', 'resolve');
  r.add('GET', '/blocks/latest', 'latest');
  r.add('GET', '/blocks/:number', 'block');
  r.add('PUT', '/dids/:did/document/services/:serviceId', 'put-service');
  r.add('DELETE', '/dids/:did/document/services/:id', 'delete-service');
  r.add('DELETE', '/dids/:did/devices/:device_id', 'delete-device');
  r.add('POST', '/dids/:did/devices/:device_id/tombstone', 'tombstone');
  r.add('GET', '/personas/:persona/nonces', 'persona-nonces');
  r.add('GET', '/personas/special/:x', 'special');
  return r;
}

describe('percent-decoding of path segments (§0.4)', () => {
  const r = directoryRouter();

  it('decodes %3A %23 %40 and keeps a literal plus', async () => {
    const m = await r.match('GET', '/resolve/did%3Aplatform%3Aabc%23key-1%40x+y');
    assert.equal(m.value, 'resolve');
    assert.deepEqual(m.params, { did: 'did:platform:abc#key-1@x+y' });
  });

  it('treats %2F as a literal slash inside one segment', async () => {
    const m = await r.match('DELETE', '/dids/did%3Ap%3Aq/devices/phone%2Fmain');
    assert.equal(m.value, 'delete-device');
    assert.deepEqual(m.params, { did: 'did:p:q', device_id: 'phone/main' });
  });

  it('decodes exactly once (%252F stays %2F)', async () => {
    assert.deepEqual((await r.match('GET', '/resolve/a%252Fb')).params, { did: 'a%2Fb' });
  });

  it('decodes multi-byte UTF-8', async () => {
    assert.deepEqual((await r.match('GET', '/resolve/caf%C3%A9')).params, { did: 'café' });
  });

  for (const bad of ['/resolve/%zz', '/resolve/%4', '/resolve/abc%', '/resolve/%C3%28', '/resolve/%FF', '/resolve/%ED%A0%80']) {
    it(`rejects ${bad} with invalid_path`, async () => {
      await rejectsCode(r.match('GET', bad), 'invalid_path');
    });
  }

  it('rejects bad encoding even on unknown routes (decoding precedes matching)', async () => {
    await rejectsCode(r.match('GET', '/unknown/%zz'), 'invalid_path');
  });

  it('decodes escapes and raw octets of the same bytes alike (ASCII input takes another path)', async () => {
    const rawOctets = (s: string) => s.replace(/%([0-9A-Fa-f]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));
    const cases: [string, string | undefined][] = [
      ['did%3Aplatform%3Aabc', 'did:platform:abc'],
      ['%F0%9F%98%80x', '\u{1F600}x'],
      ['%e2%82%ac', '\u20ac'],
      ['%C0%80', undefined], // overlong
      ['%ED%A0%80', undefined], // surrogate
      ['%F4%90%80%80', undefined], // above U+10FFFF
      ['%E2%82', undefined], // truncated
      ['%80', undefined], // lone continuation byte
    ];
    for (const [escaped, want] of cases) {
      assert.equal(percentDecode(escaped), want, escaped);
      assert.equal(percentDecode(rawOctets(escaped)), want, `raw octets of ${escaped}`);
    }
  });

  it('percentDecode leaves plain strings untouched and reads raw octets as bytes', async () => {
    assert.equal(percentDecode('abc+def'), 'abc+def');
    assert.equal(percentDecode('caf\u00c3\u00a9'), 'café');
    assert.equal(percentDecode('\u00ff'), undefined);
  });
});

describe('route matching', () => {
  const r = directoryRouter();

  it('ignores one trailing slash', async () => {
    assert.equal((await r.match('GET', '/health/')).value, 'health');
    assert.equal((await r.match('GET', '/resolve/x/')).value, 'resolve');
  });

  it('does not collapse empty segments', async () => {
    await rejectsCode(r.match('GET', '//health'), 'not_found');
    await rejectsCode(r.match('GET', '/health//'), 'not_found');
    await rejectsCode(r.match('GET', '/resolve/'), 'not_found');
  });

  it('an empty segment where another method has a parameter is not_found, not method_not_allowed', async () => {
    // POST /dids/:did/devices/:device_id/tombstone exists; an empty device id names no route for any method
    await rejectsCode(r.match('GET', '/dids/x/devices//tombstone'), 'not_found');
    await rejectsCode(r.match('POST', '/dids/x/devices//tombstone'), 'not_found');
    await rejectsCode(r.match('GET', '/dids//document/services/s'), 'not_found');
    // a trailing slash is still not significant
    const e = await rejectsCode(r.match('GET', '/dids/x/devices/d/tombstone/'), 'method_not_allowed');
    assert.deepEqual(e.details, { allow: ['POST'] });
  });

  it('unknown route → not_found', async () => {
    await rejectsCode(r.match('GET', '/nope'), 'not_found');
    await rejectsCode(r.match('GET', '/'), 'not_found');
    await rejectsCode(r.match('GET', '/resolve/a/b'), 'not_found');
  });

  it('known path, wrong method → method_not_allowed with the allowed methods', async () => {
    const e = await rejectsCode(r.match('POST', '/health'), 'method_not_allowed');
    assert.deepEqual(e.details, { allow: ['GET', 'HEAD'] });
    const e2 = await rejectsCode(r.match('GET', '/dids/d/document/services/s'), 'method_not_allowed');
    assert.deepEqual(e2.details, { allow: ['DELETE', 'PUT'] });
  });

  it('HEAD is served by GET routes', async () => {
    assert.equal((await r.match('HEAD', '/health')).value, 'health');
  });

  it('static segments win over params', async () => {
    assert.equal((await r.match('GET', '/blocks/latest')).value, 'latest');
    assert.deepEqual((await r.match('GET', '/blocks/12')).params, { number: '12' });
    assert.equal((await r.match('GET', '/personas/special/1')).value, 'special');
  });

  it('backtracks to a param branch when the static branch does not complete', async () => {
    const x = new Routes();
    x.add('GET', '/personas/special/foo', 'special-foo');
    x.add('GET', '/personas/:persona/nonces', 'persona-nonces');
    const m = await x.match('GET', '/personas/special/nonces');
    assert.deepEqual([m.value, m.params], ['persona-nonces', { persona: 'special' }]);
    assert.equal((await x.match('GET', '/personas/special/foo')).value, 'special-foo');
  });

  it('tries lower-precedence branches for the method before answering 405', async () => {
    const x = new Routes();
    x.add('GET', '/blocks/latest', 'latest');
    x.add('DELETE', '/blocks/:number', 'delete');
    assert.deepEqual((await x.match('DELETE', '/blocks/latest')).params, { number: 'latest' });
  });

  it('keeps per-method param names on the same shape', async () => {
    assert.deepEqual((await r.match('PUT', '/dids/d/document/services/s1')).params, { did: 'd', serviceId: 's1' });
    assert.deepEqual((await r.match('DELETE', '/dids/d/document/services/s1')).params, { did: 'd', id: 's1' });
  });

  it('matches a static pattern segment against the decoded segment', async () => {
    assert.equal((await r.match('GET', '/%68ealth')).value, 'health');
  });

  it('rejects duplicate routes and malformed patterns', async () => {
    const x = new Routes();
    x.add('GET', '/a/:b', 'one');
    assert.throws(() => x.add('GET', '/a/:c', 'two'));
    assert.throws(() => x.add('GET', 'a', 'x'));
    assert.throws(() => x.add('GET', '/a/:b/:b', 'x'));
    assert.throws(() => x.add('GET', '/a//b', 'x'));
  });
});

describe('base path', () => {
  const r = directoryRouter('/api/v1/');

  it('routes under the prefix', async () => {
    assert.equal((await r.match('GET', '/api/v1/health')).value, 'health');
    assert.deepEqual((await r.match('GET', '/api/v1/resolve/a%2Fb')).params, { did: 'a/b' });
  });

  it('answers not_found outside the prefix', async () => {
    await rejectsCode(r.match('GET', '/health'), 'not_found');
    await rejectsCode(r.match('GET', '/api/health'), 'not_found');
    await rejectsCode(r.match('GET', '/api/v1'), 'not_found');
  });

  it('accepts a prefix without a leading slash', async () => {
    const x = new Routes('dir');
    x.add('GET', '/health', 'h');
    assert.equal((await x.match('GET', '/dir/health')).value, 'h');
  });
});

describe('request target splitting and query decoding', () => {
  it('splits origin-form and absolute-form targets', () => {
    assert.deepEqual(splitTarget('/a/b?x=1'), { path: '/a/b', query: 'x=1' });
    assert.deepEqual(splitTarget('/a'), { path: '/a', query: '' });
    assert.deepEqual(splitTarget('http://h:1/a%2Fb?q'), { path: '/a%2Fb', query: 'q' });
    assert.deepEqual(splitTarget('http://h?q'), { path: '/', query: 'q' });
  });

  it('decodePathSegments splits before decoding', () => {
    assert.deepEqual(decodePathSegments('/a%2Fb/c'), ['a/b', 'c']);
    assert.deepEqual(decodePathSegments('/'), []);
  });

  it('form-decodes: + is a space, then percent-decoding', () => {
    const q = parseQuery('a=b+c&d=%2B&e=%3A%23&flag&=empty&x=1&x=2&caf%C3%A9=%C3%A9');
    assert.deepEqual({ ...q }, { a: 'b c', d: '+', e: ':#', flag: '', '': 'empty', x: '1', café: 'é' });
  });

  it('returns an empty object for an empty query', () => {
    assert.deepEqual({ ...parseQuery('') }, {});
  });

  it('does not let __proto__ touch the prototype', () => {
    const q = parseQuery('__proto__=x');
    assert.equal(q.__proto__, 'x');
    assert.equal(Object.getPrototypeOf(q), null);
  });

  it('rejects bad query encoding with invalid_request', () => {
    const e = throwsCode(() => parseQuery('a=%zz'), 'invalid_request');
    assert.deepEqual(e.details, { field: 'query' });
    throwsCode(() => parseQuery('a=%C3'), 'invalid_request');
  });
});
