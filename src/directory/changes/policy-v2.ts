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
import type { Profile } from '../../protocol/profile.js';
import type { PolicyDraft as PolicyJsonDraft } from '../../protocol/policy/json-parse.js';
import type { PolicyScopeV2, RequestedDeliveryConstraints } from '../../protocol/policy/types.js';
import { defer, settle, type Deferred } from '../deferred.js';
import {
  assertDid,
  bindBodyDid,
  bindBodyPersona,
  optionalDid,
  parsePersonaName,
  readPrepareAuth,
  readSignedFields,
  requireAction,
  requireDid,
  validUntilAt,
  type PrepareAuth,
  type SignedFields,
} from '../submission.js';
import type { KindFields, NoncePrepared, SubmitSteps, SyncPrepareSteps } from '../write-pipeline.js';
import type { policyV2SubmitBodySchema, PolicyV2PrepareBodySchema, PolicyV2PrepareResponse, PolicyV2SubmitResponse } from '../../wire/policies.js';
import type { Reads } from '../../http/json-body.js';
import type { Unchecked } from '../../http/route.js';
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

/** A v2 write's own fields as the route's parser reads them (their syntax, no state). */
export interface V2Fields {
  action: V2Action;
  /** The DID, or the canonical persona. */
  subject: string;
  persona: string | null;
  /** `SetPolicy`: the policy, its id and revision not yet filled. */
  policy: PolicyJsonDraft<PolicyScopeV2> | null;
  /** `SetDidConstraints` / `SetPersonaConstraints`. */
  constraints: RequestedDeliveryConstraints | null;
  /** The body's `operator_did` (DID routes read it only beside a policy). */
  operatorDid: string | undefined;
}

const scopeOf = (f: Pick<V2Fields, 'subject' | 'persona'>): PolicyScopeV2 =>
  f.persona === null ? { kind: 'Did', id: f.subject } : { kind: 'Persona', id: f.subject };

/** The fields `action` takes on `subject` (a DID or a canonical persona), in the order their refusals come. */
function readFields(profile: Profile, action: V2Action, subject: string, body: Reads<'policy' | 'operator_did' | 'delivery_constraints'>): V2Fields {
  const spec = V2_ACTIONS[action];
  const persona = spec.scope === 'persona' ? subject : null;
  const f: V2Fields = { action, subject, persona, policy: null, constraints: null, operatorDid: undefined };
  if (spec.operation === 'SetPolicy') {
    f.policy = parsePolicyJsonV2(body.policy, profile.acceptsDeployedClientForms);
    f.operatorDid = optionalDid(body, 'operator_did');
    assertPolicyMatchesPath(f.policy, scopeOf(f), f.operatorDid);
    return f;
  }
  if (spec.operation !== 'ClearPolicy') f.constraints = parseRequestedConstraintsJson(body.delivery_constraints);
  if (persona !== null) f.operatorDid = optionalDid(body, 'operator_did');
  return f;
}

/** The body's `operator_did`, else the persona's operator in the pool state (404 `persona_not_found`). */
function personaOperator(env: DirectoryDeps, persona: string, given: string | undefined): string {
  if (given !== undefined) return given;
  const rec = getPersona(env.ledger.poolView(), persona);
  if (!rec) throw new DdnError('persona_not_found', 'persona not found', { persona });
  return rec.operatorDid;
}

