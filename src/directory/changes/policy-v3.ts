/**
 * Change kind: delivery policy v3 set / clear on DID, persona and application scopes (http-api.md §8.3).
 * Payload `PolicyV3AuthorizationPayload` (ledger-rules.md §4.8), nonce = the scope owner's `policy_v3_nonce`.
 * A missing or inactive scope answers with its cause (§1.1 `scope_unavailable` row).
 */
import { DdnError, type ErrorCode } from '../../base/errors.js';
import { policyV3Nonce } from '../../ledger/runtime/nonces.js';
import { getPolicyV3 } from '../../ledger/runtime/policy-state.js';
import { scopeOwner } from '../../ledger/runtime/scope-owner.js';
import type { StateReader } from '../../ledger/state.js';
import { isApplicationId } from '../../protocol/payloads/application.js';
import { decodePolicyV3Payload, encodePolicyV3Payload, type PolicyV3Operation } from '../../protocol/payloads/policy-v3.js';
import { completePolicy, parsePolicyJsonV3 } from '../../protocol/policy/json-parse.js';
import { policyToJson, scopeToJson } from '../../protocol/policy/json-render.js';
import { policyIdV3 } from '../../protocol/policy/policy-id.js';
import type { PolicyScopeV3 } from '../../protocol/policy/types.js';
import type { DirectoryDeps } from '../deps.js';
import type { Profile } from '../../protocol/profile.js';
import type { PolicyDraft as PolicyJsonDraft } from '../../protocol/policy/json-parse.js';
import { defer, settle, type Deferred } from '../deferred.js';
import {
  assertDid,
  optionalDid,
  parsePersonaName,
  readPrepareAuth,
  readSignedFields,
  requireAction,
  validUntilAt,
  type PrepareAuth,
  type SignedFields,
} from '../submission.js';
import type { KindFields, NoncePrepared, SubmitSteps, SyncPrepareSteps } from '../write-pipeline.js';
import type { PolicyScopeJson } from '../../wire/json-forms.js';
import type {
  PolicyV3ClearBodySchema,
  PolicyV3PrepareBodySchema,
  PolicyV3PrepareResponse,
  PolicyV3SetBodySchema,
  PolicyV3SubmitResponse,
} from '../../wire/policies.js';
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

export type V3Action = 'set_policy_v3' | 'clear_policy_v3';

/** `{scope}/{id}` of a v3 path: `did`, `persona` (canonicalised) or `application` (400 otherwise). */
export function parseV3Scope(scope: string, id: string): PolicyScopeV3 {
  switch (scope) {
    case 'did':
      assertDid(id);
      return { kind: 'Did', id };
    case 'persona':
      return { kind: 'Persona', id: parsePersonaName(id) };
    case 'application':
      if (!isApplicationId(id)) throw new DdnError('invalid_application_id', 'application id must be 1–64 characters of [a-z0-9._-]', { id });
      return { kind: 'Application', id };
    default:
      throw new DdnError('invalid_request', 'scope must be did, persona or application', { field: 'scope' });
  }
}

/** The owner of a scope in `state`, or the scope's cause code (404 / 409). */
export function ownerOf(state: StateReader, nowMs: number, scope: PolicyScopeV3): string {
  const o = scopeOwner(state, nowMs, scope);
  if (!o.ok) throw new DdnError(o.cause as ErrorCode, `the ${scope.kind.toLowerCase()} scope has no owner (${o.cause})`, { scope: scopeToJson(scope) });
  return o.owner;
}

interface V3Intent extends PolicyIntent {
  action: V3Action;
  scope: PolicyScopeV3;
  operation: PolicyV3Operation;
}

/** A v3 write's own fields as the route's parser reads them (their syntax, no state). */
export interface V3Fields {
  action: V3Action;
  scope: PolicyScopeV3;
  /** `set_policy_v3`: the policy, its id and revision not yet filled. */
  policy: PolicyJsonDraft<PolicyScopeV3> | null;
  /** The body's `operator_did`; a clear without it is the scope owner's. */
  operatorDid: string | undefined;
}

/** The fields of `action` on `scope` from `body`: a set's policy (matching the path), the optional `operator_did`. */
function readFields(action: V3Action, scope: PolicyScopeV3, body: Reads<'operator_did'> & { readonly policy?: unknown }): V3Fields {
  if (action === 'clear_policy_v3') return { action, scope, policy: null, operatorDid: optionalDid(body, 'operator_did') };
  const policy = parsePolicyJsonV3(body.policy);
  const operatorDid = optionalDid(body, 'operator_did');
  assertPolicyMatchesPath(policy, scope, operatorDid);
  return { action, scope, policy, operatorDid };
}

/** The operation and its operator against the pool state: a set's id and revision filled, a clear's owner found. */
function intent(env: DirectoryDeps, f: V3Fields): V3Intent {
  const { action, scope } = f;
  const pool = env.ledger.poolView();
  const request: PolicyRequest = { action };
  if (f.policy !== null) {
    const stored = getPolicyV3(pool, scope);
    const policy = completePolicy(f.policy, { policyId: policyIdV3(env.profile, scope), revision: (stored?.revision ?? 0n) + 1n });
    request.operator_did = policy.operatorDid;
    request.policy = policyToJson(policy);
    return { action, scope, operatorDid: policy.operatorDid, operation: { kind: 'SetPolicy', policy }, request };
  }
  const operatorDid = f.operatorDid ?? ownerOf(pool, env.clock.nowMs(), scope);
  request.operator_did = operatorDid;
  return { action, scope, operatorDid, operation: { kind: 'ClearPolicy', scope }, request };
}

