/**
 * Change kind: delivery policy v2 writes (http-api.md §8.2) — the six actions on DID and persona scopes.
 * Payload `PolicyV2AuthorizationPayload` (ledger-rules.md §4.7), nonce = the operator's `policy_nonce`.
 */
import { DdnError } from '../../base/errors.js';
import { isKeyOf } from '../../base/guards.js';
import { policyNonce } from '../../ledger/runtime/nonces.js';
import { getPersona } from '../../ledger/runtime/persona-state.js';
import { getPolicyV2 } from '../../ledger/runtime/policy-state.js';
import { decodePolicyV2Payload, encodePolicyV2Payload, type PolicyV2Operation } from '../../protocol/payloads/policy-v2.js';
import { parseRequestedConstraintsJson, requestedConstraintsToJson } from '../../protocol/policy/constraints-json.js';
import { completePolicy, parsePolicyJsonV2 } from '../../protocol/policy/json-parse.js';
import { policyToJson } from '../../protocol/policy/json-render.js';
import { policyIdV2 } from '../../protocol/policy/policy-id.js';
import type { DirectoryDeps } from '../deps.js';
import {
  assertDid,
  bindBodyDid,
  bindBodyPersona,
  optionalDid,
  parsePersonaName,
  parseSignerKeyId,
  readSignedFields,
  requireAction,
  requireDid,
  validUntilOrDefault,
  type Body,
} from '../submission.js';
import type { KindFields, NoncePrepared, SubmitSteps, SyncPrepareSteps } from '../write-pipeline.js';
import type { PolicyV2PrepareResponse, PolicyV2SubmitResponse } from '../../wire/policies.js';
import {
  assertPolicyMatchesPath,
  policyPrechecks,
  policySteps,
  type PolicyDraft,
  type PolicyIntent,
  type PolicyRequest,
  type PolicySubmission,
} from './policy-common.js';

const V2_ACTIONS = {
  set_did_policy_v2: { scope: 'did', operation: 'SetPolicy' },
  clear_did_policy_v2: { scope: 'did', operation: 'ClearPolicy' },
  set_did_constraints: { scope: 'did', operation: 'SetDidConstraints' },
  set_persona_policy_v2: { scope: 'persona', operation: 'SetPolicy' },
  clear_persona_policy_v2: { scope: 'persona', operation: 'ClearPolicy' },
  set_persona_constraints: { scope: 'persona', operation: 'SetPersonaConstraints' },
} as const;
export type V2Action = keyof typeof V2_ACTIONS;

/** A v2 write parsed from a body: scope subject, operator and the ledger operation (policy id / revision filled). */
interface V2Intent extends PolicyIntent {
  action: V2Action;
  subject: string;
  persona: string | null;
  operatorDid: string;
  operation: PolicyV2Operation;
}

/** `operator_did` of the body, else the persona's operator in the pool state (404 `persona_not_found`). */
function personaOperator(env: DirectoryDeps, persona: string, body: Body): string {
  const given = optionalDid(body, 'operator_did');
  if (given !== undefined) return given;
  const rec = getPersona(env.ledger.poolView(), persona);
  if (!rec) throw new DdnError('persona_not_found', 'persona not found', { persona });
  return rec.operatorDid;
}

/** The operation and operator of `action` on `subject` (a DID or a canonical persona) from the body. */
function intent(env: DirectoryDeps, action: V2Action, subject: string, body: Body): V2Intent {
  const spec = V2_ACTIONS[action];
  const persona = spec.scope === 'persona' ? subject : null;
  const scope = persona === null ? ({ kind: 'Did', id: subject } as const) : ({ kind: 'Persona', id: subject } as const);
  const request: PolicyRequest = persona === null ? { did: subject, action } : { persona: subject, action };
  let operatorDid: string;
  let operation: PolicyV2Operation;
  switch (spec.operation) {
    case 'SetPolicy': {
      const deployedForms = env.profile.acceptsDeployedClientForms;
      const draft = parsePolicyJsonV2(body.policy, deployedForms);
      assertPolicyMatchesPath(draft, scope, optionalDid(body, 'operator_did'));
      const stored = getPolicyV2(env.ledger.poolView(), scope);
      const policy = completePolicy(draft, { policyId: policyIdV2(env.profile, scope), revision: (stored?.revision ?? 0n) + 1n });
      operatorDid = persona === null ? subject : policy.operatorDid;
      operation = { kind: 'SetPolicy', policy };
      const json = policyToJson(policy);
      // The echo is what the client submits back: without the v3-only field where a submit would refuse it.
      if (!deployedForms) delete json.policy_ttl_seconds;
      request.policy = json;
      break;
    }
    case 'ClearPolicy':
      operatorDid = persona === null ? subject : personaOperator(env, persona, body);
      operation = { kind: 'ClearPolicy', scope };
      break;
    case 'SetDidConstraints':
    case 'SetPersonaConstraints': {
      const constraints = parseRequestedConstraintsJson(body.delivery_constraints);
      request.delivery_constraints = requestedConstraintsToJson(constraints);
      if (persona === null) {
        operatorDid = subject;
        operation = { kind: 'SetDidConstraints', did: subject, constraints };
      } else {
        operatorDid = personaOperator(env, persona, body);
        operation = { kind: 'SetPersonaConstraints', persona, constraints };
      }
      break;
    }
  }
  if (persona !== null) request.operator_did = operatorDid;
  return { action, subject, persona, operatorDid, operation, request };
}

