/**
 * One failing policy per validation rule (ledger-rules.md §5.7, §5.8, §7.3–§7.9), each checked through the real
 * ledger (dry run and pool admission) against one prepared state, plus the valid shapes next to them.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { concatBytes, utf8 } from '../../src/base/bytes.js';
import { policyIdV2, policyIdV3 } from '../../src/protocol/policy/policy-id.js';
import type { PolicyCondition, PolicyRule } from '../../src/protocol/policy/types.js';
import { PLATFORM } from '../../src/protocol/profile.js';
import type { Call } from '../../src/ledger/extrinsic.js';
import { Harness, T0 } from './harness.js';
import {
  actor,
  appScope,
  archive,
  BASE,
  callStep,
  didScope,
  domainAppCall,
  edge,
  expectFailure,
  forward,
  overrides,
  personaCall,
  personaScope,
  planAction,
  policyV2,
  policyV3,
  register,
  registerAppCall,
  registerOp,
  registerPersona,
  reject,
  requested,
  requireProfile,
  rule,
  send,
  store,
  svc,
  target,
  v2Call,
  v3Call,
} from './policy-harness.js';

const OP = actor(7);
const INFRA = actor(8);
const INFRA2 = actor(10);
const OTHER = actor(11);
const STRANGER = actor(12); // never registered
const ARCH = [actor(20), actor(21), actor(22), actor(23)];
const P = 'example.com';
const SOLO = 'solo.example.com';
const CALL_DOMAIN = 'ctrl.example.org';
const OTHER_DOMAIN = 'other.example.org';
const APP = 'talaria';

let h: Harness;

before(() => {
  h = new Harness();
  register(h, OP);
  register(h, INFRA, [
    svc(INFRA.did, 'relay', 'PlatformRelayService'),
    svc(INFRA.did, 'cache', 'PlatformCacheService'),
    svc(INFRA.did, 'archive', 'PlatformArchiveService'),
    svc(INFRA.did, 'control', 'PlatformApplicationControlService'),
  ]);
  register(h, INFRA2, [svc(INFRA2.did, 'relay', 'PlatformRelayService'), svc(INFRA2.did, 'cache', 'PlatformCacheService')]);
  register(h, OTHER);
  for (const a of ARCH)
    register(
      h,
      a,
      [0, 1, 2, 3].map((i) => svc(a.did, `a${i}`, 'PlatformArchiveService')),
    );
  registerPersona(h, P, OP);
  registerPersona(h, CALL_DOMAIN, OP);
  registerPersona(h, OTHER_DOMAIN, OTHER);
  h.apply(personaCall(h, OP, registerOp(h, SOLO, OP, { controllers: ['root'] })));
  h.apply(registerAppCall(h, APP, OP));
  h.apply(domainAppCall(h, APP, OP, CALL_DOMAIN));
});

after(() => h.close());

// ---- shapes ----

const relayT = () => target(INFRA.did, 'relay');
const cacheT = () => target(INFRA.did, 'cache');
const cache2T = () => target(INFRA2.did, 'cache');
const goodPlan = () => planAction([forward('f', [relayT()]), store('s', [cacheT(), cache2T()], 2, 1)], [edge('f', 's', 'Failure')]);

/** A v2 SetPolicy on OP's DID scope with the given rules (and policy fields). */
const setDidV2 = (ruleset: PolicyRule[], p: Parameters<typeof policyV2>[3] = {}): Call =>
  v2Call(h, OP, { kind: 'SetPolicy', policy: policyV2(didScope(OP.did), OP.did, ruleset, p) });
/** A v2 SetPolicy whose single rule has this action / conditions / overrides. */
const v2Rule = (...args: Parameters<typeof rule>): Call => setDidV2([rule(...args)]);
const v2Plan = (steps: Parameters<typeof planAction>[0], tr: Parameters<typeof planAction>[1] = [], entry?: string): Call =>
  v2Rule('r', 1, planAction(steps, tr, entry));
const setDidV3 = (ruleset: PolicyRule[], p: Parameters<typeof policyV3>[3] = {}): Call =>
  v3Call(h, OP, { kind: 'SetPolicy', policy: policyV3(didScope(OP.did), OP.did, ruleset, p) });
