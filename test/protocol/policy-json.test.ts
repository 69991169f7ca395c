/** JSON forms of policies and constraints (http-api.md §8.1, §6): parsing, errors, rendering, round trips. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fromUtf8, to0x } from '../../src/base/bytes.js';
import { DdnError } from '../../src/base/errors.js';
import { NETWORK_CONSTRAINTS } from '../../src/protocol/constraints.js';
import { parseRequestedConstraintsJson, requestedConstraintsToJson } from '../../src/protocol/policy/constraints-json.js';
import { completePolicy, parsePolicyJsonV2, parsePolicyJsonV3 } from '../../src/protocol/policy/json-parse.js';
import { policyToJson, resolvedPolicyToJson } from '../../src/protocol/policy/json-render.js';
import { policyIdV3 } from '../../src/protocol/policy/policy-id.js';
import { PLATFORM } from '../../src/protocol/profile.js';

const DID = 'did:platform:1111111111111111';
const ID = `0x${'ab'.repeat(32)}`;

/** A v3 policy object using every condition, step, action and optional key. */
function fullPolicy(): Record<string, unknown> {
  return {
    policy_id: ID,
    scope: { type: 'PERSONA', id: 'Example.COM.' },
    revision: '7',
    operator_did: DID,
    policy_ttl_seconds: 90,
    ruleset: [
      {
        id: 'plan',
        priority: 65_535,
        conditions: [
          { type: 'TagEquals', value: 'chat' },
          { type: 'TagPrefix', value: 'chat/' },
          { type: 'RecipientEquals', value: DID },
          { type: 'RecipientIn', values: [DID] },
        ],
        action: {
          type: 'DeliveryPlan/v1',
          entry_step: 'f',
          steps: [
            { id: 'f', operation: 'Forward', targets: [{ service_did: DID, service_id: `${DID}#relay`, priority: 2, weight: 3 }] },
            {
              id: 's',
              operation: 'Store',
              targets: [{ service_did: DID, service_id: `${DID}#cache` }],
              desired_replicas: 1,
              required_replicas: 1,
              selection: 'Weighted',
            },
            { id: 'a', operation: 'Archive', targets: [{ service_did: DID, service_id: `${DID}#archive` }] },
            { id: 'p', operation: 'RequireProfile' },
          ],
          transitions: [
            { from: 'f', to: 's', trigger: 'Failure' },
            { from: 'f', to: 'a', trigger: 'Always', mode: 'Fork' },
          ],
        },
        constraint_overrides: { max_replicas: 1, max_chunk_bytes: 1000, max_chunks: 3 },
      },
      {
        id: 'event',
        priority: 0,
        conditions: [{ type: 'EventEquals', value: 'CacheStored' }, { type: 'TagAbsent' }],
        action: {
          type: 'DeliveryPlan/v1',
          entry_step: 'x',
          steps: [
            { id: 'x', operation: 'Send', recipient_did: DID, payload_template: { z: 1, a: { $from: '/event/type' }, list: [true, null, 'é'] } },
            { id: 'c', operation: 'Call', service_did: DID, service_id: `${DID}#ctl`, registered_domain: 'example.com', payload_template: {} },
          ],
          transitions: [{ from: 'x', to: 'c', trigger: 'Success', mode: 'Next' }],
        },
      },
      { id: 'rej', priority: 1, action: { type: 'Reject/v1', reason_code: 451 }, constraint_overrides: {} },
      { id: 'rej0', priority: 1, action: { type: 'Reject/v1' }, constraint_overrides: null },
      { id: 'base', priority: 2, conditions: [], action: { type: 'BaseDidDelivery/v1' } },
    ],
  };
}

function expectError(fn: () => unknown, code: string, reason: string, field?: string): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof DdnError, String(e));
    assert.equal(e.code, code);
    assert.equal(e.details?.reason, reason, e.message);
    if (field !== undefined) assert.equal(e.details?.field, field);
    return true;
  });
}

