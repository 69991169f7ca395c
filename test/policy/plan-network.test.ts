/**
 * Delivery policies executed between separate nodes over real HTTP (http-api.md §10.3, §10.4.2, §11.1): a Directory,
 * three Caches and two Relays. A persona policy storing into two of three Caches with `required_replicas` 2 (one
 * Cache down still succeeds, two down fails listing `attempted_caches`), a Forward handed off to a second Relay
 * that resumes the plan, `Reject/v1` → 403, an Archive step whose service was removed → 422, constraint overrides bounding size and retention, and Caches refusing
 * forged provenance and plain stores for a recipient whose policy applies.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { loadNodeKey } from '../../src/app/node-keys.js';
import { signNodeRequest } from '../../src/protocol/node-signature.js';
import { nodeIdentityOf } from '../../src/relay/node-identity.js';
import { isoSeconds, registerRecipientAt, type Recipient } from '../cache/harness.js';
import { fetchJson } from '../cache/http-support.js';
import type { TestNode } from '../support/network.js';
import { mutate } from '../support/directory-flows.js';
import { registerServiceDid, rule, storePlan, target, type ServiceDid } from '../support/policy-flows.js';
import { registerNamedPersona } from '../relay/ledger-setup.js';
import {
  directoryOf,
  envelope,
  profile,
  pulledEnvelope,
  relayPost,
  setPolicy,
  startCacheNode,
  startDirectoryNode,
  startRelayNode,
  type Body,
} from './network-support.js';

describe('delivery policies across separate nodes', () => {
  let dir: TestNode;
  const caches: TestNode[] = [];
  let relayA: TestNode;
  let relayB: TestNode;
  let svc: ServiceDid;
  let cacheUrls: string[];

  before(async () => {
    dir = await startDirectoryNode();
    for (let i = 0; i < 3; i++) caches.push(await startCacheNode(dir));
    cacheUrls = caches.map((c) => c.urls.cache!);
    relayA = await startRelayNode(dir);
    relayB = await startRelayNode(dir);
    svc = await registerServiceDid(
      directoryOf(dir),
      71,
      cacheUrls.map((url, i) => ({ fragment: `c${i + 1}`, kind: 'Cache' as const, endpoints: [url] })),
    );
  });
  after(async () => {
    for (const n of [relayA, relayB, ...caches, dir]) await n?.stop();
  });

  const details = (b: Body) => b.details as Body;
  const recipient = (seed: number) => registerRecipientAt(directoryOf(dir), seed, { cacheEndpoints: cacheUrls });

  it('Reject/v1 answers 403 policy_rejected with its reason code; nothing is stored', async () => {
    const r = await recipient(81);
    await setPolicy(dir, r, 'did', r.did, [rule('deny', 5, { type: 'Reject/v1', reason_code: 42 })]);
    const env = envelope(r.did);
    const res = await relayPost(relayA, env);
    assert.equal(res.status, 403, JSON.stringify(res.body));
    assert.equal(res.body.code, 'policy_rejected');
    assert.equal(details(res.body).reason_code, 42);
    assert.equal(details(res.body).rule_id, 'deny');
    assert.equal(res.body.cache_attempted, false);
    assert.equal(await pulledEnvelope(cacheUrls[0]!, r, env.message_id), undefined);
  });

  it('hands a Forward to a second Relay, which resumes after the Forward step and stores', async () => {
    const r = await recipient(82);
    const relayService = { service_did: relayB.identity.did, service_id: `${relayB.identity.did}#relay` };
    const plan = {
      type: 'DeliveryPlan/v1',
      entry_step: 'fwd',
      steps: [
        { id: 'fwd', operation: 'Forward', targets: [relayService] },
        { id: 'keep', operation: 'Store', targets: [target(svc, 'c3')], desired_replicas: 1, required_replicas: 1 },
      ],
      transitions: [{ from: 'fwd', to: 'keep', trigger: 'Success', mode: 'Next' }],
    };
    const written = await setPolicy(dir, r, 'did', r.did, [rule('relay-on', 3, plan)]);
    const env = envelope(r.did);
    const res = await relayPost(relayA, env);
    assert.equal(res.status, 202, JSON.stringify(res.body));
    assert.equal(res.body.code, 'policy_applied');
    assert.equal(res.body.delivery_mode, 'policy_handoff');
    assert.deepEqual(details(res.body).forwarded_endpoints, [relayB.urls.relay]);
    assert.equal(details(res.body).policy_id, written.policy_id);
    assert.equal(details(res.body).policy_revision, 1);
    assert.equal(details(res.body).rule_id, 'relay-on');
    assert.equal(details(res.body).policy_source, 'did');
    assert.equal(details(res.body).accepted_caches, undefined, 'accepts after a Forward are not observed by this Relay');

    const stored = await pulledEnvelope(cacheUrls[2]!, r, env.message_id);
    assert.ok(stored, 'the second Relay ran the Store step');
    const context = stored.policy_context as Body;
    assert.equal(context.step_id, 'keep');
    assert.equal(context.relay_did, relayB.identity.did, 'stored by the Relay that resumed');
    assert.equal(stored.policy_rule_id, 'relay-on');
    for (const [k, v] of Object.entries(env)) assert.deepEqual(stored[k], v, `client field ${k} untouched`);
    assert.equal(await pulledEnvelope(cacheUrls[0]!, r, env.message_id), undefined, 'no other Cache got it');
  });

  it('an Archive step whose Archive service was removed after the policy answers 422 plan_not_deliverable; nothing is stored', async () => {
    const r = await recipient(85);
    const archives = await registerServiceDid(directoryOf(dir), 72, [{ fragment: 'a1', kind: 'Archive', endpoints: [cacheUrls[0]!] }]);
    const plan = {
      type: 'DeliveryPlan/v1',
      entry_step: 'archive',
      steps: [{ id: 'archive', operation: 'Archive', targets: [target(archives, 'a1')] }],
      transitions: [],
    };
    await setPolicy(dir, r, 'did', r.did, [rule('archive-only', 2, plan)]);
    // the ledger takes only targets that name an Archive service; the service DID may drop it afterwards
    await mutate(directoryOf(dir), archives.did, archives.key, 'RemoveService', { id: archives.id('a1') });
    const env = envelope(r.did);
    const res = await relayPost(relayA, env);
    assert.equal(res.status, 422, JSON.stringify(res.body));
    assert.equal(res.body.code, 'plan_not_deliverable');
    assert.equal(res.body.success, false);
    assert.equal(res.body.delivery_mode, 'failed');
    assert.equal(details(res.body).rule_id, 'archive-only');
    const failed = details(res.body).failed_steps as Body[];
    assert.equal(failed.length, 1);
    assert.equal(failed[0]!.step_id, 'archive');
    assert.match(String(failed[0]!.reason), /service_not_found/);
    for (const url of cacheUrls) assert.equal(await pulledEnvelope(url, r, env.message_id), undefined);
  });

  it('the Cache refuses forged provenance and plain stores when a policy applies', async () => {
    const r = await recipient(83);
    const written = await setPolicy(dir, r, 'did', r.did, [rule('one', 1, storePlan([target(svc, 'c2')]))]);
    const node = nodeIdentityOf(profile, loadNodeKey(relayA.dataDir));
    const storeAsNode = async (url: string, body: Body) => {
      const text = JSON.stringify(body);
      const headers = signNodeRequest(profile, node, {
        method: 'POST',
        url: `${url}/cache/store`,
        body: text,
        timestamp: isoSeconds(Date.now()),
        nonce: randomUUID(),
      });
      return fetchJson(`${url}/cache/store`, { body: text, headers });
    };
    const provenance = (over: Body = {}, context: Body = {}): Body => ({
      policy_id: written.policy_id,
      policy_revision: 1,
      policy_rule_id: 'one',
      policy_block_hash: `0x${'ab'.repeat(32)}`,
      policy_block_number: 1,
      policy_context: { source: 'did', source_id: r.did, step_id: 'store', relay_did: node.did, relay_service_id: node.serviceId, ...context },
      ...over,
    });

    const wrongRule = await storeAsNode(cacheUrls[1]!, { ...envelope(r.did), ...provenance({ policy_rule_id: 'other' }) });
    assert.equal(wrongRule.status, 409, JSON.stringify(wrongRule.body));
    assert.equal(wrongRule.body.code, 'policy_provenance_stale');
    const wrongRevision = await storeAsNode(cacheUrls[1]!, { ...envelope(r.did), ...provenance({ policy_revision: 2 }) });
    assert.equal(wrongRevision.body.code, 'policy_provenance_stale');
    const notATarget = await storeAsNode(cacheUrls[0]!, { ...envelope(r.did), ...provenance() });
    assert.equal(notATarget.status, 422, JSON.stringify(notATarget.body));
    assert.equal(notATarget.body.code, 'cache_not_published', 'c1 is not a target of the Store step');
    const unsigned = await fetchJson(`${cacheUrls[1]}/cache/store`, { body: { ...envelope(r.did), ...provenance() } });
    assert.equal(unsigned.status, 400);
    assert.equal(unsigned.body.code, 'client_policy_context_forbidden');
    const plain = await fetchJson(`${cacheUrls[1]}/cache/store`, { body: envelope(r.did) });
    assert.equal(plain.status, 422, JSON.stringify(plain.body));
    assert.equal(plain.body.code, 'policy_applies');

    const genuine = await storeAsNode(cacheUrls[1]!, { ...envelope(r.did), ...provenance() });
    assert.equal(genuine.status, 202, JSON.stringify(genuine.body));
    assert.equal(genuine.body.policy_id, written.policy_id);
    assert.equal(genuine.body.policy_revision, 1);
    assert.equal(genuine.body.rule_id, 'one');
  });

  describe('a persona policy storing into two of three Caches (required 2)', () => {
    let r: Recipient;
    const to = () => `${r.did}@shop`;

    before(async () => {
      r = await recipient(84);
      registerNamedPersona(dir.ledger, r, 'shop');
      directoryOf(dir).settle();
      const targets = [target(svc, 'c1'), target(svc, 'c2'), target(svc, 'c3')];
      const overrides = { requested_cache_seconds: 3600, max_unchunked_message_bytes: 64, max_chunk_bytes: 64 };
      await setPolicy(dir, r, 'persona', 'shop', [rule('replicate', 9, storePlan(targets, 2, 2), [], overrides)]);
    });

    it('stores into the first two Caches in priority order, provenance attached and retention bounded', async () => {
      const env = envelope(to());
      const res = await relayPost(relayA, env);
      assert.equal(res.status, 202, JSON.stringify(res.body));
      assert.equal(res.body.code, 'policy_applied');
      assert.equal(res.body.delivery_mode, 'policy_delivery');
      assert.equal(res.body.cache_result, 'accepted');
      assert.equal(res.body.retry_count, 2);
      assert.equal(details(res.body).policy_source, 'persona');
      assert.deepEqual(details(res.body).accepted_caches, cacheUrls.slice(0, 2));
      assert.deepEqual(details(res.body).attempted_caches, cacheUrls.slice(0, 2));
      const stored = await pulledEnvelope(cacheUrls[0]!, r, env.message_id);
      assert.ok(stored);
      assert.equal((stored.policy_context as Body).source, 'persona');
      assert.equal((stored.policy_context as Body).source_id, 'shop');
      const expiresAt = Date.parse(String(stored.expires_at));
      assert.ok(expiresAt <= Date.now() + 3_600_000, `kept at most requested_cache_seconds (expires ${String(stored.expires_at)})`);
      assert.ok(await pulledEnvelope(cacheUrls[1]!, r, env.message_id));
      assert.equal(await pulledEnvelope(cacheUrls[2]!, r, env.message_id), undefined, 'desired_replicas is 2');
    });

    it("applies the rule's max_unchunked_message_bytes at the Relay", async () => {
      const big = await relayPost(relayA, envelope(to(), { payload: { ciphertext_b64: Buffer.alloc(65).toString('base64') } }));
      assert.equal(big.status, 413, JSON.stringify(big.body));
      assert.equal(big.body.code, 'payload_too_large');
      assert.equal(details(big.body).limit_bytes, 64);
    });

    it('still succeeds with one Cache down, and fails listing attempted_caches with two down', async () => {
      await caches[0]!.stop();
      const one = await relayPost(relayA, envelope(to()));
      assert.equal(one.status, 202, JSON.stringify(one.body));
      assert.deepEqual(details(one.body).accepted_caches, cacheUrls.slice(1));
      assert.deepEqual(details(one.body).attempted_caches, cacheUrls);
      assert.equal(one.body.retry_count, 3);

      await caches[1]!.stop();
      const two = await relayPost(relayA, envelope(to()));
      assert.equal(two.status, 502, JSON.stringify(two.body));
      assert.equal(two.body.code, 'upstream_unavailable');
      assert.equal(two.body.success, false);
      assert.equal(two.body.cache_attempted, true);
      assert.deepEqual(details(two.body).attempted_caches, cacheUrls);
      assert.deepEqual(details(two.body).accepted_caches, cacheUrls.slice(2));
      assert.equal(details(two.body).rule_id, 'replicate');
    });
  });
});
