/**
 * Authenticated live sessions at the Relay (`--relay-live-auth`, src/relay/live-auth.ts, websocket-route.ts): a
 * session proves control of the DID in its upgrade headers or its first frame; every bad proof is refused with its
 * code; `open` lets proof-less sessions in but never reports a push to them as a delivery; `off` refuses; caps on
 * sessions and on bytes buffered for a session that does not read; Relay-only recipients are delivered to a live
 * session; refusals on the route are JSON.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { connect as tcpConnect, type Socket } from 'node:net';
import { liveProofFrame, liveProofHeaders } from '../../src/protocol/live-proof.js';
import { isoSeconds, registerRecipientAt, type Recipient } from '../cache/harness.js';
import { fetchJson, httpDirectory } from '../cache/http-support.js';
import { didOf, keyOf, kid, registerDid, vmOf } from '../support/directory-flows.js';
import type { DirectoryHarness } from '../support/directory-harness.js';
import { connectLive, liveHeaders, liveProof, liveRefusal, openLive, type LiveSigner } from '../support/live.js';
import { startTestNode, type TestNode } from '../support/network.js';

type Body = Record<string, unknown>;
const enc = encodeURIComponent;

/** A DID whose only service is a Relay service authorising `#key-1` (the deployed clients' setup). */
async function registerRelayOnly(node: TestNode, seed: number): Promise<LiveSigner> {
  const dir = httpDirectory(node) as DirectoryHarness;
  const did = didOf(seed, dir.profile.p);
  const key = keyOf(seed);
  const document = {
    id: did,
    verificationMethod: [vmOf(did, 'key-1', key)],
    authentication: [kid(did, 'key-1')],
    service: [{ id: kid(did, 'relay'), type: 'PlatformRelayService', serviceEndpoint: [node.urls.relay!], authorization: [kid(did, 'key-1')] }],
  };
  await registerDid(dir, seed, { did, key, document });
  return { did, key, keyId: kid(did, 'key-1'), serviceId: kid(did, 'relay') };
}

/** A raw HTTP exchange on a fresh connection: the whole response (the server closes it). */
function rawExchange(url: string, request: string): Promise<{ status: number; head: string; body: string }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = tcpConnect(Number(u.port), u.hostname, () => socket.write(request));
    let text = '';
    socket.setEncoding('utf8').on('data', (c: string) => (text += c));
    socket.on('error', reject);
    socket.on('end', () => {
      const cut = text.indexOf('\r\n\r\n');
      resolve({ status: Number(text.split(' ')[1]), head: text.slice(0, cut), body: text.slice(cut + 4) });
    });
  });
}