const EVENT: PolicyCondition = { kind: 'EventEquals', event: 'RelayDelivered' };
const setAppV3 = (ruleset: PolicyRule[]): Call => v3Call(h, OP, { kind: 'SetPolicy', policy: policyV3(appScope(APP), OP.did, ruleset) });
const setPersonaV3 = (ruleset: PolicyRule[], persona = P): Call =>
  v3Call(h, OP, { kind: 'SetPolicy', policy: policyV3(personaScope(persona), OP.did, ruleset) });

interface Case {
  title: string;
  call: () => Call;
  error: string;
  reason?: string;
}

const v2Proof: Case[] = [
  {
    title: 'signer_key_id over 256 bytes',
    call: () => v2Call(h, OP, { kind: 'ClearPolicy', scope: didScope(OP.did) }, { callSignerKeyId: 'k'.repeat(257) }),
    error: 'InvalidPolicyV2Payload',
  },
  {
    title: 'trailing byte after the payload',
    call: () => {
      const c = v2Call(h, OP, { kind: 'ClearPolicy', scope: didScope(OP.did) });
      const payload = concatBytes((c.args as { signedPayload: Uint8Array }).signedPayload, Uint8Array.of(0));
      return v2Call(h, OP, { kind: 'ClearPolicy', scope: didScope(OP.did) }, { signedPayload: payload });
    },
    error: 'InvalidPolicyV2Payload',
  },
  {
    title: 'payload signer differs from the call',
    call: () => v2Call(h, OP, { kind: 'ClearPolicy', scope: didScope(OP.did) }, { callSignerKeyId: OP.k2.keyId }),
    error: 'InvalidPolicyV2Payload',
  },
  {
    title: 'valid_until in the past',
    call: () => v2Call(h, OP, { kind: 'ClearPolicy', scope: didScope(OP.did) }, { validUntil: BigInt(T0) }),
    error: 'PolicyAuthorizationExpired',
  },
  { title: 'operator DID not registered', call: () => v2Call(h, STRANGER, { kind: 'ClearPolicy', scope: didScope(STRANGER.did) }), error: 'DidNotFound' },
  { title: 'stale policy nonce', call: () => v2Call(h, OP, { kind: 'ClearPolicy', scope: didScope(OP.did) }, { nonce: 5n }), error: 'InvalidPolicyV2Nonce' },
  {
    title: 'persona gate: unknown persona',
    call: () => v2Call(h, OP, { kind: 'ClearPolicy', scope: personaScope('unknown.example.com') }),
    error: 'PersonaNotFound',
  },
  {
    title: 'persona gate: non-canonical name is looked up as given',
    call: () => v2Call(h, OP, { kind: 'ClearPolicy', scope: personaScope('Example.com') }),
    error: 'PersonaNotFound',
  },
  {
    title: 'persona gate: another operator',
    call: () => v2Call(h, OTHER, { kind: 'SetPersonaConstraints', persona: P, constraints: requested() }),
    error: 'InvalidPersonaController',
  },
  {
    title: 'persona gate: signer not a controller',
    call: () => v2Call(h, OP, { kind: 'ClearPolicy', scope: personaScope(SOLO) }, { signer: OP.k2 }),
    error: 'InvalidPersonaController',
  },
  {
    title: 'bad signature',
    call: () => v2Call(h, OP, { kind: 'ClearPolicy', scope: didScope(OP.did) }, { signature: new Uint8Array(64) }),
    error: 'InvalidSignature',
  },
  {
    title: 'signature by a key of another DID',
    call: () => v2Call(h, OP, { kind: 'ClearPolicy', scope: didScope(OP.did) }, { signer: { keyId: 'root', key: OTHER.key } }),
    error: 'InvalidSignature',
  },
];

