/**
 * A Relay-only and a Cache-only node (`--directory-url`) pass the request id on to the Directory: the Directory sits
 * behind a loopback proxy that records each lookup's `X-Request-Id` and the id the Directory answered with (its own
 * request's id, echoed). A store or relay request sent with `X-Request-Id` reaches the Directory's lookups with that
 * id — one relay request carries it through the Relay, the Cache it stores at and the Directory — and one sent
 * without reaches them with the id the node made up (the one echoed in its response); a live-session upgrade's
 * lookup carries the upgrade's id.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { toBase64 } from '../../src/base/bytes.js';
import { senderSigningBytes } from '../../src/protocol/sender-signature.js';
import { makeProfile } from '../../src/protocol/profile.js';
import { isoSeconds, proofHeaders, registerRecipientAt, type Recipient } from '../cache/harness.js';
import { httpDirectory } from '../cache/http-support.js';
import { kid } from '../support/directory-flows.js';
import { liveRefusal } from '../support/live.js';
import { directoryProxy, type ProxiedRequest } from '../support/directory-proxy.js';
import { startTestNode, type TestNode } from '../support/network.js';

const profile = makeProfile('platform');
const enc = encodeURIComponent;
const MADE_UP_ID = /^[a-z0-9]+-[a-z0-9]+$/;

/** A Directory lookup the proxy passed on (`/delivery-view/…`, `/aliases/…`). */
type Lookup = ProxiedRequest;
const isLookup = (r: ProxiedRequest): boolean => r.path.startsWith('/delivery-view/') || r.path.startsWith('/aliases/');

interface Answer {
  status: number;
  body: Record<string, unknown>;
  requestId: string | null;
}

async function send(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await fetch(url, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown>, requestId: res.headers.get('x-request-id') };
}

