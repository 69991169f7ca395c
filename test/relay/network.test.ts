/**
 * The three roles as separate nodes with real HTTP between them: a Directory, a Cache and a Relay, the latter
 * two asking the Directory through HttpDirectoryPort (`--directory-url`; the Relay is given a dead Directory URL
 * first and fails over to the live one, for lookups and for its node registration); loopback endpoints allowed with
 * `--allow-private-endpoints`. A sender posts to the Relay, the recipient retrieves from the Cache with signed
 * proofs and acknowledges; chunk sets; a Cache outage and recovery; a live WebSocket session; alias and persona
 * recipients; the Directory going away.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import { toBase64 } from '../../src/base/bytes.js';
import { DirectoryClient } from '../../src/client/directory-client.js';
import { makeProfile } from '../../src/protocol/profile.js';
import { senderSigningBytes } from '../../src/protocol/sender-signature.js';
import { ackBody, isoSeconds, proofHeaders, registerRecipientAt, type Recipient } from '../cache/harness.js';
import { fetchJson, httpDirectory, type FetchReply } from '../cache/http-support.js';
import { startTestNode, type TestNode } from '../support/network.js';
import { liveHeaders } from '../support/live.js';
import { registerNamedPersona } from './ledger-setup.js';

type Body = Record<string, unknown>;
const profile = makeProfile('platform');
const enc = encodeURIComponent;
/** Nothing listens on the discard port: connections are refused. */
const DEAD_DIRECTORY = 'http://127.0.0.1:9';

