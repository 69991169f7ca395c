/**
 * Delivery policy v2 and v3 through the ledger (ledger-rules.md §5.7, §5.8, §7.2, §7.8, §7.9): stored records,
 * the v3 mirror of v2 writes, revision interplay, nonces, scope constraints, and DeleteDid cleanup.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { to0x } from '../../src/base/bytes.js';
import { NETWORK_CONSTRAINTS } from '../../src/protocol/constraints.js';
import { policyIdV2, policyIdV3 } from '../../src/protocol/policy/policy-id.js';
import { PLATFORM } from '../../src/protocol/profile.js';
import { getNonce } from '../../src/ledger/records.js';
import { operatorNonce, policyNonce, policyV3Nonce } from '../../src/ledger/runtime/nonces.js';
import { getPersona } from '../../src/ledger/runtime/persona-state.js';
import { getDidConstraints, getPolicyV2, getPolicyV3 } from '../../src/ledger/runtime/policy-state.js';
import { resolveDeliveryPolicy } from '../../src/ledger/runtime/resolution.js';
import { controlCall, Harness, rootSigner } from './harness.js';
import {
  actor,
  appScope,
  didScope,
  expectFailure,
  personaCall,
  personaScope,
  planAction,
  policyV2,
  policyV3,
  register,
  registerAppCall,
  registerPersona,
  requested,
  rule,
  send,
  statusAppCall,
  v2Call,
  v3Call,
} from './policy-harness.js';

const OP = actor(7);
const OTHER = actor(11);
const P = 'example.com';

function setup(): Harness {
  const h = new Harness();
  register(h, OP);
  register(h, OTHER);
  return h;
}

test('v2 SetPolicy stores the record and a v3 mirror; resolution serves the v2 id it was written with; policy nonce advances', (t) => {
  const h = setup();
  t.after(() => h.close());
  const policy = policyV2(didScope(OP.did), OP.did, [rule('r', 3)]);
  h.apply(v2Call(h, OP, { kind: 'SetPolicy', policy }));
  const view = h.ledger.finalizedView();
  assert.deepEqual(getPolicyV2(view, didScope(OP.did)), policy);
  const mirror = getPolicyV3(view, didScope(OP.did))!;
  assert.deepEqual(mirror, { ...policy, policyId: policyIdV3(PLATFORM, didScope(OP.did)) });
  assert.equal(policyNonce(view, OP.did), 1n);
  assert.equal(policyV3Nonce(view, OP.did), 0n, 'v2 writes leave the v3 nonce');
  const r = resolveDeliveryPolicy(view, h.clock.nowMs(), OP.did, null, null)!;
  // One policy, one id: the v2 id of the v2 record (GET /delivery-policies/…), not the mirror's v3 id.
  assert.equal(r.policyId, to0x(policyIdV2(PLATFORM, didScope(OP.did))));
  assert.notEqual(r.policyId, to0x(policyIdV3(PLATFORM, didScope(OP.did))));
  assert.equal(r.policyRevision, 1n);

  // The next revision must be stored + 1.
  expectFailure(h, v2Call(h, OP, { kind: 'SetPolicy', policy: { ...policy, revision: 1n } }), 'InvalidPolicyRevision');
  h.apply(v2Call(h, OP, { kind: 'SetPolicy', policy: { ...policy, revision: 2n, policyTtlSeconds: 30 } }));
  assert.equal(getPolicyV3(h.ledger.finalizedView(), didScope(OP.did))!.policyTtlSeconds, 30);
  assert.equal(policyNonce(h.ledger.finalizedView(), OP.did), 2n);
});

test('a v3 write replaces the v2 record; v2 writes then conflict until the v3 policy is cleared', (t) => {
  const h = setup();
  t.after(() => h.close());
  const scope = didScope(OP.did);
  h.apply(v2Call(h, OP, { kind: 'SetPolicy', policy: policyV2(scope, OP.did, [rule('r')]) }));
  h.apply(v3Call(h, OP, { kind: 'SetPolicy', policy: policyV3(scope, OP.did, [rule('v3')], { revision: 2n }) }));
  let view = h.ledger.finalizedView();
  assert.equal(getPolicyV2(view, scope), undefined, 'v2 record removed');
  assert.equal(getPolicyV3(view, scope)!.ruleset[0]!.id, 'v3');
  assert.equal(policyV3Nonce(view, OP.did), 1n);
  assert.equal(policyNonce(view, OP.did), 1n, 'v3 writes leave the v2 nonce');

  // v2 expects revision 1 (no v2 record) but the v3 policy needs 3: every v2 write fails.
  expectFailure(h, v2Call(h, OP, { kind: 'SetPolicy', policy: policyV2(scope, OP.did, [rule('r')]) }), 'InvalidPolicyRevision');
  expectFailure(h, v2Call(h, OP, { kind: 'SetPolicy', policy: policyV2(scope, OP.did, [rule('r')], { revision: 3n }) }), 'InvalidPolicyRevision');
  expectFailure(h, v2Call(h, OP, { kind: 'ClearPolicy', scope }), 'PolicyNotFound');

  h.apply(v3Call(h, OP, { kind: 'ClearPolicy', scope }));
  view = h.ledger.finalizedView();
  assert.equal(getPolicyV3(view, scope), undefined);
  assert.equal(policyV3Nonce(view, OP.did), 2n);
  expectFailure(h, v3Call(h, OP, { kind: 'ClearPolicy', scope }), 'PolicyNotFound');
  h.apply(v2Call(h, OP, { kind: 'SetPolicy', policy: policyV2(scope, OP.did, [rule('again')]) }));
  assert.equal(getPolicyV3(h.ledger.finalizedView(), scope)!.revision, 1n);
});

test('v2 ClearPolicy removes the record and its mirror', (t) => {
  const h = setup();
  t.after(() => h.close());
  const scope = didScope(OP.did);
  h.apply(v2Call(h, OP, { kind: 'SetPolicy', policy: policyV2(scope, OP.did, [rule('r')]) }));
  h.apply(v2Call(h, OP, { kind: 'ClearPolicy', scope }));
  const view = h.ledger.finalizedView();
  assert.equal(getPolicyV2(view, scope), undefined);
  assert.equal(getPolicyV3(view, scope), undefined);
  assert.equal(policyNonce(view, OP.did), 2n);
});

test('SetDidConstraints stores validated constraints; DeleteDid removes constraints, policies and their nonces', (t) => {
  const h = setup();
  t.after(() => h.close());
  h.apply(v2Call(h, OP, { kind: 'SetDidConstraints', did: OP.did, constraints: requested({ requestedCacheSeconds: 500_000 }) }));
  const c = getDidConstraints(h.ledger.finalizedView(), OP.did)!;
  assert.equal(c.effectiveTtlSeconds, 172_800, 'effective TTL capped at 48 h');
  assert.equal(c.requestedCacheSeconds, 500_000, 'no cap on the requested value');
  assert.equal(c.maxMessageBytes, NETWORK_CONSTRAINTS.maxMessageBytes, 'deprecated inputs (0) set to maxima');
  assert.equal(c.maxChunks, NETWORK_CONSTRAINTS.maxChunks);
  h.apply(v2Call(h, OP, { kind: 'SetPolicy', policy: policyV2(didScope(OP.did), OP.did, [rule('r')]) }));
  h.apply(v3Call(h, OP, { kind: 'SetPolicy', policy: policyV3(didScope(OP.did), OP.did, [rule('r3')], { revision: 2n }) }));
  h.apply(personaCall(h, OP, { kind: 'RegisterNamed', persona: 'alice', controllerKeyIds: ['root'], controllerThreshold: 1, constraints: null }));
  let view = h.ledger.finalizedView();
  assert.deepEqual([policyNonce(view, OP.did), policyV3Nonce(view, OP.did), operatorNonce(view, OP.did)], [2n, 1n, 1n]);

  h.apply(controlCall(OP.did, { kind: 'DeleteDid' }, rootSigner(OP.key)));
  view = h.ledger.finalizedView();
  assert.equal(getDidConstraints(view, OP.did), undefined);
  assert.equal(getPolicyV3(view, didScope(OP.did)), undefined);
  assert.deepEqual([policyNonce(view, OP.did), policyV3Nonce(view, OP.did), operatorNonce(view, OP.did)], [0n, 0n, 0n]);
  assert.ok(getPersona(view, 'alice'), 'personas operated by the DID stay');
});

test('persona-scoped v2: operator policy nonce, SetPersonaConstraints bumps the persona revision, clear, inactive persona', (t) => {
  const h = setup();
  t.after(() => h.close());
  registerPersona(h, P, OP);
  const scope = personaScope(P);
  h.apply(v2Call(h, OP, { kind: 'SetPolicy', policy: policyV2(scope, OP.did, [rule('p')]) }, { signer: OP.k2 }));
  h.apply(v2Call(h, OP, { kind: 'SetPersonaConstraints', persona: P, constraints: requested({ maxReplicas: 1 }) }));
  let view = h.ledger.finalizedView();
  assert.equal(policyNonce(view, OP.did), 2n);
  assert.equal(getPersona(view, P)!.revision, 2);
  assert.equal(getPersona(view, P)!.deliveryConstraints!.maxReplicas, 1);
  assert.equal(getPolicyV3(view, scope)!.policyId.length, 32);
  h.apply(v2Call(h, OP, { kind: 'ClearPolicy', scope }));
  view = h.ledger.finalizedView();
  assert.equal(getPolicyV2(view, scope), undefined);
  assert.equal(getPolicyV3(view, scope), undefined);

  h.apply(personaCall(h, OP, { kind: 'Revoke', persona: P }));
  expectFailure(h, v2Call(h, OP, { kind: 'SetPolicy', policy: policyV2(scope, OP.did, [rule('p')]) }), 'PersonaInactive');
  expectFailure(h, v2Call(h, OP, { kind: 'SetPersonaConstraints', persona: P, constraints: requested() }), 'PersonaInactive');
  expectFailure(h, v3Call(h, OP, { kind: 'ClearPolicy', scope }), 'InvalidPolicyScope', 'scope_unavailable:persona_inactive');
});

test('v3 scopes without an owner report the cause: expired persona, deactivated DID, suspended application', (t) => {
  const h = setup();
  t.after(() => h.close());
  registerPersona(h, 'short.example.com', OP, { expiresAt: BigInt(h.clock.nowMs() + 10_000) });
  h.apply(registerAppCall(h, 'talaria', OP));
  h.apply(
    v3Call(h, OP, {
      kind: 'SetPolicy',
      policy: policyV3(appScope('talaria'), OP.did, [rule('a', 1, planAction([send('s', OP.did)]), [{ kind: 'EventEquals', event: 'CacheStored' }])]),
    }),
  );
  assert.equal(policyV3Nonce(h.ledger.finalizedView(), OP.did), 1n, 'application policies use the control DID v3 nonce');
  h.apply(statusAppCall(h, 'talaria', OP, 'Suspended'));
  expectFailure(h, v3Call(h, OP, { kind: 'ClearPolicy', scope: appScope('talaria') }), 'InvalidPolicyScope', 'scope_unavailable:application_inactive');
  assert.ok(getPolicyV3(h.ledger.finalizedView(), appScope('talaria')), 'suspension keeps the application policy');

  h.apply(controlCall(OTHER.did, { kind: 'DeactivateDid' }, rootSigner(OTHER.key)));
  expectFailure(h, v3Call(h, OTHER, { kind: 'ClearPolicy', scope: didScope(OTHER.did) }), 'InvalidPolicyScope', 'scope_unavailable:did_deactivated');
  expectFailure(h, v2Call(h, OTHER, { kind: 'ClearPolicy', scope: didScope(OTHER.did) }), 'DidNotFound');

  h.clock.advance(20_000);
  expectFailure(
    h,
    v3Call(h, OP, { kind: 'ClearPolicy', scope: personaScope('short.example.com') }),
    'InvalidPolicyScope',
    'scope_unavailable:persona_verification_expired',
  );
  expectFailure(
    h,
    v2Call(h, OP, { kind: 'SetPolicy', policy: policyV2(personaScope('short.example.com'), OP.did, [rule('p')]) }),
    'PersonaVerificationExpired',
  );
});

test('a failed extrinsic consumes no nonce; the pool reserves the next one', (t) => {
  const h = setup();
  t.after(() => h.close());
  const scope = didScope(OP.did);
  expectFailure(h, v2Call(h, OP, { kind: 'ClearPolicy', scope }), 'PolicyNotFound');
  assert.equal(getNonce(h.ledger.poolView(), 'policy_nonce', OP.did), 0n);
  h.submit(v2Call(h, OP, { kind: 'SetPolicy', policy: policyV2(scope, OP.did, [rule('r')]) }));
  assert.equal(policyNonce(h.ledger.poolView(), OP.did), 1n, 'pending write reserves nonce 0');
  expectFailure(h, v2Call(h, OP, { kind: 'SetDidConstraints', did: OP.did, constraints: requested() }, { nonce: 0n }), 'InvalidPolicyV2Nonce');
  h.submit(v2Call(h, OP, { kind: 'SetDidConstraints', did: OP.did, constraints: requested() }));
  h.produce();
  assert.equal(policyNonce(h.ledger.finalizedView(), OP.did), 2n);
});

test('stored v3 policies survive the SQLite state round trip byte for byte (templates, ids, u64 revision)', (t) => {
  const h = setup();
  t.after(() => h.close());
  const event = rule('e', 1, planAction([send('s', OP.did)]), [{ kind: 'EventEquals', event: 'RelayDelivered' }]);
  const policy = policyV3(didScope(OP.did), OP.did, [event, rule('r', 2)]);
  h.apply(v3Call(h, OP, { kind: 'SetPolicy', policy }));
  const reopened = h.reopen();
  assert.deepEqual(getPolicyV3(reopened.finalizedView(), didScope(OP.did)), policy);
});
