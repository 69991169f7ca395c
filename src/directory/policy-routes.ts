/** Delivery-policy routes (http-api.md §8.2, §8.3): thin handlers over PolicyV2Service and PolicyV3Service. */
import { json } from '../http/server.js';
import { bodyFields, type Route } from '../http/route.js';
import {
  DidPolicyV2Schema,
  PersonaPolicyV2Schema,
  PolicyV2PrepareBodySchema,
  PolicyV2PrepareSchema,
  policyV2SubmitBodySchema,
  PolicyV2SubmitSchema,
  PolicyV3NonceSchema,
  PolicyV3ParamsSchema,
  PolicyV3PrepareBodySchema,
  PolicyV3PrepareSchema,
  PolicyV3Schema,
  PolicyV3ClearBodySchema,
  PolicyV3SetBodySchema,
  PolicyV3SubmitSchema,
} from '../wire/policies.js';
import { SCOPE_UNAVAILABLE_CAUSES } from '../ledger/runtime/scope-owner.js';
import { parsePolicyV2Prepare, parsePolicyV2Submit, type V2Action } from './changes/policy-v2.js';
import { APPLICATION, codes, DID_READ, PERSONA, prepare, PREPARED, read, submit, SUBMITTED } from './route-kit.js';
import { parsePolicyV3Prepare, parsePolicyV3Submit } from './changes/policy-v3.js';
import type { DirectoryService } from './service.js';

/** A policy's own refusals. */
const POLICY = codes(PERSONA, APPLICATION, ['policy_not_found', 'invalid_delivery_policy', 'invalid_delivery_constraints', 'invalid_policy_scope']);

/** The v2 routes (§8.2). */
function v2Routes(service: DirectoryService): Route[] {
  const v2 = service.policiesV2;
  const profile = service.deps.profile;
  const write = codes(SUBMITTED, POLICY);
  /** A v2 change of the DID or persona `param` of `url` (its target). */
  const change = (method: 'PUT' | 'DELETE', url: string, param: 'did' | 'persona', kind: V2Action, summary: string): Route =>
    submit({
      method,
      url,
      summary,
      body: policyV2SubmitBodySchema(kind),
      answers: { 202: PolicyV2SubmitSchema },
      errors: write,
      target: (ctx) => ctx.params[param],
      parse: (ctx) => parsePolicyV2Submit(profile, kind, ctx.params[param] ?? '', bodyFields(ctx)),
      handle: async (input) => json(202, await v2.submit(input)),
    });
  return [
    read({
      url: '/delivery-policies/dids/:did',
      summary: "A DID's v2 policy and constraints (§8.2)",
      answers: { 200: DidPolicyV2Schema },
      errors: DID_READ,
      handle: ({ params }) => json(200, v2.readDid(params.did)),
    }),
    read({
      url: '/delivery-policies/personas/:persona',
      summary: "A persona's v2 policy and constraints (§8.2)",
      answers: { 200: PersonaPolicyV2Schema },
      errors: codes(PERSONA, ['invalid_persona']),
      handle: ({ params }) => json(200, v2.readPersona(params.persona)),
    }),
    prepare({
      method: 'POST',
      url: '/delivery-policies/prepare',
      summary: 'Prepare a v2 policy write (§8.2)',
      body: PolicyV2PrepareBodySchema,
      answers: { 200: PolicyV2PrepareSchema },
      errors: codes(PREPARED, POLICY),
      parse: (ctx) => parsePolicyV2Prepare(profile, bodyFields(ctx)),
      handle: (input) => json(200, v2.prepare(input)),
    }),
    change('PUT', '/delivery-policies/dids/:did', 'did', 'set_did_policy_v2', "Set a DID's v2 policy (§8.2)"),
    change('DELETE', '/delivery-policies/dids/:did', 'did', 'clear_did_policy_v2', "Clear a DID's v2 policy (§8.2)"),
    change('PUT', '/delivery-policies/dids/:did/constraints', 'did', 'set_did_constraints', "Set a DID's constraints (§8.2)"),
    change('PUT', '/delivery-policies/personas/:persona', 'persona', 'set_persona_policy_v2', "Set a persona's v2 policy (§8.2)"),
    change('DELETE', '/delivery-policies/personas/:persona', 'persona', 'clear_persona_policy_v2', "Clear a persona's v2 policy (§8.2)"),
    change('PUT', '/delivery-policies/personas/:persona/constraints', 'persona', 'set_persona_constraints', "Set a persona's constraints (§8.2)"),
  ];
}

/** The v3 routes (§8.3); a write's target is its scope and id. */
function v3Routes(service: DirectoryService): Route[] {
  const v3 = service.policiesV3;
  const profile = service.deps.profile;
  // the path's scope (parseV3Scope) and its owner (scope-owner.ts)
  const scoped = codes(DID_READ, POLICY, ['invalid_request'], SCOPE_UNAVAILABLE_CAUSES);
  const write = codes(SUBMITTED, POLICY);
  const target = (ctx: { params: { scope: string; id: string } }): string => `${ctx.params.scope}/${ctx.params.id}`;
  return [
    read({
      url: '/policies/v3/:scope/:id',
      summary: "A scope's v3 policy (§8.3)",
      params: PolicyV3ParamsSchema,
      answers: { 200: PolicyV3Schema },
      errors: scoped,
      handle: ({ params }) => json(200, v3.read(params.scope, params.id)),
    }),
    read({
      url: '/policies/v3/:scope/:id/nonce',
      summary: "A scope owner's v3 nonce (§8.3)",
      params: PolicyV3ParamsSchema,
      answers: { 200: PolicyV3NonceSchema },
      errors: scoped,
      handle: ({ params }) => json(200, v3.nonce(params.scope, params.id)),
    }),
    prepare({
      method: 'POST',
      url: '/policies/v3/:scope/:id/prepare',
      summary: 'Prepare a v3 policy write (§8.3)',
      params: PolicyV3ParamsSchema,
      body: PolicyV3PrepareBodySchema,
      answers: { 200: PolicyV3PrepareSchema },
      errors: codes(PREPARED, POLICY),
      parse: (ctx) => parsePolicyV3Prepare(profile, ctx.params.scope, ctx.params.id, bodyFields(ctx)),
      handle: (input) => json(200, v3.prepare(input)),
    }),
    submit({
      method: 'PUT',
      url: '/policies/v3/:scope/:id',
      summary: 'Set a v3 policy (§8.3)',
      params: PolicyV3ParamsSchema,
      body: PolicyV3SetBodySchema,
      answers: { 202: PolicyV3SubmitSchema },
      errors: write,
      target,
      parse: (ctx) => parsePolicyV3Submit(profile, 'set_policy_v3', ctx.params.scope, ctx.params.id, bodyFields(ctx)),
      handle: async (input) => json(202, await v3.submit(input)),
    }),
    submit({
      method: 'DELETE',
      url: '/policies/v3/:scope/:id',
      summary: 'Clear a v3 policy (§8.3)',
      params: PolicyV3ParamsSchema,
      body: PolicyV3ClearBodySchema,
      answers: { 202: PolicyV3SubmitSchema },
      errors: write,
      target,
      parse: (ctx) => parsePolicyV3Submit(profile, 'clear_policy_v3', ctx.params.scope, ctx.params.id, bodyFields(ctx)),
      handle: async (input) => json(202, await v3.submit(input)),
    }),
  ];
}

/** The delivery-policy routes (§8). */
export function policyRoutes(service: DirectoryService): Route[] {
  return [...v2Routes(service), ...v3Routes(service)];
}