describe('Directory, Relay and Cache as separate nodes', () => {
  let dir: TestNode;
  let cache: TestNode;
  let relay: TestNode;
  let cacheDataDir: string;
  let cachePort: number;
  let r: Recipient;

  const startCache = (port = 0) => startTestNode(['--roles', 'cache', '--directory-url', dir.urls.directory!, '--cache-port', String(port)], cacheDataDir);

  before(async () => {
    dir = await startTestNode(['--roles', 'directory']);
    cache = await startTestNode(['--roles', 'cache', '--directory-url', dir.urls.directory!]);
    cacheDataDir = cache.dataDir;
    cachePort = Number(new URL(cache.urls.cache!).port);
    relay = await startTestNode(['--roles', 'relay', '--directory-url', `${DEAD_DIRECTORY},${dir.urls.directory!}`, '--allow-private-endpoints']);
    await relay.identity.ready;
    r = await registerRecipientAt(httpDirectory(dir), 61, { cacheEndpoints: [cache.urls.cache!] });
  });
  after(async () => {
    await relay.stop();
    await cache.stop();
    await dir.stop();
  });

  const envelope = (to: string, over: Body = {}): Body => ({
    message_id: randomUUID(),
    to,
    tag: 'invoice',
    timestamp: isoSeconds(Date.now()),
    payload: { ciphertext_b64: Buffer.from(randomUUID()).toString('base64') },
    ...over,
  });
  const send = (body: Body, path = '/relay') => fetchJson(`${relay.urls.relay}${path}`, { body });
  const proof = (op: Parameters<typeof proofHeaders>[2], subject: string) =>
    proofHeaders(profile, r, op, subject, { endpoint: cache.urls.cache!, nowMs: Date.now() });
  const pull = () => fetchJson(`${cache.urls.cache}/cache/messages/${enc(r.did)}`, { headers: proof('pull', '*') });
  const ids = (res: FetchReply) => (res.body.messages as Body[]).map((m) => m.message_id);
  const details = (res: FetchReply) => res.body.details as Body;

  it('registered the Relay node DID at the remote Directory through the SDK', async () => {
    const rec = await new DirectoryClient(dir.urls.directory!).resolve(relay.identity.did);
    const service = rec.document?.service.find((s) => s.id === `${relay.identity.did}#relay`);
    assert.deepEqual(service?.serviceEndpoint, [relay.urls.relay]);
    assert.equal(service?.type, 'PlatformRelayService');
    assert.deepEqual(service?.authorization, [`${relay.identity.did}#node`]);
  });

  it('delivers a sender-signed envelope to the Cache; the recipient retrieves it with a proof and acknowledges', async () => {
    const env = envelope(r.did);
    const signed = { ...env, sender: r.did, sender_key_id: 'root', sender_signature: toBase64(r.key.sign(senderSigningBytes(profile, env))) };
    const res = await send(signed);
    assert.equal(res.status, 202, JSON.stringify(res.body));
    assert.equal(res.body.code, 'cached');
    assert.equal(res.body.delivery_mode, 'cache_fallback');
    assert.deepEqual(details(res).accepted_caches, [cache.urls.cache]);

    const got = await pull();
    assert.equal(got.status, 200, JSON.stringify(got.body));
    const item = (got.body.messages as Body[]).find((m) => m.message_id === env.message_id)!;
    const { expires_at: _e, ...stored } = item.envelope as Body;
    void _e;
    assert.deepEqual(stored, signed, 'the envelope exactly as the sender submitted it');

    const p = proof('ack', String(env.message_id));
    const ack = await fetchJson(`${cache.urls.cache}/cache/ack`, {
      body: ackBody(p, r.did, [String(env.message_id)]),
    });
    assert.deepEqual(ack.body, { acked: 1, message_ids: [env.message_id] });
    assert.ok(!ids(await pull()).includes(env.message_id));
    const retry = await send(signed);
    assert.deepEqual(retry.body, res.body, 'an identical retry answers the stored result');
  });

  it('stages a 3-part set, replays an identical chunk, delivers the whole set', async () => {
    const group = randomUUID();
    const chunks = [0, 1, 2].map((seq) => envelope(r.did, { message_group_id: group, sequence_number: seq, total_chunks: 3 }));
    assert.equal((await send(chunks[0]!)).body.code, 'chunk_staged');
    const one = await send(chunks[1]!);
    assert.equal(one.body.code, 'chunk_staged');
    const replay = await send(chunks[1]!);
    assert.equal(replay.status, 202);
    assert.equal(details(replay).received_chunks, 2);
    const done = await send(chunks[2]!);
    assert.equal(done.status, 202, JSON.stringify(done.body));
    assert.equal(done.body.code, 'chunk_set_delivered');
    const set = await fetchJson(`${cache.urls.cache}/cache/chunks/${enc(r.did)}/${group}`, { headers: proof('chunks', group) });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    assert.deepEqual(
      (set.body.chunks as Body[]).map((c) => c.message_id),
      chunks.map((c) => c.message_id),
    );
  });

  it('sends an 18-chunk set out of order: nothing is retrievable before its last chunk, then the whole set', async () => {
    const group = randomUUID();
    const chunks = Array.from({ length: 18 }, (_v, seq) => envelope(r.did, { message_group_id: group, sequence_number: seq, total_chunks: 18 }));
    const order = [17, 3, 9, 0, 12, 5, 16, 1, 8, 14, 2, 11, 6, 15, 4, 13, 10, 7];
    const chunksOf = () => fetchJson(`${cache.urls.cache}/cache/chunks/${enc(r.did)}/${group}`, { headers: proof('chunks', group) });
    for (const [i, seq] of order.entries()) {
      const res = await send(chunks[seq]!);
      assert.equal(res.status, 202, JSON.stringify(res.body));
      if (i < order.length - 1) {
        assert.equal(res.body.code, 'chunk_staged');
        assert.equal(details(res).received_chunks, i + 1);
        assert.equal(details(res).expected_chunks, 18);
      } else {
        assert.equal(res.body.code, 'chunk_set_delivered');
      }
      if (i === order.length - 2) {
        assert.equal((await chunksOf()).status, 404, 'an incomplete set is not retrievable');
        assert.ok(!ids(await pull()).some((id) => chunks.some((c) => c.message_id === id)));
      }
    }
    const set = await chunksOf();
    assert.equal(set.status, 200, JSON.stringify(set.body));
    assert.equal(set.body.complete, true);
    assert.deepEqual(
      (set.body.chunks as Body[]).map((c) => c.sequence_number),
      [...Array(18).keys()],
    );
    assert.deepEqual(
      (set.body.chunks as Body[]).map((c) => c.message_id),
      chunks.map((c) => c.message_id),
    );
  });

  it('answers 502 while the Cache is down and redelivers the staged set once it is back', async () => {
    await cache.stop(true);
    const group = randomUUID();
    const chunks = [0, 1].map((seq) => envelope(r.did, { message_group_id: group, sequence_number: seq, total_chunks: 2 }));
    assert.equal((await send(chunks[0]!)).body.code, 'chunk_staged');
    const down = await send(chunks[1]!);
    assert.equal(down.status, 502, JSON.stringify(down.body));
    assert.equal(down.body.code, 'upstream_unavailable');
    assert.equal(down.body.http_status, 502);
    assert.equal(down.body.cache_attempted, true);
    assert.deepEqual(details(down).attempted_caches, [cache.urls.cache]);
    assert.ok((down.body.retry_count as number) >= 1);

    cache = await startCache(cachePort);
    assert.equal(cache.urls.cache, `http://127.0.0.1:${cachePort}`);
    const back = await send(chunks[0]!);
    assert.equal(back.status, 202, JSON.stringify(back.body));
    assert.equal(back.body.code, 'chunk_set_delivered');
    const set = await fetchJson(`${cache.urls.cache}/cache/chunks/${enc(r.did)}/${group}`, { headers: proof('chunks', group) });
    assert.equal((set.body.chunks as Body[]).length, 2);
  });

  it('pushes an unchunked envelope to a connected WebSocket at once; the Cache copy stays', async () => {
    const ws = new WebSocket(`${relay.urls.relay!.replace('http', 'ws')}/ws/${enc(r.did)}/${enc('phone/1')}`, {
      headers: liveHeaders(r, 'phone/1', relay.urls.relay!),
    });
    const frames: string[] = [];
    const welcome = new Promise<void>((resolve, reject) => {
      ws.on('message', (data: Buffer) => {
        frames.push(data.toString('utf8'));
        if (frames.length === 1) resolve();
      });
      ws.on('error', reject);
    });
    await welcome;
    assert.equal(frames[0], JSON.stringify({ type: 'welcome', status: 'ok', connectionKey: `${r.did}::phone/1` }));
    assert.equal(frames[0], `{"type":"welcome","status":"ok","connectionKey":"${r.did}::phone/1"}`);
    const env = envelope(r.did);
    const text = JSON.stringify(env);
    const second = new Promise<string>((resolve) => ws.once('message', (d: Buffer) => resolve(d.toString('utf8'))));
    const res = await fetch(`${relay.urls.relay}/relay`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: text });
    const result = (await res.json()) as Body;
    assert.equal(res.status, 202);
    assert.equal(result.code, 'delivered');
    assert.equal(result.delivery_mode, 'direct');
    assert.equal((result.details as Body).live_sessions, 1);
    assert.equal(await second, text, 'the bare envelope, byte for byte');
    assert.ok(ids(await pull()).includes(env.message_id), 'the Cache copy is still retrievable');
    ws.close();
  });

  it('delivers to an alias and to a live @persona; an unknown persona is 422 persona_not_deliverable', async () => {
    registerNamedPersona(dir.ledger, r, 'acme');
    httpDirectory(dir).settle();
    for (const to of [r.alias, `${r.did}@acme`, `${r.alias}@ACME`]) {
      const res = await send(envelope(to));
      assert.equal(res.status, 202, `${to}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.code, 'cached');
    }
    const unknown = await send(envelope(`${r.did}@nobody`));
    assert.equal(unknown.status, 422);
    assert.equal(unknown.body.code, 'persona_not_deliverable');
    const mismatch = await send(envelope(r.alias), `/relay/${enc(r.did)}`);
    assert.equal(mismatch.body.code, 'recipient_mismatch');
  });

  it('answers 503 policy_lookup_failed when the Directory is unreachable, never falling through', async () => {
    await dir.stop(true);
    // a tag this Relay never resolved: its short-lived cache of Directory answers (src/adapters/directory-view-cache.ts)
    // holds nothing for it, so the lookup is made and fails
    const res = await send(envelope(r.did, { tag: `outage-${randomUUID()}` }));
    assert.equal(res.status, 503, JSON.stringify(res.body));
    assert.equal(res.body.code, 'policy_lookup_failed');
    assert.equal(res.body.http_status, 503);
    assert.equal(res.body.success, false);
    assert.equal(res.body.cache_attempted, false);
  });
});