describe('Relay- and Cache-only nodes pass the request id on to the Directory', () => {
  let dir: TestNode;
  let proxy: Awaited<ReturnType<typeof directoryProxy>>;
  let cache: TestNode;
  let relay: TestNode;
  let r: Recipient;
  let sender: Recipient;

  before(async () => {
    dir = await startTestNode(['--roles', 'directory']);
    proxy = await directoryProxy(dir.urls.directory!);
    // every lookup asked anew (no reuse across requests), so each request's lookups reach the Directory
    cache = await startTestNode(['--roles', 'cache', '--directory-url', proxy.url, '--directory-view-ttl-ms', '0']);
    relay = await startTestNode(['--roles', 'relay', '--directory-url', proxy.url, '--directory-view-ttl-ms', '0', '--allow-private-endpoints']);
    await relay.identity.ready;
    r = await registerRecipientAt(httpDirectory(dir), 91, { cacheEndpoints: [cache.urls.cache!] });
    sender = await registerRecipientAt(httpDirectory(dir), 92, { cacheEndpoints: [cache.urls.cache!] });
  });
  after(async () => {
    await relay.stop();
    await cache.stop();
    await proxy.close();
    await dir.stop();
  });

  /** An envelope to `to`, signed by `sender`. */
  const envelope = (to: string): Record<string, unknown> => {
    const env: Record<string, unknown> = {
      message_id: randomUUID(),
      to,
      timestamp: isoSeconds(Date.now()),
      payload: { ciphertext_b64: Buffer.from(randomUUID()).toString('base64') },
    };
    env.sender_signature = toBase64(sender.key.sign(senderSigningBytes(profile, env)));
    env.sender = sender.did;
    env.sender_key_id = kid(sender.did, 'key-1');
    return env;
  };

  /** The lookups the Directory served while `run` ran. */
  const lookupsOf = async (run: () => Promise<Answer>): Promise<{ res: Answer; lookups: Lookup[] }> => {
    const before = proxy.requests.length;
    const res = await run();
    return { res, lookups: proxy.requests.slice(before).filter(isLookup) };
  };
  const paths = (lookups: readonly Lookup[]) => lookups.map((l) => l.path).sort();
  const everyOneUnder = (lookups: readonly Lookup[], id: string) => {
    assert.ok(lookups.length > 0, 'the Directory was asked');
    for (const l of lookups) assert.deepEqual({ path: l.path, sent: l.sent, served: l.served }, { path: l.path, sent: id, served: id });
  };

  it('a Cache store: the sender, the alias and the resolution, under the X-Request-Id sent, else the one made up', async () => {
    const sent = await lookupsOf(() => send(`${cache.urls.cache}/cache/store`, envelope(r.alias), { 'x-request-id': 'net-cache-store' }));
    assert.equal(sent.res.status, 202, JSON.stringify(sent.res.body));
    assert.equal(sent.res.requestId, 'net-cache-store');
    assert.deepEqual(paths(sent.lookups), [`/aliases/${r.alias}`, `/delivery-view/${enc(r.did)}`, `/delivery-view/${enc(sender.did)}`].sort());
    everyOneUnder(sent.lookups, 'net-cache-store');

    const none = await lookupsOf(() => send(`${cache.urls.cache}/cache/store`, envelope(r.did)));
    assert.equal(none.res.status, 202, JSON.stringify(none.res.body));
    assert.match(String(none.res.requestId), MADE_UP_ID);
    everyOneUnder(none.lookups, none.res.requestId!);
  });

  it("a Cache retrieval: the proof's DID record", async () => {
    const summary = (headers: Record<string, string> = {}) =>
      send(`${cache.urls.cache}/cache/summary/${enc(r.did)}`, undefined, {
        ...proofHeaders(profile, r, 'summary', '*', { endpoint: cache.urls.cache!, nowMs: Date.now() }),
        ...headers,
      });
    const sent = await lookupsOf(() => summary({ 'x-request-id': 'net-cache-summary' }));
    assert.equal(sent.res.status, 200, JSON.stringify(sent.res.body));
    assert.deepEqual(paths(sent.lookups), [`/delivery-view/${enc(r.did)}`]);
    everyOneUnder(sent.lookups, 'net-cache-summary');

    const none = await lookupsOf(() => summary());
    assert.equal(none.res.status, 200, JSON.stringify(none.res.body));
    assert.match(String(none.res.requestId), MADE_UP_ID);
    everyOneUnder(none.lookups, none.res.requestId!);
  });

  it("a relay request: the Relay's lookups and those of the Cache it stores at, all under the request's id", async () => {
    const sent = await lookupsOf(() => send(`${relay.urls.relay}/relay`, envelope(r.alias), { 'x-request-id': 'net-relay' }));
    assert.equal(sent.res.status, 202, JSON.stringify(sent.res.body));
    assert.equal(sent.res.body.code, 'cached');
    assert.equal(sent.res.requestId, 'net-relay');
    // the Relay: sender, alias, resolution; the Cache: the Relay's node DID, sender, alias, resolution
    const alias = `/aliases/${r.alias}`;
    const [recipient, signer, node] = [r.did, sender.did, relay.identity.did].map((d) => `/delivery-view/${enc(d)}`);
    assert.deepEqual(paths(sent.lookups), [alias, alias, recipient!, recipient!, signer!, signer!, node!].sort());
    everyOneUnder(sent.lookups, 'net-relay');

    const none = await lookupsOf(() => send(`${relay.urls.relay}/relay`, envelope(r.did)));
    assert.equal(none.res.status, 202, JSON.stringify(none.res.body));
    assert.match(String(none.res.requestId), MADE_UP_ID);
    assert.equal(none.lookups.length, 5, JSON.stringify(none.lookups));
    everyOneUnder(none.lookups, none.res.requestId!);
  });

  it("a live-session upgrade: the DID's record, under the upgrade's id", async () => {
    const url = `${relay.urls.relay!.replace('http://', 'ws://')}/ws/${enc(r.did)}/phone`;
    const before = proxy.requests.length;
    const refused = await liveRefusal(url, { 'X-Request-Id': 'net-live' });
    assert.equal(refused.body.code, 'live_proof_required', JSON.stringify(refused.body));
    assert.equal(refused.headers['x-request-id'], 'net-live');
    const lookups = proxy.requests.slice(before).filter(isLookup);
    assert.deepEqual(paths(lookups), [`/delivery-view/${enc(r.did)}`]);
    everyOneUnder(lookups, 'net-live');
  });
});
