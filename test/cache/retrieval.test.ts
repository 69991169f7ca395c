/** Retrieval proofs (http-api.md §11.4), the retrieval routes (§11.5) and acknowledgement (§11.6). */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { parseHex } from '../../src/base/bytes.js';
import { DdnError } from '../../src/base/errors.js';
import { verifyRetrievalProof } from '../../src/cache/proof-verifier.js';
import { keyPairFromSeed } from '../../src/crypto/ed25519.js';
import type { DidDocument } from '../../src/protocol/document.js';
import { PLATFORM } from '../../src/protocol/profile.js';
import { ackSubject } from '../../src/protocol/retrieval-proof.js';
import { kid } from '../support/directory-flows.js';
import { CACHE_URL, OTHER_CACHE_URL, ackBody, expectError, isoSeconds, startCache, type CacheHarness, type Recipient } from './harness.js';
import { injectChecked } from '../support/inject-contract.js';

const enc = encodeURIComponent;
type Body = Record<string, unknown>;

describe('retrieval proof vector (§13.2)', () => {
  const did = 'did:platform:8DfbjXLth7APvt3qQPgtf';
  const key = keyPairFromSeed(new Uint8Array(32).fill(7));
  const document: DidDocument = {
    id: did,
    verificationMethod: [
      { id: `${did}#root`, type: 'Ed25519VerificationKey2020', controller: did, publicKeyMultibase: 'zGmaDrppBC7P5ARKV8g3djiwP89vz1jLK23V2GBjuAEGB' },
    ],
    authentication: [`${did}#root`],
    keyAgreement: [],
    service: [
      { id: `${did}#cache`, type: 'PlatformCacheService', serviceEndpoint: ['https://cache.example.com'], authorization: [`${did}#root`], priority: null },
    ],
  };
  const proof = {
    did,
    deviceId: '',
    serviceId: `${did}#cache`,
    cacheEndpoint: 'https://cache.example.com',
    keyId: `${did}#root`,
    timestamp: '2026-07-16T12:00:00Z',
    nonce: '0b7e6c1a-2f3d-4c5b-9a8e-7d6c5b4a3f2e',
    signature: 'uQmqcO9BjfaJ9jtVSEX0am27/E7laSrQa8ZvSN49FroAnZvDFdh9gB4wOtW2YxXXlWOlJMK6cHWiDpJQVyAiAA==',
  };
  const nowMs = Date.parse('2026-07-16T12:02:00Z');
  const check = (over: Partial<typeof proof> = {}, doc: DidDocument = document) =>
    verifyRetrievalProof({
      profile: PLATFORM,
      operation: 'summary',
      subject: '*',
      proof: { ...proof, ...over },
      record: { deactivated: false, document: doc },
      publicCacheUrls: ['https://cache.example.com/'],
      nowMs,
      skewSeconds: 300,
    });

  it('verifies the published signature and returns the nonce claim', () => {
    assert.deepEqual(Buffer.from(key.publicKey).toString('hex'), 'ea4a6c63e29c520abef5507b132ec5f9954776aebebe7b92421eea691446d22c');
    assert.deepEqual(check(), {
      scope: 'proof:summary',
      did,
      keyId: `${did}#root`,
      nonce: proof.nonce,
      expiresAtMs: nowMs + 300_000,
    });
    // URL-safe Base64 of the same signature
    assert.ok(check({ signature: proof.signature.replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '') }));
    assert.ok(check({ cacheEndpoint: 'https://cache.example.com/' }), 'one trailing slash is ignored');
    assert.equal(ackSubject(['b', 'a', 'b']), 'a,b');
    assert.equal(ackSubject(['\u{1F600}', '\uFFFF']), '\uFFFF,\u{1F600}', 'code-point order, not UTF-16 order');
  });

  it('takes service authorization as its own reference: authentication neither adds nor is required', () => {
    const root = `${did}#root`;
    const withService = (authorization: string[] | null, authentication: string[] | null): DidDocument => ({
      ...document,
      authentication,
      service: [{ ...document.service![0]!, authorization }],
    });
    assert.ok(check({}, withService([root], null)), 'no authentication list');
    assert.ok(check({}, withService([root], [])), 'an empty authentication list');
    assert.ok(check({}, withService([root], [`${did}#other`])), 'authorised by the service though not in authentication');
    const refused = (e: unknown) => e instanceof DdnError && e.code === 'key_not_authorized';
    assert.throws(() => check({}, withService([`${did}#other`], [root])), refused, 'in authentication only');
    assert.throws(() => check({}, withService([], [root])), refused, 'an empty authorization authorises no key');
    assert.throws(() => check({}, withService(null, [root])), refused, 'a service without authorization authorises no key');
  });

  it('refuses a VM whose controller is another DID, and a tampered signature', () => {
    const foreign: DidDocument = {
      ...document,
      verificationMethod: [{ ...document.verificationMethod[0], controller: 'did:platform:1111111111111111' }],
    };
    assert.throws(
      () => check({}, foreign),
      (e: unknown) => e instanceof DdnError && e.code === 'key_not_authorized',
    );
    const sig = parseHex(Buffer.from(proof.signature, 'base64').toString('hex'))!;
    sig[0] ^= 1;
    assert.throws(
      () => check({ signature: Buffer.from(sig).toString('base64') }),
      (e: unknown) => e instanceof DdnError && e.code === 'invalid_signature',
    );
    assert.throws(
      () => check({ nonce: 'another' }),
      (e: unknown) => e instanceof DdnError && e.code === 'invalid_signature',
    );
  });
});