test('a full v3 policy parses into the ledger struct with defaults and canonical persona', () => {
  const d = parsePolicyJsonV3(fullPolicy());
  assert.equal(to0x(d.policyId!), ID);
  assert.deepEqual(d.scope, { kind: 'Persona', id: 'example.com' });
  assert.equal(d.revision, 7n);
  assert.equal(d.policyTtlSeconds, 90);
  const [plan, event, rej, rej0, base] = d.ruleset;
  assert.equal(plan!.action.kind, 'DeliveryPlanV1');
  if (plan!.action.kind !== 'DeliveryPlanV1' || event!.action.kind !== 'DeliveryPlanV1') throw new Error('plan');
  const steps = plan!.action.plan.steps;
  assert.deepEqual(steps[1]!.operation, {
    kind: 'Store',
    targets: [{ serviceDid: DID, serviceId: `${DID}#cache`, priority: 0, weight: 1 }],
    desiredReplicas: 1,
    requiredReplicas: 1,
    selection: 'Weighted',
  });
  assert.deepEqual(plan!.action.plan.transitions[0], { from: 'f', to: 's', trigger: 'Failure', mode: 'Next' });
  assert.deepEqual(plan!.constraintOverrides, {
    requestedCacheSeconds: null,
    maxHttpEnvelopeBytes: null,
    maxUnchunkedMessageBytes: null,
    maxChunkBytes: 1000,
    maxMessageBytes: null,
    maxChunks: 3,
    maxReplicas: 1,
  });
  const send = event!.action.plan.steps[0]!.operation;
  assert.equal(send.kind, 'Send');
  if (send.kind === 'Send') assert.equal(fromUtf8(send.payloadTemplate), '{"z":1,"a":{"$from":"/event/type"},"list":[true,null,"é"]}');
  assert.deepEqual(event!.conditions, [{ kind: 'EventEquals', event: 'CacheStored' }, { kind: 'TagAbsent' }]);
  assert.deepEqual(rej!.action, { kind: 'RejectV1', reasonCode: 451 });
  assert.notEqual(rej!.constraintOverrides, null, '{} is Some');
  assert.deepEqual(rej0!.action, { kind: 'RejectV1', reasonCode: 0 });
  assert.equal(rej0!.constraintOverrides, null);
  assert.deepEqual(base!.conditions, []);
});

test('render → parse is stable, the deprecated overrides are never emitted', () => {
  const d = parsePolicyJsonV3(fullPolicy());
  const policy = completePolicy(d, { policyId: new Uint8Array(32), revision: 1n });
  const json = policyToJson(policy);
  assert.equal(json.policy_id, ID);
  assert.deepEqual(json.scope, { type: 'PERSONA', id: 'example.com' });
  assert.equal(json.revision, 7);
  const rules = json.ruleset as Array<Record<string, unknown>>;
  assert.deepEqual(rules[0]!.constraint_overrides, { max_chunk_bytes: 1000, max_replicas: 1 });
  assert.equal('constraint_overrides' in rules[3]!, false);
  assert.deepEqual(rules[2]!.constraint_overrides, {});
  const again = parsePolicyJsonV3(JSON.parse(JSON.stringify(json)));
  const { ruleset: r1, ...rest1 } = again;
  const { ruleset: r0, ...rest0 } = policy;
  assert.deepEqual(rest1, rest0);
  // The ignored max_chunks override does not survive rendering; everything else does.
  assert.deepEqual(r1.slice(1), r0.slice(1));
  assert.deepEqual({ ...r1[0]!, constraintOverrides: null }, { ...r0[0]!, constraintOverrides: null });
});

test('v2: policy_ttl_seconds defaults to 60, APPLICATION scopes are v3 only, id and revision are filled', () => {
  const v2 = { scope: { type: 'DID', id: DID }, operator_did: DID, ruleset: [{ id: 'r', priority: 1, action: { type: 'BaseDidDelivery/v1' } }] };
  const d = parsePolicyJsonV2(v2, false);
  assert.deepEqual([d.policyId, d.revision, d.policyTtlSeconds], [null, null, 60]);
  const filled = completePolicy(d, { policyId: policyIdV3(PLATFORM, d.scope), revision: 4n });
  assert.deepEqual([filled.policyId, filled.revision], [policyIdV3(PLATFORM, d.scope), 4n]);
  expectError(
    () => parsePolicyJsonV2({ ...v2, scope: { type: 'APPLICATION', id: 'talaria' } }, false),
    'invalid_delivery_policy',
    'invalid_field',
    'policy.scope.type',
  );
  expectError(() => parsePolicyJsonV3(v2), 'invalid_delivery_policy', 'missing_field', 'policy.policy_ttl_seconds');
  assert.deepEqual(parsePolicyJsonV3({ ...v2, scope: { type: 'APPLICATION', id: 'talaria' }, policy_ttl_seconds: 1 }).scope, {
    kind: 'Application',
    id: 'talaria',
  });
});