const v2Operations: Case[] = [
  {
    title: 'policy.operator_did differs',
    call: () => v2Call(h, OP, { kind: 'SetPolicy', policy: policyV2(didScope(OP.did), OTHER.did, [rule('r')]) }),
    error: 'InvalidPolicyScope',
    reason: 'owner_mismatch',
  },
  {
    title: 'Did scope of another DID',
    call: () => v2Call(h, OP, { kind: 'SetPolicy', policy: policyV2(didScope(OTHER.did), OP.did, [rule('r')]) }),
    error: 'InvalidPolicyScope',
    reason: 'owner_mismatch',
  },
  { title: 'clear without a v2 record', call: () => v2Call(h, OP, { kind: 'ClearPolicy', scope: didScope(OP.did) }), error: 'PolicyNotFound' },
  { title: 'clear persona policy without a v2 record', call: () => v2Call(h, OP, { kind: 'ClearPolicy', scope: personaScope(P) }), error: 'PolicyNotFound' },
  {
    title: 'clear another DID',
    call: () => v2Call(h, OP, { kind: 'ClearPolicy', scope: didScope(OTHER.did) }),
    error: 'InvalidPolicyScope',
    reason: 'owner_mismatch',
  },
  {
    title: 'constraints of another DID',
    call: () => v2Call(h, OP, { kind: 'SetDidConstraints', did: OTHER.did, constraints: requested() }),
    error: 'InvalidPolicyScope',
    reason: 'owner_mismatch',
  },
  {
    title: 'constraints: 5 replicas',
    call: () => v2Call(h, OP, { kind: 'SetDidConstraints', did: OP.did, constraints: requested({ maxReplicas: 5 }) }),
    error: 'InvalidConstraints',
  },
  {
    title: 'constraints: zero cache seconds',
    call: () => v2Call(h, OP, { kind: 'SetDidConstraints', did: OP.did, constraints: requested({ requestedCacheSeconds: 0 }) }),
    error: 'InvalidConstraints',
  },
  {
    title: 'constraints: envelope above 25 MiB',
    call: () => v2Call(h, OP, { kind: 'SetDidConstraints', did: OP.did, constraints: requested({ maxHttpEnvelopeBytes: 26_214_401 }) }),
    error: 'InvalidConstraints',
  },
  {
    title: 'constraints: unchunked above envelope',
    call: () => v2Call(h, OP, { kind: 'SetDidConstraints', did: OP.did, constraints: requested({ maxUnchunkedMessageBytes: 1_000_001 }) }),
    error: 'InvalidConstraints',
  },
  {
    title: 'constraints: chunk above unchunked',
    call: () => v2Call(h, OP, { kind: 'SetDidConstraints', did: OP.did, constraints: requested({ maxChunkBytes: 500_001 }) }),
    error: 'InvalidConstraints',
  },
  {
    title: 'persona constraints: unknown persona',
    call: () => v2Call(h, OP, { kind: 'SetPersonaConstraints', persona: 'nope.example.com', constraints: requested() }),
    error: 'PersonaNotFound',
  },
];

const validateV2: Case[] = [
  { title: 'policy_id of v3', call: () => setDidV2([rule('r')], { policyId: policyIdV3(PLATFORM, didScope(OP.did)) }), error: 'InvalidPolicyId' },
  { title: 'short policy_id', call: () => setDidV2([rule('r')], { policyId: new Uint8Array(31) }), error: 'InvalidPolicyId' },
  { title: 'empty ruleset', call: () => setDidV2([]), error: 'EmptyRuleset' },
  { title: 'policy TTL 0', call: () => setDidV2([rule('r')], { policyTtlSeconds: 0 }), error: 'InvalidPolicyTtl' },
  { title: 'policy TTL 301', call: () => setDidV2([rule('r')], { policyTtlSeconds: 301 }), error: 'InvalidPolicyTtl' },
  {
    title: 'units above 4096 (RecipientIn members count in v2)',
    call: () => {
      const cond: PolicyCondition = { kind: 'RecipientIn', dids: Array.from({ length: 16 }, () => OP.did) };
      return setDidV2(
        Array.from({ length: 32 }, (_v, i) =>
          rule(
            `r${i}`,
            1,
            BASE,
            Array.from({ length: 8 }, () => cond),
          ),
        ),
      );
    },
    error: 'PolicyTooComplex',
  },
  { title: 'revision 2 without a stored policy', call: () => setDidV2([rule('r')], { revision: 2n }), error: 'InvalidPolicyRevision' },
  { title: 'empty rule id', call: () => setDidV2([rule('')]), error: 'DuplicateRuleId' },
  { title: 'duplicate rule id', call: () => setDidV2([rule('r'), rule('r')]), error: 'DuplicateRuleId' },
  { title: 'priority 65 536', call: () => setDidV2([rule('r', 65_536)]), error: 'InvalidRulePriority' },
  { title: 'EventEquals in v2', call: () => v2Rule('r', 1, BASE, [EVENT]), error: 'InvalidCondition' },
  { title: 'RecipientEquals an unknown DID', call: () => v2Rule('r', 1, BASE, [{ kind: 'RecipientEquals', did: STRANGER.did }]), error: 'InvalidCondition' },
  { title: 'RecipientIn empty', call: () => v2Rule('r', 1, BASE, [{ kind: 'RecipientIn', dids: [] }]), error: 'InvalidCondition' },
  {
    title: 'RecipientIn with an unknown DID',
    call: () => v2Rule('r', 1, BASE, [{ kind: 'RecipientIn', dids: [OP.did, STRANGER.did] }]),
    error: 'InvalidCondition',
  },
  { title: 'empty tag', call: () => v2Rule('r', 1, BASE, [{ kind: 'TagEquals', tag: '' }]), error: 'InvalidTag' },
  { title: 'tag with a control character', call: () => v2Rule('r', 1, BASE, [{ kind: 'TagPrefix', tag: 'a\u0085b' }]), error: 'InvalidTag' },
  {
    title: 'override above the scope (replicas 5)',
    call: () => v2Rule('r', 1, BASE, [], overrides({ maxReplicas: 5 })),
    error: 'ConstraintOverrideExceedsScope',
  },
  { title: 'override of zero', call: () => v2Rule('r', 1, BASE, [], overrides({ requestedCacheSeconds: 0 })), error: 'ConstraintOverrideExceedsScope' },
  { title: 'override breaks the size chain', call: () => v2Rule('r', 1, BASE, [], overrides({ maxHttpEnvelopeBytes: 1000 })), error: 'InvalidConstraints' },
  { title: 'Send step in v2', call: () => v2Plan([forward('f', [relayT()]), send('s', OTHER.did)], [edge('f', 's')]), error: 'InvalidDeliveryPlan' },
  { title: 'RequireProfile step in v2', call: () => v2Plan([requireProfile('p'), forward('f', [relayT()])], [edge('p', 'f')]), error: 'InvalidDeliveryPlan' },
];