export interface PolicyV2Submit {
  action: V2Action;
  pathId: string;
  body: Body;
}

/** What v2 answers carry of their own. */
interface V2Wire {
  extrinsic: 'apply_policy_v2_with_proof';
  nonceDomain: 'policy_nonce';
  preparedSubject: { did: string } | { persona: string };
  acceptedSubject: { did: string; persona?: string };
}

const { prepare, submit } = policySteps<V2Intent, Body, PolicyV2Submit, V2Wire>(
  {
    extrinsic: 'apply_policy_v2_with_proof',
    nonceDomain: 'policy_nonce',
    nonceOf: policyNonce,
    encode: (i, nonce, validUntil, signerKeyId) =>
      encodePolicyV2Payload({ operatorDid: i.operatorDid, operation: i.operation, nonce, validUntil, signerKeyId }),
    decodes: (b) => decodePolicyV2Payload(b) !== undefined,
    precheck(env, i, signerKeyId) {
      policyPrechecks(env.ledger, env.allowPrivateEndpoints ?? false, {
        operatorDid: i.operatorDid,
        signerKeyId,
        persona: i.persona,
        ruleset: i.operation.kind === 'SetPolicy' ? i.operation.policy.ruleset : null,
      });
    },
    subject: (i) => i.subject,
    preparedSubject: (i) => (i.persona === null ? { did: i.subject } : { persona: i.subject }),
    // A persona's policy routes also put the persona in `did` (http-api.md §2.4, as the product spec shows).
    acceptedSubject: (i) => (i.persona === null ? { did: i.subject } : { did: i.subject, persona: i.subject }),
  },
  {
    prepare(env, body) {
      const action = body.action;
      if (!isKeyOf(V2_ACTIONS, action)) {
        throw new DdnError('unsupported_action', `action must be one of ${Object.keys(V2_ACTIONS).join(', ')}`, { action: action ?? null });
      }
      const a: V2Action = action;
      const subject = V2_ACTIONS[a].scope === 'did' ? requireDid(body, 'did') : parsePersonaName(body.persona);
      const i = intent(env, a, subject, body);
      const signerKeyId = parseSignerKeyId(body);
      return { ...i, signerKeyId, validUntil: validUntilOrDefault(body, env.clock.nowMs(), env.profile) };
    },
    submit(env, { action, pathId, body }) {
      let subject: string;
      if (V2_ACTIONS[action].scope === 'did') {
        assertDid(pathId);
        bindBodyDid(body, pathId);
        subject = pathId;
      } else {
        subject = parsePersonaName(pathId);
        bindBodyPersona(body, subject);
      }
      requireAction(body, action);
      const s = readSignedFields(body, env.profile);
      return { ...intent(env, action, subject, body), s };
    },
  },
);

/** `POST /delivery-policies/prepare`. */
export const PREPARE_POLICY_V2: SyncPrepareSteps<DirectoryDeps, Body, PolicyDraft<V2Intent>, NoncePrepared, PolicyV2PrepareResponse> = prepare;
/** `PUT` / `DELETE /delivery-policies/{dids|personas}/{id}[/constraints]` with the route's action. */
export const SUBMIT_POLICY_V2: SubmitSteps<DirectoryDeps, PolicyV2Submit, PolicySubmission<V2Intent>, KindFields<PolicyV2SubmitResponse>> = submit;