test("v2: policy_ttl_seconds is refused (policy_ttl_v3_only) unless deployed clients' forms are accepted", () => {
  const v2 = {
    scope: { type: 'DID', id: DID },
    operator_did: DID,
    policy_ttl_seconds: 60,
    ruleset: [{ id: 'r', priority: 1, action: { type: 'BaseDidDelivery/v1' } }],
  };
  expectError(() => parsePolicyJsonV2(v2, false), 'invalid_delivery_policy', 'policy_ttl_v3_only', 'policy.policy_ttl_seconds');
  assert.equal(parsePolicyJsonV2({ ...v2, policy_ttl_seconds: 90 }, true).policyTtlSeconds, 90);
  expectError(() => parsePolicyJsonV2({ ...v2, policy_ttl_seconds: 301 }, true), 'invalid_delivery_policy', 'invalid_policy_ttl', 'policy.policy_ttl_seconds');
  assert.equal(parsePolicyJsonV3(v2).policyTtlSeconds, 60);
});

test('shape errors: 400 invalid_delivery_policy with reason and field path', () => {
  const p = fullPolicy;
  const at = (mut: (o: Record<string, unknown>) => void) => {
    const o = p();
    mut(o);
    return () => parsePolicyJsonV3(o);
  };
  type R = Record<string, unknown>;
  const rule0 = (o: R) => (o.ruleset as R[])[0]!;
  const step = (o: R, i: number) => ((rule0(o).action as R).steps as R[])[i]!;
  const cases: Array<[() => unknown, string, string]> = [
    [() => parsePolicyJsonV3([]), 'invalid_field', 'policy'],
    [at((o) => (o.extra = 1)), 'unknown_key', 'policy.extra'],
    [at((o) => delete o.operator_did), 'missing_field', 'policy.operator_did'],
    [at((o) => (o.policy_id = '0x1234')), 'invalid_policy_id', 'policy.policy_id'],
    [at((o) => (o.revision = '-1')), 'invalid_field', 'policy.revision'],
    [at((o) => (o.revision = 1.5)), 'invalid_field', 'policy.revision'],
    [at((o) => (o.policy_ttl_seconds = 301)), 'invalid_policy_ttl', 'policy.policy_ttl_seconds'],
    [at((o) => (o.ruleset = [])), 'empty_ruleset', 'policy.ruleset'],
    [at((o) => (o.ruleset = Array.from({ length: 33 }, () => rule0(p())))), 'invalid_field', 'policy.ruleset'],
    [at((o) => (o.scope = { type: 'PERSONA', id: 'bad_name' })), 'invalid_persona', 'policy.scope.id'],
    [at((o) => (o.scope = { type: 'did', id: DID })), 'invalid_field', 'policy.scope.type'],
    [at((o) => (o.operator_did = 'x'.repeat(129))), 'invalid_field', 'policy.operator_did'],
    [at((o) => (rule0(o).priority = 65_536)), 'invalid_rule_priority', 'policy.ruleset[0].priority'],
    [at((o) => (rule0(o).id = 'x'.repeat(65))), 'invalid_field', 'policy.ruleset[0].id'],
    [at((o) => (rule0(o).note = 'x')), 'unknown_key', 'policy.ruleset[0].note'],
    [at((o) => ((rule0(o).conditions as R[])[0]!.value = 'é'.repeat(49))), 'invalid_tag', 'policy.ruleset[0].conditions[0].value'],
    [at((o) => ((rule0(o).conditions as R[])[3]!.values = [])), 'invalid_condition', 'policy.ruleset[0].conditions[3].values'],
    [at((o) => ((rule0(o).conditions as R[])[2]!.values = [DID])), 'unknown_key', 'policy.ruleset[0].conditions[2].values'],
    [at((o) => ((rule0(o).conditions as R[])[0]!.type = 'TagMatches')), 'invalid_field', 'policy.ruleset[0].conditions[0].type'],
    [at((o) => (rule0(o).conditions = Array.from({ length: 9 }, () => ({ type: 'TagAbsent' })))), 'invalid_field', 'policy.ruleset[0].conditions'],
    [at((o) => ((rule0(o).action as R).type = 'DeliveryPlan/v2')), 'invalid_field', 'policy.ruleset[0].action.type'],
    [at((o) => ((rule0(o).action as R).reason_code = 1)), 'unknown_key', 'policy.ruleset[0].action.reason_code'],
    [at((o) => (step(o, 0).desired_replicas = 1)), 'unknown_key', 'policy.ruleset[0].action.steps[0].desired_replicas'],
    [at((o) => delete step(o, 0).targets), 'missing_field', 'policy.ruleset[0].action.steps[0].targets'],
    [at((o) => ((step(o, 0).targets as R[])[0]!.weight = 0)), 'invalid_route_target', 'policy.ruleset[0].action.steps[0].targets[0].weight'],
    [at((o) => (step(o, 1).desired_replicas = 0)), 'invalid_delivery_plan', 'policy.ruleset[0].action.steps[1].desired_replicas'],
    [at((o) => (step(o, 1).selection = 'Random')), 'invalid_field', 'policy.ruleset[0].action.steps[1].selection'],
    [at((o) => (step(o, 0).operation = 'Teleport')), 'invalid_field', 'policy.ruleset[0].action.steps[0].operation'],
    [at((o) => (((rule0(o).action as R).transitions as R[])[0]!.trigger = 'Maybe')), 'invalid_field', 'policy.ruleset[0].action.transitions[0].trigger'],
    [at((o) => ((rule0(o).constraint_overrides as R).max_replicas = 256)), 'invalid_field', 'policy.ruleset[0].constraint_overrides.max_replicas'],
    [
      at((o) => ((rule0(o).constraint_overrides as R).effective_ttl_seconds = 1)),
      'unknown_key',
      'policy.ruleset[0].constraint_overrides.effective_ttl_seconds',
    ],
    [
      at((o) => ((((o.ruleset as R[])[1]!.action as R).steps as R[])[0]!.payload_template = [1])),
      'invalid_payload_template',
      'policy.ruleset[1].action.steps[0].payload_template',
    ],
    [
      at((o) => ((((o.ruleset as R[])[1]!.action as R).steps as R[])[0]!.payload_template = { big: 'x'.repeat(4090) })),
      'invalid_payload_template',
      'policy.ruleset[1].action.steps[0].payload_template',
    ],
  ];
  for (const [fn, reason, field] of cases) expectError(fn, 'invalid_delivery_policy', reason, field);
  assert.throws(
    () => parsePolicyJsonV3({}),
    (e: unknown) => e instanceof DdnError && e.status === 400,
  );
});