const validatePlan: Case[] = [
  { title: 'no steps', call: () => v2Plan([], [], 'a'), error: 'InvalidDeliveryPlan' },
  { title: 'entry step not a step', call: () => v2Plan([forward('f', [relayT()])], [], 'x'), error: 'InvalidDeliveryPlan' },
  { title: 'empty step id', call: () => v2Plan([forward('', [relayT()])], [], ''), error: 'DuplicateStepId' },
  { title: 'duplicate step id', call: () => v2Plan([forward('f', [relayT()]), store('f', [cacheT()])]), error: 'DuplicateStepId' },
  {
    title: 'two Forward steps',
    call: () => v2Plan([forward('f', [relayT()]), forward('g', [target(INFRA2.did, 'relay')])], [edge('f', 'g')]),
    error: 'MultipleForwardSteps',
  },
  { title: 'no targets', call: () => v2Plan([forward('f', [])]), error: 'InvalidRouteTarget' },
  { title: 'Forward to a cache service', call: () => v2Plan([forward('f', [cacheT()])]), error: 'InvalidRouteTarget' },
  { title: 'Store to a relay service', call: () => v2Plan([store('s', [relayT()])]), error: 'InvalidRouteTarget' },
  { title: 'Archive to a cache service', call: () => v2Plan([archive('a', [cacheT()])]), error: 'InvalidRouteTarget' },
  { title: 'target weight 0', call: () => v2Plan([forward('f', [target(INFRA.did, 'relay', { weight: 0 })])]), error: 'InvalidRouteTarget' },
  { title: 'duplicate target', call: () => v2Plan([store('s', [cacheT(), target(INFRA.did, 'cache', { priority: 3 })])]), error: 'InvalidRouteTarget' },
  { title: 'target DID not registered', call: () => v2Plan([forward('f', [target(STRANGER.did, 'relay')])]), error: 'InvalidRouteTarget' },
  {
    title: 'empty service id',
    call: () => v2Plan([forward('f', [{ serviceDid: INFRA.did, serviceId: '', priority: 0, weight: 1 }])]),
    error: 'InvalidRouteTarget',
  },
  {
    title: 'service id without the DID prefix',
    call: () => v2Plan([forward('f', [{ serviceDid: INFRA.did, serviceId: '#relay', priority: 0, weight: 1 }])]),
    error: 'InvalidRouteTarget',
  },
  { title: 'Store desired 0', call: () => v2Plan([store('s', [cacheT()], 0, 0)]), error: 'InvalidDeliveryPlan' },
  {
    title: 'Store desired above the rule replicas',
    call: () => v2Rule('r', 1, planAction([store('s', [cacheT(), cache2T()], 2, 1)]), [], overrides({ maxReplicas: 1 })),
    error: 'InvalidDeliveryPlan',
  },
  { title: 'Store required above desired', call: () => v2Plan([store('s', [cacheT(), cache2T()], 1, 2)]), error: 'InvalidDeliveryPlan' },
  { title: 'Store desired above the targets', call: () => v2Plan([store('s', [cacheT()], 2, 1)]), error: 'InvalidDeliveryPlan' },
  { title: 'Send to an unknown DID', call: () => v2Plan([send('s', STRANGER.did)]), error: 'InvalidPayloadTemplate' },
  { title: 'Send with an array template', call: () => v2Plan([send('s', OTHER.did, utf8('[1]'))]), error: 'InvalidPayloadTemplate' },
  { title: 'Call to a relay service', call: () => v2Plan([callStep('c', INFRA.did, 'relay', CALL_DOMAIN)]), error: 'InvalidRouteTarget' },
  { title: 'Call domain without a dot', call: () => v2Plan([callStep('c', INFRA.did, 'control', 'localhost')]), error: 'InvalidCallDomain' },
  { title: 'Call with invalid JSON', call: () => v2Plan([callStep('c', INFRA.did, 'control', CALL_DOMAIN, utf8('{"a":}'))]), error: 'InvalidPayloadTemplate' },
  { title: 'transition to an unknown step', call: () => v2Plan([forward('f', [relayT()])], [edge('f', 'x')]), error: 'InvalidDeliveryPlan' },
  { title: 'self transition', call: () => v2Plan([forward('f', [relayT()])], [edge('f', 'f')]), error: 'DeliveryPlanCycle' },
  {
    title: 'overlapping Next triggers (Success, Always)',
    call: () =>
      v2Plan(
        [forward('f', [relayT()]), store('s', [cacheT()]), archive('a', [target(INFRA.did, 'archive')])],
        [edge('f', 's', 'Success'), edge('f', 'a', 'Always')],
      ),
    error: 'InvalidDeliveryPlan',
  },
  {
    title: 'overlapping Next triggers (Failure, Failure)',
    call: () =>
      v2Plan(
        [forward('f', [relayT()]), store('s', [cacheT()]), archive('a', [target(INFRA.did, 'archive')])],
        [edge('f', 's', 'Failure'), edge('f', 'a', 'Failure')],
      ),
    error: 'InvalidDeliveryPlan',
  },
  {
    title: 'the same edge twice (other trigger and mode)',
    call: () => v2Plan([forward('f', [relayT()]), store('s', [cacheT()])], [edge('f', 's', 'Success'), edge('f', 's', 'Failure', 'Fork')]),
    error: 'InvalidDeliveryPlan',
  },
  { title: 'unreachable step', call: () => v2Plan([forward('f', [relayT()]), store('s', [cacheT()])]), error: 'InvalidDeliveryPlan' },
  {
    title: 'cycle through two steps',
    call: () => v2Plan([forward('f', [relayT()]), store('s', [cacheT()])], [edge('f', 's'), edge('s', 'f')]),
    error: 'DeliveryPlanCycle',
  },
];

