/** `POST /cache/store` (http-api.md §11.1–§11.2): the processing order, every code, retention, dedupe, events. */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { toBase64 } from '../../src/base/bytes.js';
import { senderSigningBytes } from '../../src/protocol/sender-signature.js';
import { kid } from '../support/directory-flows.js';
import { CACHE_URL, OTHER_CACHE_URL, expectError, isoSeconds, startCache, type CacheHarness, type Recipient } from './harness.js';
import { injectChecked } from '../support/inject-contract.js';

const enc = encodeURIComponent;

describe('POST /cache/store', () => {
  let h: CacheHarness;
  let r: Recipient;
  let sender: Recipient;
  before(async () => {
    h = await startCache();
    r = await h.registerRecipient(11);
    sender = await h.registerRecipient(12);
  });
  after(() => h.close());

  it('accepts an envelope with the §11.1 response shape and keeps the received text', async () => {
    const env = h.envelope(r.did, { ttl: '2h' });
    const text = `  {"message_id": "${env.message_id as string}",\n "to": "${r.did}", "tag": "invoice", "timestamp": "${env.timestamp as string}", "ttl": "2h", "payload": {"ciphertext_b64": "3q2+7w==", "z": 1, "a": [1, 2]}}  `;
    const res = await h.storeRaw(text);
    assert.equal(res.status, 202, res.text);
    const now = h.clock.nowMs();
    assert.deepEqual(res.body, {
      accepted: true,
      deduped: false,
      message_id: env.message_id,
      recipient: r.did,
      expires_at: new Date(Date.parse(env.timestamp as string) + 7_200_000).toISOString(),
      max_ttl: 'PT48H',
      applied_ttl: res.body.applied_ttl,
      chunked: false,
      proof: { event_type: 'delivery', message_id: env.message_id, recipient_did: r.did, timestamp: new Date(now).toISOString() },
    });
    assert.match(res.body.applied_ttl as string, /^PT1H59M5\dS$|^PT2H$/);
    const got = await h.get(`/cache/message/${enc(r.did)}/${env.message_id as string}`, h.proof(r, 'pull_message', env.message_id as string));
    assert.equal(got.status, 200, got.text);
    // the stored envelope is the received text, unparsed: member order and inner spacing preserved
    assert.ok(got.text.includes(`"envelope":{"message_id": "${env.message_id as string}",\n "to": "${r.did}"`), got.text);
    const msg = (got.body.message as Record<string, unknown>).envelope as Record<string, unknown>;
    assert.deepEqual(msg.payload, { ciphertext_b64: '3q2+7w==', z: 1, a: [1, 2] });
    assert.equal(msg.expires_at, res.body.expires_at);
  });

  it('caps retention at min(effective_ttl_seconds, cache.max_retention_seconds) and reports ISO durations', async () => {
    h.port.constraints = { effectiveTtlSeconds: 3_600 };
    try {
      const res = await h.storeRaw(h.envelope(r.did, { ttl: 'P2D' }));
      assert.equal(res.status, 202, res.text);
      assert.equal(res.body.max_ttl, 'PT1H');
      assert.equal(res.body.applied_ttl, 'PT1H');
      assert.equal(res.body.expires_at, new Date(h.clock.nowMs() + 3_600_000).toISOString());
    } finally {
      h.port.constraints = {};
    }
    const long = await h.storeRaw(h.envelope(r.did, { ttl: 'P30D' }));
    assert.equal(long.body.max_ttl, 'PT48H');
    assert.equal(long.body.applied_ttl, 'PT48H');
  });

  it('accepts created_at/recipient alternates, epoch timestamps, alias and persona recipients', async () => {
    const now = h.clock.nowMs();
    for (const over of [
      { to: undefined, recipient: r.did },
      { timestamp: undefined, created_at: isoSeconds(now) },
      { timestamp: Math.floor(now / 1000) },
      { timestamp: String(now) },
      { timestamp: new Date(now).toISOString().replace('Z', '+00:00') },
      { to: r.alias },
      { to: r.did, recipient: r.did },
      { to: `${r.alias}@Example.COM` },
    ]) {
      // §10.1.2 accepts a JSON number timestamp; §10.1's field table, and so the documented envelope, say string
      const envelope = h.envelope(r.did, over);
      const res = typeof over.timestamp === 'number' ? await h.storeLenient(envelope) : await h.storeRaw(envelope);
      assert.equal(res.status, 202, `${JSON.stringify(over)}: ${res.text}`);
      assert.equal(res.body.recipient, r.did);
    }
  });

  it('refuses every malformed envelope with its 400 code (§10.1)', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ extra: 1 }, 'unknown_field'],
      [{ policy_id: '0x' + '0'.repeat(64) }, 'client_policy_context_forbidden'],
      [{ policy_context: {}, extra: 1 }, 'client_policy_context_forbidden'],
      [{ message_id: 'not-a-uuid' }, 'invalid_message_id'],
      [{ message_id: undefined }, 'invalid_message_id'],
      [{ to: undefined }, 'invalid_recipient'],
      [{ to: 'did:platform:!!' }, 'invalid_recipient'],
      [{ to: r.did, recipient: sender.did }, 'invalid_recipient'],
      [{ to: `${r.did}@not a persona` }, 'invalid_recipient'],
      [{ tag: '' }, 'invalid_tag'],
      [{ tag: 'x'.repeat(97) }, 'invalid_tag'],
      [{ tag: 'a\u0007b' }, 'invalid_tag'],
      [{ application_id: 'Upper' }, 'invalid_application_id'],
      [{ timestamp: 'yesterday' }, 'invalid_timestamp'],
      [{ timestamp: undefined }, 'invalid_timestamp'],
      [{ timestamp: isoSeconds(h.clock.nowMs() + 301_000) }, 'invalid_timestamp'],
      [{ created_at: '2020-01-01T00:00:00Z' }, 'invalid_timestamp'],
      [{ ttl: '1y' }, 'invalid_ttl'],
      [{ ttl: 3600 }, 'invalid_ttl'],
      [{ ttl: '0' }, 'invalid_ttl'],
      [{ delivery_hint: '' }, 'invalid_envelope'],
      [{ context: 'x' }, 'invalid_envelope'],
      [{ payload: undefined }, 'invalid_payload'],
      [{ payload: { nonce_b64: 'AA==' } }, 'invalid_payload'],
      [{ payload: { ciphertext_b64: 'not base64!' } }, 'invalid_payload'],
      [{ encrypted_header: 'AAAA' }, 'invalid_header'],
      [{ header_nonce: 'AAAA' }, 'invalid_header'],
      [{ encrypted_header: 'AAAA', header_nonce: 'AAAA', header_key_id: 'k' }, 'invalid_header'],
      [{ encrypted_header: '%%', header_nonce: 'AAAA', header_key_id: 'k', schema_version: '1' }, 'invalid_header'],
      [{ message_group_id: randomUUID() }, 'invalid_chunk_metadata'],
      [{ sequence_number: 0, total_chunks: 1 }, 'invalid_chunk_metadata'],
      [{ message_group_id: randomUUID(), sequence_number: 2, total_chunks: 2 }, 'invalid_chunk_metadata'],
      [{ message_group_id: randomUUID(), sequence_number: 0, total_chunks: 65_536 }, 'invalid_chunk_metadata'],
      [{ message_group_id: 'nope', sequence_number: 0, total_chunks: 1 }, 'invalid_chunk_metadata'],
      [{ sender: sender.did }, 'invalid_envelope'],
      [{ sender: 'alias', sender_key_id: 'root', sender_signature: toBase64(new Uint8Array(64)) }, 'invalid_envelope'],
    ];
    for (const [over, code] of cases) {
      const res = await h.storeRaw(h.envelope(r.did, over));
      expectError(res, 400, code);
      if (code === 'unknown_field') assert.equal((res.body.details as Record<string, unknown>).field, 'extra');
    }
    expectError(await h.storeRaw('[1]'), 400, 'invalid_json');
    expectError(await h.storeRaw('{"message_id":'), 400, 'invalid_json');
    expectError(await h.post('/cache/store', ''), 400, 'invalid_json');
    const ct = await injectChecked(h.server, { method: 'POST', url: '/cache/store', payload: '{}', headers: { 'content-type': 'text/plain' } });
    assert.equal(ct.statusCode, 415);
    // a valid header set is accepted
    const ok = await h.storeRaw(h.envelope(r.did, { encrypted_header: 'AAAA', header_nonce: 'AAAA', header_key_id: 'k', schema_version: '1' }));
    assert.equal(ok.status, 202, ok.text);
  });

  it('refuses plaintext payloads only when cache.allow_plaintext is off', async () => {
    const plain = { profile: 'platform:plaintext-cbor:v1', cbor_b64: 'oA==' };
    assert.equal((await h.storeRaw(h.envelope(r.did, { payload: plain }))).status, 202);
    const strict = await startCache({ allowPlaintext: false });
    try {
      const r2 = await strict.registerRecipient(13);
      expectError(await strict.storeRaw(strict.envelope(r2.did, { payload: plain })), 422, 'plaintext_not_allowed');
    } finally {
      await strict.close();
    }
  });

  it('keeps each recipient within cache.max_bytes_per_recipient (429 storage_quota_exceeded), other recipients unaffected', async () => {
    const small = await startCache({ maxBytesPerRecipient: 2_000 });
    try {
      const [r1, r2] = [await small.registerRecipient(14), await small.registerRecipient(15)];
      const padded = (did: string) => small.envelope(did, { payload: { ciphertext_b64: toBase64(new Uint8Array(900)) } });
      assert.equal((await small.storeRaw(padded(r1.did))).status, 202);
      const full = await small.storeRaw(padded(r1.did));
      expectError(full, 429, 'storage_quota_exceeded');
      assert.equal((full.body.details as Record<string, unknown>).limit_bytes, 2_000);
      assert.equal(full.headers['retry-after'], '1');
      assert.equal((await small.storeRaw(padded(r2.did))).status, 202, 'another recipient has its own quota');
    } finally {
      await small.close();
    }
  });

  it('verifies a sender signature when present (403 invalid_sender_signature with details.reason)', async () => {
    const signed = (over: Record<string, unknown> = {}, signer = sender.key, keyId = kid(sender.did, 'key-1')) => {
      const env = h.envelope(r.did, over);
      delete env.sender;
      env.sender_signature = toBase64(signer.sign(senderSigningBytes(h.dir.profile, env)));
      env.sender = over.sender ?? sender.did;
      env.sender_key_id = keyId;
      return env;
    };
    assert.equal((await h.storeRaw(signed())).status, 202);
    const root = signed({}, sender.key, 'root');
    assert.equal((await h.storeRaw(root)).status, 202);
    // fields outside the signature may change
    const hinted = signed();
    hinted.delivery_hint = 'standard';
    assert.equal((await h.storeRaw(hinted)).status, 202);
    const reasons: [Record<string, unknown>, string][] = [];
    const wrongKey = signed({}, sender.key2);
    reasons.push([wrongKey, 'bad_signature']);
    const tampered = signed();
    tampered.tag = 'other';
    reasons.push([tampered, 'bad_signature']);
    reasons.push([signed({}, sender.key, kid(sender.did, 'nope')), 'key_not_found']);
    const unknown = signed({ sender: 'did:platform:1111111111111111' });
    reasons.push([unknown, 'sender_not_found']);
    // a malformed signature is a failed one (service-spec.md: "failure gives 403"; profile openpayload: 400)
    reasons.push([{ ...signed(), sender_signature: 'AAAA' }, 'bad_signature']);
    reasons.push([{ ...signed(), sender_signature: 'not base64!' }, 'bad_signature']);
    for (const [env, reason] of reasons) {
      const res = await h.storeRaw(env);
      expectError(res, 403, 'invalid_sender_signature');
      assert.equal((res.body.details as Record<string, unknown>).reason, reason);
    }
  });

  it('needs an active recipient (404 recipient_not_found) and a working lookup (503 policy_lookup_failed)', async () => {
    expectError(await h.storeRaw(h.envelope('did:platform:1111111111111111')), 404, 'recipient_not_found');
    expectError(await h.storeRaw(h.envelope('nobody-here')), 404, 'recipient_not_found');
    h.port.failing = true;
    try {
      const res = await h.storeRaw(h.envelope(r.did));
      expectError(res, 503, 'policy_lookup_failed');
      assert.equal(res.headers['retry-after'], '1');
    } finally {
      h.port.failing = false;
    }
    const gone = await h.registerRecipient(14);
    await h.deactivate(gone);
    expectError(await h.storeRaw(h.envelope(gone.did)), 404, 'recipient_not_found');
  });

  it('stores only for recipients that publish this Cache (422 cache_not_published)', async () => {
    const elsewhere = await h.registerRecipient(15, { cacheEndpoints: [OTHER_CACHE_URL] });
    expectError(await h.storeRaw(h.envelope(elsewhere.did)), 422, 'cache_not_published');
    const none = await h.registerRecipient(16, { noCache: true });
    expectError(await h.storeRaw(h.envelope(none.did)), 422, 'cache_not_published');
    const several = await h.registerRecipient(17, { cacheEndpoints: [OTHER_CACHE_URL, CACHE_URL] });
    assert.equal((await h.storeRaw(h.envelope(several.did))).status, 202);
  });

  it('refuses a plain store when a policy rule wins (422 policy_applies)', async () => {
    h.port.policy = {
      source: 'did',
      sourceId: r.did,
      policyId: `0x${'ab'.repeat(32)}`,
      policyRevision: 2,
      ruleId: 'default',
      rulePriority: 1,
      action: { type: 'BaseDidDelivery/v1' },
      effectiveConstraints: (await h.port.resolveDelivery(r.did, null, null))!.effectiveConstraints,
      policyTtlSeconds: 60,
    };
    try {
      const res = await h.storeRaw(h.envelope(r.did));
      expectError(res, 422, 'policy_applies');
      assert.deepEqual(res.body.details, { policy_id: `0x${'ab'.repeat(32)}`, rule_id: 'default' });
      // step 6 comes first
      const elsewhere = await h.registerRecipient(18, { cacheEndpoints: [OTHER_CACHE_URL] });
      expectError(await h.storeRaw(h.envelope(elsewhere.did)), 422, 'cache_not_published');
    } finally {
      h.port.policy = null;
    }
  });

  it('refuses expired envelopes (422 envelope_expired)', async () => {
    const old = isoSeconds(h.clock.nowMs() - 3_600_000);
    expectError(await h.storeRaw(h.envelope(r.did, { timestamp: old, ttl: '1h' })), 422, 'envelope_expired');
    assert.equal((await h.storeRaw(h.envelope(r.did, { timestamp: old, ttl: '3601s' }))).status, 202);
  });

  it('deduplicates a message_id re-sent to the same recipient, identical or not, and refuses it for another (409 message_id_conflict)', async () => {
    const env = h.envelope(r.did);
    const first = await h.storeRaw(env);
    assert.equal(first.status, 202);
    const before = h.events.length;
    h.clock.advance(5_000);
    const again = await h.storeRaw({ ...env });
    assert.equal(again.status, 202);
    assert.deepEqual(again.body, { ...first.body, deduped: true });
    // the same content with other spacing is still identical
    const spaced = await h.storeRaw(JSON.stringify(env, null, 2));
    assert.equal(spaced.body.deduped, true);
    // a client that re-encrypted on retry: other content, same recipient — the first copy stands
    const upper = await h.storeRaw({ ...env, message_id: (env.message_id as string).toUpperCase() });
    assert.equal(upper.status, 202, upper.text);
    assert.deepEqual(upper.body, { ...first.body, deduped: true });
    const reencrypted = await h.storeRaw({ ...env, tag: 'other', payload: { ciphertext_b64: 'AAAA' } });
    assert.equal(reencrypted.status, 202, reencrypted.text);
    assert.deepEqual(reencrypted.body, { ...first.body, deduped: true });
    expectError(await h.storeRaw({ ...env, to: sender.did }), 409, 'message_id_conflict');
    const group = randomUUID();
    expectError(await h.storeRaw({ ...env, message_group_id: group, sequence_number: 0, total_chunks: 2 }), 409, 'message_id_conflict');
    assert.equal(h.events.length, before, 'no event for deduplicated stores');
    const summary = await h.summary(r);
    const kept = (summary.body.messages as { message_id: string; tag?: string }[]).filter((m) => m.message_id === env.message_id);
    assert.equal(kept.length, 1);
    assert.equal(kept[0]!.tag, env.tag, 'the first copy is kept');
  });

  it('emits CacheStored with the canonical persona of a persona-addressed store', async () => {
    const n = h.events.length;
    assert.equal((await h.storeRaw(h.envelope(`${r.did}@Mail.Example.com`))).status, 202);
    assert.equal(h.events[n].persona, 'mail.example.com');
    assert.equal(h.events[n].envelope.to, `${r.did}@Mail.Example.com`);
  });

  it('emits CacheStored after the commit, once per new entry', async () => {
    const n = h.events.length;
    const env = h.envelope(`${r.did}`, { application_id: 'app.one', delivery_hint: 'standard' });
    const res = await h.storeRaw(env);
    assert.equal(h.events.length, n + 1);
    const e = h.events[n];
    assert.deepEqual(e, {
      type: 'CacheStored',
      message_id: env.message_id,
      recipient_did: r.did,
      persona: null,
      tag: 'invoice',
      application_id: 'app.one',
      occurred_at: new Date(h.clock.nowMs()).toISOString(),
      chunked: false,
      message_group_id: null,
      expires_at: res.body.expires_at,
      service_id: r.serviceId,
      endpoint: CACHE_URL,
      envelope: {
        message_id: env.message_id,
        to: r.did,
        recipient_did: r.did,
        tag: 'invoice',
        application_id: 'app.one',
        timestamp: env.timestamp,
        ttl: '24h',
        delivery_hint: 'standard',
        message_group_id: null,
        sequence_number: null,
        total_chunks: null,
        sender: null,
      },
      // timestamp + the 24 h ttl: when the envelope can no longer be stored again
      requested_expiry_ms: Date.parse(env.timestamp as string) + 86_400_000,
    });
    // it is visible to a reader as soon as the event fires (emitted after commit)
    const got = await h.store.getMessage(r.did, env.message_id as string, h.clock.nowMs());
    assert.ok(got !== null);
  });

  it('never lets a failing event listener change the response', async () => {
    const off = h.hub.on('CacheStored', () => {
      throw new Error('listener bug');
    });
    try {
      const res = await h.storeRaw(h.envelope(r.did));
      assert.equal(res.status, 202);
      assert.equal(h.events.at(-1)?.message_id, res.body.message_id, 'other listeners still run');
    } finally {
      off();
    }
  });

  it('serves GET /cache/limits', async () => {
    const res = await h.get('/cache/limits');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, {
      max_http_envelope_bytes: 26_214_400,
      max_metadata_bytes: 65_536,
      max_retention_seconds: 172_800,
      chunk_staging_window_seconds: 3600,
      proof_clock_skew_seconds: 300,
      allow_plaintext: true,
    });
  });
});