test('constraints JSON: five required positive limits, deprecated fields optional, effective TTL refused', () => {
  const c = { requested_cache_seconds: 600, max_http_envelope_bytes: 1000, max_unchunked_message_bytes: 900, max_chunk_bytes: 800, max_replicas: 2 };
  assert.deepEqual(parseRequestedConstraintsJson(c), {
    requestedCacheSeconds: 600,
    maxHttpEnvelopeBytes: 1000,
    maxUnchunkedMessageBytes: 900,
    maxChunkBytes: 800,
    maxMessageBytes: NETWORK_CONSTRAINTS.maxMessageBytes,
    maxChunks: NETWORK_CONSTRAINTS.maxChunks,
    maxReplicas: 2,
  });
  assert.equal(parseRequestedConstraintsJson({ ...c, max_chunks: 0, unknown: true }).maxChunks, 0);
  assert.deepEqual(requestedConstraintsToJson(parseRequestedConstraintsJson({ ...c, max_message_bytes: 5 })), c);
  expectError(
    () => parseRequestedConstraintsJson({ ...c, max_replicas: undefined }),
    'invalid_delivery_constraints',
    'missing_field',
    'delivery_constraints.max_replicas',
  );
  expectError(
    () => parseRequestedConstraintsJson({ ...c, max_chunk_bytes: 0 }),
    'invalid_delivery_constraints',
    'invalid_field',
    'delivery_constraints.max_chunk_bytes',
  );
  expectError(() => parseRequestedConstraintsJson({ ...c, requested_cache_seconds: '600' }), 'invalid_delivery_constraints', 'invalid_field');
  expectError(() => parseRequestedConstraintsJson({ ...c, effective_ttl_seconds: 600 }), 'invalid_delivery_constraints', 'response_only_field');
  expectError(
    () => parseRequestedConstraintsJson(null, 'intent.delivery_constraints'),
    'invalid_delivery_constraints',
    'invalid_field',
    'intent.delivery_constraints',
  );
});

test('resolved policy JSON (GET /delivery-resolution): field names, action JSON, no deprecated limits', () => {
  const json = resolvedPolicyToJson({
    source: 'persona',
    sourceId: 'example.com',
    policyId: ID,
    policyRevision: 3n,
    ruleId: 'r',
    rulePriority: 9,
    action: { kind: 'RejectV1', reasonCode: 4 },
    effectiveConstraints: { ...NETWORK_CONSTRAINTS },
    policyTtlSeconds: 60,
  });
  assert.deepEqual(json, {
    source: 'persona',
    source_id: 'example.com',
    policy_id: ID,
    policy_revision: 3,
    rule_id: 'r',
    rule_priority: 9,
    action: { type: 'Reject/v1', reason_code: 4 },
    effective_constraints: {
      requested_cache_seconds: 172_800,
      effective_ttl_seconds: 172_800,
      max_http_envelope_bytes: 26_214_400,
      max_unchunked_message_bytes: 16_777_216,
      max_chunk_bytes: 2_097_152,
      max_replicas: 4,
    },
    policy_ttl_seconds: 60,
  });
});
