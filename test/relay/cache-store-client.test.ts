/**
 * Outbound Cache stores (http-api.md §10.4.1 step 2, §10.6): node-signed over real HTTP to a local server,
 * bounded retries on transient statuses only, no retry on refusals, the address guard, and the in-process
 * path for this node's own Cache.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ManualClock } from '../../src/base/clock.js';
import { readNodeHeaders, verifyNodeRequest } from '../../src/protocol/node-signature.js';
import { PLATFORM } from '../../src/protocol/profile.js';
import { HttpCacheStorer, type LocalCachePort } from '../../src/relay/cache-store-client.js';
import { nodeDocument, nodeIdentityOf } from '../../src/relay/node-identity.js';
import { OutboundHttp } from '../../src/outbound/outbound-http.js';
import { keyOf } from '../support/directory-flows.js';

const T = Date.parse('2027-01-15T10:00:00Z');
const identity = nodeIdentityOf(PLATFORM, keyOf(5));

/** The retention a test Cache answers with its 202. */
const ANSWERED = { applied_ttl: 'PT1H', expires_at: '2027-01-15T11:00:00.000Z' };
const RETENTION = { appliedTtl: 'PT1H', expiresAt: '2027-01-15T11:00:00.000Z' };

interface Seen {
  url: string;
  headers: IncomingMessage['headers'];
  body: Buffer;
}

describe('HttpCacheStorer', () => {
  let server: Server;
  let base: string;
  const seen: Seen[] = [];
  /** Statuses to answer, in order; then 202. */
  let script: number[] = [];
  before(async () => {
    server = createServer((req, res) => {
      const parts: Buffer[] = [];
      req.on('data', (c: Buffer) => parts.push(c));
      req.on('end', () => {
        seen.push({ url: req.url ?? '', headers: req.headers, body: Buffer.concat(parts) });
        const status = script.shift() ?? 202;
        const body = status === 202 ? { accepted: true, ...ANSWERED } : { code: `code_${status}`, error: `code_${status}`, message: 'no' };
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });

  const make = (o: { allowPrivate?: boolean; local?: LocalCachePort; own?: string[] } = {}) => {
    const outbound = new OutboundHttp({ allowPrivate: o.allowPrivate ?? true });
    const sleeps: number[] = [];
    const storer = new HttpCacheStorer({
      profile: PLATFORM,
      clock: new ManualClock(T),
      identity,
      outbound,
      ownCacheUrls: () => o.own ?? [],
      ...(o.local === undefined ? {} : { local: o.local }),
      retry: { attempts: 3, backoffMs: 100, timeoutMs: 2000 },
      sleep: async (ms) => {
        sleeps.push(ms);
      },
    });
    return { storer, outbound, sleeps };
  };

  it('signs each attempt as the node (§10.6) for the endpoint + /cache/store, no double slash', async () => {
    seen.length = 0;
    const { storer, outbound } = make();
    const body = Buffer.from('{"message_id":"m"}');
    assert.deepEqual(await storer.store(`${base}/`, { bytes: body }), { ok: true, attempts: 1, retention: RETENTION }, 'the retention the Cache applied');
    outbound.close();
    const s = seen[0]!;
    assert.equal(s.url, '/cache/store');
    assert.deepEqual(s.body, body);
    const headers = readNodeHeaders((n) => s.headers[n.toLowerCase()] as string | undefined)!;
    assert.equal(headers.timestamp, '2027-01-15T10:00:00Z');
    const doc = nodeDocument(PLATFORM, identity, ['https://relay.example']);
    const v = verifyNodeRequest({
      profile: PLATFORM,
      headers,
      nodeRecord: { deactivated: false, document: doc },
      method: 'POST',
      candidateUrls: [`${base}/cache/store`],
      body,
      nowMs: T,
      skewSeconds: 300,
      serviceType: 'PlatformRelayService',
    });
    assert.equal(v.nodeDid, identity.did);
  });

  it('retries transient statuses with backoff and a fresh nonce, up to the bound', async () => {
    seen.length = 0;
    script = [503, 429];
    const { storer, outbound, sleeps } = make();
    assert.deepEqual(await storer.store(base, { bytes: Buffer.from('{}') }), { ok: true, attempts: 3, retention: RETENTION });
    assert.deepEqual(sleeps, [100, 200]);
    assert.equal(new Set(seen.map((s) => s.headers['x-ddn-node-nonce'])).size, 3);
    script = [502, 502, 502, 502];
    assert.deepEqual(await storer.store(base, { bytes: Buffer.from('{}') }), { ok: false, attempts: 3, cacheResult: 'code_502', reason: 'HTTP 502 code_502' });
    script = [];
    outbound.close();
  });

  it('does not retry a refusal; reports the Cache error text', async () => {
    script = [422];
    const { storer, outbound, sleeps } = make();
    assert.deepEqual(await storer.store(base, { bytes: Buffer.from('{}') }), { ok: false, attempts: 1, cacheResult: 'code_422', reason: 'HTTP 422 code_422' });
    assert.deepEqual(sleeps, []);
    outbound.close();
  });

  it('refuses private addresses unless allowed, without retrying; connection failures are retried', async () => {
    const guarded = make({ allowPrivate: false });
    const blocked = await guarded.storer.store(base, { bytes: Buffer.from('{}') });
    assert.deepEqual({ ...blocked, reason: undefined }, { ok: false, attempts: 1, cacheResult: 'failed', reason: undefined });
    assert.match((blocked as { reason: string }).reason, /^blocked_address: /);
    guarded.outbound.close();
    const open = make();
    const refused = await open.storer.store('http://127.0.0.1:1', { bytes: Buffer.from('{}') });
    assert.deepEqual({ ...refused, reason: undefined }, { ok: false, attempts: 3, cacheResult: 'failed', reason: undefined });
    assert.match((refused as { reason: string }).reason, /^network: connect ECONNREFUSED 127\.0\.0\.1:1/);
    open.outbound.close();
  });

  it('stores in-process at its own public Cache URL, even on a private address with the guard on', async () => {
    const calls: string[] = [];
    const local: LocalCachePort = {
      async store(item, node) {
        calls.push(`${node.did} ${item.bytes.toString()}`);
        return calls.length === 1 ? { ok: true, body: ANSWERED } : { ok: false, status: 409, body: { error: 'message_id_conflict' } };
      },
    };
    seen.length = 0;
    const { storer, outbound } = make({ allowPrivate: false, local, own: [`${base}/`] });
    assert.deepEqual(await storer.store(base, { bytes: Buffer.from('{"a":1}') }), { ok: true, attempts: 1, retention: RETENTION });
    assert.deepEqual(await storer.store(`${base}/`, { bytes: Buffer.from('{"a":2}') }), {
      ok: false,
      attempts: 1,
      cacheResult: 'message_id_conflict',
      reason: 'HTTP 409 message_id_conflict',
    });
    assert.deepEqual(calls, [`${identity.did} {"a":1}`, `${identity.did} {"a":2}`]);
    assert.equal(seen.length, 0, 'no HTTP request was made');
    outbound.close();
  });
});
