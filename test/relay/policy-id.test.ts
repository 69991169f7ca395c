/**
 * One `policy_id` per policy: a policy written through the v2 routes is reported by the Relay's DeliveryResult
 * (`details.policy_id`) and the stored copy's provenance with the id the write and `GET /delivery-policies/…` show.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Recipient } from '../cache/harness.js';
import { writeV2 } from '../support/policy-flows.js';
import { expectSuccess, startRelay, type RelayHarness } from './harness.js';

type Body = Record<string, unknown>;

describe('POST /relay: the policy_id of a v2-written policy', () => {
  let h: RelayHarness;
  let r: Recipient;
  before(async () => {
    h = await startRelay();
    r = await h.registerRecipient(31);
  });
  after(() => h.close());

  it('details.policy_id equals the id of GET /delivery-policies/dids/{did}', async () => {
    const written = await writeV2(h.dir, r.key, {
      action: 'set_did_policy_v2',
      did: r.did,
      policy: {
        scope: { type: 'DID', id: r.did },
        operator_did: r.did,
        ruleset: [{ id: 'base', priority: 1, conditions: [], action: { type: 'BaseDidDelivery/v1' } }],
      },
    });
    const read = await h.dir.call('GET', `/delivery-policies/dids/${encodeURIComponent(r.did)}`);
    const id = (read.body.policy as Body).policy_id as string;
    assert.equal(written.policy_id, id);

    const env = h.envelope(r.did);
    const res = await h.post(env);
    expectSuccess(res, 'policy_applied', 'policy_delivery');
    const details = res.body.details as Body;
    assert.equal(details.policy_id, id);
    assert.equal(details.rule_id, 'base');
    const stored = await h.mailbox.getMessage(r.did, env.message_id as string, h.clock.nowMs());
    assert.equal(stored?.meta.provenance?.policyId, id, 'the stored copy carries the same id');
  });
});
