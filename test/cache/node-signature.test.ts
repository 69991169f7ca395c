/**
 * Node-signed stores (http-api.md §10.6) and provenance stores (§11.1 steps 2, 6, 7): the receiver's checks,
 * each refusal as 403 `invalid_node_signature` with `details.reason`, and provenance against the resolution.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { NETWORK_CONSTRAINTS } from '../../src/protocol/constraints.js';
import { NODE_HEADERS, candidateRequestUrls, nodeRequestText } from '../../src/protocol/node-signature.js';
import { PLATFORM } from '../../src/protocol/profile.js';
import type { PolicyView } from '../../src/ports/directory-port.js';
import { kid } from '../support/directory-flows.js';
import { CACHE_URL, OTHER_CACHE_URL, expectError, isoSeconds, startCache, type CacheHarness, type Recipient, type RelayNode, type Reply } from './harness.js';
import { injectChecked } from '../support/inject-contract.js';

const POLICY_ID = `0x${'ab'.repeat(32)}`;
const BLOCK_HASH = `0x${'cd'.repeat(32)}`;
type Body = Record<string, unknown>;

function reason(res: Reply): unknown {
  return (res.body.details as Body | undefined)?.reason;
}

describe('node-signed requests', () => {
  let h: CacheHarness;
  let r: Recipient;
  let relay: RelayNode;
  before(async () => {
    h = await startCache();
    r = await h.registerRecipient(41);
    relay = await h.registerRelay(42);
  });
  after(() => h.close());

  it('builds the §10.6 text', () => {
    assert.equal(
      nodeRequestText(PLATFORM, {
        method: 'POST',
        url: 'https://cache.example.com/cache/store',
        nodeDid: 'did:platform:x',
        serviceId: 'did:platform:x#relay',
        keyId: 'did:platform:x#key-1',
        timestamp: '2026-07-16T12:00:00Z',
        nonce: 'n',
        bodySha256Hex: 'ab',
      }),
      'platform:node-request:v1\nmethod=POST\nurl=https://cache.example.com/cache/store\nnode_did=did:platform:x\n' +
        'service_id=did:platform:x#relay\nkey_id=did:platform:x#key-1\ntimestamp=2026-07-16T12:00:00Z\nnonce=n\nbody_sha256=ab',
    );
    assert.deepEqual(candidateRequestUrls(['https://c.example/base'], '/cache/store?x=1'), [
      'https://c.example/cache/store?x=1',
      'https://c.example/base/cache/store?x=1',
    ]);
  });

  it('accepts a node-signed plain store', async () => {
    const res = await h.storeAsNode(relay, h.envelope(r.did));
    assert.equal(res.status, 202, res.text);
    assert.equal('policy_id' in res.body, false);
  });

  it('refuses every failed check with 403 invalid_node_signature and its reason', async () => {
    const env = () => h.envelope(r.did);
    const now = h.clock.nowMs();
    const cases: [Promise<Reply>, string][] = [
      [h.storeAsNode(relay, env(), { timestamp: 'noon' }), 'invalid_timestamp'],
      [h.storeAsNode(relay, env(), { timestamp: isoSeconds(now + 302_000) }), 'timestamp_out_of_window'],
      [h.storeAsNode(relay, env(), { timestamp: isoSeconds(now - 302_000) }), 'timestamp_out_of_window'],
      [h.storeAsNode(relay, env(), { nonce: 'not-a-uuid' }), 'invalid_nonce'],
      [h.storeAsNode(relay, env(), { nonce: '6f1c2b9e-3d4a-1e5f-8a7b-1c2d3e4f5a6b' }), 'invalid_nonce'],
      [h.storeAsNode({ ...relay, did: 'did:platform:1111111111111111' }, env()), 'node_not_found'],
      [h.storeAsNode({ ...relay, serviceId: kid(relay.did, 'cache') }, env()), 'service_not_found'],
      [h.storeAsNode({ ...relay, serviceId: kid(relay.did, 'nope') }, env()), 'service_not_found'],
      [h.storeAsNode({ ...relay, keyId: kid(relay.did, 'key-2'), key: relay.key2 }, env()), 'key_not_authorized'],
      [h.storeAsNode({ ...relay, keyId: kid(relay.did, 'key-9') }, env()), 'key_not_authorized'],
      [h.storeAsNode({ ...relay, key: relay.key2 }, env()), 'bad_signature'],
      [h.storeAsNode(relay, env(), { signedBody: JSON.stringify(env()) }), 'bad_signature'],
      [h.storeAsNode(relay, env(), { url: `${OTHER_CACHE_URL}/cache/store` }), 'bad_signature'],
      [h.storeAsNode(relay, env(), { url: `${CACHE_URL}/relay` }), 'bad_signature'],
    ];
    for (const [p, why] of cases) {
      const res = await p;
      expectError(res, 403, 'invalid_node_signature');
      assert.equal(reason(res), why, res.text);
    }
    // a missing or malformed header
    const body = JSON.stringify(env());
    for (const name of Object.values(NODE_HEADERS)) {
      const res = await h.storeRaw(body, { [name]: 'x' });
      expectError(res, 403, 'invalid_node_signature');
      assert.equal(reason(res), 'missing_header');
    }
    const full = await injectChecked(h.server, {
      method: 'POST',
      url: '/cache/store',
      payload: body,
      headers: {
        'content-type': 'application/json',
        [NODE_HEADERS.did]: relay.did,
        [NODE_HEADERS.serviceId]: relay.serviceId,
        [NODE_HEADERS.keyId]: relay.keyId,
        [NODE_HEADERS.timestamp]: isoSeconds(now),
        [NODE_HEADERS.nonce]: randomUUID(),
        [NODE_HEADERS.signature]: '***',
      },
    });
    assert.equal(full.statusCode, 403);
    assert.equal((full.json() as { details: Body }).details.reason, 'invalid_signature_encoding');
  });

  it('refuses a deactivated node DID', async () => {
    const old = await h.registerRelay(43);
    await h.deactivate({ did: old.did, key: old.key } as Recipient);
    const res = await h.storeAsNode(old, h.envelope(r.did));
    expectError(res, 403, 'invalid_node_signature');
    assert.equal(reason(res), 'node_deactivated');
  });

  it('accepts a nonce once, even when the first request failed or both race', async () => {
    const nonce = randomUUID();
    const env = h.envelope(r.did);
    assert.equal((await h.storeAsNode(relay, env, { nonce })).status, 202);
    const replay = await h.storeAsNode(relay, env, { nonce });
    expectError(replay, 403, 'invalid_node_signature');
    assert.equal(reason(replay), 'nonce_replayed');

    const failing = randomUUID();
    expectError(await h.storeAsNode(relay, h.envelope('did:platform:1111111111111111'), { nonce: failing }), 404, 'recipient_not_found');
    const after = await h.storeAsNode(relay, h.envelope(r.did), { nonce: failing });
    assert.equal(reason(after), 'nonce_replayed');

    const raced = randomUUID();
    const body = h.envelope(r.did);
    const both = await Promise.all([h.storeAsNode(relay, body, { nonce: raced }), h.storeAsNode(relay, body, { nonce: raced })]);
    assert.deepEqual(both.map((x) => x.status).sort(), [202, 403]);
    assert.equal(reason(both.find((x) => x.status === 403)!), 'nonce_replayed');
  });

  it('answers 503 policy_lookup_failed when the node DID cannot be looked up', async () => {
    h.port.failing = true;
    try {
      expectError(await h.storeAsNode(relay, h.envelope(r.did)), 503, 'policy_lookup_failed');
    } finally {
      h.port.failing = false;
    }
  });
});

describe('provenance stores', () => {
  let h: CacheHarness;
  let r: Recipient;
  let relay: RelayNode;
  before(async () => {
    h = await startCache();
    r = await h.registerRecipient(44);
    relay = await h.registerRelay(45);
  });
  after(() => h.close());

  const storeStep = (targets: Body[], operation = 'Store') => ({
    type: 'DeliveryPlan/v1',
    entry_step: 'keep',
    steps: [
      { id: 'fwd', operation: 'Forward', targets: [{ service_did: relay.did, service_id: relay.serviceId, priority: 0, weight: 1 }] },
      { id: 'keep', operation, targets, desired_replicas: 1, required_replicas: 1, selection: 'Priority' },
    ],
    transitions: [],
  });
  const policy = (action: Body, over: Partial<PolicyView> = {}): PolicyView => ({
    source: 'did',
    sourceId: r.did,
    policyId: POLICY_ID,
    policyRevision: 3,
    ruleId: 'store',
    rulePriority: 1,
    action,
    effectiveConstraints: { ...NETWORK_CONSTRAINTS },
    policyTtlSeconds: 60,
    ...over,
  });
  const provenance = (over: Body = {}, context: Body = {}) => ({
    policy_id: POLICY_ID,
    policy_revision: 3,
    policy_rule_id: 'store',
    policy_block_hash: BLOCK_HASH,
    policy_block_number: 7,
    policy_context: { source: 'did', source_id: r.did, step_id: 'keep', relay_did: relay.did, relay_service_id: relay.serviceId, ...context },
    ...over,
  });
  const withPolicy = async <T>(p: PolicyView | null, fn: () => Promise<T>): Promise<T> => {
    h.port.policy = p;
    try {
      return await fn();
    } finally {
      h.port.policy = null;
    }
  };

  it('stores when the named Store step targets this Cache, echoing the provenance', async () => {
    const env: Body = { ...h.envelope(r.did), ...provenance() };
    const res = await withPolicy(policy(storeStep([{ service_did: r.did, service_id: r.serviceId, priority: 0, weight: 1 }])), () => h.storeAsNode(relay, env));
    assert.equal(res.status, 202, res.text);
    assert.equal(res.body.policy_id, POLICY_ID);
    assert.equal(res.body.policy_revision, 3);
    assert.equal(res.body.rule_id, 'store');
    assert.equal(res.body.policy_block_hash, BLOCK_HASH);
    // the stored envelope keeps the opaque provenance
    const id = env.message_id as string;
    const got = await h.get(`/cache/message/${encodeURIComponent(r.did)}/${id}`, h.proof(r, 'pull_message', id));
    const stored = (got.body.message as Body).envelope as Body;
    assert.deepEqual(stored.policy_context, env.policy_context);
    assert.equal(stored.policy_id, POLICY_ID);
    // a dedupe echoes the original values
    const again = await withPolicy(policy(storeStep([{ service_did: r.did, service_id: r.serviceId }])), () => h.storeAsNode(relay, env));
    assert.deepEqual(again.body, { ...res.body, deduped: true });
  });

  it('accepts an Archive step targeting an archive service of this Cache, and a BaseDidDelivery winner', async () => {
    const archive = await withPolicy(policy(storeStep([{ service_did: r.did, service_id: r.archiveServiceId }], 'Archive')), () =>
      h.storeAsNode(relay, { ...h.envelope(r.did), ...provenance() }),
    );
    assert.equal(archive.status, 202, archive.text);
    const base = await withPolicy(policy({ type: 'BaseDidDelivery/v1' }), () =>
      h.storeAsNode(relay, { ...h.envelope(r.did), ...provenance({}, { step_id: undefined }) }),
    );
    assert.equal(base.status, 202, base.text);
  });

  it('refuses provenance that does not match the resolution (409 policy_provenance_stale)', async () => {
    const action = storeStep([{ service_did: r.did, service_id: r.serviceId }]);
    for (const p of [policy(action, { policyRevision: 4 }), policy(action, { ruleId: 'other' }), policy(action, { policyId: `0x${'ef'.repeat(32)}` }), null]) {
      const res = await withPolicy(p, () => h.storeAsNode(relay, { ...h.envelope(r.did), ...provenance() }));
      expectError(res, 409, 'policy_provenance_stale');
    }
  });

  it('refuses a step that does not target this Cache (422 cache_not_published)', async () => {
    const elsewhere = await h.registerRecipient(46, { cacheEndpoints: [OTHER_CACHE_URL] });
    const cases: Body[] = [
      storeStep([{ service_did: elsewhere.did, service_id: elsewhere.serviceId }]),
      storeStep([{ service_did: r.did, service_id: r.archiveServiceId }]),
      storeStep([{ service_did: r.did, service_id: r.serviceId }], 'Archive'),
      storeStep([{ service_did: 'did:platform:1111111111111111', service_id: 'did:platform:1111111111111111#cache' }]),
    ];
    for (const action of cases) {
      const res = await withPolicy(policy(action), () => h.storeAsNode(relay, { ...h.envelope(r.did), ...provenance() }));
      expectError(res, 422, 'cache_not_published');
    }
    const fwd = await withPolicy(policy(storeStep([{ service_did: r.did, service_id: r.serviceId }])), () =>
      h.storeAsNode(relay, { ...h.envelope(r.did), ...provenance({}, { step_id: 'fwd' }) }),
    );
    expectError(fwd, 422, 'cache_not_published');
    const baseElsewhere = await withPolicy(policy({ type: 'BaseDidDelivery/v1' }, { sourceId: elsewhere.did }), () =>
      h.storeAsNode(relay, { ...h.envelope(elsewhere.did), ...provenance() }),
    );
    expectError(baseElsewhere, 422, 'cache_not_published');
  });

  it('refuses provenance from clients and malformed provenance from nodes', async () => {
    expectError(await h.storeRaw({ ...h.envelope(r.did), ...provenance() }), 400, 'client_policy_context_forbidden');
    const partial = { ...h.envelope(r.did), policy_id: POLICY_ID };
    expectError(await h.storeAsNode(relay, partial), 400, 'invalid_envelope');
  });
});