describe('retrieval routes', () => {
  let h: CacheHarness;
  let r: Recipient;
  let other: Recipient;
  before(async () => {
    h = await startCache();
    r = await h.registerRecipient(21);
    other = await h.registerRecipient(22);
  });
  after(() => h.close());

  const store = async (to: Recipient, over: Body = {}) => {
    const env = h.envelope(to.did, over);
    const res = await h.storeRaw(env);
    assert.equal(res.status, 202, res.text);
    return { env, res };
  };

  it("GET /cache/messages returns only the DID's own visible messages, in store order", async () => {
    const a = await store(r, { application_id: 'app.a' });
    h.clock.advance(1000);
    const b = await store(r);
    await store(other);
    const res = await h.pull(r);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.did, r.did);
    assert.equal(res.body.truncated, false);
    const msgs = res.body.messages as Body[];
    assert.equal(res.body.count, msgs.length);
    assert.deepEqual(
      msgs.map((m) => m.message_id),
      [a.env.message_id, b.env.message_id],
    );
    const m = msgs[0];
    assert.deepEqual(Object.keys(m), ['message_id', 'recipient', 'expires_at', 'chunked', 'envelope', 'proof']);
    assert.equal(m.recipient, r.did);
    assert.equal(m.chunked, false);
    assert.equal(m.expires_at, a.res.body.expires_at);
    assert.deepEqual(m.envelope, { ...a.env, expires_at: a.res.body.expires_at });
    assert.deepEqual(m.proof, {
      event_type: 'retrieval',
      message_id: a.env.message_id,
      recipient_did: r.did,
      timestamp: new Date(h.clock.nowMs()).toISOString(),
    });
    // retrieval deletes nothing
    assert.equal(((await h.pull(r)).body.messages as Body[]).length, 2);
    const theirs = await h.pull(other);
    assert.equal(theirs.body.count, 1);
  });

  it('answers repeated polls from the read cache, each with its own proof time, and sees every store and ack at once', async () => {
    const ids = async () => ((await h.pull(r)).body.messages as Body[]).map((m) => m.message_id as string);
    const summaryIds = async () => ((await h.summary(r)).body.messages as Body[]).map((m) => m.message_id as string);
    const before = await ids();
    const hits = h.store.readCacheStats.hits;
    h.clock.advance(1_234);
    const again = await h.pull(r);
    assert.equal(again.status, 200, again.text);
    assert.ok(h.store.readCacheStats.hits > hits, 'the unchanged mailbox was answered from memory');
    const stamp = new Date(h.clock.nowMs()).toISOString();
    for (const m of again.body.messages as Body[]) assert.equal((m.proof as Body).timestamp, stamp);
    assert.deepEqual(
      (again.body.messages as Body[]).map((m) => m.message_id),
      before,
    );
    await summaryIds();
    const added = await store(r);
    const id = added.env.message_id as string;
    assert.deepEqual(await ids(), [...before, id], 'a store shows on the next pull');
    assert.deepEqual(await summaryIds(), [...before, id], 'and on the next summary');
    assert.equal((await h.ack(r, [id])).status, 200);
    assert.deepEqual(await ids(), before, 'an acknowledged copy is gone from the next pull');
    assert.deepEqual(await summaryIds(), before, 'and from the next summary');
  });

  it("never returns another DID's messages, whatever the headers say", async () => {
    // other's key signing a proof for r's DID
    const forged = h.proof(r, 'pull', '*', { keyId: other.keyId, key: other.key });
    expectError(await h.get(`/cache/messages/${enc(r.did)}`, forged), 403, 'key_not_authorized');
    // other's valid proof presented on r's path
    const theirs = h.proof(other, 'pull', '*');
    expectError(await h.get(`/cache/messages/${enc(r.did)}`, theirs), 403, 'cache_service_not_found');
    expectError(await h.get(`/cache/messages/${enc(r.did)}`, { ...h.proof(other, 'pull', '*'), 'X-Recipient-DID': other.did }), 400, 'proof_header_mismatch');
    // r's own proof with r's service id but signed for the other DID's path
    const crossed = h.proof(r, 'pull', '*', { did: other.did });
    expectError(await h.get(`/cache/messages/${enc(r.did)}`, crossed), 403, 'invalid_signature');
  });

  it('summary and single-message routes', async () => {
    const { env, res: stored } = await store(r, { tag: 'note', application_id: 'app.b' });
    const sum = await h.summary(r);
    assert.equal(sum.status, 200, sum.text);
    const items = sum.body.messages as Body[];
    assert.equal(sum.body.count, items.length);
    const item = items.find((i) => i.message_id === env.message_id)!;
    assert.deepEqual(item, {
      message_id: env.message_id,
      chunked: false,
      expires_at: stored.body.expires_at,
      stored_at: new Date(h.clock.nowMs()).toISOString(),
      size_bytes: Buffer.byteLength(JSON.stringify(env)),
      tag: 'note',
      application_id: 'app.b',
    });
    const dev = await h.get(`/cache/summary/${enc(r.did)}/${enc('phone/1')}`, h.proof(r, 'summary', '*', { deviceId: 'phone/1' }));
    assert.equal(dev.status, 200, dev.text);
    assert.equal(dev.body.count, sum.body.count, 'the device does not filter');
    expectError(
      await h.get(`/cache/summary/${enc(r.did)}/phone`, { ...h.proof(r, 'summary', '*', { deviceId: 'phone' }), 'X-Device-Id': 'tablet' }),
      400,
      'proof_header_mismatch',
    );
    expectError(await h.get(`/cache/summary/${enc(r.did)}/phone`, h.proof(r, 'summary', '*')), 403, 'invalid_signature');

    const id = env.message_id as string;
    const one = await h.get(`/cache/message/${enc(r.did)}/${id}`, h.proof(r, 'pull_message', id));
    assert.equal(one.status, 200, one.text);
    assert.equal(one.body.state, 'active');
    assert.equal((one.body.message as Body).message_id, id);
    expectError(await h.get(`/cache/message/${enc(r.did)}/${id}`, h.proof(r, 'pull_message', '*')), 403, 'invalid_signature');
    const missing = randomUUID();
    const missingProof = h.proof(r, 'pull_message', missing);
    expectError(await h.get(`/cache/message/${enc(r.did)}/${missing}`, missingProof), 404, 'message_not_found');
    // the 404 used the nonce up (step 9 comes before the lookup), and a replay is refused as one before it 404s
    expectError(await h.get(`/cache/message/${enc(r.did)}/${missing}`, missingProof), 409, 'proof_nonce_replayed');
    // another DID's message by id
    const { env: theirs } = await store(other);
    const tid = theirs.message_id as string;
    expectError(await h.get(`/cache/message/${enc(r.did)}/${tid}`, h.proof(r, 'pull_message', tid)), 404, 'message_not_found');
    expectError(await h.get(`/cache/messages/not-a-did`, h.proof(r, 'pull', '*')), 400, 'invalid_did');
  });

  it('checks the proof in the order of §11.4, each failure with its own code', async () => {
    const path = `/cache/messages/${enc(r.did)}`;
    const pull = (over: Parameters<CacheHarness['proof']>[3] = {}, extra: Record<string, string | undefined> = {}) => {
      const headers: Record<string, string> = { ...h.proof(r, 'pull', '*', over) };
      for (const [k, v] of Object.entries(extra)) {
        if (v === undefined) delete headers[k];
        else headers[k] = v;
      }
      return h.get(path, headers);
    };
    for (const header of ['X-Service-Id', 'X-Cache-Endpoint', 'X-Key-Id', 'X-Timestamp', 'X-Nonce', 'X-Signature']) {
      const res = await pull({}, { [header]: undefined });
      expectError(res, 400, 'missing_proof_header');
      assert.equal((res.body.details as Body).header, header);
      expectError(await pull({}, { [header]: '' }), 400, 'missing_proof_header');
    }
    expectError(await pull({}, { 'X-Recipient-DID': other.did }), 400, 'proof_header_mismatch');
    assert.equal((await pull({}, { 'X-Recipient-DID': r.did })).status, 200);
    expectError(await pull({ timestamp: 'soon' }), 400, 'invalid_proof_header');
    const now = h.clock.nowMs();
    expectError(await pull({ timestamp: isoSeconds(now + 301_000) }), 403, 'proof_timestamp_out_of_window');
    expectError(await pull({ timestamp: isoSeconds(now - 301_000) }), 403, 'proof_timestamp_out_of_window');
    const iso = (ms: number) => new Date(ms).toISOString();
    expectError(await pull({ timestamp: iso(now + 300_001) }), 403, 'proof_timestamp_out_of_window');
    expectError(await pull({ timestamp: iso(now - 300_001) }), 403, 'proof_timestamp_out_of_window');
    assert.equal((await pull({ timestamp: iso(now + 300_000) })).status, 200, 'the window includes its edges');
    assert.equal((await pull({ timestamp: iso(now - 300_000) })).status, 200);
    assert.equal((await pull({ timestamp: String(Math.floor(now / 1000)) })).status, 200, 'epoch seconds');
    assert.equal((await pull({ timestamp: String(now) })).status, 200, 'epoch ms');
    expectError(await pull({ nonce: 'x'.repeat(129) }), 400, 'invalid_proof_header');
    expectError(await pull({ nonce: 'bad\u00e9' }), 400, 'invalid_proof_header');
    const ghost = 'did:platform:1111111111111111';
    expectError(await h.get(`/cache/messages/${ghost}`, h.proof(r, 'pull', '*', { did: ghost })), 404, 'did_not_found');
    expectError(await pull({ serviceId: r.archiveServiceId }), 403, 'cache_service_not_found');
    expectError(await pull({ serviceId: kid(r.did, 'nope') }), 403, 'cache_service_not_found');
    expectError(await pull({ endpoint: OTHER_CACHE_URL }), 403, 'cache_endpoint_mismatch');
    assert.equal((await pull({ endpoint: `${CACHE_URL}/` })).status, 200, 'one trailing slash ignored');
    expectError(await pull({ endpoint: `${CACHE_URL}//` }), 403, 'cache_endpoint_mismatch');
    assert.equal((await pull({ keyId: kid(r.did, 'key-2'), key: r.key2 })).status, 200, 'authorised by the service, not in authentication');
    expectError(await pull({ keyId: kid(r.did, 'key-3'), key: r.key3 }), 403, 'key_not_authorized');
    expectError(await pull({ keyId: kid(r.did, 'key-4'), key: r.key4 }), 403, 'key_not_authorized');
    expectError(await pull({ keyId: kid(r.did, 'key-9') }), 403, 'key_not_authorized');
    expectError(await pull({}, { 'X-Signature': 'AAAA' }), 400, 'invalid_proof_header');
    expectError(await pull({}, { 'X-Signature': '!!!' }), 400, 'invalid_proof_header');
    expectError(await pull({ key: r.key2 }), 403, 'invalid_signature');
    const signed = h.proof(r, 'pull', '*');
    expectError(await h.get(path, { ...signed, 'X-Nonce': randomUUID() }), 403, 'invalid_signature');
    expectError(await h.get(path, { ...signed, 'X-Timestamp': isoSeconds(now + 1000) }), 403, 'invalid_signature');
  });

  it("the Cache service's authorization decides alone: a key it lists retrieves and acknowledges, one it does not is refused", async () => {
    const { env } = await store(r);
    const id = env.message_id as string;
    const k2 = { keyId: kid(r.did, 'key-2'), key: r.key2 }; // in the service's authorization, not in authentication
    const k3 = { keyId: kid(r.did, 'key-3'), key: r.key3 }; // in authentication, not in the service's authorization
    const routes = [
      ['summary', `/cache/summary/${enc(r.did)}`, '*'],
      ['pull', `/cache/messages/${enc(r.did)}`, '*'],
      ['pull_message', `/cache/message/${enc(r.did)}/${id}`, id],
    ] as const;
    for (const [operation, path, subject] of routes) {
      const ok = await h.get(path, h.proof(r, operation, subject, k2));
      assert.equal(ok.status, 200, `${operation}: ${ok.text}`);
      expectError(await h.get(path, h.proof(r, operation, subject, k3)), 403, 'key_not_authorized');
    }
    expectError(await h.ack(r, [id], k3), 403, 'key_not_authorized');
    const acked = await h.ack(r, [id], k2);
    assert.equal(acked.status, 200, acked.text);
    assert.deepEqual(acked.body, { acked: 1, message_ids: [id] });
  });

  it('a refused signature leaves its nonce unused (the claim recorded meanwhile is released)', async () => {
    for (const [operation, path] of [
      ['pull', `/cache/messages/${enc(r.did)}`],
      ['summary', `/cache/summary/${enc(r.did)}`],
    ] as const) {
      const nonce = randomUUID();
      expectError(await h.get(path, h.proof(r, operation, '*', { nonce, key: r.key2 })), 403, 'invalid_signature');
      // refused twice: the first refusal did not use the nonce up either
      expectError(await h.get(path, h.proof(r, operation, '*', { nonce, key: r.key2 })), 403, 'invalid_signature');
      const good = h.proof(r, operation, '*', { nonce });
      assert.equal((await h.get(path, good)).status, 200, `${operation}: the nonce of the refused proofs is still usable`);
      expectError(await h.get(path, good), 409, 'proof_nonce_replayed');
      // step 8 before step 9: a bad signature over a used nonce is still 403, and does not free the nonce
      expectError(await h.get(path, h.proof(r, operation, '*', { nonce, key: r.key2 })), 403, 'invalid_signature');
      expectError(await h.get(path, good), 409, 'proof_nonce_replayed');
    }
  });

  it('a nonce that cannot be recorded for a full disk is 507 insufficient_storage, and the document lists it', async () => {
    const claim = h.store.claimNonce.bind(h.store);
    h.store.claimNonce = () => Promise.reject(Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' }));
    try {
      expectError(await h.get(`/cache/messages/${enc(r.did)}`, h.proof(r, 'pull', '*')), 507, 'insufficient_storage');
      expectError(await h.get(`/cache/summary/${enc(r.did)}`, h.proof(r, 'summary', '*')), 507, 'insufficient_storage');
    } finally {
      h.store.claimNonce = claim;
    }
    assert.equal((await h.get(`/cache/messages/${enc(r.did)}`, h.proof(r, 'pull', '*'))).status, 200, 'served again once the nonce is recorded');
    const doc = (await injectChecked(h.server, { method: 'GET', url: '/openapi.json' })).json() as {
      paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
    };
    for (const [path, method] of [
      ['/cache/messages/{did}', 'get'],
      ['/cache/summary/{did}', 'get'],
      ['/cache/ack', 'post'],
    ] as const) {
      assert.match(JSON.stringify(doc.paths[path]?.[method]?.responses['507']), /insufficient_storage/, `${method} ${path}`);
    }
  });

  it('accepts a nonce once per (operation, DID, key id) and remembers it (409 proof_nonce_replayed)', async () => {
    const nonce = randomUUID();
    const headers = h.proof(r, 'pull', '*', { nonce });
    assert.equal((await h.get(`/cache/messages/${enc(r.did)}`, headers)).status, 200);
    expectError(await h.get(`/cache/messages/${enc(r.did)}`, headers), 409, 'proof_nonce_replayed');
    // a different operation with the same nonce is another proof
    assert.equal((await h.get(`/cache/summary/${enc(r.did)}`, h.proof(r, 'summary', '*', { nonce }))).status, 200);
    // still refused just before max(timestamp, now) + skew, accepted (if re-signed in window) after
    h.clock.advance(299_000);
    expectError(await h.get(`/cache/messages/${enc(r.did)}`, headers), 409, 'proof_nonce_replayed');
    h.clock.advance(2_000);
    expectError(await h.get(`/cache/messages/${enc(r.did)}`, headers), 403, 'proof_timestamp_out_of_window');
    assert.equal((await h.get(`/cache/messages/${enc(r.did)}`, h.proof(r, 'pull', '*', { nonce }))).status, 200);
  });

  it('uses the configured clock skew, and answers 503 when the Directory cannot be asked', async () => {
    const h2 = await startCache({ proofClockSkewSeconds: 10 });
    try {
      const me = await h2.registerRecipient(26);
      const at = (ms: number) => h2.get(`/cache/summary/${enc(me.did)}`, h2.proof(me, 'summary', '*', { timestamp: new Date(ms).toISOString() }));
      const now = h2.clock.nowMs();
      assert.equal((await at(now + 10_000)).status, 200);
      assert.equal((await at(now - 10_000)).status, 200);
      expectError(await at(now + 10_001), 403, 'proof_timestamp_out_of_window');
      expectError(await at(now - 10_001), 403, 'proof_timestamp_out_of_window');
      h2.port.failing = true;
      const res = await h2.pull(me);
      expectError(res, 503, 'ledger_unavailable');
      assert.equal(res.headers['retry-after'], '1');
    } finally {
      await h2.close();
    }
  });

  it('refuses a deactivated DID (409 did_deactivated)', async () => {
    const gone = await h.registerRecipient(23);
    await h.deactivate(gone);
    expectError(await h.pull(gone), 409, 'did_deactivated');
  });

  it("acknowledges: deletes the DID's listed copies and reports exactly those", async () => {
    const x = await store(r);
    const y = await store(r);
    const z = await store(other);
    const xid = x.env.message_id as string;
    const yid = y.env.message_id as string;
    const zid = z.env.message_id as string;
    const ghost = randomUUID();
    const res = await h.ack(r, [yid, xid, yid, ghost, zid]);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, { acked: 2, message_ids: [yid, xid] });
    const left = ((await h.pull(r)).body.messages as Body[]).map((m) => m.message_id);
    assert.ok(!left.includes(xid) && !left.includes(yid));
    assert.ok(
      ((await h.pull(other)).body.messages as Body[]).some((m) => m.message_id === zid),
      "another DID's copy stays",
    );
    const again = await h.ack(r, [xid]);
    assert.deepEqual(again.body, { acked: 0, message_ids: [] });
  });

  it('validates the ack body, refuses the proof in headers alone and requires agreeing headers', async () => {
    const { env } = await store(r);
    const id = env.message_id as string;
    const p = h.proof(r, 'ack', id);
    const body = ackBody(p, r.did, [id]);
    expectError(await h.post('/cache/ack', { ...body, message_ids: [] }), 400, 'invalid_request');
    expectError(await h.post('/cache/ack', { ...body, message_ids: 'x' }), 400, 'invalid_request');
    expectError(await h.post('/cache/ack', { ...body, message_ids: ['x'.repeat(129)] }), 400, 'invalid_request');
    expectError(await h.post('/cache/ack', { ...body, message_ids: Array.from({ length: 1001 }, () => randomUUID()) }), 400, 'invalid_request');
    expectError(await h.post('/cache/ack', { ...body, message_ids: [1] }), 400, 'invalid_request');
    const noSig: Body = { ...body };
    delete noSig.signature_b64;
    const missing = await h.post('/cache/ack', noSig);
    expectError(missing, 400, 'invalid_request');
    assert.equal((missing.body.details as Body).field, 'signature_b64');
    expectError(await h.post('/cache/ack', body, { 'X-Nonce': randomUUID() }), 400, 'proof_header_mismatch');
    expectError(await h.post('/cache/ack', body, { 'X-Recipient-DID': other.did }), 400, 'proof_header_mismatch');
    expectError(await h.post('/cache/ack', { ...body, message_ids: [id, randomUUID()] }), 403, 'invalid_signature');
    // the proof travels in the body (§11.6): a header never stands in for a missing field
    const headersOnly = await h.post('/cache/ack', noSig, { 'X-Signature': p['X-Signature'], 'X-Nonce': p['X-Nonce'] });
    expectError(headersOnly, 400, 'invalid_request');
    assert.equal((headersOnly.body.details as Body).field, 'signature_b64');
    const { did: _did, ...noDid } = body;
    expectError(await h.post('/cache/ack', noDid, { 'X-Recipient-DID': r.did }), 400, 'invalid_request');
    expectError(await h.post('/cache/ack', body, { 'X-Device-Id': 'phone' }), 400, 'proof_header_mismatch');
    // agreeing headers are fine
    const agreeing = await h.post('/cache/ack', body, { 'X-Signature': p['X-Signature'], 'X-Nonce': p['X-Nonce'], 'X-Device-Id': '' });
    assert.deepEqual(agreeing.body, { acked: 1, message_ids: [id] });
    expectError(await h.post('/cache/ack', body), 409, 'proof_nonce_replayed');
  });

  it('hides expired copies at once and the sweeper deletes them', async () => {
    const h2 = await startCache();
    try {
      const me = await h2.registerRecipient(24);
      const env = h2.envelope(me.did, { ttl: '1h' });
      assert.equal((await h2.storeRaw(env)).status, 202);
      const keep = h2.envelope(me.did, { ttl: '3h' });
      assert.equal((await h2.storeRaw(keep)).status, 202);
      assert.deepEqual(await h2.service.sweep(), { expiredEntries: 0, purgedChunkSets: 0, purgedChunks: 0, expiredNonces: 0 });
      h2.clock.advance(3_600_000);
      const ids = ((await h2.pull(me)).body.messages as Body[]).map((m) => m.message_id);
      assert.deepEqual(ids, [keep.message_id]);
      const id = env.message_id as string;
      expectError(await h2.get(`/cache/message/${enc(me.did)}/${id}`, h2.proof(me, 'pull_message', id)), 404, 'message_not_found');
      const swept = await h2.service.sweep();
      assert.equal(swept.expiredEntries, 1);
      assert.equal(swept.expiredNonces, 0, 'nonces stay until their window closes');
      h2.clock.advance(301_000);
      assert.equal((await h2.service.sweep()).expiredNonces, 2);
      // the id may be stored again once its copy expired and was purged
      const fresh = { ...env, timestamp: isoSeconds(h2.clock.nowMs()) };
      assert.equal((await h2.storeRaw(fresh)).status, 202);
    } finally {
      await h2.close();
    }
  });

  it('truncates a messages response at the envelope byte budget', async () => {
    const h2 = await startCache({ maxResponseEnvelopeBytes: 1_000 });
    try {
      const me = await h2.registerRecipient(25);
      const ids: unknown[] = [];
      for (let i = 0; i < 6; i++) {
        const env = h2.envelope(me.did, { payload: { ciphertext_b64: Buffer.alloc(150, i).toString('base64') } });
        ids.push(env.message_id);
        assert.equal((await h2.storeRaw(env)).status, 202);
      }
      const res = await h2.pull(me);
      const got = (res.body.messages as Body[]).map((m) => m.message_id);
      assert.equal(res.body.truncated, true);
      assert.equal(res.body.count, got.length);
      assert.ok(got.length >= 1 && got.length < 6);
      assert.deepEqual(got, ids.slice(0, got.length));
      await h2.ack(me, got as string[]);
      const rest = await h2.pull(me);
      assert.deepEqual(
        (rest.body.messages as Body[]).map((m) => m.message_id),
        ids.slice(got.length, got.length + (rest.body.count as number)),
      );
    } finally {
      await h2.close();
    }
  });
});
