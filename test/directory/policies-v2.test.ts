/**
 * Delivery policies version 2 over HTTP (http-api.md §8.2): the prepare route fills `policy_id` / `revision`, the
 * six submit routes on DID and persona scopes, the reads, and every error code the routes produce.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { to0x } from '../../src/base/bytes.js';
import { policyIdV2 } from '../../src/protocol/policy/policy-id.js';
import { startDirectory, type DirectoryHarness } from '../support/directory-harness.js';
import { assertAccepted, assertError, kid, mutate, signHex } from '../support/directory-flows.js';
import { controlPersona, enc, operatorOf, registerNamed, type Operator } from '../support/persona-flows.js';
import {
  constraintsOf,
  forwardPlan,
  policyJson,
  policyJsonV2,
  preparedV2,
  prepareV3,
  prepareV2,
  registerServiceDid,
  rule,
  target,
  writeV2,
  writeV3,
  type ServiceDid,
} from '../support/policy-flows.js';

type Body = Record<string, unknown>;

describe('delivery policies v2', () => {
  let h: DirectoryHarness;
  let relay: ServiceDid;
  let owner: ServiceDid;
  let personaOp: Operator;
  let seed = 80;
  before(async () => {
    h = await startDirectory();
    relay = await registerServiceDid(h, 70, [{ fragment: 'relay', kind: 'Relay' }]);
    personaOp = await operatorOf(h, 71);
  });
  after(() => h.close());
  const freshOwner = async () => (owner = await registerServiceDid(h, seed++, []));
  const didPolicy = (did: string, rules: Body[] = [rule('r1', 1, forwardPlan([target(relay, 'relay')]))], extra: Body = {}) =>
    policyJsonV2('DID', did, did, rules, extra);

  it('DID scope: prepare fills policy_id and revision; set, replace, read, clear', async () => {
    await freshOwner();
    const res = await prepareV2(h, { action: 'set_did_policy_v2', did: owner.did, policy: didPolicy(owner.did) });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const b = res.body;
    assert.equal(b.action, 'set_did_policy_v2');
    assert.equal(b.operation, 'SetPolicy');
    assert.equal(b.extrinsic, 'apply_policy_v2_with_proof');
    assert.equal(b.operator_did, owner.did);
    assert.equal(b.nonce_domain, 'policy_nonce');
    assert.equal(b.nonce, '0');
    assert.equal(b.signer_key_id, 'root');
    const policy = b.policy as Body;
    assert.equal(policy.policy_id, to0x(policyIdV2(h.profile, { kind: 'Did', id: owner.did })));
    assert.equal(policy.revision, 1);
    // policy_ttl_seconds is v3-only (product spec): the echo a client submits back does not carry it.
    assert.equal('policy_ttl_seconds' in policy, false);
    assert.deepEqual((b.request as Body).policy, policy);
    assert.equal(b.canonical_payload, b.payload_to_sign);

    const submitted = await writeV2(h, owner.key, { action: 'set_did_policy_v2', did: owner.did, policy: didPolicy(owner.did) });
    assert.equal(submitted.did, owner.did);
    assert.equal(submitted.operation, 'SetPolicy');
    assert.equal(submitted.policy_id, policy.policy_id);
    assert.equal(submitted.revision, 1);
    let read = (await h.call('GET', `/delivery-policies/dids/${enc(owner.did)}`)).body;
    assert.equal((read.policy as Body).revision, 1);
    assert.equal((read.policy as Body).policy_ttl_seconds, 60, "the ledger's v2 struct holds 60; reads show it");
    assert.equal(read.delivery_constraints, null);
    assert.equal((read.scope_constraints as Body).max_replicas, 4);
    // Replace: revision 2.
    const second = await writeV2(h, owner.key, {
      action: 'set_did_policy_v2',
      did: owner.did,
      policy: didPolicy(owner.did, [rule('r2', 5, { type: 'Reject/v1', reason_code: 7 })]),
    });
    assert.equal(second.revision, 2);
    read = (await h.call('GET', `/delivery-policies/dids/${enc(owner.did)}`)).body;
    assert.deepEqual((read.policy as Body).ruleset, [{ id: 'r2', priority: 5, conditions: [], action: { type: 'Reject/v1', reason_code: 7 } }]);
    // Constraints.
    const c = await writeV2(h, owner.key, { action: 'set_did_constraints', did: owner.did, delivery_constraints: constraintsOf({ max_replicas: 2 }) });
    assert.equal(c.operation, 'SetDidConstraints');
    read = (await h.call('GET', `/delivery-policies/dids/${enc(owner.did)}`)).body;
    assert.equal((read.delivery_constraints as Body).max_replicas, 2);
    assert.deepEqual(read.scope_constraints, read.delivery_constraints);
    // Clear, then clearing again is 404 policy_not_found.
    const cleared = await writeV2(h, owner.key, { action: 'clear_did_policy_v2', did: owner.did });
    assert.equal(cleared.operation, 'ClearPolicy');
    read = (await h.call('GET', `/delivery-policies/dids/${enc(owner.did)}`)).body;
    assert.equal(read.policy, null);
    assertError(await prepareV2(h, { action: 'clear_did_policy_v2', did: owner.did }), 404, 'policy_not_found');
    assertError(await h.call('GET', `/delivery-policies/dids/${enc('did:platform:11111111111111111111111')}`), 404, 'did_not_found');
    assertError(await h.call('GET', '/delivery-policies/dids/nope'), 400, 'invalid_did');
  });

  it('DID scope: submit pipeline errors', async () => {
    await freshOwner();
    const p = await preparedV2(h, owner.key, { action: 'set_did_policy_v2', did: owner.did, policy: didPolicy(owner.did) });
    const url = p.route.url;
    assertError(await h.call('PUT', url, { ...p.body, did: relay.did }), 400, 'path_body_mismatch');
    assertError(await h.call('PUT', url, { ...p.body, action: 'clear_did_policy_v2' }), 400, 'action_mismatch');
    assertError(await h.call('PUT', url, { ...p.body, policy: didPolicy(relay.did) }), 400, 'path_body_mismatch');
    assertError(await h.call('PUT', url, { ...p.body, policy: { ...didPolicy(owner.did), extra: 1 } }), 400, 'invalid_delivery_policy');
    assertError(await h.call('PUT', url, { ...p.body, nonce: '-1' }), 400, 'invalid_nonce');
    assertError(await h.call('PUT', url, { ...p.body, nonce: '1' }), 403, 'canonical_payload_mismatch');
    assertError(await h.call('PUT', url, { ...p.body, canonical_payload: '0x00' }), 400, 'invalid_canonical_payload');
    assertError(await h.call('PUT', url, { ...p.body, signature: signHex(relay.key, p.prepared.payload_to_sign as string) }), 403, 'invalid_signature');
    assertError(await h.call('PUT', `/delivery-policies/dids/${enc(relay.did)}`, { ...p.body, did: undefined }), 400, 'path_body_mismatch');
    const tx = assertAccepted(await h.call('PUT', url, p.body));
    const dup = await h.call('PUT', url, p.body);
    assert.equal(dup.body.tx_hash, tx);
    assert.equal(dup.body.duplicate, true);
    h.settle();
    const stale = await h.call('PUT', url, p.body);
    assertError(stale, 409, 'nonce_mismatch');
    assert.deepEqual(stale.body.details, { ledger_error: 'InvalidPolicyV2Nonce', nonce_domain: 'policy_nonce', expected: '1', received: '0' });
    // An explicit stale revision: the ledger's revision rule.
    const stalePolicy = { ...didPolicy(owner.did), revision: 1 };
    assertError(await prepareV2(h, { action: 'set_did_policy_v2', did: owner.did, policy: stalePolicy }), 409, 'policy_revision_conflict');
  });

  it('prepare errors', async () => {
    await freshOwner();
    const deact = await registerServiceDid(h, seed++, []);
    await mutate(h, deact.did, deact.key, 'deactivate_did');
    const cases: [Body, number, string][] = [
      [{ action: 'set_policy' }, 400, 'unsupported_action'],
      [{ action: 'set_did_policy_v2', did: 'x', policy: didPolicy(owner.did) }, 400, 'invalid_did'],
      [{ action: 'set_did_policy_v2', did: owner.did }, 400, 'invalid_delivery_policy'],
      [
        { action: 'set_did_policy_v2', did: 'did:platform:11111111111111111111111', policy: didPolicy('did:platform:11111111111111111111111') },
        404,
        'did_not_found',
      ],
      [{ action: 'set_did_policy_v2', did: deact.did, policy: didPolicy(deact.did) }, 409, 'did_deactivated'],
      [{ action: 'set_did_policy_v2', did: owner.did, policy: didPolicy(owner.did), signer_key_id: kid(owner.did, 'nope') }, 403, 'signer_not_authorized'],
      [{ action: 'set_did_policy_v2', did: owner.did, policy: didPolicy(owner.did), valid_until: 'x' }, 400, 'invalid_valid_until'],
      [{ action: 'set_did_policy_v2', did: owner.did, policy: didPolicy(owner.did, undefined, { operator_did: relay.did }) }, 403, 'invalid_policy_scope'],
      [{ action: 'set_did_constraints', did: owner.did, delivery_constraints: { max_replicas: 1 } }, 400, 'invalid_delivery_constraints'],
      [{ action: 'set_did_constraints', did: owner.did, delivery_constraints: constraintsOf({ max_replicas: 9 }) }, 400, 'invalid_delivery_constraints'],
      [
        { action: 'set_did_constraints', did: owner.did, delivery_constraints: { ...constraintsOf(), effective_ttl_seconds: 5 } },
        400,
        'invalid_delivery_constraints',
      ],
      [{ action: 'set_persona_policy_v2', persona: 'nobody', policy: policyJsonV2('PERSONA', 'nobody', owner.did, []) }, 400, 'invalid_delivery_policy'],
      [{ action: 'clear_persona_policy_v2', persona: 'nobody' }, 404, 'persona_not_found'],
      [{ action: 'clear_persona_policy_v2', persona: 'bad persona' }, 400, 'invalid_persona'],
      // the persona's operator is looked up before the signer fields are refused (their parse is deferred)
      [{ action: 'clear_persona_policy_v2', persona: 'nobody', signer_key_id: '' }, 404, 'persona_not_found'],
      [{ action: 'clear_persona_policy_v2', persona: 'nobody', valid_until: 'x' }, 404, 'persona_not_found'],
      [{ action: 'clear_did_policy_v2', did: owner.did, signer_key_id: '' }, 400, 'invalid_request'],
      [{ action: 'clear_did_policy_v2', did: owner.did, valid_until: 'x' }, 400, 'invalid_valid_until'],
    ];
    for (const [body, status, code] of cases) assertError(await prepareV2(h, body), status, code);
    // After a deactivation the ledger's DidNotFound of a deactivated record is reported as 409 (Directory pre-check).
    const pending = await preparedV2(h, owner.key, { action: 'set_did_constraints', did: owner.did, delivery_constraints: constraintsOf() });
    await mutate(h, owner.did, owner.key, 'deactivate_did');
    assertError(await h.call(pending.route.method, pending.route.url, pending.body), 409, 'did_deactivated');
  });

  it('persona scope: an active controller of the operator signs; set, read, constraints, clear', async () => {
    const persona = `brand${seed}`;
    await registerNamed(h, persona, personaOp);
    const pol = (rules: Body[] = [rule('p1', 1, forwardPlan([target(relay, 'relay')]))]) => policyJsonV2('PERSONA', persona, personaOp.did, rules);
    // A key of the operator that is not a persona controller: 403 invalid_persona_controller.
    assertError(
      await prepareV2(h, { action: 'set_persona_policy_v2', persona, policy: pol(), signer_key_id: kid(personaOp.did, 'key-1') }),
      403,
      'invalid_persona_controller',
    );
    assertError(await prepareV2(h, { action: 'set_persona_policy_v2', persona, policy: pol(), operator_did: relay.did }), 400, 'path_body_mismatch');
    assertError(
      await prepareV2(h, { action: 'set_persona_policy_v2', persona, policy: policyJsonV2('PERSONA', 'other', personaOp.did, []) }),
      400,
      'invalid_delivery_policy',
    );
    assertError(
      await prepareV2(h, {
        action: 'set_persona_policy_v2',
        persona,
        policy: policyJsonV2('PERSONA', 'other', personaOp.did, [rule('a', 1, { type: 'Reject/v1' })]),
      }),
      400,
      'path_body_mismatch',
    );
    const set = await writeV2(h, personaOp.key, { action: 'set_persona_policy_v2', persona: persona.toUpperCase(), policy: pol() });
    assert.equal(set.did, persona, 'policy routes for a persona put the persona in `did`');
    assert.equal(set.persona, persona);
    assert.equal(set.operator_did, personaOp.did);
    let read = (await h.call('GET', `/delivery-policies/personas/${persona}`)).body;
    assert.equal(read.operator_did, personaOp.did);
    assert.equal(((read.policy as Body).scope as Body).type, 'PERSONA');
    await writeV2(h, personaOp.key, { action: 'set_persona_constraints', persona, delivery_constraints: constraintsOf({ max_replicas: 1 }) });
    read = (await h.call('GET', `/delivery-policies/personas/${persona}`)).body;
    assert.equal((read.delivery_constraints as Body).max_replicas, 1);
    assert.equal((read.scope_constraints as Body).max_replicas, 1);
    await writeV2(h, personaOp.key, { action: 'clear_persona_policy_v2', persona });
    read = (await h.call('GET', `/delivery-policies/personas/${persona}`)).body;
    assert.equal(read.policy, null);
    assertError(await h.call('GET', '/delivery-policies/personas/unknown-persona'), 404, 'persona_not_found');
    // Revoked: persona-scoped writes fail with the ledger's persona state.
    await controlPersona(h, persona, personaOp, { action: 'revoke_persona' });
    assertError(await prepareV2(h, { action: 'set_persona_policy_v2', persona, policy: pol() }), 409, 'persona_inactive');
    assertError(await prepareV2(h, { action: 'set_persona_constraints', persona, delivery_constraints: constraintsOf() }), 409, 'persona_inactive');
  });

  it('after a v3 write, v2 writes to the scope conflict (409 policy_revision_conflict); v2 clear is 404', async () => {
    await freshOwner();
    await writeV3(h, owner.key, 'did', owner.did, {
      action: 'set_policy_v3',
      policy: policyJson('DID', owner.did, owner.did, [rule('r1', 1, forwardPlan([target(relay, 'relay')]))]),
    });
    assertError(await prepareV2(h, { action: 'set_did_policy_v2', did: owner.did, policy: didPolicy(owner.did) }), 409, 'policy_revision_conflict');
    assertError(await prepareV2(h, { action: 'clear_did_policy_v2', did: owner.did }), 404, 'policy_not_found');
  });

  it('the public-endpoint rule, and allowPrivateEndpoints', async () => {
    await freshOwner();
    const local = await registerServiceDid(h, seed++, [{ fragment: 'relay', kind: 'Relay', endpoints: ['https://relay.node.example/x'] }]);
    const res = await prepareV2(h, {
      action: 'set_did_policy_v2',
      did: owner.did,
      policy: didPolicy(owner.did, [rule('r1', 1, forwardPlan([target(local, 'relay')]))]),
    });
    assertError(res, 400, 'invalid_delivery_policy');
    assert.equal((res.body.details as Body).reason, 'non_public_endpoint');
    assert.equal((res.body.details as Body).rule_id, 'r1');
    assert.equal((res.body.details as Body).step_id, 'fwd');
    assert.equal((res.body.details as Body).endpoint, 'https://relay.node.example/x');

    const dev = await startDirectory({ deps: { allowPrivateEndpoints: true } });
    try {
      const o = await registerServiceDid(dev, 90, []);
      const l = await registerServiceDid(dev, 91, [{ fragment: 'relay', kind: 'Relay', endpoints: ['http://127.0.0.1:8080'] }]);
      await writeV2(dev, o.key, {
        action: 'set_did_policy_v2',
        did: o.did,
        policy: policyJsonV2('DID', o.did, o.did, [rule('r1', 1, forwardPlan([target(l, 'relay')]))]),
      });
    } finally {
      await dev.close();
    }
  });

  it('policy_ttl_seconds is v3-only on platform: a v2 policy carrying it is refused at prepare and submit, nothing changes', async () => {
    await freshOwner();
    const ttlRefused = (res: { status: number; body: Body }, where: string) => {
      assertError(res, 400, 'invalid_delivery_policy');
      const details = res.body.details as Body;
      assert.equal(details.reason, 'policy_ttl_v3_only', where);
      assert.equal(details.field, 'policy.policy_ttl_seconds', where);
    };
    const withTtl = (ttl: number) => ({ ...didPolicy(owner.did), policy_ttl_seconds: ttl });
    // 60 (the value the ledger encodes anyway) and any other value alike.
    for (const ttl of [60, 120]) ttlRefused(await prepareV2(h, { action: 'set_did_policy_v2', did: owner.did, policy: withTtl(ttl) }), `prepare ${ttl}`);
    const persona = `ttl${seed}`;
    await registerNamed(h, persona, personaOp);
    ttlRefused(
      await prepareV2(h, {
        action: 'set_persona_policy_v2',
        persona,
        policy: { ...policyJsonV2('PERSONA', persona, personaOp.did, [rule('p', 1, { type: 'Reject/v1' })]), policy_ttl_seconds: 60 },
      }),
      'persona prepare',
    );
    // Submit: the prepared, signed body (which encodes 60) with the field added to its policy.
    const p = await preparedV2(h, owner.key, { action: 'set_did_policy_v2', did: owner.did, policy: didPolicy(owner.did) });
    const url = `/delivery-policies/dids/${enc(owner.did)}`;
    ttlRefused(await h.call('PUT', url, { ...p.body, policy: { ...(p.body.policy as Body), policy_ttl_seconds: 60 } }), 'submit');
    h.settle();
    const read = (await h.call('GET', url)).body;
    assert.equal(read.policy, null, 'nothing was written');
    // The nonce was not consumed: the same signed body without the field is accepted.
    assertAccepted(await h.call('PUT', url, p.body));
    h.settle();
    assert.equal(((await h.call('GET', url)).body.policy as Body).policy_ttl_seconds, 60);
    // v3 still requires it.
    const v3 = await prepareV3(h, 'did', owner.did, { action: 'set_policy_v3', policy: didPolicy(owner.did) });
    assertError(v3, 400, 'invalid_delivery_policy');
    assert.equal((v3.body.details as Body).reason, 'missing_field');
    assert.equal((v3.body.details as Body).field, 'policy.policy_ttl_seconds');
  });

  it('profile openpayload keeps accepting policy_ttl_seconds in a v2 policy (deployed clients)', async () => {
    const o = await startDirectory({ profile: 'openpayload' });
    try {
      const op = await registerServiceDid(o, 92, []);
      const policy = { ...policyJsonV2('DID', op.did, op.did, [rule('r', 1, { type: 'Reject/v1' })]), policy_ttl_seconds: 90 };
      const prep = await prepareV2(o, { action: 'set_did_policy_v2', did: op.did, policy });
      assert.equal(prep.status, 200, JSON.stringify(prep.body));
      assert.equal(((prep.body.request as Body).policy as Body).policy_ttl_seconds, 90, 'the echo keeps it');
      await writeV2(o, op.key, { action: 'set_did_policy_v2', did: op.did, policy });
      const read = (await o.call('GET', `/delivery-policies/dids/${enc(op.did)}`)).body;
      assert.equal((read.policy as Body).policy_ttl_seconds, 90);
      // Omitted: 60, as before.
      await writeV2(o, op.key, {
        action: 'set_did_policy_v2',
        did: op.did,
        policy: policyJsonV2('DID', op.did, op.did, [rule('r', 1, { type: 'Reject/v1' })]),
      });
      assert.equal(((await o.call('GET', `/delivery-policies/dids/${enc(op.did)}`)).body.policy as Body).policy_ttl_seconds, 60);
    } finally {
      await o.close();
    }
  });
});
