/**
 * `resolve_delivery_policy` (ledger-rules.md §7.10) over finalized ledger state, and over hand-built states for
 * orderings the write rules cannot produce (a v3 policy next to a v2 record).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { to0x } from '../../src/base/bytes.js';
import { NETWORK_CONSTRAINTS } from '../../src/protocol/constraints.js';
import { policyIdV2 } from '../../src/protocol/policy/policy-id.js';
import { PLATFORM } from '../../src/protocol/profile.js';
import { EMPTY_STATE, Overlay } from '../../src/ledger/state.js';
import { putPolicyV2, putPolicyV3 } from '../../src/ledger/runtime/policy-state.js';
import { addressedConstraints, resolveDeliveryPolicy } from '../../src/ledger/runtime/resolution.js';
import { Harness } from './harness.js';
import {
  actor,
  didScope,
  overrides,
  personaScope,
  planAction,
  policyV2,
  policyV3,
  register,
  registerPersona,
  reject,
  requested,
  rule,
  send,
  v2Call,
  v3Call,
} from './policy-harness.js';

const OP = actor(7); // persona operator
const R = actor(11); // recipient
const P = 'example.com';

function setup(): Harness {
  const h = new Harness();
  register(h, OP);
  register(h, R);
  registerPersona(h, P, OP);
  return h;
}

const resolve = (h: Harness, persona: string | null, tag: string | null, recipient = R.did) =>
  resolveDeliveryPolicy(h.ledger.finalizedView(), h.clock.nowMs(), recipient, persona, tag);

test('a persona rule beats the DID rule; a non-matching persona policy falls back to the DID', (t) => {
  const h = setup();
  t.after(() => h.close());
  h.apply(v2Call(h, R, { kind: 'SetPolicy', policy: policyV2(didScope(R.did), R.did, [rule('did', 100, reject(1))]) }));
  h.apply(
    v3Call(h, OP, { kind: 'SetPolicy', policy: policyV3(personaScope(P), OP.did, [rule('persona', 1, reject(2), [{ kind: 'TagEquals', tag: 'chat' }])]) }),
  );

  const viaPersona = resolve(h, P, 'chat')!;
  assert.deepEqual(
    [viaPersona.source, viaPersona.sourceId, viaPersona.ruleId, viaPersona.rulePriority, viaPersona.action, viaPersona.policyTtlSeconds],
    ['persona', P, 'persona', 1, reject(2), 120],
  );
  const fallback = resolve(h, P, 'mail')!;
  assert.deepEqual([fallback.source, fallback.sourceId, fallback.ruleId], ['did', R.did, 'did']);
  assert.equal(resolve(h, P, null)!.ruleId, 'did', 'TagEquals needs a tag');
  assert.equal(resolve(h, null, 'chat')!.ruleId, 'did', 'without a persona only the DID policy counts');
  assert.equal(resolve(h, ' Example.COM. ', 'chat')!.sourceId, P, 'the persona is canonicalised');
});

test('ties keep the earliest eligible rule; only a strictly greater priority replaces it', (t) => {
  const h = setup();
  t.after(() => h.close());
  const ruleset = [
    rule('first', 5, reject(1)),
    rule('second', 5, reject(2)),
    rule('lower', 4, reject(3)),
    rule('tagged', 9, reject(4), [{ kind: 'TagPrefix', tag: 'vip/' }]),
  ];
  h.apply(v2Call(h, R, { kind: 'SetPolicy', policy: policyV2(didScope(R.did), R.did, ruleset) }));
  assert.equal(resolve(h, null, null)!.ruleId, 'first');
  assert.equal(resolve(h, null, 'vip')!.ruleId, 'first', 'TagPrefix is a byte prefix of the tag');
  assert.equal(resolve(h, null, 'vip/1')!.ruleId, 'tagged');
  assert.equal(resolve(h, null, 'VIP/1')!.ruleId, 'first', 'tags are case-sensitive');
});

test("rule overrides are clamped by the recipient's constraints; addressed = min(did, persona)", (t) => {
  const h = setup();
  t.after(() => h.close());
  h.apply(v2Call(h, R, { kind: 'SetDidConstraints', did: R.did, constraints: requested() }));
  const o = overrides({
    maxHttpEnvelopeBytes: 2_000_000,
    maxUnchunkedMessageBytes: 1_500_000,
    maxChunkBytes: 50_000,
    maxReplicas: 3,
    requestedCacheSeconds: 7200,
  });
  h.apply(v3Call(h, OP, { kind: 'SetPolicy', policy: policyV3(personaScope(P), OP.did, [rule('p', 1, reject(), [], o)]) }));
  const r = resolve(h, P, null)!;
  assert.deepEqual(r.effectiveConstraints, {
    requestedCacheSeconds: 3600,
    effectiveTtlSeconds: 3600,
    maxHttpEnvelopeBytes: 1_000_000,
    maxUnchunkedMessageBytes: 500_000,
    maxChunkBytes: 50_000,
    maxMessageBytes: NETWORK_CONSTRAINTS.maxMessageBytes,
    maxChunks: NETWORK_CONSTRAINTS.maxChunks,
    maxReplicas: 2,
  });

  // With persona constraints too, the addressed constraints are the field-wise minimum.
  h.apply(
    v2Call(h, OP, {
      kind: 'SetPersonaConstraints',
      persona: P,
      constraints: requested({ maxHttpEnvelopeBytes: 400_000, maxUnchunkedMessageBytes: 300_000, maxReplicas: 4, requestedCacheSeconds: 100 }),
    }),
  );
  const addressed = addressedConstraints(h.ledger.finalizedView(), h.clock.nowMs(), R.did, P);
  assert.deepEqual(
    [addressed.maxHttpEnvelopeBytes, addressed.maxUnchunkedMessageBytes, addressed.maxChunkBytes, addressed.maxReplicas, addressed.effectiveTtlSeconds],
    [400_000, 300_000, 100_000, 2, 100],
  );
  const again = resolve(h, P, null)!;
  assert.deepEqual(
    [again.effectiveConstraints.maxHttpEnvelopeBytes, again.effectiveConstraints.maxChunkBytes, again.effectiveConstraints.requestedCacheSeconds],
    [400_000, 50_000, 100],
  );
  assert.deepEqual(addressedConstraints(h.ledger.finalizedView(), h.clock.nowMs(), OP.did, null), { ...NETWORK_CONSTRAINTS });
});

test('an expired, revoked or unknown persona yields no policy — no fallback to the DID', (t) => {
  const h = setup();
  t.after(() => h.close());
  registerPersona(h, 'brief.example.com', OP, { expiresAt: BigInt(h.clock.nowMs() + 5_000) });
  h.apply(v2Call(h, R, { kind: 'SetPolicy', policy: policyV2(didScope(R.did), R.did, [rule('did')]) }));
  assert.equal(resolve(h, 'brief.example.com', null)?.ruleId, 'did', 'while valid, the DID rule serves');
  h.clock.advance(10_000);
  assert.equal(resolve(h, 'brief.example.com', null), null);
  assert.equal(resolve(h, 'unknown.example.com', null), null);
  assert.equal(resolve(h, 'not a name', null), null);
  assert.equal(resolve(h, null, null)?.ruleId, 'did');
});

test('EventEquals never matches during resolution', (t) => {
  const h = setup();
  t.after(() => h.close());
  const event = rule('event', 100, planAction([send('s', R.did)]), [{ kind: 'EventEquals', event: 'RelayAccepted' }]);
  h.apply(v3Call(h, R, { kind: 'SetPolicy', policy: policyV3(didScope(R.did), R.did, [event, rule('base', 1)]) }));
  assert.equal(resolve(h, null, null)!.ruleId, 'base');
  h.apply(v3Call(h, R, { kind: 'SetPolicy', policy: policyV3(didScope(R.did), R.did, [event], { revision: 2n }) }));
  assert.equal(resolve(h, null, null), null);
});

test('invalid tags and over-long recipients resolve to nothing; recipient existence is not checked', (t) => {
  const h = setup();
  t.after(() => h.close());
  h.apply(v2Call(h, R, { kind: 'SetPolicy', policy: policyV2(didScope(R.did), R.did, [rule('did')]) }));
  assert.equal(resolve(h, null, ''), null);
  assert.equal(resolve(h, null, 'a\tb'), null);
  assert.equal(resolve(h, null, 'x'.repeat(97)), null);
  assert.equal(resolve(h, null, 'x'.repeat(96))?.ruleId, 'did');
  assert.equal(resolve(h, null, null, `did:platform:${'1'.repeat(115)}`), null);
});

test('v3 before v2: a v3 policy without a winner ends the search; a lone v2 record serves its own id', () => {
  const R2 = R.did;
  const s = new Overlay(EMPTY_STATE);
  putPolicyV2(s, policyV2(didScope(R2), R2, [rule('v2', 50)]));
  assert.deepEqual(
    [resolveDeliveryPolicy(s, 0, R2, null, null)?.ruleId, resolveDeliveryPolicy(s, 0, R2, null, null)?.policyId],
    ['v2', to0x(policyIdV2(PLATFORM, didScope(R2)))],
  );
  putPolicyV3(s, policyV3(didScope(R2), R2, [rule('v3', 1)]));
  assert.equal(resolveDeliveryPolicy(s, 0, R2, null, null)?.ruleId, 'v3');
  putPolicyV3(s, policyV3(didScope(R2), R2, [rule('v3', 1, reject(), [{ kind: 'TagAbsent' }])]));
  assert.equal(resolveDeliveryPolicy(s, 0, R2, null, 't'), null, 'the v2 record is not consulted');
  assert.equal(resolveDeliveryPolicy(s, 0, R2, null, null)?.ruleId, 'v3');
});
