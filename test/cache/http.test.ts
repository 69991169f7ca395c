/** The Cache inside a whole node (src/app/node.ts) over real HTTP: store, node-signed store, retrieve, ack, events. */
import { checkContract, stopChecking, urlsOf } from '../support/contract-check.js';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { loadConfig } from '../../src/app/config.js';
import { startNode, type RunningNode } from '../../src/app/node.js';
import type { CacheStoredEvent } from '../../src/cache/events.js';
import { signNodeRequest } from '../../src/protocol/node-signature.js';
import { makeProfile } from '../../src/protocol/profile.js';
import { didOf, keyOf, kid, registerDid, vmOf } from '../support/directory-flows.js';
import type { DirectoryHarness } from '../support/directory-harness.js';
import { isoSeconds, proofHeaders, registerRecipientAt, type Recipient } from './harness.js';
import { fetchJson, httpDirectory } from './http-support.js';

const enc = encodeURIComponent;
type Body = Record<string, unknown>;

describe('Cache role of a node over HTTP', () => {
  let dataDir: string;
  let node: RunningNode;
  let cacheUrl: string;
  let r: Recipient;
  const events: CacheStoredEvent[] = [];
  const profile = makeProfile('platform');

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'ddn-cache-http-'));
    const config = loadConfig(['--data-dir', dataDir, '--roles', 'directory,cache', '--directory-port', '0', '--cache-port', '0'], {});
    node = await startNode(config, { logger: pino({ level: 'silent' }), autoProduce: false });
    // every answer read here is checked against the node's OpenAPI documents (test/support/contract-check.ts)
    await checkContract(urlsOf(node));
    cacheUrl = node.urls.cache!;
    assert.deepEqual(node.publicUrls.cache, [cacheUrl]);
    node.cache!.events.on('CacheStored', (e) => events.push(e));
    r = await registerRecipientAt(httpDirectory(node), 71, { cacheEndpoints: [cacheUrl] });
  });
  after(async () => {
    await node.close();
    rmSync(dataDir, { recursive: true, force: true });
    stopChecking(urlsOf(node));
  });

  const proof = (op: Parameters<typeof proofHeaders>[2], subject: string) => proofHeaders(profile, r, op, subject, { endpoint: cacheUrl, nowMs: Date.now() });
  const envelope = (over: Body = {}): Body => ({
    message_id: randomUUID(),
    to: r.did,
    timestamp: isoSeconds(Date.now()),
    payload: { ciphertext_b64: Buffer.from('hello over http').toString('base64') },
    ...over,
  });

  it('stores, lists, fetches and acknowledges', async () => {
    const env = envelope({ tag: 'greeting' });
    const stored = await fetchJson(`${cacheUrl}/cache/store`, { body: env });
    assert.equal(stored.status, 202, JSON.stringify(stored.body));
    assert.equal(stored.body.accepted, true);
    assert.equal(events.at(-1)?.message_id, env.message_id);
    assert.equal(events.at(-1)?.endpoint, cacheUrl);

    const list = await fetchJson(`${cacheUrl}/cache/messages/${enc(r.did)}`, { headers: proof('pull', '*') });
    assert.equal(list.status, 200, JSON.stringify(list.body));
    const msgs = list.body.messages as Body[];
    assert.equal(list.body.count, 1);
    assert.deepEqual(msgs[0].envelope, { ...env, expires_at: stored.body.expires_at });

    const sum = await fetchJson(`${cacheUrl}/cache/summary/${enc(r.did)}/laptop`, {
      headers: { ...proofHeaders(profile, r, 'summary', '*', { endpoint: cacheUrl, nowMs: Date.now(), deviceId: 'laptop' }), 'x-device-id': 'laptop' },
    });
    assert.equal(sum.status, 200, JSON.stringify(sum.body));
    assert.equal(sum.body.count, 1);

    const id = env.message_id as string;
    const ack = proof('ack', id);
    const acked = await fetchJson(`${cacheUrl}/cache/ack`, {
      body: {
        did: r.did,
        device_id: '',
        service_id: ack['X-Service-Id'],
        cache_endpoint: ack['X-Cache-Endpoint'],
        key_id: ack['X-Key-Id'],
        timestamp: ack['X-Timestamp'],
        nonce: ack['X-Nonce'],
        signature_b64: ack['X-Signature'],
        message_ids: [id],
      },
      headers: { 'X-Recipient-DID': r.did },
    });
    assert.deepEqual(acked.body, { acked: 1, message_ids: [id] });
    const gone = await fetchJson(`${cacheUrl}/cache/message/${enc(r.did)}/${id}`, { headers: proof('pull_message', id) });
    assert.equal(gone.status, 404);
    assert.equal(gone.body.code, 'message_not_found');
    const limits = await fetchJson(`${cacheUrl}/cache/limits`);
    assert.equal(limits.body.max_http_envelope_bytes, 26_214_400);
  });

  it('accepts a node-signed store against its public URL and refuses one signed for another URL', async () => {
    const seed = 72;
    const did = didOf(seed);
    const key = keyOf(seed);
    await registerDid(httpDirectory(node) as DirectoryHarness, seed, {
      did,
      key,
      document: {
        id: did,
        verificationMethod: [vmOf(did, 'key-1', key)],
        authentication: [kid(did, 'key-1')],
        service: [{ id: kid(did, 'relay'), type: 'PlatformRelayService', serviceEndpoint: ['https://relay.example.net'], authorization: [kid(did, 'key-1')] }],
      },
    });
    const identity = { did, serviceId: kid(did, 'relay'), keyId: kid(did, 'key-1'), key };
    const send = (url: string) => {
      const body = JSON.stringify(envelope());
      const headers = signNodeRequest(profile, identity, { method: 'POST', url, body, timestamp: isoSeconds(Date.now()), nonce: randomUUID() });
      return fetchJson(`${cacheUrl}/cache/store`, { body, headers });
    };
    const ok = await send(`${cacheUrl}/cache/store`);
    assert.equal(ok.status, 202, JSON.stringify(ok.body));
    const wrong = await send('https://cache.elsewhere.net/cache/store');
    assert.equal(wrong.status, 403);
    assert.equal((wrong.body.details as Body).reason, 'bad_signature');
  });

  it('exposes sweep() and settle() on the node', async () => {
    await node.cache!.settle();
    const swept = await node.cache!.sweep();
    assert.equal(swept.expiredEntries, 0);
  });
});
