/**
 * Send targets of event rules through the Directory (docs/public-node.md "Event rules and amplification"): the
 * same DID-scope policy with a Send to another DID is refused in profile `platform` (400 `invalid_delivery_policy`,
 * `send_target_not_consented`; every reason and location is in policy-validation.test.ts) and accepted in profile
 * `openpayload` (the deployed rule); a Send to the owner is accepted in both.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { assertError } from '../support/directory-flows.js';
import { startDirectory, type DirectoryHarness } from '../support/directory-harness.js';
import { policyJson, prepareV3, registerServiceDid, sendRule, v3Url, writeV3, type ServiceDid } from '../support/policy-flows.js';

type Body = Record<string, unknown>;

interface Net {
  h: DirectoryHarness;
  owner: ServiceDid;
  other: ServiceDid;
}

describe('event-rule Send targets by profile', () => {
  const nets: Record<'platform' | 'openpayload', Net> = {} as Record<'platform' | 'openpayload', Net>;
  before(async () => {
    for (const profile of ['platform', 'openpayload'] as const) {
      const h = await startDirectory({ profile });
      nets[profile] = { h, owner: await registerServiceDid(h, 170, []), other: await registerServiceDid(h, 171, []) };
    }
  });
  after(async () => {
    for (const n of Object.values(nets)) await n.h.close();
  });

  const stored = async (n: Net): Promise<string> => {
    const res = await n.h.call('GET', v3Url('did', n.owner.did));
    assert.equal(res.status, 200);
    return String(((res.body.policy as Body).ruleset as Body[])[0]!.id);
  };
  const toOther = (n: Net) => ({ action: 'set_policy_v3', policy: policyJson('DID', n.owner.did, n.owner.did, [sendRule('other', n.other.did)]) });
  const toOwner = (n: Net) => ({ action: 'set_policy_v3', policy: policyJson('DID', n.owner.did, n.owner.did, [sendRule('self', n.owner.did)]) });

  it('platform refuses a Send to another DID and accepts one to the owner', async () => {
    const n = nets.platform;
    const refused = await prepareV3(n.h, 'did', n.owner.did, toOther(n));
    assertError(refused, 400, 'invalid_delivery_policy');
    assert.equal((refused.body.details as Body).reason, 'send_target_not_consented');
    await writeV3(n.h, n.owner.key, 'did', n.owner.did, toOwner(n));
    assert.equal(await stored(n), 'self');
  });

  it('openpayload accepts the same Send to another DID, and one to the owner', async () => {
    const n = nets.openpayload;
    assert.equal((await prepareV3(nets.platform.h, 'did', nets.platform.owner.did, toOther(nets.platform))).status, 400, 'the platform node refuses it');
    await writeV3(n.h, n.owner.key, 'did', n.owner.did, toOther(n));
    assert.equal(await stored(n), 'other');
    await writeV3(n.h, n.owner.key, 'did', n.owner.did, { ...toOwner(n), policy: { ...toOwner(n).policy, revision: 2 } });
    assert.equal(await stored(n), 'self');
  });
});