const v3Proof: Case[] = [
  {
    title: 'v3 trailing byte',
    call: () => {
      const op = { kind: 'ClearPolicy', scope: didScope(OP.did) } as const;
      const c = v3Call(h, OP, op);
      return v3Call(h, OP, op, { signedPayload: concatBytes((c.args as { signedPayload: Uint8Array }).signedPayload, Uint8Array.of(1)) });
    },
    error: 'InvalidPolicyV3Payload',
  },
  {
    title: 'v3 signer over 256 bytes',
    call: () => v3Call(h, OP, { kind: 'ClearPolicy', scope: didScope(OP.did) }, { callSignerKeyId: 'k'.repeat(257) }),
    error: 'InvalidPolicyV3Payload',
  },
  {
    title: 'v3 expired',
    call: () => v3Call(h, OP, { kind: 'ClearPolicy', scope: didScope(OP.did) }, { validUntil: BigInt(T0) }),
    error: 'PolicyAuthorizationExpired',
  },
  { title: 'v3 stale nonce', call: () => v3Call(h, OP, { kind: 'ClearPolicy', scope: didScope(OP.did) }, { nonce: 1n }), error: 'InvalidPolicyV3Nonce' },
  {
    title: 'v3 unknown DID scope',
    call: () => v3Call(h, STRANGER, { kind: 'ClearPolicy', scope: didScope(STRANGER.did) }),
    error: 'InvalidPolicyScope',
    reason: 'scope_unavailable:did_not_found',
  },
  {
    title: 'v3 unknown persona scope',
    call: () => v3Call(h, OP, { kind: 'ClearPolicy', scope: personaScope('nope.example.com') }),
    error: 'InvalidPolicyScope',
    reason: 'scope_unavailable:persona_not_found',
  },
  {
    title: 'v3 unknown application',
    call: () => v3Call(h, OP, { kind: 'ClearPolicy', scope: appScope('nope') }),
    error: 'InvalidPolicyScope',
    reason: 'scope_unavailable:application_not_found',
  },
  {
    title: 'v3 invalid application id',
    call: () => v3Call(h, OP, { kind: 'ClearPolicy', scope: appScope('Talaria Push') }),
    error: 'InvalidPolicyScope',
    reason: 'scope_unavailable:application_not_found',
  },
  {
    title: 'v3 scope owned by another DID',
    call: () => v3Call(h, OTHER, { kind: 'ClearPolicy', scope: didScope(OP.did) }),
    error: 'InvalidPolicyScope',
    reason: 'owner_mismatch',
  },
  {
    title: 'v3 persona of another operator',
    call: () => v3Call(h, OTHER, { kind: 'ClearPolicy', scope: personaScope(P) }),
    error: 'InvalidPolicyScope',
    reason: 'owner_mismatch',
  },
  {
    title: 'v3 persona signer not a controller',
    call: () => v3Call(h, OP, { kind: 'ClearPolicy', scope: personaScope(SOLO) }, { signer: OP.k2 }),
    error: 'InvalidPersonaController',
  },
  {
    title: 'v3 bad signature',
    call: () => v3Call(h, OP, { kind: 'ClearPolicy', scope: didScope(OP.did) }, { signature: new Uint8Array(64) }),
    error: 'InvalidSignature',
  },
  { title: 'v3 clear without a policy', call: () => v3Call(h, OP, { kind: 'ClearPolicy', scope: didScope(OP.did) }), error: 'PolicyNotFound' },
];