/** The operation and operator of the parsed fields against the pool state (the policy's id and revision filled). */
function intent(env: DirectoryDeps, f: V2Fields): V2Intent {
  const { action, subject, persona } = f;
  const scope = scopeOf(f);
  const request: PolicyRequest = persona === null ? { did: subject, action } : { persona: subject, action };
  let operatorDid: string;
  let operation: PolicyV2Operation;
  if (f.policy !== null) {
    const stored = getPolicyV2(env.ledger.poolView(), scope);
    const policy = completePolicy(f.policy, { policyId: policyIdV2(env.profile, scope), revision: (stored?.revision ?? 0n) + 1n });
    operatorDid = persona === null ? subject : policy.operatorDid;
    operation = { kind: 'SetPolicy', policy };
    const json = policyToJson(policy);
    // The echo is what the client submits back: without the v3-only field where a submit would refuse it.
    if (!env.profile.acceptsDeployedClientForms) delete json.policy_ttl_seconds;
    request.policy = json;
  } else if (f.constraints === null) {
    operatorDid = persona === null ? subject : personaOperator(env, persona, f.operatorDid);
    operation = { kind: 'ClearPolicy', scope };
  } else {
    const constraints = f.constraints;
    request.delivery_constraints = requestedConstraintsToJson(constraints);
    operatorDid = persona === null ? subject : personaOperator(env, persona, f.operatorDid);
    operation = persona === null ? { kind: 'SetDidConstraints', did: subject, constraints } : { kind: 'SetPersonaConstraints', persona, constraints };
  }
  if (persona !== null) request.operator_did = operatorDid;
  return { action, subject, persona, operatorDid, operation, request };
}

/**
 * `POST /delivery-policies/prepare` as its route's parser reads it. `signer_key_id` and `valid_until` are read
 * here but refused after the persona's operator is looked up (the order of §8.2's checks): kept {@link Deferred}.
 */
export interface PolicyV2Prepare {
  fields: V2Fields;
  auth: Deferred<PrepareAuth>;
}

/** The parser of `POST /delivery-policies/prepare`: the action, its subject and fields, the deferred signer fields. */
export function parsePolicyV2Prepare(profile: Profile, body: Unchecked<typeof PolicyV2PrepareBodySchema>): PolicyV2Prepare {
  const action = body.action;
  if (!isKeyOf(V2_ACTIONS, action)) {
    throw new DdnError('unsupported_action', `action must be one of ${Object.keys(V2_ACTIONS).join(', ')}`, { action: action ?? null });
  }
  const a: V2Action = action;
  const subject = V2_ACTIONS[a].scope === 'did' ? requireDid(body, 'did') : parsePersonaName(body.persona);
  const fields = readFields(profile, a, subject, body);
  return { fields, auth: defer(() => readPrepareAuth(body, profile)) };
}

/** A v2 write as its route's parser reads it: the subject of the path, the signed fields, the action's fields. */
export interface PolicyV2Submit {
  fields: V2Fields;
  s: SignedFields;
}

/** The parser of the v2 write routes (`action` is the route's): path binding, action, signed fields, own fields. */
export function parsePolicyV2Submit(
  profile: Profile,
  action: V2Action,
  pathId: string,
  body: Unchecked<ReturnType<typeof policyV2SubmitBodySchema<V2Action>>>,
): PolicyV2Submit {
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
  const s = readSignedFields(body, profile);
  return { fields: readFields(profile, action, subject, body), s };
}

/** What v2 answers carry of their own. */
interface V2Wire {
  extrinsic: 'apply_policy_v2_with_proof';
  nonceDomain: 'policy_nonce';
  preparedSubject: { did: string } | { persona: string };
  acceptedSubject: { did: string; persona?: string };
}

const { prepare, submit } = policySteps<V2Intent, PolicyV2Prepare, PolicyV2Submit, V2Wire>(
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
    prepare(env, { fields, auth }) {
      const i = intent(env, fields);
      const a = settle(auth);
      return { ...i, signerKeyId: a.signerKeyId, validUntil: validUntilAt(a, env.clock.nowMs()) };
    },
    submit: (env, { fields, s }) => ({ ...intent(env, fields), s }),
  },
);

/** `POST /delivery-policies/prepare`. */
export const PREPARE_POLICY_V2: SyncPrepareSteps<DirectoryDeps, PolicyV2Prepare, PolicyDraft<V2Intent>, NoncePrepared, PolicyV2PrepareResponse> = prepare;
/** `PUT` / `DELETE /delivery-policies/{dids|personas}/{id}[/constraints]` with the route's action. */
export const SUBMIT_POLICY_V2: SubmitSteps<DirectoryDeps, PolicyV2Submit, PolicySubmission<V2Intent>, KindFields<PolicyV2SubmitResponse>> = submit;
