/**
 * Change kind: delivery policy v2 writes (http-api.md §8.2) — the six actions on DID and persona scopes.
 * Payload `PolicyV2AuthorizationPayload` (ledger-rules.md §4.7), nonce = the operator's `policy_nonce`.
 */
import { to0x } from '../../base/bytes.js';
import { DdnError } from '../../base/errors.js';
import type { Call } from '../../ledger/extrinsic.js';
import { policyNonce } from '../../ledger/runtime/nonces.js';
import { getPersona } from '../../ledger/runtime/persona-state.js';
import { getPolicyV2 } from '../../ledger/runtime/policy-state.js';
import { decodePolicyV2Payload, encodePolicyV2Payload, type PolicyV2Operation } from '../../protocol/payloads/policy-v2.js';
import { parseRequestedConstraintsJson, requestedConstraintsToJson } from '../../protocol/policy/constraints-json.js';
import { completePolicy, parsePolicyJsonV2 } from '../../protocol/policy/json-parse.js';
import { policyToJson } from '../../protocol/policy/json-render.js';
import { policyIdV2 } from '../../protocol/policy/policy-id.js';
import type { DirectoryDeps } from '../deps.js';
import { assertPolicyMatchesPath, policyCall, policyPrechecks } from '../policy-writes.js';
import {
  assertDid,
  bindBodyDid,
  bindBodyPersona,
  NO_SIGNATURE,
  optionalDid,
  parsePersonaName,
  parseSignerKeyId,
  readSignedFields,
  requireAction,
  requireDid,
  signedRequestFields,
  validUntilOrDefault,
  type Body,
  type SignedFields,
} from '../submission.js';
import type { NoncePrepared, SubmitSteps, SyncPrepareSteps } from '../write-pipeline.js';

export const V2_ACTIONS = {
  set_did_policy_v2: { scope: 'did', operation: 'SetPolicy' },
  clear_did_policy_v2: { scope: 'did', operation: 'ClearPolicy' },
  set_did_constraints: { scope: 'did', operation: 'SetDidConstraints' },
  set_persona_policy_v2: { scope: 'persona', operation: 'SetPolicy' },
  clear_persona_policy_v2: { scope: 'persona', operation: 'ClearPolicy' },
  set_persona_constraints: { scope: 'persona', operation: 'SetPersonaConstraints' },
} as const;
export type V2Action = keyof typeof V2_ACTIONS;

const EXTRINSIC = 'apply_policy_v2_with_proof' as const;