const validateV3: Case[] = [
  { title: 'v3 with the v2 policy_id', call: () => setDidV3([rule('r')], { policyId: policyIdV2(PLATFORM, didScope(OP.did)) }), error: 'InvalidPolicyId' },
  {
    title: 'v3 policy.operator_did differs from the owner',
    call: () => setDidV3([rule('r')], { operatorDid: OTHER.did }),
    error: 'InvalidPolicyScope',
    reason: 'owner_mismatch',
  },
  { title: 'v3 empty ruleset', call: () => setDidV3([]), error: 'EmptyRuleset' },
  { title: 'v3 TTL 301', call: () => setDidV3([rule('r')], { policyTtlSeconds: 301 }), error: 'InvalidPolicyTtl' },
  { title: 'v3 revision 3 without a stored policy', call: () => setDidV3([rule('r')], { revision: 3n }), error: 'InvalidPolicyRevision' },
  { title: 'v3 priority 65 536 is DuplicateRuleId', call: () => setDidV3([rule('r', 65_536)]), error: 'DuplicateRuleId' },
  { title: 'v3 empty rule id', call: () => setDidV3([rule('')]), error: 'DuplicateRuleId' },
  { title: 'v3 invalid tag', call: () => setDidV3([rule('r', 1, BASE, [{ kind: 'TagEquals', tag: 'a\nb' }])]), error: 'InvalidTag' },
  {
    title: 'v3 override above the scope',
    call: () => setDidV3([rule('r', 1, BASE, [], overrides({ maxHttpEnvelopeBytes: 26_214_401 }))]),
    error: 'ConstraintOverrideExceedsScope',
  },
  { title: 'v3 Send without an event condition', call: () => setDidV3([rule('r', 1, planAction([send('s', OTHER.did)]))]), error: 'InvalidDeliveryPlan' },
  {
    title: 'v3 event-bound rule with a Forward step',
    call: () => setDidV3([rule('r', 1, planAction([send('s', OTHER.did), forward('f', [relayT()])], [edge('s', 'f')]), [EVENT])]),
    error: 'InvalidDeliveryPlan',
  },
  { title: 'v3 event-bound rule with only routing', call: () => setDidV3([rule('r', 1, goodPlan(), [EVENT])]), error: 'InvalidDeliveryPlan' },
  {
    title: 'v3 Call domain operated by another DID',
    call: () => setDidV3([rule('r', 1, planAction([callStep('c', INFRA.did, 'control', OTHER_DOMAIN)]), [EVENT])]),
    error: 'InvalidCallDomain',
  },
  {
    title: 'v3 Call domain that is no persona',
    call: () => setDidV3([rule('r', 1, planAction([callStep('c', INFRA.did, 'control', 'nope.example.org')]), [EVENT])]),
    error: 'PersonaNotFound',
  },
  {
    title: 'v3 RequireProfile in a DID scope',
    call: () => setDidV3([rule('r', 1, planAction([requireProfile('p'), forward('f', [relayT()])], [edge('p', 'f')]))]),
    error: 'InvalidDeliveryPlan',
  },
  {
    title: 'v3 RequireProfile not the entry step',
    call: () => setPersonaV3([rule('r', 1, planAction([forward('f', [relayT()]), requireProfile('p')], [edge('f', 'p')]))]),
    error: 'InvalidDeliveryPlan',
  },
  {
    title: 'v3 RequireProfile without Forward or Store',
    call: () => setPersonaV3([rule('r', 1, planAction([requireProfile('p'), archive('a', [target(INFRA.did, 'archive')])], [edge('p', 'a')]))]),
    error: 'InvalidDeliveryPlan',
  },
  {
    title: 'v3 RequireProfile left on Failure',
    call: () => setPersonaV3([rule('r', 1, planAction([requireProfile('p'), forward('f', [relayT()])], [edge('p', 'f', 'Always')]))]),
    error: 'InvalidDeliveryPlan',
  },
  {
    title: 'v3 two RequireProfile steps',
    call: () =>
      setPersonaV3([rule('r', 1, planAction([requireProfile('p'), requireProfile('q'), forward('f', [relayT()])], [edge('p', 'q'), edge('q', 'f')]))]),
    error: 'InvalidDeliveryPlan',
  },
  {
    title: 'v3 application rule with overrides',
    call: () => setAppV3([rule('r', 1, planAction([send('s', OP.did)]), [EVENT], overrides({}))]),
    error: 'InvalidPolicyScope',
    reason: 'application_rule_forbidden',
  },
  {
    title: 'v3 application rule rejecting',
    call: () => setAppV3([rule('r', 1, reject(), [EVENT])]),
    error: 'InvalidPolicyScope',
    reason: 'application_rule_forbidden',
  },
  {
    title: 'v3 application rule routing',
    call: () => setAppV3([rule('r', 1, planAction([forward('f', [relayT()])]))]),
    error: 'InvalidPolicyScope',
    reason: 'application_rule_forbidden',
  },
  {
    title: 'v3 application Send to an unlinked DID',
    call: () => setAppV3([rule('r', 1, planAction([send('s', OTHER.did)]), [EVENT])]),
    error: 'InvalidPolicyScope',
    reason: 'application_rule_forbidden',
  },
  {
    title: 'v3 application Call outside its verified domain',
    call: () => setAppV3([rule('r', 1, planAction([callStep('c', INFRA.did, 'control', OTHER_DOMAIN)]), [EVENT])]),
    error: 'InvalidCallDomain',
  },
];

