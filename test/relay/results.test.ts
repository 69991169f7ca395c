/**
 * `POST /relay` (http-api.md §10.3): every status and code of the §10.5 table this Relay can produce, each as a
 * DeliveryResult whose `http_status` equals the HTTP status; `GET /relay/limits`.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { toBase64 } from '../../src/base/bytes.js';
import { senderSigningBytes } from '../../src/protocol/sender-signature.js';
import { nodeIdentityOf } from '../../src/relay/node-identity.js';
import { envelopeBuffer } from '../../src/cache/envelope-text.js';
import { formatIsoDuration } from '../../src/codec/duration.js';
import type { Recipient } from '../cache/harness.js';
import { NO_REACH } from '../../src/relay/live-sessions.js';
import { keyOf, mutate } from '../support/directory-flows.js';
import { BASE_ACTION, registerNamedPersona, rejectAction, releasePlan, ruleOf, setDidPolicy, setScopePolicy, storePlan } from './ledger-setup.js';
import { CACHE_URL, expectFailure, expectSuccess, startRelay, type RelayHarness, type Reply } from './harness.js';
import { injectChecked } from '../support/inject-contract.js';

type Body = Record<string, unknown>;
const enc = encodeURIComponent;
const RESULT_KEYS = ['cache_attempted', 'cache_result', 'code', 'delivery_mode', 'details', 'http_status', 'message', 'retry_count', 'success'];

function details(res: Reply): Body {
  return res.body.details as Body;
}

describe('POST /relay: DeliveryResult for every status', () => {
  let h: RelayHarness;
  let r: Recipient;
  let noCache: Recipient;
  let dead: Recipient;
  let based: Recipient;
  let rejecting: Recipient;
  let planned: Recipient;
  let basePolicyId: string;

  before(async () => {
    h = await startRelay();
    r = await h.registerRecipient(11);
    noCache = await h.registerRecipient(12, { noCache: true });
    dead = await h.registerRecipient(13, { cacheEndpoints: ['http://127.0.0.1:1', 'http://127.0.0.1:2/'] });
    based = await h.registerRecipient(14);
    rejecting = await h.registerRecipient(15);
    planned = await h.registerRecipient(16);
    basePolicyId = setDidPolicy(h.dir.ledger, h.profile, based, [ruleOf('base', BASE_ACTION)]);
    setDidPolicy(h.dir.ledger, h.profile, rejecting, [ruleOf('no', rejectAction(7))]);
    setDidPolicy(h.dir.ledger, h.profile, planned, [ruleOf('plan', storePlan(planned.did, planned.serviceId))]);
    registerNamedPersona(h.dir.ledger, planned, 'vip');
    h.dir.settle();
    setScopePolicy(h.dir.ledger, h.profile, planned, { kind: 'Persona', id: 'vip' }, [ruleOf('release', releasePlan(planned.did, planned.serviceId))]);
    h.dir.settle();
  });
  after(() => h.close());

  it('every body has exactly the DeliveryResult keys', async () => {
    const ok = await h.post(h.envelope(r.did));
    const bad = await h.post(h.envelope(r.did, { tag: '' }));
    for (const res of [ok, bad]) assert.deepEqual(Object.keys(res.body).sort(), RESULT_KEYS);
  });

  it('202 cached / cache_fallback: stored in the recipient Cache', async () => {
    const env = h.envelope(r.did);
    const res = await h.post(env);
    expectSuccess(res, 'cached', 'cache_fallback');
    assert.equal(res.body.retry_count, 1);
    assert.equal(res.body.cache_attempted, true);
    assert.equal(res.body.cache_result, 'accepted');
    const held = (await h.mailbox.getMessage(r.did, env.message_id as string, h.clock.nowMs()))!.meta;
    assert.deepEqual(details(res), {
      accepted_caches: [CACHE_URL],
      attempted_caches: [CACHE_URL],
      applied_ttl: formatIsoDuration(held.appliedTtlSeconds),
      expires_at: new Date(held.expiresAtMs).toISOString(),
    });
  });

  it("202 with details.applied_ttl: a ttl above the node's maximum is capped, and the result says so", async () => {
    const env = h.envelope(r.did, { ttl: '30d' });
    const res = await h.post(env);
    expectSuccess(res, 'cached', 'cache_fallback');
    const maxMs = 172_800_000; // the Cache's max_retention_seconds
    assert.equal(details(res).applied_ttl, 'PT48H');
    assert.equal(details(res).expires_at, new Date(h.clock.nowMs() + maxMs).toISOString());
    assert.equal((await h.mailbox.getMessage(r.did, env.message_id as string, h.clock.nowMs()))!.meta.expiresAtMs, h.clock.nowMs() + maxMs);
  });

  it('202 delivered / direct: pushed live, only after the store, only when eligible', async () => {
    h.live.sessions = 2;
    try {
      const env = h.envelope(r.did);
      const text = JSON.stringify(env);
      const res = await h.post(`  ${text}\n`);
      expectSuccess(res, 'delivered', 'direct');
      assert.equal(details(res).live_sessions, 2);
      assert.deepEqual(h.live.pushed.at(-1), { did: r.did, text }, 'the bare envelope exactly as submitted');
      assert.ok((await h.cached(r.did)).includes(env.message_id as string), 'the stored copy stays');
      const before = h.live.pushed.length;
      const viaAlias = await h.post(h.envelope(r.alias));
      const viaRecipient = await h.post(h.envelope(r.did, { to: undefined, recipient: r.did }));
      for (const res2 of [viaAlias, viaRecipient]) expectSuccess(res2, 'cached', 'cache_fallback');
      assert.equal(h.live.pushed.length, before, 'an alias or the recipient field is never pushed');
    } finally {
      h.live.sessions = 0;
    }
  });

  it('202 cached, not delivered, when only proof-less sessions (--relay-live-auth open) received the push', async () => {
    h.live.unauthenticated = 2;
    try {
      const env = h.envelope(r.did);
      const res = await h.post(env);
      expectSuccess(res, 'cached', 'cache_fallback');
      assert.equal(details(res).live_sessions, 2, 'they were sent it');
      assert.deepEqual(h.live.pushed.at(-1), { did: r.did, text: JSON.stringify(env) });
      assert.ok((await h.cached(r.did)).includes(env.message_id as string), 'the envelope is stored');
    } finally {
      h.live.unauthenticated = 0;
    }
  });

  it('a Relay-only recipient: 202 delivered to an open live session, 404 no_delivery_service without one', async () => {
    h.live.sessions = 1;
    try {
      const env = h.envelope(noCache.did);
      const res = await h.post(env);
      expectSuccess(res, 'delivered', 'direct');
      assert.equal(details(res).live_sessions, 1);
      assert.equal(res.body.cache_attempted, false);
      assert.equal(res.body.cache_result, 'no_cache_endpoints');
      assert.deepEqual(h.live.pushed.at(-1), { did: noCache.did, text: JSON.stringify(env) });
      // not eligible for a push (a chunk): nothing is delivered
      const chunk = await h.post(h.envelope(noCache.did, { message_group_id: randomUUID(), sequence_number: 0, total_chunks: 1 }));
      expectFailure(chunk, 404, 'no_delivery_service');
    } finally {
      h.live.sessions = 0;
    }
    const pushed = h.live.pushed.length;
    const asked = h.live.pushedElsewhere.length;
    const unreached = h.envelope(noCache.did);
    expectFailure(await h.post(unreached), 404, 'no_delivery_service');
    assert.equal(h.live.pushed.length, pushed, 'nothing is pushed here without a session');
    assert.deepEqual(h.live.pushedElsewhere.slice(asked), [{ did: noCache.did, text: JSON.stringify(unreached) }], 'the other processes were asked');
  });

  it('a Relay-only recipient with a session on another Relay process: 202 delivered when that process reached it', async () => {
    h.live.elsewhere = { sessions: 2, authenticated: 0 };
    try {
      const env = h.envelope(noCache.did);
      const res = await h.post(env);
      expectSuccess(res, 'delivered', 'direct');
      assert.equal(details(res).live_sessions, 2, 'the sessions the other process reached');
      assert.equal(res.body.cache_result, 'no_cache_endpoints');
      assert.match(String(res.body.message), /another Relay process/);
      assert.deepEqual(h.live.pushedElsewhere.at(-1), { did: noCache.did, text: JSON.stringify(env) });
      // a session here is the delivery: the others are not asked
      h.live.sessions = 1;
      const asked = h.live.pushedElsewhere.length;
      expectSuccess(await h.post(h.envelope(noCache.did)), 'delivered', 'direct');
      assert.equal(h.live.pushedElsewhere.length, asked);
      // a recipient with a Cache service is stored, never asked of other processes
      h.live.sessions = 0;
      expectSuccess(await h.post(h.envelope(r.did)), 'cached', 'cache_fallback');
      assert.equal(h.live.pushedElsewhere.length, asked);
    } finally {
      h.live.elsewhere = NO_REACH;
      h.live.sessions = 0;
    }
  });

  it('202 policy_applied / policy_delivery: a BaseDidDelivery/v1 winner, with provenance', async () => {
    const env = h.envelope(based.did);
    const res = await h.post(env);
    expectSuccess(res, 'policy_applied', 'policy_delivery');
    const d = details(res);
    assert.equal(d.policy_id, basePolicyId);
    assert.equal(d.policy_revision, 1);
    assert.equal(d.rule_id, 'base');
    assert.equal(d.policy_source, 'did');
    assert.match(String(d.block_hash), /^0x[0-9a-f]{64}$/);
    assert.equal(typeof d.block_number, 'number');
    assert.deepEqual(d.accepted_caches, [CACHE_URL]);
    const stored = await h.mailbox.getMessage(based.did, env.message_id as string, h.clock.nowMs());
    assert.equal(stored?.meta.provenance?.policyId, basePolicyId, 'the store carried provenance');
    const text = envelopeBuffer(stored!.envelope).toString('utf8');
    assert.ok(text.startsWith(JSON.stringify(env).slice(0, -1)), 'client fields kept byte for byte, provenance appended');
    assert.match(text, /"policy_context":\{"source":"did"/);
  });

  it('202 chunk_staged and chunk_set_delivered', async () => {
    const group = randomUUID();
    const first = await h.post(h.envelope(r.did, { message_group_id: group, sequence_number: 0, total_chunks: 2 }));
    expectSuccess(first, 'chunk_staged', 'staged');
    assert.equal(first.body.retry_count, 0);
    assert.equal(first.body.cache_attempted, false);
    assert.equal(first.body.cache_result, null);
    assert.deepEqual(
      { ...details(first), retry_until: undefined },
      { message_group_id: group, received_chunks: 1, expected_chunks: 2, retry_until: undefined },
    );
    assert.equal(details(first).retry_until, new Date(h.clock.nowMs() + 3_600_000).toISOString());
    const last = await h.post(h.envelope(r.did, { message_group_id: group, sequence_number: 1, total_chunks: 2 }));
    expectSuccess(last, 'chunk_set_delivered', 'cache_fallback');
    assert.equal(details(last).received_chunks, 2);
    assert.equal(last.body.retry_count, 2, 'one store per chunk');
  });

  it('400 for every malformed request', async () => {
    const cases: [Body | string, string, string?][] = [
      ['not json', 'invalid_json'],
      ['[1]', 'invalid_json'],
      [h.envelope(r.did, { colour: 'blue' }), 'unknown_field'],
      [h.envelope(r.did, { message_id: 'x' }), 'invalid_message_id'],
      [h.envelope('Not An Alias!'), 'invalid_recipient'],
      [h.envelope(`${r.did}@bad..persona`), 'invalid_recipient'],
      [h.envelope(r.did, { tag: '' }), 'invalid_tag'],
      [h.envelope(r.did, { application_id: 'UPPER' }), 'invalid_application_id'],
      [h.envelope(r.did, { timestamp: 'noon' }), 'invalid_timestamp'],
      [h.envelope(r.did, { ttl: '5 min' }), 'invalid_ttl'],
      [h.envelope(r.did, { payload: {} }), 'invalid_payload'],
      [h.envelope(r.did, { header_nonce: 'AAAA' }), 'invalid_header'],
      [h.envelope(r.did, { sequence_number: 0 }), 'invalid_chunk_metadata'],
      [h.envelope(r.did, { delivery_hint: '' }), 'invalid_envelope'],
      [h.envelope(r.did, { policy_id: `0x${'ab'.repeat(32)}`, colour: 1 }), 'client_policy_context_forbidden'],
    ];
    for (const [body, code] of cases) expectFailure(await h.post(body), 400, code);
  });

  it('400 recipient_mismatch on POST /relay/{recipientDid}', async () => {
    expectFailure(await h.post(h.envelope(r.did), { path: enc(noCache.did) }), 400, 'recipient_mismatch');
    expectFailure(await h.post(h.envelope(r.alias), { path: enc(r.did) }), 400, 'recipient_mismatch');
    expectFailure(await h.post(h.envelope(r.alias), { path: enc(r.alias) }), 400, 'recipient_mismatch');
    expectSuccess(await h.post(h.envelope(r.did), { path: enc(r.did) }), 'cached', 'cache_fallback');
  });

  it('403 invalid_sender_signature, invalid_node_signature, policy_rejected', async () => {
    const signed = (env: Body, sig: Uint8Array) => ({ ...env, sender: r.did, sender_key_id: 'root', sender_signature: toBase64(sig) });
    const env = h.envelope(r.did);
    const good = signed(env, r.key.sign(senderSigningBytes(h.profile, env)));
    expectSuccess(await h.post(good), 'cached', 'cache_fallback');
    const bad = await h.post(signed(h.envelope(r.did), new Uint8Array(64)));
    expectFailure(bad, 403, 'invalid_sender_signature');
    assert.equal(details(bad).reason, 'bad_signature');
    // a malformed one too (service-spec.md: a sender-signature failure gives 403)
    const malformed = await h.post({ ...signed(h.envelope(r.did), new Uint8Array(64)), sender_signature: 'AAAA' });
    expectFailure(malformed, 403, 'invalid_sender_signature');
    assert.equal(details(malformed).reason, 'bad_signature');

    const stranger = nodeIdentityOf(h.profile, keyOf(222));
    const node = await h.postAsNode(stranger, h.envelope(r.did));
    expectFailure(node, 403, 'invalid_node_signature');
    assert.equal(details(node).reason, 'node_not_found');
    const wrongUrl = await h.postAsNode(h.identity, h.envelope(r.did), { url: 'https://other.example/relay' });
    expectFailure(wrongUrl, 403, 'invalid_node_signature');
    assert.equal(details(wrongUrl).reason, 'bad_signature');

    const rejected = await h.post(h.envelope(rejecting.did));
    expectFailure(rejected, 403, 'policy_rejected');
    assert.equal(details(rejected).reason_code, 7);
    const group = randomUUID();
    const chunk = await h.post(h.envelope(rejecting.did, { message_group_id: group, sequence_number: 0, total_chunks: 2 }));
    expectFailure(chunk, 403, 'policy_rejected');
    assert.deepEqual(await h.store.loadSet(rejecting.did, group), [], 'nothing is staged');
    assert.deepEqual(await h.cached(rejecting.did), []);
  });

  it('a node-signed request from a registered Relay is accepted', async () => {
    expectSuccess(await h.postAsNode(h.identity, h.envelope(r.did)), 'cached', 'cache_fallback');
  });

  it('404 recipient_not_found and no_delivery_service', async () => {
    const gone = await h.registerRecipient(17);
    await mutate(h.dir, gone.did, gone.key, 'deactivate_did');
    for (const to of ['did:platform:1111111111111111111', 'no-such-alias', gone.did]) {
      expectFailure(await h.post(h.envelope(to)), 404, 'recipient_not_found');
    }
    const none = await h.post(h.envelope(noCache.did));
    expectFailure(none, 404, 'no_delivery_service');
    assert.equal(none.body.cache_result, 'no_cache_endpoints');
    assert.equal(none.body.cache_attempted, false);
    assert.equal(none.body.retry_count, 0);
  });

  it('202 deduped: an unchunked message_id re-sent to the same recipient with other content keeps the first copy', async () => {
    const env = h.envelope(r.did);
    const first = await h.post(env);
    expectSuccess(first, 'cached', 'cache_fallback');
    const events = h.events.length;
    const again = await h.post(env);
    assert.deepEqual(again.body, first.body, 'an identical retry gets the remembered result as it was');
    const reencrypted = await h.post({ ...env, tag: 'other', payload: { ciphertext_b64: 'AAAA' } });
    assert.equal(reencrypted.status, 202, reencrypted.text);
    assert.deepEqual(reencrypted.body, { ...first.body, details: { ...details(first), deduped: true } });
    assert.equal(h.events.length, events, 'nothing delivered again');
    assert.equal((await h.cached(r.did)).filter((id) => id === env.message_id).length, 1);
    const held = await h.mailbox.getMessage(r.did, env.message_id as string, h.clock.nowMs());
    assert.equal(held?.meta.tag, env.tag, 'the first copy stands');
  });

  it('409 message_id_conflict, chunk_conflict, chunk_set_conflict, policy_provenance_stale', async () => {
    const env = h.envelope(r.did);
    const first = await h.post(env);
    expectSuccess(first, 'cached', 'cache_fallback');
    expectFailure(await h.post({ ...env, to: based.did }), 409, 'message_id_conflict');

    const group = randomUUID();
    const chunk0 = h.envelope(r.did, { message_group_id: group, sequence_number: 0, total_chunks: 3 });
    expectSuccess(await h.post(chunk0), 'chunk_staged', 'staged');
    expectFailure(await h.post({ ...chunk0, message_id: randomUUID(), ttl: '1h' }), 409, 'chunk_conflict');
    const total = await h.post(h.envelope(r.did, { message_group_id: group, sequence_number: 1, total_chunks: 4 }));
    expectFailure(total, 409, 'chunk_set_conflict');
    assert.equal(details(total).field, 'total_chunks');
    const tag = await h.post(h.envelope(r.did, { message_group_id: group, sequence_number: 1, total_chunks: 3, tag: 'x' }));
    expectFailure(tag, 409, 'chunk_set_conflict');
    assert.equal(details(tag).field, 'tag');
    expectFailure(await h.post({ ...chunk0, sequence_number: 1 }), 409, 'message_id_conflict');
    expectFailure(await h.post(h.envelope(r.did, { message_id: chunk0.message_id })), 409, 'message_id_conflict');

    const provenance = {
      policy_id: `0x${'ab'.repeat(32)}`,
      policy_revision: 1,
      policy_rule_id: 'x',
      policy_block_hash: `0x${'cd'.repeat(32)}`,
      policy_block_number: 1,
      policy_context: { source: 'did' },
    };
    expectFailure(await h.postAsNode(h.identity, h.envelope(r.did, provenance)), 409, 'policy_provenance_stale');
  });

  it('413 envelope_too_large (effective constraint), payload_too_large, chunk_too_large, metadata_too_large', async () => {
    h.port.constraints = { maxHttpEnvelopeBytes: 300 };
    try {
      expectFailure(await h.post(h.envelope(r.did, { context: { pad: 'x'.repeat(400) } })), 413, 'envelope_too_large');
    } finally {
      h.port.constraints = {};
    }
    h.port.constraints = { maxUnchunkedMessageBytes: 3, maxChunkBytes: 2 };
    try {
      const big = await h.post(h.envelope(r.did));
      expectFailure(big, 413, 'payload_too_large');
      assert.deepEqual(details(big), { limit_bytes: 3, received: 4 });
      const chunk = await h.post(h.envelope(r.did, { message_group_id: randomUUID(), sequence_number: 0, total_chunks: 2 }));
      expectFailure(chunk, 413, 'chunk_too_large');
    } finally {
      h.port.constraints = {};
    }
    expectFailure(await h.post(h.envelope(r.did, { context: { pad: 'x'.repeat(70_000) } })), 413, 'metadata_too_large');
  });

  it('422 envelope_expired, persona_not_deliverable, release_profile_required', async () => {
    const old = h.envelope(r.did, { timestamp: new Date(h.clock.nowMs() - 7_200_000).toISOString(), ttl: '1h' });
    expectFailure(await h.post(old), 422, 'envelope_expired');
    const persona = await h.post(h.envelope(`${r.did}@nobody`));
    expectFailure(persona, 422, 'persona_not_deliverable');
    assert.equal(details(persona).reason, 'persona_not_found');
    const profiled = await h.post(h.envelope(`${planned.did}@vip`));
    expectFailure(profiled, 422, 'release_profile_required');
    assert.equal(details(profiled).rule_id, 'release');
    assert.deepEqual(details(profiled).failed_steps, [{ step_id: 'profile', reason: `payload.profile is not ${h.profile.personaReleaseProfile}` }]);
    assert.equal(profiled.body.cache_attempted, false, 'nothing was stored');
    const sent = h.envelope(planned.did);
    const plan = await h.post(sent);
    expectSuccess(plan, 'policy_applied', 'policy_delivery');
    assert.equal(details(plan).rule_id, 'plan');
    assert.equal(details(plan).policy_source, 'did');
    assert.deepEqual(details(plan).accepted_caches, [CACHE_URL]);
    assert.deepEqual(await h.cached(planned.did), [sent.message_id], "stored by the plan's Store step");
  });

  it('502 upstream_unavailable when every Cache endpoint fails; nothing is pushed live', async () => {
    h.live.sessions = 1;
    const pushed = h.live.pushed.length;
    const res = await h.post(h.envelope(dead.did));
    h.live.sessions = 0;
    assert.equal(h.live.pushed.length, pushed, 'a live push only follows a durable store');
    expectFailure(res, 502, 'upstream_unavailable');
    assert.deepEqual(details(res).attempted_caches, ['http://127.0.0.1:1', 'http://127.0.0.1:2']);
    // the 502 says what failed downstream: each endpoint and its error
    const failures = details(res).failures as { endpoint: string; reason: string }[];
    assert.deepEqual(
      failures.map((f) => f.endpoint),
      ['http://127.0.0.1:1', 'http://127.0.0.1:2'],
    );
    for (const f of failures) assert.match(f.reason, /^network: .*ECONNREFUSED/);
    assert.match(res.body.message as string, /every Cache endpoint of the recipient failed: http:\/\/127\.0\.0\.1:1: network: .*ECONNREFUSED.* \(and 1 more\)/);
    assert.equal(res.body.retry_count, 4, 'two attempts per endpoint');
    assert.equal(res.body.cache_attempted, true);
    assert.equal(res.body.cache_result, 'failed');
  });

  it('503 policy_lookup_failed with Retry-After when the Directory cannot answer', async () => {
    h.port.failing = true;
    try {
      const res = await h.post(h.envelope(r.did));
      expectFailure(res, 503, 'policy_lookup_failed');
      assert.equal(res.headers['retry-after'], '1');
    } finally {
      h.port.failing = false;
    }
  });

  it('GET /relay/limits', async () => {
    const res = await injectChecked(h.server, { method: 'GET', url: '/relay/limits' });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), {
      max_http_envelope_bytes: 26_214_400,
      max_unchunked_message_bytes: 16_777_216,
      max_chunk_bytes: 2_097_152,
      max_metadata_bytes: 65_536,
      max_chunks_per_set: 65_535,
      staging_window_seconds: 3600,
      proof_clock_skew_seconds: 300,
    });
  });
});

describe('POST /relay: limits and failures of a configured node', () => {
  it('413 envelope_too_large before parsing, 422 plaintext_not_allowed, 429 staging_capacity_full, 500', async () => {
    const h = await startRelay({
      settings: { maxHttpEnvelopeBytes: 4096, allowPlaintext: false, stagingMaxSetsPerRecipient: 1, stagingMaxBytes: 2000 },
      plan: {
        execute: () => {
          throw new TypeError('boom');
        },
      },
    });
    try {
      const r = await h.registerRecipient(31);
      const planned = await h.registerRecipient(32);
      setDidPolicy(h.dir.ledger, h.profile, planned, [ruleOf('plan', storePlan(planned.did, planned.serviceId))]);
      h.dir.settle();

      const huge = await h.post(`{"pad":"${'x'.repeat(5000)}"}`);
      expectFailure(huge, 413, 'envelope_too_large');
      assert.equal(details(huge).limit_bytes, 4096);

      expectFailure(await h.post(h.envelope(r.did, { payload: { cbor_b64: 'oA==' } })), 422, 'plaintext_not_allowed');

      const chunk = (group: string, seq: number, pad = 0) =>
        h.envelope(r.did, { message_group_id: group, sequence_number: seq, total_chunks: 3, ...(pad > 0 ? { context: { pad: 'p'.repeat(pad) } } : {}) });
      const g1 = randomUUID();
      expectSuccess(await h.post(chunk(g1, 0)), 'chunk_staged', 'staged');
      const sets = await h.post(chunk(randomUUID(), 0));
      expectFailure(sets, 429, 'staging_capacity_full');
      assert.equal(sets.headers['retry-after'], '30');
      assert.equal(details(sets).limit, 'sets_per_recipient');
      const bytes = await h.post(chunk(g1, 1, 2000));
      expectFailure(bytes, 429, 'staging_capacity_full');
      assert.equal(details(bytes).limit, 'bytes');

      const internal = await h.post(h.envelope(planned.did));
      expectFailure(internal, 500, 'internal_error');
      assert.equal(internal.body.message, 'internal error', 'nothing of the cause leaks');
    } finally {
      await h.close();
    }
  });

  it('507 staging_persist_failed when the durable write fails, and the next write succeeds', async () => {
    const h = await startRelay();
    try {
      const r = await h.registerRecipient(33);
      const group = randomUUID();
      const chunk = (seq: number) =>
        h.envelope(r.did, { message_group_id: group, sequence_number: seq, total_chunks: 3, context: { pad: 'p'.repeat(20_000) } });
      expectSuccess(await h.post(chunk(0)), 'chunk_staged', 'staged');
      // The insert fails inside the write transaction, on the writer thread's own connection (a trigger is in the
      // file, so every connection has it): SQLite refuses it as it would refuse a write to a full disk.
      h.store.db.exec(`CREATE TRIGGER full_disk BEFORE INSERT ON relay_chunks BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END`);
      expectFailure(await h.post(chunk(1)), 507, 'staging_persist_failed');
      h.store.db.exec('DROP TRIGGER full_disk');
      const retried = await h.post(chunk(1));
      expectSuccess(retried, 'chunk_staged', 'staged');
      assert.equal((retried.body.details as Body).received_chunks, 2, 'the failed write left nothing behind');
    } finally {
      await h.close();
    }
  });

  it('refuses loopback Cache endpoints from DID documents without --allow-private-endpoints', async () => {
    const h = await startRelay({ allowPrivate: false });
    try {
      const local = await h.registerRecipient(34, { cacheEndpoints: ['http://127.0.0.1:9/', 'http://localhost:9'] });
      const res = await h.post(h.envelope(local.did));
      expectFailure(res, 502, 'upstream_unavailable');
      assert.deepEqual(details(res).attempted_caches, ['http://127.0.0.1:9', 'http://localhost:9']);
      assert.equal(res.body.retry_count, 2, 'a refused address is not retried');
      const own = await h.registerRecipient(35);
      expectSuccess(await h.post(h.envelope(own.did)), 'cached', 'cache_fallback');
    } finally {
      await h.close();
    }
  });
});
