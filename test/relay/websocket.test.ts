/**
 * `GET /ws/{did}/{device}` wired into the Relay server (http-api.md §10.8): the pre-upgrade checks as HTTP
 * error bodies, the exact welcome frame, bare envelopes to every session of the DID only after the durable
 * store, nothing else on the socket, client frames ignored, 1001 on shutdown.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import { isoSeconds, registerRecipientAt, type Recipient } from '../cache/harness.js';
import { fetchJson, httpDirectory } from '../cache/http-support.js';
import { mutate } from '../support/directory-flows.js';
import type { DirectoryHarness } from '../support/directory-harness.js';
import { connectLive, liveHeaders, liveRefusal as refusal } from '../support/live.js';
import { startTestNode, type TestNode } from '../support/network.js';

type Body = Record<string, unknown>;
const enc = encodeURIComponent;

describe('live delivery over WebSocket', () => {
  let node: TestNode;
  let r: Recipient;
  let other: Recipient;
  let wsBase: string;
  before(async () => {
    node = await startTestNode(['--relay-max-sessions-per-did', '2']);
    const dir = httpDirectory(node);
    r = await registerRecipientAt(dir, 91, { cacheEndpoints: [node.urls.cache!] });
    other = await registerRecipientAt(dir, 92, { cacheEndpoints: [node.urls.cache!] });
    wsBase = `${node.urls.relay!.replace('http://', 'ws://')}/ws`;
  });
  after(() => node.stop());

  const envelope = (to: string, over: Body = {}): Body => ({
    message_id: randomUUID(),
    to,
    timestamp: isoSeconds(Date.now()),
    payload: { ciphertext_b64: 'AAAA' },
    ...over,
  });
  const send = (body: Body) => fetchJson(`${node.urls.relay}/relay`, { body });
  /** An authenticated session of `who` (the proof in the upgrade headers). */
  const connect = (who: Recipient, device: string) => connectLive(`${wsBase}/${enc(who.did)}/${enc(device)}`, liveHeaders(who, device, node.urls.relay!));

  it('refuses before the upgrade with the §0.6 error body', async () => {
    const cases: [string, number, string][] = [
      [`${wsBase}/not-a-did/phone`, 400, 'invalid_did'],
      [`${wsBase}/${enc(r.did)}/${enc(' phone')}`, 400, 'invalid_request'],
      [`${wsBase}/${enc(r.did)}/${'d'.repeat(65)}`, 400, 'invalid_request'],
      [`${wsBase}/${enc('did:platform:1111111111111111111')}/phone`, 404, 'did_not_found'],
      [`${wsBase}/${enc(r.did)}`, 404, 'not_found'],
    ];
    for (const [url, status, code] of cases) {
      const res = await refusal(url);
      assert.equal(res.status, status, url);
      assert.equal(res.body.code, code);
      assert.equal(res.body.error, code);
    }
  });

  it('echoes the request id of an upgrade, refused or accepted', async () => {
    const refused = await refusal(`${wsBase}/not-a-did/phone`, { 'X-Request-Id': 'live-refused-1' });
    assert.equal(refused.headers['x-request-id'], 'live-refused-1');
    const made = await refusal(`${wsBase}/not-a-did/phone`);
    assert.match(String(made.headers['x-request-id']), /^ws-[\w-]{8}$/);
    const headers = { ...liveHeaders(r, 'tablet', node.urls.relay!), 'X-Request-Id': 'live-accepted-1' };
    const ws = new WebSocket(`${wsBase}/${enc(r.did)}/tablet`, { headers });
    const echoed = await new Promise<unknown>((resolve, reject) => {
      ws.once('upgrade', (res) => resolve(res.headers['x-request-id']));
      ws.once('error', reject);
    });
    ws.close();
    assert.equal(echoed, 'live-accepted-1');
  });

  it('welcomes, pushes bare envelopes to every device of the DID after the store, and nothing else', async () => {
    const a = await connect(r, 'laptop');
    const b = await connect(r, 'phone 2');
    const c = await connect(other, 'laptop');
    assert.equal(a.frames[0], `{"type":"welcome","status":"ok","connectionKey":"${r.did}::laptop"}`);
    assert.equal(b.frames[0], `{"type":"welcome","status":"ok","connectionKey":"${r.did}::phone 2"}`);
    a.ws.send('{"type":"ping"}'); // client data frames are ignored

    const limit = await refusal(`${wsBase}/${enc(r.did)}/third`, liveHeaders(r, 'third', node.urls.relay!));
    assert.equal(limit.status, 429);
    assert.equal(limit.body.code, 'rate_limited');
    assert.ok(limit.headers['retry-after']);

    // Not eligible: a chunk, the recipient field, an alias.
    await send(envelope(r.did, { message_group_id: randomUUID(), sequence_number: 0, total_chunks: 1 }));
    await send(envelope(r.did, { to: undefined, recipient: r.did }));
    await send(envelope(r.alias));
    const env = envelope(r.did);
    const text = JSON.stringify(env);
    const nextA = a.next();
    const nextB = b.next();
    const res = await send(env);
    assert.equal(res.body.code, 'delivered');
    assert.equal((res.body.details as Body).live_sessions, 2);
    assert.equal(await nextA, text);
    assert.equal(await nextB, text);
    assert.deepEqual(a.frames.slice(1), [text], 'only the eligible envelope was pushed');
    assert.deepEqual(c.frames.length, 1, 'other DIDs receive nothing');

    const failed = await send(envelope(r.did, { ttl: '1s', timestamp: isoSeconds(Date.now() - 10_000) }));
    assert.equal(failed.status, 422);
    assert.equal(a.frames.length, 2, 'nothing is pushed without a durable store');
    for (const s of [a, b, c]) s.ws.close();
    await Promise.all([a.closed, b.closed, c.closed]);
  });

  it('refuses a deactivated DID with 409 did_deactivated', async () => {
    const gone = await registerRecipientAt(httpDirectory(node), 93, { cacheEndpoints: [node.urls.cache!] });
    await mutate(httpDirectory(node) as DirectoryHarness, gone.did, gone.key, 'deactivate_did');
    const res = await refusal(`${wsBase}/${enc(gone.did)}/phone`);
    assert.equal(res.status, 409);
    assert.equal(res.body.code, 'did_deactivated');
  });

  it('closes every session with 1001 when the node shuts down', async () => {
    const s = await connect(r, 'laptop');
    await node.close();
    assert.equal((await s.closed).code, 1001);
  });
});