/** A v2 write parsed from a body: scope subject, operator and the ledger operation (policy id / revision filled). */
interface V2Intent {
  action: V2Action;
  subject: string;
  persona: string | null;
  operatorDid: string;
  operation: PolicyV2Operation;
  /** The request fields of the action, in normalised form (policy filled). */
  request: Body;
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
  const request: Body = persona === null ? { did: subject, action } : { persona: subject, action };
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

function prechecks(env: DirectoryDeps, i: V2Intent, signerKeyId: string): void {
  policyPrechecks(env.ledger, env.allowPrivateEndpoints ?? false, {
    operatorDid: i.operatorDid,
    signerKeyId,
    persona: i.persona,
    ruleset: i.operation.kind === 'SetPolicy' ? i.operation.policy.ruleset : null,
  });
}

const encode = (i: V2Intent, nonce: bigint, validUntil: bigint, signerKeyId: string): Uint8Array =>
  encodePolicyV2Payload({ operatorDid: i.operatorDid, operation: i.operation, nonce, validUntil, signerKeyId });

const callOf = (payload: Uint8Array, signature: Uint8Array, signerKeyId: string): Call => policyCall(EXTRINSIC, payload, signature, signerKeyId);

/** The policy id and revision a SetPolicy answers with. */
function policyFields(op: PolicyV2Operation): Body {
  return op.kind === 'SetPolicy' ? { policy_id: to0x(op.policy.policyId), revision: Number(op.policy.revision) } : {};
}

interface V2Draft extends V2Intent {
  signerKeyId: string;
  validUntil: bigint;
}

/** `POST /delivery-policies/prepare`. */
export const PREPARE_POLICY_V2: SyncPrepareSteps<DirectoryDeps, Body, V2Draft, NoncePrepared> = {
  read(env, body) {
    const action = body.action;
    if (typeof action !== 'string' || !Object.hasOwn(V2_ACTIONS, action)) {
      throw new DdnError('unsupported_action', `action must be one of ${Object.keys(V2_ACTIONS).join(', ')}`, { action: action ?? null });
    }
    const a = action as V2Action;
    const subject = V2_ACTIONS[a].scope === 'did' ? requireDid(body, 'did') : parsePersonaName(body.persona);
    const i = intent(env, a, subject, body);
    const signerKeyId = parseSignerKeyId(body);
    return { ...i, signerKeyId, validUntil: validUntilOrDefault(body, env.clock.nowMs(), env.profile) };
  },
  precheck: (env, i) => prechecks(env, i, i.signerKeyId),
  build(env, i) {
    const nonce = policyNonce(env.ledger.poolView(), i.operatorDid);
    const payload = encode(i, nonce, i.validUntil, i.signerKeyId);
    return { payload, nonce, probe: callOf(payload, NO_SIGNATURE, i.signerKeyId) };
  },
  answer(_env, i, { payload, nonce }) {
    const hex = to0x(payload);
    const out: Body = {
      action: i.action,
      operation: i.operation.kind,
      extrinsic: EXTRINSIC,
      ...(i.persona === null ? { did: i.subject } : { persona: i.subject }),
      operator_did: i.operatorDid,
      nonce_domain: 'policy_nonce',
      nonce: nonce.toString(),
      valid_until: i.validUntil.toString(),
      signer_key_id: i.signerKeyId,
    };
    if (i.request.policy !== undefined) out.policy = i.request.policy;
    if (i.request.delivery_constraints !== undefined) out.delivery_constraints = i.request.delivery_constraints;
    return { ...out, canonical_payload: hex, payload_to_sign: hex, request: { ...i.request, ...signedRequestFields(nonce, i.validUntil, i.signerKeyId, hex) } };
  },
};

export interface PolicyV2Submit {
  action: V2Action;
  pathId: string;
  body: Body;
}

interface V2Signed extends V2Intent {
  s: SignedFields;
}

/** `PUT` / `DELETE /delivery-policies/{dids|personas}/{id}[/constraints]` with the route's action. */
export const SUBMIT_POLICY_V2: SubmitSteps<DirectoryDeps, PolicyV2Submit, V2Signed> = {
  read(env, { action, pathId, body }) {
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
  rebuild: (_env, i) => ({
    canonical: i.s.canonical,
    rebuilt: encode(i, i.s.nonce, i.s.validUntil, i.s.signerKeyId),
    decodes: (b) => decodePolicyV2Payload(b) !== undefined,
  }),
  call: (i) => callOf(i.s.canonical, i.s.signature, i.s.signerKeyId),
  precheck: (env, i) => prechecks(env, i, i.s.signerKeyId),
  admission: (env, i) => ({
    subject: i.subject,
    action: i.action,
    limitKey: `${i.operatorDid}|policy_nonce`,
    nonce: { domain: 'policy_nonce', value: i.s.nonce, current: policyNonce(env.ledger.poolView(), i.operatorDid) },
  }),
  answer: (i) => ({
    did: i.subject,
    ...(i.persona !== null ? { persona: i.subject } : {}),
    operator_did: i.operatorDid,
    action: i.action,
    extrinsic: EXTRINSIC,
    operation: i.operation.kind,
    ...policyFields(i.operation),
    nonce_domain: 'policy_nonce',
    nonce: i.s.nonce.toString(),
  }),
};
