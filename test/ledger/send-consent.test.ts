/**
 * Send targets of event rules (ddn hardening, docs/public-node.md "Event rules and amplification"): in profile
 * `platform` a Did/Persona v3 rule may Send only to the policy's owner (`InvalidPolicyScope`, reason
 * `send_target_not_consented`, with the rule and step); Application scope keeps §9.3 (control DID or a linked
 * DID); profile `openpayload` keeps the deployed rule (any existing DID).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { policyIdV3 } from '../../src/protocol/policy/policy-id.js';
import type { PolicyCondition } from '../../src/protocol/policy/types.js';
import { makeProfile } from '../../src/protocol/profile.js';
import { genesisConfig, Harness } from './harness.js';
import {
  actor,
  appScope,
  didScope,
  expectFailure,
  linkAppCall,
  personaScope,
  planAction,
  policyV3,
  register,
  registerAppCall,
  registerPersona,
  rule,
  send,
  v3Call,
} from './policy-harness.js';

const OWNER = actor(7);
const STRANGER = actor(11);
const LINKED = actor(12);
const P = 'example.com';
const EVENT: PolicyCondition = { kind: 'EventEquals', event: 'CacheStored' };
const sendRule = (target: string) => rule('notify', 1, planAction([send('s', target)]), [EVENT]);

test('platform: a DID-scope or persona-scope Send reaches only the owner; application scope is unchanged', (t) => {
  const h = new Harness();
  t.after(() => h.close());
  register(h, OWNER);
  register(h, STRANGER);
  register(h, LINKED);
  registerPersona(h, P, OWNER);
  h.apply(registerAppCall(h, 'app', OWNER));
  h.apply(linkAppCall(h, 'app', OWNER, LINKED, true));

  const toStranger = v3Call(h, OWNER, { kind: 'SetPolicy', policy: policyV3(didScope(OWNER.did), OWNER.did, [rule('base', 2), sendRule(STRANGER.did)]) });
  const f = expectFailure(h, toStranger, 'InvalidPolicyScope', 'send_target_not_consented');
  assert.deepEqual(f.detail, { ruleId: 'notify', stepId: 's' });
  const personaToStranger = v3Call(h, OWNER, { kind: 'SetPolicy', policy: policyV3(personaScope(P), OWNER.did, [sendRule(STRANGER.did)]) });
  expectFailure(h, personaToStranger, 'InvalidPolicyScope', 'send_target_not_consented');

  h.apply(v3Call(h, OWNER, { kind: 'SetPolicy', policy: policyV3(didScope(OWNER.did), OWNER.did, [sendRule(OWNER.did)]) }));
  h.apply(v3Call(h, OWNER, { kind: 'SetPolicy', policy: policyV3(personaScope(P), OWNER.did, [sendRule(OWNER.did)]) }));
  // Application scope: the control DID and a linked DID, as before; anyone else as before
  h.apply(v3Call(h, OWNER, { kind: 'SetPolicy', policy: policyV3(appScope('app'), OWNER.did, [sendRule(LINKED.did)]) }));
  const appToStranger = v3Call(h, OWNER, { kind: 'SetPolicy', policy: policyV3(appScope('app'), OWNER.did, [sendRule(STRANGER.did)], { revision: 2n }) });
  expectFailure(h, appToStranger, 'InvalidPolicyScope', 'application_rule_forbidden');
});

test('openpayload: a DID-scope Send may address any existing DID (the deployed rule), where platform refuses it', (t) => {
  const scope = didScope(OWNER.did);
  for (const profile of [makeProfile('openpayload'), makeProfile('platform')]) {
    const h = new Harness({ profile, genesis: genesisConfig({ profile: profile.p }) });
    t.after(() => h.close());
    h.register(OWNER.did, OWNER.key, { profile });
    h.register(STRANGER.did, STRANGER.key, { profile });
    const call = v3Call(h, OWNER, {
      kind: 'SetPolicy',
      policy: policyV3(scope, OWNER.did, [sendRule(STRANGER.did)], { policyId: policyIdV3(profile, scope) }),
    });
    if (profile.p === 'openpayload') h.apply(call);
    else expectFailure(h, call, 'InvalidPolicyScope', 'send_target_not_consented');
  }
});
