/**
 * Applications through the ledger (ledger-rules.md §4.10, §5.10, §9): registration, control change, status,
 * domain, linked DIDs, their errors and nonces, the derived predicates, and the retirement guard.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Call } from '../../src/ledger/extrinsic.js';
import { applicationNonce } from '../../src/ledger/runtime/nonces.js';
import { applicationsOfControlDid, authorizedSendTarget, getApplication, verifiedDomain } from '../../src/ledger/runtime/application-state.js';
import { getPolicyV3 } from '../../src/ledger/runtime/policy-state.js';
import { controlCall, Harness, rootSigner, seedKey } from './harness.js';
import {
  actor,
  appScope,
  domainAppCall,
  expectFailure,
  linkAppCall,
  planAction,
  policyV3,
  register,
  registerAppCall,
  registerPersona,
  rule,
  send,
  statusAppCall,
  updateAppCall,
  v3Call,
} from './policy-harness.js';

const CTRL = actor(7);
const NEXT = actor(8);
const LINKED = actor(11);
const STRANGER = actor(12);
const APP = 'talaria';
const DOMAIN = 'push.example.com';

function setup(): Harness {
  const h = new Harness();
  register(h, CTRL);
  register(h, NEXT);
  register(h, LINKED);
  return h;
}

const app = (h: Harness, id = APP) => getApplication(h.ledger.finalizedView(), id)!;
const nonceOf = (h: Harness, did: string) => applicationNonce(h.ledger.finalizedView(), did);
const eventSend = (to: string) => rule('e', 1, planAction([send('s', to)]), [{ kind: 'EventEquals', event: 'RelayDelivered' }]);

test('register: record, index, nonce; ids never reusable; its errors', (t) => {
  const h = setup();
  t.after(() => h.close());
  expectFailure(h, registerAppCall(h, 'Talaria Push', CTRL), 'InvalidApplicationId');
  expectFailure(h, registerAppCall(h, APP, STRANGER), 'ControlDidNotFound');
  expectFailure(h, registerAppCall(h, APP, CTRL, { nonce: 1n }), 'InvalidAuthorization');
  expectFailure(h, registerAppCall(h, APP, CTRL, { signer: { keyId: 'root', key: seedKey(99) } }), 'InvalidAuthorization');
  h.apply(registerAppCall(h, APP, CTRL));
  const block = h.ledger.headRef().number;
  assert.deepEqual(app(h), { controlDid: CTRL.did, status: 'Active', revision: 1n, registeredAt: block, updatedAt: block, domain: null, linkedDids: [] });
  assert.deepEqual(applicationsOfControlDid(h.ledger.finalizedView(), CTRL.did), [APP]);
  assert.equal(nonceOf(h, CTRL.did), 1n);
  expectFailure(h, registerAppCall(h, APP, NEXT), 'ApplicationAlreadyExists');
  h.apply(statusAppCall(h, APP, CTRL, 'Tombstoned'));
  expectFailure(h, registerAppCall(h, APP, CTRL), 'ApplicationAlreadyExists');
});

test('at most 16 applications per control DID', (t) => {
  const h = setup();
  t.after(() => h.close());
  for (let i = 0; i < 16; i++) h.submit(registerAppCall(h, `app-${i}`, CTRL));
  h.produce();
  assert.equal(applicationsOfControlDid(h.ledger.finalizedView(), CTRL.did).length, 16);
  expectFailure(h, registerAppCall(h, 'app-16', CTRL), 'TooManyApplicationsForControlDid');
});

test('retirement guard: a control DID cannot be deactivated or deleted until its applications are tombstoned', (t) => {
  const h = setup();
  t.after(() => h.close());
  h.apply(registerAppCall(h, APP, CTRL));
  expectFailure(h, controlCall(CTRL.did, { kind: 'DeactivateDid' }, rootSigner(CTRL.key)), 'DidControlsApplication');
  expectFailure(h, controlCall(CTRL.did, { kind: 'DeleteDid' }, rootSigner(CTRL.key)), 'DidControlsApplication');
  h.apply(statusAppCall(h, APP, CTRL, 'Suspended'));
  expectFailure(h, controlCall(CTRL.did, { kind: 'DeactivateDid' }, rootSigner(CTRL.key)), 'DidControlsApplication');
  h.apply(statusAppCall(h, APP, CTRL, 'Tombstoned'));
  assert.deepEqual(applicationsOfControlDid(h.ledger.finalizedView(), CTRL.did), []);
  h.apply(controlCall(CTRL.did, { kind: 'DeactivateDid' }, rootSigner(CTRL.key)));
  expectFailure(h, statusAppCall(h, APP, CTRL, 'Active'), 'ApplicationTombstoned');
});

test('status: transitions, revision, tombstoning clears domain, links and policy', (t) => {
  const h = setup();
  t.after(() => h.close());
  registerPersona(h, DOMAIN, CTRL);
  h.apply(registerAppCall(h, APP, CTRL));
  h.apply(domainAppCall(h, APP, CTRL, DOMAIN));
  h.apply(linkAppCall(h, APP, CTRL, LINKED, true));
  h.apply(v3Call(h, CTRL, { kind: 'SetPolicy', policy: policyV3(appScope(APP), CTRL.did, [eventSend(LINKED.did)]) }));
  expectFailure(h, statusAppCall(h, APP, CTRL, 'Active'), 'InvalidStatusTransition');
  expectFailure(h, statusAppCall(h, 'nope', CTRL, 'Suspended'), 'ApplicationNotFound');
  h.apply(statusAppCall(h, APP, CTRL, 'Suspended'));
  assert.equal(verifiedDomain(h.ledger.finalizedView(), h.clock.nowMs(), APP), null, 'only Active applications verify');
  assert.equal(authorizedSendTarget(h.ledger.finalizedView(), APP, CTRL.did), false);
  h.apply(statusAppCall(h, APP, CTRL, 'Active'));
  assert.equal(verifiedDomain(h.ledger.finalizedView(), h.clock.nowMs(), APP), DOMAIN);
  h.apply(statusAppCall(h, APP, CTRL, 'Tombstoned'));
  const a = app(h);
  assert.deepEqual([a.status, a.revision, a.domain, a.linkedDids], ['Tombstoned', 6n, null, []]);
  assert.equal(getPolicyV3(h.ledger.finalizedView(), appScope(APP)), undefined);
  assert.equal(nonceOf(h, CTRL.did), 6n);
  expectFailure(h, domainAppCall(h, APP, CTRL, null), 'ApplicationTombstoned');
  expectFailure(h, linkAppCall(h, APP, CTRL, LINKED, true), 'ApplicationTombstoned');
  expectFailure(h, updateAppCall(h, APP, CTRL, NEXT.did, 'Tombstoned'), 'ApplicationTombstoned');
});

test('domain: syntax, DNS control through an active persona of the control DID, clearing', (t) => {
  const h = setup();
  t.after(() => h.close());
  h.apply(registerAppCall(h, APP, CTRL));
  for (const bad of ['Push.example.com', 'example', 'a..example.com', '-a.example.com', 'a.example.123', 'x'.repeat(64) + '.com']) {
    expectFailure(h, domainAppCall(h, APP, CTRL, bad), 'InvalidDomain');
  }
  expectFailure(h, domainAppCall(h, APP, CTRL, DOMAIN), 'DomainNotControlled');
  registerPersona(h, DOMAIN, NEXT);
  expectFailure(h, domainAppCall(h, APP, CTRL, DOMAIN), 'DomainNotControlled');
  registerPersona(h, 'push.example.org', CTRL, { expiresAt: BigInt(h.clock.nowMs() + 5_000) });
  h.apply(domainAppCall(h, APP, CTRL, 'push.example.org'));
  assert.equal(app(h).domain, 'push.example.org');
  assert.equal(verifiedDomain(h.ledger.finalizedView(), h.clock.nowMs(), APP), 'push.example.org');
  h.clock.advance(10_000);
  assert.equal(verifiedDomain(h.ledger.finalizedView(), h.clock.nowMs(), APP), null, 'DNS control is re-checked on use');
  expectFailure(h, domainAppCall(h, APP, CTRL, 'push.example.org'), 'DomainNotControlled');
  h.apply(domainAppCall(h, APP, CTRL, null));
  assert.deepEqual([app(h).domain, app(h).revision], [null, 3n]);
});

test('linked DIDs: both signatures over the same bytes, only the control nonce advances, unlink', (t) => {
  const h = setup();
  t.after(() => h.close());
  h.apply(registerAppCall(h, APP, CTRL));
  expectFailure(h, linkAppCall(h, APP, CTRL, STRANGER, true), 'LinkedDidNotFound');
  expectFailure(h, linkAppCall(h, APP, CTRL, LINKED, true, { linkedKey: seedKey(99) }), 'InvalidAuthorization');
  h.apply(linkAppCall(h, APP, CTRL, LINKED, true));
  assert.deepEqual(app(h).linkedDids, [LINKED.did]);
  assert.deepEqual([nonceOf(h, CTRL.did), nonceOf(h, LINKED.did)], [2n, 0n]);
  assert.equal(authorizedSendTarget(h.ledger.finalizedView(), APP, LINKED.did), true);
  assert.equal(authorizedSendTarget(h.ledger.finalizedView(), APP, NEXT.did), false);
  h.apply(linkAppCall(h, APP, CTRL, LINKED, true));
  assert.deepEqual(app(h).linkedDids, [LINKED.did], 'enabling twice keeps one entry');
  h.apply(linkAppCall(h, APP, CTRL, LINKED, false));
  assert.deepEqual([app(h).linkedDids, app(h).revision], [[], 4n]);
});

test('update: a new control DID moves the index and clears domain, links and the application policy', (t) => {
  const h = setup();
  t.after(() => h.close());
  registerPersona(h, DOMAIN, CTRL);
  h.apply(registerAppCall(h, APP, CTRL));
  h.apply(domainAppCall(h, APP, CTRL, DOMAIN));
  h.apply(linkAppCall(h, APP, CTRL, LINKED, true));
  h.apply(v3Call(h, CTRL, { kind: 'SetPolicy', policy: policyV3(appScope(APP), CTRL.did, [eventSend(CTRL.did)]) }));
  expectFailure(h, updateAppCall(h, APP, CTRL, STRANGER.did), 'ControlDidNotFound');
  expectFailure(h, updateAppCall(h, APP, NEXT, NEXT.did), 'InvalidAuthorization');
  expectFailure(h, updateAppCall(h, APP, CTRL, NEXT.did, 'Suspended'), 'InvalidAuthorization');

  h.apply(updateAppCall(h, APP, CTRL, CTRL.did));
  assert.deepEqual([app(h).revision, app(h).domain], [4n, DOMAIN], 'same DID: only the revision changes');

  h.apply(updateAppCall(h, APP, CTRL, NEXT.did));
  const v = h.ledger.finalizedView();
  assert.deepEqual([app(h).controlDid, app(h).revision, app(h).domain, app(h).linkedDids], [NEXT.did, 5n, null, []]);
  assert.deepEqual(applicationsOfControlDid(v, CTRL.did), []);
  assert.deepEqual(applicationsOfControlDid(v, NEXT.did), [APP]);
  assert.equal(getPolicyV3(v, appScope(APP)), undefined);
  assert.deepEqual([nonceOf(h, CTRL.did), nonceOf(h, NEXT.did)], [5n, 0n], 'the old control DID nonce advances');
  h.apply(controlCall(CTRL.did, { kind: 'DeactivateDid' }, rootSigner(CTRL.key)));
  expectFailure(h, controlCall(NEXT.did, { kind: 'DeactivateDid' }, rootSigner(NEXT.key)), 'DidControlsApplication');
  h.apply(statusAppCall(h, APP, NEXT, 'Suspended'));
  assert.equal(nonceOf(h, NEXT.did), 1n);
});

test('application policies: owner is the control DID while Active; Send targets the control or a linked DID', (t) => {
  const h = setup();
  t.after(() => h.close());
  h.apply(registerAppCall(h, APP, CTRL));
  const set = (to: string, operator = CTRL): Call => v3Call(h, operator, { kind: 'SetPolicy', policy: policyV3(appScope(APP), operator.did, [eventSend(to)]) });
  expectFailure(h, set(CTRL.did, NEXT), 'InvalidPolicyScope', 'owner_mismatch');
  expectFailure(h, set(LINKED.did), 'InvalidPolicyScope', 'application_rule_forbidden');
  h.apply(linkAppCall(h, APP, CTRL, LINKED, true));
  h.apply(set(LINKED.did));
  h.apply(controlCall(LINKED.did, { kind: 'DeactivateDid' }, rootSigner(LINKED.key)));
  const next = v3Call(h, CTRL, { kind: 'SetPolicy', policy: policyV3(appScope(APP), CTRL.did, [eventSend(LINKED.did)], { revision: 2n }) });
  expectFailure(h, next, 'InvalidPayloadTemplate');
});
