/**
 * Delivery policies version 2 (http-api.md §8.1, §8.2): the six write actions on DID and persona scopes, their
 * prepare route, and the reads. Payload: `PolicyV2AuthorizationPayload` (ledger-rules.md §4.7), nonce = the
 * operator's `policy_nonce`. Validation is the ledger's (§5.7, §7.8) plus the Directory's public-endpoint rule.
 */
import { to0x } from '../base/bytes.js';
import { DdnError } from '../base/errors.js';
import { getDidRecord } from '../ledger/records.js';
import { policyNonce } from '../ledger/runtime/nonces.js';
import { getPersona } from '../ledger/runtime/persona-state.js';
import { getDidConstraints, getPolicyV2 } from '../ledger/runtime/policy-state.js';
import { constraintsToJson, NETWORK_CONSTRAINTS } from '../protocol/constraints.js';
import { decodePolicyV2Payload, encodePolicyV2Payload, type PolicyV2Operation } from '../protocol/payloads/policy-v2.js';
import { parseRequestedConstraintsJson, requestedConstraintsToJson } from '../protocol/policy/constraints-json.js';
import { completePolicy, parsePolicyJsonV2 } from '../protocol/policy/json-parse.js';
import { policyToJson } from '../protocol/policy/json-render.js';
import { policyIdV2 } from '../protocol/policy/policy-id.js';
import type { Call } from '../ledger/extrinsic.js';
import type { DirectoryDeps } from './deps.js';
import { assertPolicyMatchesPath, policyPrechecks, policySignedFields } from './policy-writes.js';
import {
  accepted,
  assertCanonical,
  assertDid,
  bindBodyDid,
  bindBodyPersona,
  dryRun,
  NO_SIGNATURE,
  optionalDid,
  parsePersonaName,
  parseSignerKeyId,
  requireAction,
  requireDid,
  submitToLedger,
  validUntilOrDefault,
  type Body,
} from './submission.js';
import type { DidPolicyV2Response, PersonaPolicyV2Response } from '../wire/policies.js';

export const V2_ACTIONS = {
  set_did_policy_v2: { scope: 'did', operation: 'SetPolicy' },
  clear_did_policy_v2: { scope: 'did', operation: 'ClearPolicy' },
  set_did_constraints: { scope: 'did', operation: 'SetDidConstraints' },
  set_persona_policy_v2: { scope: 'persona', operation: 'SetPolicy' },
  clear_persona_policy_v2: { scope: 'persona', operation: 'ClearPolicy' },
  set_persona_constraints: { scope: 'persona', operation: 'SetPersonaConstraints' },
} as const;
export type V2Action = keyof typeof V2_ACTIONS;

const EXTRINSIC = 'apply_policy_v2_with_proof';

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

const decodesV2 = (b: Uint8Array): boolean => decodePolicyV2Payload(b) !== undefined;

export class PolicyV2Service {
  constructor(private readonly deps: DirectoryDeps) {}

  private get ledger() {
    return this.deps.ledger;
  }

