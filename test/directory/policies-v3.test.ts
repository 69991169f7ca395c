/**
 * Delivery policies version 3 over HTTP (http-api.md §8.3) on DID, persona and application scopes: read, owner
 * nonce, prepare, set and clear, and the codes for bad paths, missing or inactive scopes and owners.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { to0x } from '../../src/base/bytes.js';
import { policyIdV3 } from '../../src/protocol/policy/policy-id.js';
import { startDirectory, type DirectoryHarness } from '../support/directory-harness.js';
import { assertAccepted, assertError, kid, mutate, signHex } from '../support/directory-flows.js';
import { authorize, registerApplication } from '../support/application-flows.js';
import { controlPersona, operatorOf, registerNamed, type Operator } from '../support/persona-flows.js';
import {
  forwardPlan,
  policyJson,
  preparedV3,
  prepareV3,
  registerServiceDid,
  rule,
  sendRule,
  target,
  v3Url,
  writeV3,
  type ServiceDid,
} from '../support/policy-flows.js';

type Body = Record<string, unknown>;

describe('delivery policies v3', () => {
  let h: DirectoryHarness;
  let relay: ServiceDid;
  let seed = 150;
  before(async () => {
    h = await startDirectory();
    relay = await registerServiceDid(h, 140, [{ fragment: 'relay', kind: 'Relay' }]);
  });
  after(() => h.close());
  const fwd = (id = 'r1') => rule(id, 1, forwardPlan([target(relay, 'relay')]));

  it('DID scope: nonce, prepare, set, read, clear', async () => {
    const o = await registerServiceDid(h, seed++, []);
    const nonce = await h.call('GET', `${v3Url('did', o.did)}/nonce`);
    assert.deepEqual(nonce.body, { scope: { type: 'DID', id: o.did }, operator_did: o.did, nonce: '0' });
    assertError(await h.call('GET', v3Url('did', o.did)), 404, 'policy_not_found');
    const prep = await prepareV3(h, 'did', o.did, { action: 'set_policy_v3', policy: policyJson('DID', o.did, o.did, [fwd()]) });
    assert.equal(prep.status, 200, JSON.stringify(prep.body));
    assert.equal(prep.body.extrinsic, 'apply_policy_v3_with_proof');
    assert.equal(prep.body.nonce_domain, 'policy_v3_nonce');
    assert.deepEqual(prep.body.scope, { type: 'DID', id: o.did });
    assert.equal((prep.body.policy as Body).policy_id, to0x(policyIdV3(h.profile, { kind: 'Did', id: o.did })));
    assert.equal((prep.body.policy as Body).revision, 1);
    const set = await writeV3(h, o.key, 'did', o.did, { action: 'set_policy_v3', policy: policyJson('DID', o.did, o.did, [fwd()]) });
    assert.equal(set.operation, 'SetPolicy');
    assert.equal(set.revision, 1);
    assert.deepEqual(set.scope, { type: 'DID', id: o.did });
    const read = await h.call('GET', v3Url('did', o.did));
    assert.equal(read.status, 200);
    assert.equal((read.body.policy as Body).policy_id, set.policy_id);
    assert.equal(typeof read.body.block_number, 'number');
    assert.equal((await h.call('GET', `${v3Url('did', o.did)}/nonce`)).body.nonce, '1');
    const again = await writeV3(h, o.key, 'did', o.did, { action: 'set_policy_v3', policy: policyJson('DID', o.did, o.did, [fwd('r2')]) });
    assert.equal(again.revision, 2);
    const cleared = await writeV3(h, o.key, 'did', o.did, { action: 'clear_policy_v3' });
    assert.equal(cleared.operation, 'ClearPolicy');
    assert.equal(cleared.operator_did, o.did);
    assertError(await h.call('GET', v3Url('did', o.did)), 404, 'policy_not_found');
    assertError(await prepareV3(h, 'did', o.did, { action: 'clear_policy_v3' }), 404, 'policy_not_found');
  });

  it('paths, actions and submit pipeline errors', async () => {
    const o = await registerServiceDid(h, seed++, []);
    assertError(await h.call('GET', v3Url('group', 'x')), 400, 'invalid_request');
    assertError(await h.call('GET', v3Url('did', 'nope')), 400, 'invalid_did');
    assertError(await h.call('GET', v3Url('persona', 'a..b')), 400, 'invalid_persona');
    assertError(await h.call('GET', v3Url('application', 'Talaria Push')), 400, 'invalid_application_id');
    assertError(await prepareV3(h, 'did', o.did, { action: 'set_policy' }), 400, 'unsupported_action');
    assertError(
      await prepareV3(h, 'did', o.did, { action: 'set_policy_v3', policy: policyJson('DID', relay.did, relay.did, [fwd()]) }),
      400,
      'path_body_mismatch',
    );
    assertError(
      await prepareV3(h, 'did', o.did, { action: 'set_policy_v3', policy: policyJson('DID', o.did, o.did, [fwd()]), operator_did: relay.did }),
      400,
      'path_body_mismatch',
    );
    // policy_ttl_seconds is required in v3.
    const noTtl = policyJson('DID', o.did, o.did, [fwd()]);
    delete noTtl.policy_ttl_seconds;
    const missing = await prepareV3(h, 'did', o.did, { action: 'set_policy_v3', policy: noTtl });
    assertError(missing, 400, 'invalid_delivery_policy');
    assert.equal((missing.body.details as Body).reason, 'missing_field');
    // Another DID as operator: 403 invalid_policy_scope (owner mismatch).
    assertError(
      await prepareV3(h, 'did', o.did, { action: 'set_policy_v3', policy: policyJson('DID', o.did, relay.did, [fwd()]) }),
      403,
      'invalid_policy_scope',
    );
    assertError(
      await prepareV3(h, 'did', o.did, { action: 'set_policy_v3', policy: policyJson('DID', o.did, o.did, [fwd()]), signer_key_id: kid(o.did, 'x') }),
      403,
      'signer_not_authorized',
    );
    const p = await preparedV3(h, o.key, 'did', o.did, { action: 'set_policy_v3', policy: policyJson('DID', o.did, o.did, [fwd()]) });
    const url = p.route.url;
    assertError(await h.call('PUT', url, { ...p.body, action: 'clear_policy_v3' }), 400, 'action_mismatch');
    assertError(await h.call('DELETE', url, p.body), 400, 'action_mismatch');
    assertError(await h.call('PUT', url, { ...p.body, valid_until: String(BigInt(p.body.valid_until as string) - 1n) }), 403, 'canonical_payload_mismatch');
    assertError(await h.call('PUT', url, { ...p.body, canonical_payload: '0x01' }), 400, 'invalid_canonical_payload');
    assertError(await h.call('PUT', url, { ...p.body, signature: signHex(relay.key, p.prepared.payload_to_sign as string) }), 403, 'invalid_signature');
    assertAccepted(await h.call('PUT', url, p.body));
    h.settle();
    const stale = await h.call('PUT', url, p.body);
    assertError(stale, 409, 'nonce_mismatch');
    assert.equal((stale.body.details as Body).nonce_domain, 'policy_v3_nonce');
    // An explicit revision that is not stored + 1.
    assertError(
      await prepareV3(h, 'did', o.did, { action: 'set_policy_v3', policy: { ...policyJson('DID', o.did, o.did, [fwd()]), revision: 1 } }),
      409,
      'policy_revision_conflict',
    );
  });

  it('missing or inactive scopes: 404 / 409 with the cause', async () => {
    const unknown = 'did:platform:11111111111111111111111';
    assertError(await h.call('GET', `${v3Url('did', unknown)}/nonce`), 404, 'did_not_found');
    const gone = await registerServiceDid(h, seed++, []);
    await mutate(h, gone.did, gone.key, 'deactivate_did');
    assertError(await h.call('GET', `${v3Url('did', gone.did)}/nonce`), 409, 'did_deactivated');
    assertError(
      await prepareV3(h, 'did', gone.did, { action: 'set_policy_v3', policy: policyJson('DID', gone.did, gone.did, [fwd()]) }),
      409,
      'did_deactivated',
    );
    assertError(await h.call('GET', `${v3Url('persona', 'ghost')}/nonce`), 404, 'persona_not_found');
    assertError(await h.call('GET', `${v3Url('application', 'no.such.app')}/nonce`), 404, 'application_not_found');
    const op = await operatorOf(h, seed++);
    await registerNamed(h, 'revokedv3', op);
    await controlPersona(h, 'revokedv3', op, { action: 'revoke_persona' });
    assertError(await h.call('GET', `${v3Url('persona', 'revokedv3')}/nonce`), 409, 'persona_inactive');
    assertError(await prepareV3(h, 'persona', 'revokedv3', { action: 'clear_policy_v3' }), 409, 'persona_inactive');
    // a clear without operator_did resolves the owner before its signer fields are refused (their parse is deferred)
    assertError(await prepareV3(h, 'persona', 'revokedv3', { action: 'clear_policy_v3', signer_key_id: '' }), 409, 'persona_inactive');
    assertError(await prepareV3(h, 'did', unknown, { action: 'clear_policy_v3', valid_until: 'x' }), 404, 'did_not_found');
    assertError(await prepareV3(h, 'did', unknown, { action: 'clear_policy_v3', operator_did: unknown, valid_until: 'x' }), 400, 'invalid_valid_until');
    await registerApplication(h, 'suspended.app', op);
    await authorize(h, 'suspended.app', { action: 'set_status', status: 'suspended' }, op.key);
    assertError(await h.call('GET', `${v3Url('application', 'suspended.app')}/nonce`), 409, 'application_inactive');
  });

  it('persona scope: owned by the operator, signed by a controller', async () => {
    const op: Operator = await operatorOf(h, seed++);
    await registerNamed(h, 'shopv3', op);
    assert.equal((await h.call('GET', `${v3Url('persona', 'SHOPV3')}/nonce`)).body.operator_did, op.did);
    const pol = policyJson('PERSONA', 'shopv3', op.did, [fwd()]);
    assertError(
      await prepareV3(h, 'persona', 'shopv3', { action: 'set_policy_v3', policy: pol, signer_key_id: kid(op.did, 'key-1') }),
      403,
      'invalid_persona_controller',
    );
    const set = await writeV3(h, op.key, 'persona', 'ShopV3', { action: 'set_policy_v3', policy: pol });
    assert.deepEqual(set.scope, { type: 'PERSONA', id: 'shopv3' });
    assert.equal((await h.call('GET', v3Url('persona', 'shopv3'))).status, 200);
    await writeV3(h, op.key, 'persona', 'shopv3', { action: 'clear_policy_v3' });
    assertError(await h.call('GET', v3Url('persona', 'shopv3')), 404, 'policy_not_found');
  });

  it('application scope: event-bound rules of the control DID; read through /applications/{id}/policy', async () => {
    const control = await operatorOf(h, seed++);
    await registerApplication(h, 'notify.app', control);
    assertError(await h.call('GET', '/applications/notify.app/policy'), 404, 'policy_not_found');
    // A routing rule is forbidden in an application scope.
    const forbidden = await prepareV3(h, 'application', 'notify.app', {
      action: 'set_policy_v3',
      policy: policyJson('APPLICATION', 'notify.app', control.did, [fwd()]),
    });
    assertError(forbidden, 400, 'invalid_delivery_policy');
    assert.equal((forbidden.body.details as Body).reason, 'application_rule_forbidden');
    const set = await writeV3(h, control.key, 'application', 'notify.app', {
      action: 'set_policy_v3',
      policy: policyJson('APPLICATION', 'notify.app', control.did, [sendRule('ev', control.did)]),
    });
    assert.equal(set.revision, 1);
    const read = await h.call('GET', '/applications/notify.app/policy');
    assert.equal(read.status, 200, JSON.stringify(read.body));
    assert.equal(read.body.application_id, 'notify.app');
    assert.equal(read.body.control_did, control.did);
    assert.equal(read.body.policy_revision, 1);
    assert.equal(read.body.policy_ttl_seconds, 120);
    assert.equal(((read.body.policy as Body).scope as Body).type, 'APPLICATION');
    assert.deepEqual((((read.body.policy as Body).ruleset as Body[])[0]!.action as Body).steps, [
      { id: 'notify', operation: 'Send', recipient_did: control.did, payload_template: { recipient: { $from: '/event/recipient_did' }, kind: 'stored' } },
    ]);
    assert.equal((await h.call('GET', '/applications/notify.app')).body.policy_revision, 1);
    // Another DID cannot write it.
    const stranger = await operatorOf(h, seed++);
    assertError(
      await prepareV3(h, 'application', 'notify.app', {
        action: 'set_policy_v3',
        policy: policyJson('APPLICATION', 'notify.app', stranger.did, [sendRule('ev', control.did)]),
      }),
      403,
      'invalid_policy_scope',
    );
    // Suspended: the policy read is 404.
    await authorize(h, 'notify.app', { action: 'set_status', status: 'suspended' }, control.key);
    assertError(await h.call('GET', '/applications/notify.app/policy'), 404, 'application_not_found');
  });
});
