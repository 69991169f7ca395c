/**
 * Write-path validation of delivery policies through HTTP (http-api.md §1.1, §8.1): one failing policy per ledger
 * validation error (400 `invalid_delivery_policy`, `details.reason` = the snake_case ledger name, `rule_id` /
 * `step_id` where the ledger knows them) plus the Directory's `non_public_endpoint` rule. Each policy is refused
 * at prepare and again at submit with a correctly signed, locally built payload.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { to0x } from '../../src/base/bytes.js';
import { encodePolicyV2Payload } from '../../src/protocol/payloads/policy-v2.js';
import { encodePolicyV3Payload } from '../../src/protocol/payloads/policy-v3.js';
import { completePolicy, parsePolicyJsonV2, parsePolicyJsonV3 } from '../../src/protocol/policy/json-parse.js';
import { policyIdV2, policyIdV3 } from '../../src/protocol/policy/policy-id.js';
import { assertError, didOf } from '../support/directory-flows.js';
import { registerApplication } from '../support/application-flows.js';
import { enc, operatorOf, registerDnsPersona, startPersonaDirectory, type Operator, type PersonaNetwork } from '../support/persona-flows.js';
import {
  asV2,
  forwardPlan,
  policyJson,
  prepareV2,
  prepareV3,
  registerServiceDid,
  rule,
  sendRule,
  storePlan,
  target,
  v3Url,
  type ServiceDid,
} from '../support/policy-flows.js';

type Body = Record<string, unknown>;

interface Row {
  name: string;
  version: 2 | 3;
  /** DID scope of the owner unless an application scope is named. */
  application?: string;
  policy: () => Body;
  code?: string;
  status?: number;
  reason?: string;
  ruleId?: string;
  stepId?: string;
  /** Refused while parsing the JSON (no local payload can be built). */
  shape?: boolean;
}