/** An upgrade request's text. */
function upgradeRequest(method: string, path: string, host: string, headers: Record<string, string>): string {
  const lines = [`${method} ${path} HTTP/1.1`, `Host: ${host}`, 'Connection: Upgrade', 'Upgrade: websocket'];
  for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`);
  return `${lines.join('\r\n')}\r\n\r\n`;
}

const WS_HEADERS = { 'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==', 'Sec-WebSocket-Version': '13' };

/** Opens an upgraded session on a raw socket and stops reading from it (after the 101 head). */
function openNonReading(url: string, path: string, headers: Record<string, string>): Promise<Socket> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = tcpConnect(Number(u.port), u.hostname, () => socket.write(upgradeRequest('GET', path, u.host, { ...WS_HEADERS, ...headers })));
    let head = '';
    const onData = (c: Buffer) => {
      head += c.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      socket.off('data', onData);
      socket.pause();
      if (head.startsWith('HTTP/1.1 101')) resolve(socket);
      else reject(new Error(head));
    };
    socket.on('data', onData);
    socket.on('error', reject);
  });
}

/** A node and its recipients: `r`, `other` (Cache services on the node) and a Relay-only DID. */
interface LiveNode {
  node: TestNode;
  r: Recipient;
  other: Recipient;
  relayOnly: LiveSigner;
  relayUrl: string;
  wsBase: string;
}

async function startLiveNode(args: string[], seed: number): Promise<LiveNode> {
  const node = await startTestNode(args);
  const dir = httpDirectory(node);
  const r = await registerRecipientAt(dir, seed, { cacheEndpoints: [node.urls.cache!] });
  const other = await registerRecipientAt(dir, seed + 1, { cacheEndpoints: [node.urls.cache!] });
  const relayOnly = await registerRelayOnly(node, seed + 2);
  const relayUrl = node.urls.relay!;
  return { node, r, other, relayOnly, relayUrl, wsBase: `${relayUrl.replace('http://', 'ws://')}/ws` };
}

describe('live sessions under --relay-live-auth required (the platform default)', () => {
  let node: TestNode;
  let r: Recipient;
  let other: Recipient;
  let relayOnly: LiveSigner;
  let wsBase: string;
  let relayUrl: string;
  before(async () => {
    ({ node, r, other, relayOnly, relayUrl, wsBase } = await startLiveNode(
      ['--relay-live-auth-timeout-ms', '300', '--relay-live-max-session-buffered-bytes', '65536'],
      61,
    ));
  });
  after(() => node.stop());

  const envelope = (to: string, payloadBytes = 3): Body => ({
    message_id: randomUUID(),
    to,
    timestamp: isoSeconds(Date.now()),
    payload: { ciphertext_b64: randomBytes(payloadBytes).toString('base64') },
  });
  const send = (body: Body) => fetchJson(`${relayUrl}/relay`, { body });
  const url = (who: { did: string }, device: string) => `${wsBase}/${enc(who.did)}/${enc(device)}`;

  it('refuses a session without a proof: 401 live_proof_required (an eavesdropper hears nothing)', async () => {
    const res = await liveRefusal(url(r, 'eve'));
    assert.equal(res.status, 401);
    assert.equal(res.body.code, 'live_proof_required');
    assert.equal(res.headers['content-type'], 'application/json');
    assert.equal(res.headers['www-authenticate'], 'DDN-Live-Proof realm="ddn"', 'every 401 names its challenge');
    const sent = await send(envelope(r.did));
    assert.equal(sent.body.code, 'cached');
  });

  it('opens a session whose proof is in the headers: pushes to it are delivered', async () => {
    const s = await connectLive(url(r, 'laptop'), liveHeaders(r, 'laptop', relayUrl));
    assert.equal(s.frames[0], `{"type":"welcome","status":"ok","connectionKey":"${r.did}::laptop"}`);
    const env = envelope(r.did);
    const res = await send(env);
    assert.equal(res.body.code, 'delivered');
    assert.equal((res.body.details as Body).live_sessions, 1);
    assert.equal(await s.frame(1), JSON.stringify(env));
    s.ws.close();
    await s.closed;
  });

  it("takes a key the service authorises though it is not in authentication (the Cache's key rule)", async () => {
    const s = await connectLive(url(r, 'tablet'), liveHeaders(r, 'tablet', relayUrl, { key: r.key2, keyId: kid(r.did, 'key-2') }));
    assert.equal(s.frames[0], `{"type":"welcome","status":"ok","connectionKey":"${r.did}::tablet"}`);
    s.ws.close();
    await s.closed;
  });

  it('refuses every bad proof with its code', async () => {
    const dev = 'phone';
    const cases: [string, Record<string, string>, number, string][] = [
      ['a missing header', (({ 'X-Signature': _, ...rest }) => rest)(liveHeaders(r, dev, relayUrl)), 400, 'missing_proof_header'],
      ['a signature by another key', liveHeaders(r, dev, relayUrl, { key: r.key2 }), 403, 'invalid_signature'],
      ['a key the service does not authorise', liveHeaders(r, dev, relayUrl, { key: r.key3, keyId: kid(r.did, 'key-3') }), 403, 'key_not_authorized'],
      ['a stale timestamp', liveHeaders(r, dev, relayUrl, { timestamp: isoSeconds(Date.now() - 600_000) }), 403, 'proof_timestamp_out_of_window'],
      ["another DID's proof", liveHeaders(other, dev, relayUrl), 403, 'live_service_not_found'],
      ['a proof signed for another DID', liveHeaders(r, dev, relayUrl, { did: other.did }), 403, 'invalid_signature'],
      ['a proof for another device', liveHeaders(r, dev, relayUrl, { device: 'laptop' }), 403, 'invalid_signature'],
      ['an Archive service', liveHeaders(r, dev, relayUrl, { serviceId: r.archiveServiceId }), 403, 'live_service_not_found'],
      ["another Relay's endpoint", liveHeaders(r, dev, relayUrl, { relayEndpoint: 'https://relay.elsewhere.example' }), 403, 'relay_endpoint_mismatch'],
    ];
    for (const [what, headers, status, code] of cases) {
      const res = await liveRefusal(url(r, dev), headers);
      assert.equal(res.status, status, what);
      assert.equal(res.body.code, code, what);
    }
  });

  it('refuses a replayed proof: 409 proof_nonce_replayed', async () => {
    const headers = liveHeaders(r, 'tablet', relayUrl);
    const s = await connectLive(url(r, 'tablet'), headers);
    s.ws.close();
    await s.closed;
    const res = await liveRefusal(url(r, 'tablet'), headers);
    assert.equal(res.status, 409);
    assert.equal(res.body.code, 'proof_nonce_replayed');
  });

  it('accepts the proof as the first frame (?auth=first-frame); nothing reaches the session before it', async () => {
    const s = await openLive(`${url(r, 'browser')}?auth=first-frame`);
    const early = await send(envelope(r.did));
    assert.equal(early.body.code, 'cached', 'a pending session is not a delivery');
    s.ws.send(liveProofFrame(liveProof(r, 'browser', relayUrl)));
    assert.equal(await s.frame(0), `{"type":"welcome","status":"ok","connectionKey":"${r.did}::browser"}`);
    const env = envelope(r.did);
    const res = await send(env);
    assert.equal(res.body.code, 'delivered');
    assert.deepEqual(s.frames, [s.frames[0], JSON.stringify(env)], 'the envelope sent before the proof was not pushed');
    s.ws.close();
    await s.closed;
  });

  it('closes a first-frame session whose proof is bad, missing or late with 4000 + status and the code', async () => {
    const replayed = liveProof(r, 'browser', relayUrl);
    const ok = await openLive(`${url(r, 'browser')}?auth=first-frame`);
    ok.ws.send(liveProofFrame(replayed));
    await ok.frame(0);
    ok.ws.close();
    await ok.closed;
    const cases: [string, string | undefined, number, string][] = [
      ['a bad signature', liveProofFrame(liveProof(r, 'browser', relayUrl, { key: r.key2 })), 4403, 'invalid_signature'],
      ['not a proof', '{"type":"hello"}', 4401, 'live_proof_required'],
      ['a replayed proof', liveProofFrame(replayed), 4409, 'proof_nonce_replayed'],
      ['no frame before the deadline', undefined, 4401, 'live_proof_required'],
    ];
    for (const [what, frame, code, reason] of cases) {
      const s = await openLive(`${url(r, 'browser')}?auth=first-frame`);
      if (frame !== undefined) s.ws.send(frame);
      assert.deepEqual(await s.closed, { code, reason }, what);
      assert.deepEqual(s.frames, [], `${what}: nothing was sent to it`);
    }
  });

  it('answers a non-GET upgrade, a bad handshake and a bad path with the JSON error body', async () => {
    const host = new URL(relayUrl).host;
    const path = `/ws/${enc(r.did)}/laptop`;
    const cases: [string, string, number, string][] = [
      ['POST', upgradeRequest('POST', path, host, { ...WS_HEADERS, 'Content-Length': '0' }), 405, 'method_not_allowed'],
      ['no key', upgradeRequest('GET', path, host, { 'Sec-WebSocket-Version': '13' }), 400, 'invalid_request'],
      ['version 7', upgradeRequest('GET', path, host, { ...WS_HEADERS, 'Sec-WebSocket-Version': '7' }), 400, 'invalid_request'],
      [
        'a malformed subprotocol list',
        upgradeRequest('GET', path, host, { ...WS_HEADERS, ...liveHeaders(r, 'laptop', relayUrl), 'Sec-WebSocket-Protocol': 'a, a' }),
        400,
        'invalid_request',
      ],
      ['a bad path', upgradeRequest('GET', '/ws/x', host, WS_HEADERS), 404, 'not_found'],
    ];
    for (const [what, request, status, code] of cases) {
      const res = await rawExchange(relayUrl, request);
      assert.equal(res.status, status, what);
      assert.match(res.head, /content-type: application\/json/i, what);
      assert.equal((JSON.parse(res.body) as Body).code, code, what);
    }
  });

  it("delivers to a Relay-only recipient's live session (202 delivered); without one 404 no_delivery_service", async () => {
    const none = await send(envelope(relayOnly.did));
    assert.equal(none.status, 404);
    assert.equal(none.body.code, 'no_delivery_service');
    const s = await connectLive(url(relayOnly, 'app'), liveHeaders(relayOnly, 'app', relayUrl));
    const env = envelope(relayOnly.did);
    const res = await send(env);
    assert.equal(res.status, 202);
    assert.equal(res.body.code, 'delivered');
    assert.equal(res.body.cache_attempted, false);
    assert.equal(await s.frame(1), JSON.stringify(env));
    s.ws.close();
    await s.closed;
  });

  it('closes a session that does not read once its buffer is over the cap, and frees it', async () => {
    const sessions = node.relay!.sessions;
    const socket = await openNonReading(relayUrl, `/ws/${enc(other.did)}/slow`, liveHeaders(other, 'slow', relayUrl));
    try {
      assert.equal(sessions.count(other.did), 1);
      const codes: string[] = [];
      // 1 MiB envelopes until the session is behind by more than 64 KiB: then the next push closes it
      for (let i = 0; i < 64 && codes.at(-1) !== 'cached'; i++) codes.push((await send(envelope(other.did, 1 << 20))).body.code as string);
      assert.equal(codes[0], 'delivered');
      assert.equal(codes.at(-1), 'cached', 'the non-reading session was closed');
      assert.equal(sessions.count(other.did), 0);
      assert.equal(sessions.total(), 0);
      assert.equal(sessions.bufferedBytes(), 0);
    } finally {
      socket.destroy();
    }
  });
});

describe('live sessions under --relay-live-auth open, and the session cap', () => {
  let node: TestNode;
  let r: Recipient;
  let other: Recipient;
  let relayOnly: LiveSigner;
  let wsBase: string;
  let relayUrl: string;
  before(async () => {
    ({ node, r, other, relayOnly, relayUrl, wsBase } = await startLiveNode(['--relay-live-auth', 'open', '--relay-live-max-sessions', '2'], 64));
  });
  after(() => node.stop());

  const envelope = (to: string): Body => ({ message_id: randomUUID(), to, timestamp: isoSeconds(Date.now()), payload: { ciphertext_b64: 'AAAA' } });
  const send = (body: Body) => fetchJson(`${relayUrl}/relay`, { body });

  it('lets a proof-less session in, but a push to it is cached, not delivered; a sent proof is still checked', async () => {
    const bad = await liveRefusal(`${wsBase}/${enc(r.did)}/x`, liveHeaders(r, 'x', relayUrl, { key: r.key2 }));
    assert.equal(bad.status, 403);
    assert.equal(bad.body.code, 'invalid_signature');

    const anon = await connectLive(`${wsBase}/${enc(r.did)}/anon`);
    const env = envelope(r.did);
    const res = await send(env);
    assert.equal(res.body.code, 'cached');
    assert.equal(res.body.delivery_mode, 'cache_fallback');
    assert.equal(await anon.frame(1), JSON.stringify(env), 'it was pushed (deployed receivers need this)');

    const owner = await connectLive(`${wsBase}/${enc(r.did)}/owner`, liveHeaders(r, 'owner', relayUrl));
    const res2 = await send(envelope(r.did));
    assert.equal(res2.body.code, 'delivered');
    assert.equal((res2.body.details as Body).live_sessions, 2);

    const full = await liveRefusal(`${wsBase}/${enc(other.did)}/x`, liveHeaders(other, 'x', relayUrl));
    assert.equal(full.status, 429);
    assert.equal(full.body.code, 'rate_limited');
    assert.equal(full.headers['retry-after'], '5');
    for (const s of [anon, owner]) {
      s.ws.close();
      await s.closed;
    }
  });

  it("delivers to a Relay-only recipient's proof-less session (the deployed clients' setup)", async () => {
    const s = await connectLive(`${wsBase}/${enc(relayOnly.did)}/app`);
    const env = envelope(relayOnly.did);
    const res = await send(env);
    assert.equal(res.status, 202);
    assert.equal(res.body.code, 'delivered');
    assert.equal(await s.frame(1), JSON.stringify(env));
    s.ws.close();
    await s.closed;
  });
});

describe('live sessions under --relay-live-auth off', () => {
  let node: TestNode;
  before(async () => {
    node = await startTestNode(['--relay-live-auth', 'off']);
  });
  after(() => node.stop());

  it('refuses every session: 404 live_sessions_disabled', async () => {
    const r = await registerRecipientAt(httpDirectory(node), 67, { cacheEndpoints: [node.urls.cache!] });
    const base = `${node.urls.relay!.replace('http://', 'ws://')}/ws/${enc(r.did)}/x`;
    for (const headers of [{}, liveProofHeaders(liveProof(r, 'x', node.urls.relay!))]) {
      const res = await liveRefusal(base, headers);
      assert.equal(res.status, 404);
      assert.equal(res.body.code, 'live_sessions_disabled');
    }
  });
});
