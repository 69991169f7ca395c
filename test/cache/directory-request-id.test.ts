/**
 * Every Directory lookup the Cache makes for a request is asked with that request's id (which a remote Directory's
 * port sends as `X-Request-Id`): the node DID of a node-signed store, the sender, the alias, the recipient's
 * resolution, the named step's targets, and the DID record of every retrieval proof — the `X-Request-Id` sent, else
 * the id made up and echoed.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { toBase64 } from '../../src/base/bytes.js';
import { NETWORK_CONSTRAINTS } from '../../src/protocol/constraints.js';
import { senderSigningBytes } from '../../src/protocol/sender-signature.js';
import type { PolicyView } from '../../src/ports/directory-port.js';
import { kid } from '../support/directory-flows.js';
import { ackBody, startCache, type CacheHarness, type Recipient, type RelayNode, type Reply } from './harness.js';

type Body = Record<string, unknown>;
const enc = encodeURIComponent;
const MADE_UP_ID = /^[a-z0-9]+-[a-z0-9]+$/;
const POLICY_ID = `0x${'ab'.repeat(32)}`;

describe("the Cache's Directory lookups carry the request id", () => {
  let h: CacheHarness;
  let r: Recipient;
  let sender: Recipient;
  let relay: RelayNode;
  before(async () => {
    h = await startCache();
    r = await h.registerRecipient(71);
    sender = await h.registerRecipient(72);
    relay = await h.registerRelay(73);
  });
  after(() => h.close());

  /** The lookups `run` asked, as `lookup key` → request ids. */
  const askedBy = async (run: () => Promise<Reply>): Promise<{ res: Reply; asked: [string, string | undefined][] }> => {
    const before = h.port.asked.length;
    const res = await run();
    return { res, asked: h.port.asked.slice(before).map((a) => [`${a.lookup} ${a.key}`, a.requestId]) };
  };

  /** The envelope to `r`'s alias, signed by `sender`. */
  const signed = (over: Body = {}): Body => {
    const env = h.envelope(r.alias, over);
    env.sender_signature = toBase64(sender.key.sign(senderSigningBytes(h.dir.profile, env)));
    env.sender = sender.did;
    env.sender_key_id = kid(sender.did, 'key-1');
    return env;
  };

  const storeStepPolicy = (): PolicyView => ({
    source: 'did',
    sourceId: r.did,
    policyId: POLICY_ID,
    policyRevision: 1,
    ruleId: 'store',
    rulePriority: 1,
    action: {
      type: 'DeliveryPlan/v1',
      entry_step: 'keep',
      steps: [{ id: 'keep', operation: 'Store', targets: [{ service_did: r.did, service_id: r.serviceId }], desired_replicas: 1, required_replicas: 1 }],
      transitions: [],
    },
    effectiveConstraints: { ...NETWORK_CONSTRAINTS },
    policyTtlSeconds: 60,
  });
  const provenance = {
    policy_id: POLICY_ID,
    policy_revision: 1,
    policy_rule_id: 'store',
    policy_block_hash: `0x${'cd'.repeat(32)}`,
    policy_block_number: 7,
  };

  it('a signed store to an alias: the sender, the alias and the resolution', async () => {
    const sent = await askedBy(() => h.storeRaw(signed(), { 'x-request-id': 'store-lookups' }));
    assert.equal(sent.res.status, 202, sent.res.text);
    assert.deepEqual(sent.asked, [
      [`getDid ${sender.did}`, 'store-lookups'],
      [`lookupAlias ${r.alias}`, 'store-lookups'],
      [`resolveDelivery ${r.did}`, 'store-lookups'],
    ]);

    const none = await askedBy(() => h.storeRaw(signed()));
    assert.equal(none.res.status, 202, none.res.text);
    const id = none.res.headers['x-request-id'];
    assert.match(String(id), MADE_UP_ID);
    assert.deepEqual(
      none.asked.map(([, requestId]) => requestId),
      [id, id, id],
    );
  });

  it("a node's provenance store: the node DID, the resolution and the named step's target", async () => {
    h.port.policy = storeStepPolicy();
    try {
      const env = {
        ...h.envelope(r.did),
        ...provenance,
        policy_context: { source: 'did', source_id: r.did, step_id: 'keep', relay_did: relay.did, relay_service_id: relay.serviceId },
      };
      const { res, asked } = await askedBy(() => h.storeAsNode(relay, env, { headers: { 'x-request-id': 'node-store' } }));
      assert.equal(res.status, 202, res.text);
      assert.deepEqual(asked, [
        [`getDid ${relay.did}`, 'node-store'],
        [`resolveDelivery ${r.did}`, 'node-store'],
        [`getDid ${r.did}`, 'node-store'],
      ]);
    } finally {
      h.port.policy = null;
    }
  });

  it("every retrieval: the recipient's DID record", async () => {
    const stored = await h.storeRaw(h.envelope(r.did));
    assert.equal(stored.status, 202, stored.text);
    const id = stored.body.message_id as string;
    const path = enc(r.did);
    const requests: [string, (headers: Record<string, string>) => Promise<Reply>][] = [
      ['messages', (x) => h.get(`/cache/messages/${path}`, { ...h.proof(r, 'pull', '*'), ...x })],
      ['summary', (x) => h.get(`/cache/summary/${path}`, { ...h.proof(r, 'summary', '*'), ...x })],
      ['chunks', (x) => h.get(`/cache/chunks/${path}/group-1`, { ...h.proof(r, 'chunks', 'group-1'), ...x })],
      ['message', (x) => h.get(`/cache/message/${path}/${id}`, { ...h.proof(r, 'pull_message', id), ...x })],
      ['ack', (x) => h.post('/cache/ack', ackBody(h.proof(r, 'ack', id), r.did, [id]), x)],
    ];
    for (const [name, send] of requests) {
      const { res, asked } = await askedBy(() => send({ 'x-request-id': `read-${name}` }));
      assert.ok(res.status === 200 || res.status === 404, `${name}: ${res.text}`);
      assert.deepEqual(asked, [[`getDid ${r.did}`, `read-${name}`]], name);
    }
    const { res, asked } = await askedBy(() => requests[1]![1]({}));
    assert.equal(res.status, 200, res.text);
    assert.match(String(res.headers['x-request-id']), MADE_UP_ID);
    assert.deepEqual(asked, [[`getDid ${r.did}`, res.headers['x-request-id']]]);
  });
});