describe('policy validation through HTTP: one failing policy per rule', () => {
  let n: PersonaNetwork;
  let owner: ServiceDid;
  let svc: ServiceDid;
  let local: ServiceDid;
  let partner: Operator;
  let app: Operator;
  before(async () => {
    n = await startPersonaDirectory();
    const h = n.h;
    owner = await registerServiceDid(h, 160, []);
    svc = await registerServiceDid(h, 161, [
      { fragment: 'relay', kind: 'Relay' },
      { fragment: 'cache', kind: 'Cache' },
      { fragment: 'archive', kind: 'Archive' },
      { fragment: 'ctl', kind: 'ApplicationControl', endpoints: ['https://hooks.partner.example.org/ddn'] },
    ]);
    local = await registerServiceDid(h, 162, [
      { fragment: 'relay', kind: 'Relay', endpoints: ['https://relay.internal/x'] },
      { fragment: 'ctl', kind: 'ApplicationControl', endpoints: ['https://hooks.other.example.org/ddn'] },
    ]);
    // A DNS persona operated by another DID: Call steps of `owner` may not claim it.
    partner = await operatorOf(h, 163);
    await registerDnsPersona(n, 'partner.example.org', partner);
    app = await operatorOf(h, 164);
    await registerApplication(h, 'val.app', app);
  });
  after(() => n.close());

  const did = () => owner.did;
  const fwd = (extra: Body = {}) => rule('r1', 1, { ...forwardPlan([target(svc, 'relay')]), ...extra });
  const pol = (rules: Body[], extra: Body = {}) => policyJson('DID', did(), did(), rules, extra);
  const callRule = (service: ServiceDid, frag: string, domain: string) =>
    rule(
      'call',
      1,
      {
        type: 'DeliveryPlan/v1',
        entry_step: 'hook',
        steps: [
          { id: 'hook', operation: 'Call', service_did: service.did, service_id: service.id(frag), registered_domain: domain, payload_template: { a: 1 } },
        ],
        transitions: [],
      },
      [{ type: 'EventEquals', value: 'CacheStored' }],
    );
  const tooComplex = () =>
    Array.from({ length: 32 }, (_, i) =>
      rule(
        `r${i}`,
        1,
        { type: 'Reject/v1' },
        Array.from({ length: 8 }, (_, c) => ({ type: 'RecipientIn', values: Array.from({ length: 16 }, (_, d) => didOf((((i * 8 + c) * 16 + d) % 250) + 1)) })),
      ),
    );

  const rows: Row[] = [
    { name: 'InvalidPolicyId', version: 2, policy: () => pol([fwd()], { policy_id: `0x${'00'.repeat(32)}` }), reason: 'invalid_policy_id' },
    { name: 'InvalidPolicyId, v3 id', version: 3, policy: () => pol([fwd()], { policy_id: `0x${'11'.repeat(32)}` }), reason: 'invalid_policy_id' },
    { name: 'EmptyRuleset', version: 2, policy: () => pol([]), reason: 'empty_ruleset', shape: true },
    { name: 'InvalidPolicyTtl', version: 3, policy: () => pol([fwd()], { policy_ttl_seconds: 301 }), reason: 'invalid_policy_ttl', shape: true },
    { name: 'InvalidRulePriority', version: 2, policy: () => pol([rule('r1', 65_536, { type: 'Reject/v1' })]), reason: 'invalid_rule_priority', shape: true },
    { name: 'DuplicateRuleId', version: 2, policy: () => pol([fwd(), fwd()]), reason: 'duplicate_rule_id', ruleId: 'r1' },
    { name: 'DuplicateRuleId, empty id', version: 3, policy: () => pol([rule('', 1, { type: 'Reject/v1' })]), reason: 'duplicate_rule_id', ruleId: '' },
    {
      name: 'InvalidTag',
      version: 2,
      policy: () => pol([rule('t', 1, { type: 'Reject/v1' }, [{ type: 'TagEquals', value: 'bell\u0007' }])]),
      reason: 'invalid_tag',
      ruleId: 't',
    },
    {
      name: 'InvalidCondition (unknown recipient)',
      version: 2,
      policy: () => pol([rule('c', 1, { type: 'Reject/v1' }, [{ type: 'RecipientEquals', value: didOf(249) }])]),
      reason: 'invalid_condition',
      ruleId: 'c',
    },
    {
      name: 'InvalidCondition (event in v2)',
      version: 2,
      policy: () => pol([rule('e', 1, { type: 'Reject/v1' }, [{ type: 'EventEquals', value: 'CacheStored' }])]),
      reason: 'invalid_condition',
      ruleId: 'e',
    },
    { name: 'InvalidDeliveryPlan', version: 2, policy: () => pol([fwd({ entry_step: 'nowhere' })]), reason: 'invalid_delivery_plan', ruleId: 'r1' },
    {
      name: 'InvalidDeliveryPlan (Send in v2)',
      version: 2,
      policy: () => pol([sendRule('s', did())].map((r) => ({ ...r, conditions: [] }))),
      reason: 'invalid_delivery_plan',
      ruleId: 's',
      stepId: 'notify',
    },
    {
      name: 'DuplicateStepId',
      version: 2,
      policy: () =>
        pol([
          rule('d', 1, {
            type: 'DeliveryPlan/v1',
            entry_step: 'x',
            steps: [
              { id: 'x', operation: 'Forward', targets: [target(svc, 'relay')] },
              { id: 'x', operation: 'Archive', targets: [target(svc, 'archive')] },
            ],
            transitions: [],
          }),
        ]),
      reason: 'duplicate_step_id',
      ruleId: 'd',
      stepId: 'x',
    },
    {
      name: 'DeliveryPlanCycle',
      version: 3,
      policy: () => pol([fwd({ transitions: [{ from: 'fwd', to: 'fwd', trigger: 'Failure' }] })]),
      reason: 'delivery_plan_cycle',
      ruleId: 'r1',
    },
    {
      name: 'InvalidRouteTarget',
      version: 2,
      policy: () => pol([rule('r1', 1, forwardPlan([target(svc, 'cache')]))]),
      reason: 'invalid_route_target',
      ruleId: 'r1',
      stepId: 'fwd',
    },
    {
      name: 'MultipleForwardSteps',
      version: 2,
      policy: () =>
        pol([
          rule('m', 1, {
            type: 'DeliveryPlan/v1',
            entry_step: 'a',
            steps: [
              { id: 'a', operation: 'Forward', targets: [target(svc, 'relay')] },
              { id: 'b', operation: 'Forward', targets: [target(svc, 'relay')] },
            ],
            transitions: [{ from: 'a', to: 'b', trigger: 'Failure' }],
          }),
        ]),
      reason: 'multiple_forward_steps',
      ruleId: 'm',
      stepId: 'b',
    },
    {
      name: 'ConstraintOverrideExceedsScope',
      version: 2,
      policy: () => pol([rule('o', 1, storePlan([target(svc, 'cache')]), [], { max_replicas: 5 })]),
      reason: 'constraint_override_exceeds_scope',
      ruleId: 'o',
    },
    { name: 'PolicyTooComplex', version: 2, policy: () => pol(tooComplex()), reason: 'policy_too_complex' },
    {
      name: 'InvalidCallDomain',
      version: 3,
      policy: () => pol([callRule(svc, 'ctl', 'partner.example.org')]),
      reason: 'invalid_call_domain',
      ruleId: 'call',
      stepId: 'hook',
    },
    {
      name: 'InvalidPayloadTemplate',
      version: 3,
      policy: () =>
        pol([
          rule(
            'tpl',
            1,
            {
              type: 'DeliveryPlan/v1',
              entry_step: 'n',
              steps: [{ id: 'n', operation: 'Send', recipient_did: did(), payload_template: { x: { $from: '/secrets/key' } } }],
              transitions: [],
            },
            [{ type: 'EventEquals', value: 'CacheStored' }],
          ),
        ]),
      reason: 'invalid_payload_template',
      ruleId: 'tpl',
      stepId: 'n',
    },
    {
      name: 'InvalidPolicyScope (application_rule_forbidden)',
      version: 3,
      application: 'val.app',
      policy: () => policyJson('APPLICATION', 'val.app', app.did, [fwd()]),
      reason: 'application_rule_forbidden',
      ruleId: 'r1',
    },
    {
      name: 'InvalidPolicyScope (send_target_not_consented: a DID-scope Send to another DID, profile platform)',
      version: 3,
      policy: () => pol([rule('base', 2, forwardPlan([target(svc, 'relay')])), sendRule('s', svc.did)]),
      reason: 'send_target_not_consented',
      ruleId: 's',
      stepId: 'notify',
    },
    {
      name: 'InvalidConstraints (overrides break the size chain)',
      version: 2,
      policy: () => pol([rule('o', 1, storePlan([target(svc, 'cache')]), [], { max_http_envelope_bytes: 10, max_unchunked_message_bytes: 20 })]),
      code: 'invalid_delivery_constraints',
      ruleId: 'o',
    },
    {
      name: 'non_public_endpoint (Forward target)',
      version: 2,
      policy: () => pol([rule('r1', 1, forwardPlan([target(local, 'relay')]))]),
      reason: 'non_public_endpoint',
      ruleId: 'r1',
      stepId: 'fwd',
    },
    {
      name: 'non_public_endpoint (Call outside its registered domain)',
      version: 3,
      policy: () => pol([callRule(local, 'ctl', 'partner.example.org')]),
      reason: 'non_public_endpoint',
      ruleId: 'call',
      stepId: 'hook',
    },
  ];

  /** The submit body for a row, built and signed locally with the shared codec (a dummy payload for shape errors). */
  function localSubmission(row: Row, policy: Body): { method: string; url: string; body: Body } {
    const h = n.h;
    const validUntil = BigInt(h.clock.nowMs() + 60_000);
    const signer = row.application ? app : owner;
    const operatorDid = row.application ? app.did : did();
    let payload: Uint8Array = new Uint8Array([0]);
    if (!row.shape) {
      if (row.version === 2) {
        const draft = parsePolicyJsonV2(policy, false);
        const full = completePolicy(draft, { policyId: policyIdV2(h.profile, draft.scope), revision: 1n });
        payload = encodePolicyV2Payload({ operatorDid, operation: { kind: 'SetPolicy', policy: full }, nonce: 0n, validUntil, signerKeyId: 'root' });
      } else {
        const draft = parsePolicyJsonV3(policy);
        const full = completePolicy(draft, { policyId: policyIdV3(h.profile, draft.scope), revision: 1n });
        payload = encodePolicyV3Payload({ operatorDid, operation: { kind: 'SetPolicy', policy: full }, nonce: 0n, validUntil, signerKeyId: 'root' });
      }
    }
    const common = {
      policy,
      nonce: '0',
      valid_until: validUntil.toString(),
      signer_key_id: 'root',
      canonical_payload: to0x(payload),
      signature: to0x(signer.key.sign(payload)),
    };
    if (row.version === 2) return { method: 'PUT', url: `/delivery-policies/dids/${enc(did())}`, body: { did: did(), action: 'set_did_policy_v2', ...common } };
    const [scope, id] = row.application ? ['application', row.application] : ['did', did()];
    return { method: 'PUT', url: v3Url(scope, id), body: { action: 'set_policy_v3', ...common } };
  }

  function check(res: { status: number; body: Body }, row: Row, where: string): void {
    const code = row.code ?? 'invalid_delivery_policy';
    assertError(res, row.status ?? 400, code);
    const details = res.body.details as Body;
    if (row.reason !== undefined) assert.equal(details.reason, row.reason, `${row.name} at ${where}: reason`);
    if (row.ruleId !== undefined) assert.equal(details.rule_id, row.ruleId, `${row.name} at ${where}: rule_id`);
    if (row.stepId !== undefined) assert.equal(details.step_id, row.stepId, `${row.name} at ${where}: step_id`);
  }

  for (const row of rows) {
    it(`${row.name} (v${row.version})`, async () => {
      const h = n.h;
      const policy = row.version === 2 ? asV2(row.policy()) : row.policy();
      const prep =
        row.version === 2
          ? await prepareV2(h, { action: 'set_did_policy_v2', did: did(), policy })
          : await prepareV3(h, row.application ? 'application' : 'did', row.application ?? did(), { action: 'set_policy_v3', policy });
      check(prep, row, 'prepare');
      const sub = localSubmission(row, policy);
      check(await h.call(sub.method, sub.url, sub.body), row, 'submit');
    });
  }

  it('control: the same owner, keys and local building give 202 for a valid policy', async () => {
    const row: Row = { name: 'valid', version: 2, policy: () => pol([fwd()]) };
    const sub = localSubmission(row, asV2(row.policy()));
    const res = await n.h.call(sub.method, sub.url, sub.body);
    assert.equal(res.status, 202, JSON.stringify(res.body));
    n.h.settle();
  });
});