/**
 * `POST /policies/v3/{scope}/{id}/prepare` as its route's parser reads it. A clear without `operator_did` resolves
 * the scope's owner (404 / 409) before `signer_key_id` and `valid_until` are refused: those are kept {@link Deferred}.
 */
export interface PolicyV3Prepare {
  fields: V3Fields;
  auth: Deferred<PrepareAuth>;
}

/** The parser of `POST /policies/v3/{scope}/{id}/prepare`: the path's scope, the action, its fields. */
export function parsePolicyV3Prepare(profile: Profile, scopeSeg: string, id: string, body: Unchecked<typeof PolicyV3PrepareBodySchema>): PolicyV3Prepare {
  const scope = parseV3Scope(scopeSeg, id);
  const action = body.action;
  if (action !== 'set_policy_v3' && action !== 'clear_policy_v3') {
    throw new DdnError('unsupported_action', 'action must be set_policy_v3 or clear_policy_v3', { action: action ?? null });
  }
  return { fields: readFields(action, scope, body), auth: defer(() => readPrepareAuth(body, profile)) };
}

/** A v3 write as its route's parser reads it. */
export interface PolicyV3Submit {
  fields: V3Fields;
  s: SignedFields;
}

/** The parser of `PUT` / `DELETE /policies/v3/{scope}/{id}` (`action` is the route's): scope, action, signed fields, own fields. */
export function parsePolicyV3Submit(
  profile: Profile,
  action: 'set_policy_v3',
  scopeSeg: string,
  id: string,
  body: Unchecked<typeof PolicyV3SetBodySchema>,
): PolicyV3Submit;
export function parsePolicyV3Submit(
  profile: Profile,
  action: 'clear_policy_v3',
  scopeSeg: string,
  id: string,
  body: Unchecked<typeof PolicyV3ClearBodySchema>,
): PolicyV3Submit;
export function parsePolicyV3Submit(
  profile: Profile,
  action: V3Action,
  scopeSeg: string,
  id: string,
  body: Unchecked<typeof PolicyV3SetBodySchema> | Unchecked<typeof PolicyV3ClearBodySchema>,
): PolicyV3Submit {
  const scope = parseV3Scope(scopeSeg, id);
  requireAction(body, action);
  const s = readSignedFields(body, profile);
  return { fields: readFields(action, scope, body), s };
}

/** What v3 answers carry of their own. */
interface V3Wire {
  extrinsic: 'apply_policy_v3_with_proof';
  nonceDomain: 'policy_v3_nonce';
  preparedSubject: { scope: PolicyScopeJson };
  acceptedSubject: { scope: PolicyScopeJson };
}

const { prepare, submit } = policySteps<V3Intent, PolicyV3Prepare, PolicyV3Submit, V3Wire>(
  {
    extrinsic: 'apply_policy_v3_with_proof',
    nonceDomain: 'policy_v3_nonce',
    nonceOf: policyV3Nonce,
    encode: (i, nonce, validUntil, signerKeyId) =>
      encodePolicyV3Payload({ operatorDid: i.operatorDid, operation: i.operation, nonce, validUntil, signerKeyId }),
    decodes: (b) => decodePolicyV3Payload(b) !== undefined,
    /**
     * Scope owner first (404 / 409 for a missing or inactive scope), then the common policy pre-checks; the persona
     * controller gate applies when the operator is the owner (otherwise the ledger reports `invalid_policy_scope`).
     */
    precheck(env, i, signerKeyId) {
      const owner = ownerOf(env.ledger.poolView(), env.clock.nowMs(), i.scope);
      policyPrechecks(env.ledger, env.allowPrivateEndpoints ?? false, {
        operatorDid: i.operatorDid,
        signerKeyId,
        persona: i.scope.kind === 'Persona' && owner === i.operatorDid ? i.scope.id : null,
        ruleset: i.operation.kind === 'SetPolicy' ? i.operation.policy.ruleset : null,
      });
    },
    subject: (i) => i.scope.id,
    preparedSubject: (i) => ({ scope: scopeToJson(i.scope) }),
    acceptedSubject: (i) => ({ scope: scopeToJson(i.scope) }),
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

/** `POST /policies/v3/{scope}/{id}/prepare`. */
export const PREPARE_POLICY_V3: SyncPrepareSteps<DirectoryDeps, PolicyV3Prepare, PolicyDraft<V3Intent>, NoncePrepared, PolicyV3PrepareResponse> = prepare;
/** `PUT` (set) and `DELETE` (clear) `/policies/v3/{scope}/{id}`. */
export const SUBMIT_POLICY_V3: SubmitSteps<DirectoryDeps, PolicyV3Submit, PolicySubmission<V3Intent>, KindFields<PolicyV3SubmitResponse>> = submit;