  /** The operation and operator of `action` on `subject` (a DID or a canonical persona) from the body. */
  private intent(action: V2Action, subject: string, body: Body): V2Intent {
    const spec = V2_ACTIONS[action];
    const pool = this.ledger.poolView();
    const persona = spec.scope === 'persona' ? subject : null;
    const scope = persona === null ? ({ kind: 'Did', id: subject } as const) : ({ kind: 'Persona', id: subject } as const);
    const request: Body = persona === null ? { did: subject, action } : { persona: subject, action };
    let operatorDid: string;
    let operation: PolicyV2Operation;
    switch (spec.operation) {
      case 'SetPolicy': {
        const deployedForms = this.deps.profile.acceptsDeployedClientForms;
        const draft = parsePolicyJsonV2(body.policy, deployedForms);
        assertPolicyMatchesPath(draft, scope, optionalDid(body, 'operator_did'));
        const stored = getPolicyV2(pool, scope);
        const policy = completePolicy(draft, { policyId: policyIdV2(this.deps.profile, scope), revision: (stored?.revision ?? 0n) + 1n });
        operatorDid = persona === null ? subject : policy.operatorDid;
        operation = { kind: 'SetPolicy', policy };
        const json = policyToJson(policy);
        // The echo is what the client submits back: without the v3-only field where a submit would refuse it.
        if (!deployedForms) delete json.policy_ttl_seconds;
        request.policy = json;
        break;
      }
      case 'ClearPolicy':
        operatorDid = persona === null ? subject : this.personaOperator(persona, body);
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
          operatorDid = this.personaOperator(persona, body);
          operation = { kind: 'SetPersonaConstraints', persona, constraints };
        }
        break;
      }
    }
    if (persona !== null) request.operator_did = operatorDid;
    return { action, subject, persona, operatorDid, operation, request };
  }

  /** `operator_did` of the body, else the persona's operator in the pool state (404 `persona_not_found`). */
  private personaOperator(persona: string, body: Body): string {
    const given = optionalDid(body, 'operator_did');
    if (given !== undefined) return given;
    const rec = getPersona(this.ledger.poolView(), persona);
    if (!rec) throw new DdnError('persona_not_found', 'persona not found', { persona });
    return rec.operatorDid;
  }

  private prechecks(i: V2Intent, signerKeyId: string): void {
    policyPrechecks(this.ledger, this.deps.allowPrivateEndpoints ?? false, {
      operatorDid: i.operatorDid,
      signerKeyId,
      persona: i.persona,
      ruleset: i.operation.kind === 'SetPolicy' ? i.operation.policy.ruleset : null,
    });
  }

  private encode(i: V2Intent, nonce: bigint, validUntil: bigint, signerKeyId: string): Uint8Array {
    return encodePolicyV2Payload({ operatorDid: i.operatorDid, operation: i.operation, nonce, validUntil, signerKeyId });
  }

  private call(payload: Uint8Array, signature: Uint8Array, signerKeyId: string): Call {
    return { name: EXTRINSIC, args: { signedPayload: payload, signature, signerKeyId } };
  }

  // ---------------------------------------------------------------- POST /delivery-policies/prepare

  prepare(body: Body): Body {
    const action = body.action;
    if (typeof action !== 'string' || !Object.hasOwn(V2_ACTIONS, action)) {
      throw new DdnError('unsupported_action', `action must be one of ${Object.keys(V2_ACTIONS).join(', ')}`, { action: action ?? null });
    }
    const a = action as V2Action;
    const subject = V2_ACTIONS[a].scope === 'did' ? requireDid(body, 'did') : parsePersonaName(body.persona);
    const i = this.intent(a, subject, body);
    const signerKeyId = parseSignerKeyId(body);
    const validUntil = validUntilOrDefault(body, this.deps.clock.nowMs(), this.deps.profile);
    this.prechecks(i, signerKeyId);
    const nonce = policyNonce(this.ledger.poolView(), i.operatorDid);
    const payload = this.encode(i, nonce, validUntil, signerKeyId);
    dryRun(this.ledger, this.call(payload, NO_SIGNATURE, signerKeyId));
    const hex = to0x(payload);
    const out: Body = {
      action: a,
      operation: i.operation.kind,
      extrinsic: EXTRINSIC,
      ...(i.persona === null ? { did: i.subject } : { persona: i.subject }),
      operator_did: i.operatorDid,
      nonce_domain: 'policy_nonce',
      nonce: nonce.toString(),
      valid_until: validUntil.toString(),
      signer_key_id: signerKeyId,
    };
    if (i.request.policy !== undefined) out.policy = i.request.policy;
    if (i.request.delivery_constraints !== undefined) out.delivery_constraints = i.request.delivery_constraints;
    Object.assign(out, {
      canonical_payload: hex,
      payload_to_sign: hex,
      request: { ...i.request, nonce: nonce.toString(), valid_until: validUntil.toString(), signer_key_id: signerKeyId, canonical_payload: hex },
    });
    return out;
  }

  // ---------------------------------------------------------------- submit routes (§8.2)

  /** `PUT` / `DELETE /delivery-policies/{dids|personas}/{id}[/constraints]` with the route's action. */
  async submit(action: V2Action, pathId: string, body: Body): Promise<Body> {
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
    const s = policySignedFields(body, this.deps.profile);
    const i = this.intent(action, subject, body);
    assertCanonical(s.canonical, this.encode(i, s.nonce, s.validUntil, s.signerKeyId), decodesV2);
    const call = this.call(s.canonical, s.signature, s.signerKeyId);
    if (!this.ledger.isPending(call)) this.prechecks(i, s.signerKeyId);
    const expected = policyNonce(this.ledger.poolView(), i.operatorDid);
    const { txHash, duplicate } = await submitToLedger(
      this.ledger,
      call,
      { subject, action, nonceDomain: 'policy_nonce', nonce: s.nonce.toString(), limitKey: `${i.operatorDid}|policy_nonce` },
      { expectedNonce: expected, receivedNonce: s.nonce },
    );
    const fields: Body = { did: subject };
    if (i.persona !== null) fields.persona = subject;
    Object.assign(fields, { operator_did: i.operatorDid, action, extrinsic: EXTRINSIC, operation: i.operation.kind });
    if (i.operation.kind === 'SetPolicy') {
      fields.policy_id = to0x(i.operation.policy.policyId);
      fields.revision = Number(i.operation.policy.revision);
    }
    Object.assign(fields, { nonce_domain: 'policy_nonce', nonce: s.nonce.toString() });
    return accepted(txHash, duplicate, fields);
  }

  // ---------------------------------------------------------------- reads

  readDid(did: string): DidPolicyV2Response {
    assertDid(did);
    const view = this.ledger.finalizedView();
    if (!getDidRecord(view, did)) throw new DdnError('did_not_found', 'DID not found', { did });
    const policy = getPolicyV2(view, { kind: 'Did', id: did });
    const stored = getDidConstraints(view, did);
    const block = this.ledger.finalizedRefNow();
    return {
      did,
      policy: policy ? policyToJson(policy) : null,
      delivery_constraints: stored ? constraintsToJson(stored) : null,
      scope_constraints: constraintsToJson(stored ?? NETWORK_CONSTRAINTS),
      block_number: block.number,
      block_hash: block.hash,
    };
  }

  readPersona(raw: string): PersonaPolicyV2Response {
    const persona = parsePersonaName(raw);
    const view = this.ledger.finalizedView();
    const rec = getPersona(view, persona);
    if (!rec) throw new DdnError('persona_not_found', 'persona not found', { persona });
    const policy = getPolicyV2(view, { kind: 'Persona', id: persona });
    const block = this.ledger.finalizedRefNow();
    return {
      persona,
      operator_did: rec.operatorDid,
      policy: policy ? policyToJson(policy) : null,
      delivery_constraints: rec.deliveryConstraints ? constraintsToJson(rec.deliveryConstraints) : null,
      scope_constraints: constraintsToJson(rec.deliveryConstraints ?? NETWORK_CONSTRAINTS),
      block_number: block.number,
      block_hash: block.hash,
    };
  }
}