for (const [group, cases] of [
  ['v2 proof (§5.7)', v2Proof],
  ['v2 operations (§7.8)', v2Operations],
  ['validate_v2 (§7.8)', validateV2],
  ['validate_plan (§7.5)', validatePlan],
  ['v3 proof (§5.8)', v3Proof],
  ['validate_v3 (§7.9)', validateV3],
] as const) {
  for (const c of cases) {
    test(`${group}: ${c.title} → ${c.error}${c.reason ? ` (${c.reason})` : ''}`, () => {
      expectFailure(h, c.call(), c.error, c.reason);
    });
  }
}

test('failures carry the rule and step where they were found', () => {
  const f = expectFailure(
    h,
    setDidV2([rule('ok'), rule('bad', 1, planAction([forward('f', [relayT()]), store('s', [])], [edge('f', 's')]))]),
    'InvalidRouteTarget',
  );
  assert.deepEqual(f.detail, { ruleId: 'bad', stepId: 's' });
});

/** 16 archive targets over four DIDs with four archive services each. */
const archiveTargets = () => ARCH.flatMap((a) => [0, 1, 2, 3].map((i) => target(a.did, `a${i}`)));

/** A valid v3 rule of 602 units: 8 conditions, 32 steps, 64 transitions, 1 + 31×16 targets. */
function heavyRule(id: string): PolicyRule {
  const steps = [forward('f', [relayT()]), ...Array.from({ length: 31 }, (_v, i) => archive(`a${i + 1}`, archiveTargets()))];
  const chain = steps.slice(1).map((st, i) => edge(steps[i]!.id, st.id));
  const forks = [
    ...Array.from({ length: 30 }, (_v, i) => edge('f', `a${i + 2}`, 'Always', 'Fork')),
    edge('a1', 'a3', 'Always', 'Fork'),
    edge('a1', 'a4', 'Always', 'Fork'),
    edge('a1', 'a5', 'Always', 'Fork'),
  ];
  const conditions: PolicyCondition[] = Array.from({ length: 8 }, () => ({ kind: 'TagPrefix', tag: id }));
  return rule(id, 1, planAction(steps, [...chain, ...forks]), conditions);
}

test('validate_v3: units are checked after every rule and do not count RecipientIn members', () => {
  const heavy = Array.from({ length: 7 }, (_v, i) => heavyRule(`h${i}`));
  expectFailure(h, setDidV3(heavy), 'PolicyTooComplex');
  // 6 × 602 + 1 rule with 8 × 16 RecipientIn members: 3612 + 9 ≤ 4096 in v3.
  const members: PolicyCondition = { kind: 'RecipientIn', dids: Array.from({ length: 16 }, () => OTHER.did) };
  const light = rule(
    'members',
    1,
    BASE,
    Array.from({ length: 8 }, () => members),
  );
  assert.equal(h.ledger.check(setDidV3([...heavy.slice(0, 6), light])), null);
  // The same member-heavy rule is too complex in v2 (members count there).
  const v2 = setDidV2(
    Array.from({ length: 4 }, (_v, i) =>
      rule(
        `m${i}`,
        1,
        BASE,
        Array.from({ length: 8 }, () => members),
      ),
    ),
  );
  assert.equal(h.ledger.check(v2), null, '4 × (1 + 8 + 128) = 548 units is fine');
});

test('valid shapes pass: full routing plan, Fork edges sharing triggers, v3 event rules, RequireProfile, application rules', () => {
  const cases: Call[] = [
    setDidV2([rule('r', 5, goodPlan(), [{ kind: 'TagPrefix', tag: 'chat/' }], overrides({ maxReplicas: 2 })), rule('s', 1, reject())]),
    v2Plan(
      [forward('f', [relayT()]), store('s', [cacheT()]), archive('a', [target(INFRA.did, 'archive')])],
      [edge('f', 's', 'Failure', 'Fork'), edge('f', 'a', 'Failure', 'Fork')],
    ),
    setDidV3([rule('ev', 1, planAction([send('s', OP.did), callStep('c', INFRA.did, 'control', CALL_DOMAIN)], [edge('s', 'c', 'Always')]), [EVENT])]),
    setPersonaV3([rule('rp', 1, planAction([requireProfile('p'), forward('f', [relayT()])], [edge('p', 'f', 'Success')]))]),
    setAppV3([rule('app', 1, planAction([send('s', OP.did), callStep('c', INFRA.did, 'control', CALL_DOMAIN)], [edge('s', 'c', 'Failure')]), [EVENT])]),
    v2Call(h, OP, { kind: 'SetPersonaConstraints', persona: P, constraints: requested() }),
    v2Call(h, OP, { kind: 'SetDidConstraints', did: OP.did, constraints: requested({ maxMessageBytes: 0, maxChunks: 0 }) }),
  ];
  for (const c of cases) assert.equal(h.ledger.check(c)?.errorName ?? null, null);
});
