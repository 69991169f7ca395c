/**
 * Delivery policies version 3 (http-api.md §8.3) on DID, persona and application scopes: read, owner nonce,
 * prepare, set and clear. Payload: `PolicyV3AuthorizationPayload` (ledger-rules.md §4.8), nonce = the scope
 * owner's `policy_v3_nonce`. A missing or inactive scope answers with its cause (§1.1 `scope_unavailable` row).
 */
import { to0x } from '../base/bytes.js';
import { DdnError, type ErrorCode } from '../base/errors.js';
import type { Call } from '../ledger/extrinsic.js';
import { policyV3Nonce } from '../ledger/runtime/nonces.js';
import { getPolicyV3 } from '../ledger/runtime/policy-state.js';
import { scopeOwner } from '../ledger/runtime/scope-owner.js';
import type { StateReader } from '../ledger/state.js';
import { isApplicationId } from '../protocol/payloads/application.js';
import { decodePolicyV3Payload, encodePolicyV3Payload, type PolicyV3Operation } from '../protocol/payloads/policy-v3.js';
import { completePolicy, parsePolicyJsonV3 } from '../protocol/policy/json-parse.js';
import { policyToJson, scopeToJson } from '../protocol/policy/json-render.js';
import { policyIdV3 } from '../protocol/policy/policy-id.js';
import type { PolicyScopeV3 } from '../protocol/policy/types.js';
import { assertPolicyMatchesPath, policyPrechecks, policySignedFields } from './policy-writes.js';
import type { DirectoryDeps } from './deps.js';
import {
  accepted,
  assertCanonical,
  assertDid,
  dryRun,
  NO_SIGNATURE,
  optionalDid,
  parsePersonaName,
  parseSignerKeyId,
  requireAction,
  submitToLedger,
  validUntilOrDefault,
  type Body,
} from './submission.js';
import type { PolicyV3NonceResponse, PolicyV3Response } from '../wire/policies.js';

const EXTRINSIC = 'apply_policy_v3_with_proof';
type V3Action = 'set_policy_v3' | 'clear_policy_v3';

const decodesV3 = (b: Uint8Array): boolean => decodePolicyV3Payload(b) !== undefined;

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
function ownerOf(state: StateReader, nowMs: number, scope: PolicyScopeV3): string {
  const o = scopeOwner(state, nowMs, scope);
  if (!o.ok) throw new DdnError(o.cause as ErrorCode, `the ${scope.kind.toLowerCase()} scope has no owner (${o.cause})`, { scope: scopeToJson(scope) });
  return o.owner;
}

interface V3Intent {
  action: V3Action;
  scope: PolicyScopeV3;
  operatorDid: string;
  operation: PolicyV3Operation;
  request: Body;
}

export class PolicyV3Service {
  constructor(private readonly deps: DirectoryDeps) {}

  private get ledger() {
    return this.deps.ledger;
  }

  read(scopeSeg: string, id: string): PolicyV3Response {
    const scope = parseV3Scope(scopeSeg, id);
    const policy = getPolicyV3(this.ledger.finalizedView(), scope);
    if (!policy) throw new DdnError('policy_not_found', 'no policy for this scope', { scope: scopeToJson(scope) });
    const block = this.ledger.finalizedRefNow();
    return { scope: scopeToJson(scope), policy: policyToJson(policy), block_number: block.number, block_hash: block.hash };
  }

  nonce(scopeSeg: string, id: string): PolicyV3NonceResponse {
    const scope = parseV3Scope(scopeSeg, id);
    const pool = this.ledger.poolView();
    const owner = ownerOf(pool, this.deps.clock.nowMs(), scope);
    return { scope: scopeToJson(scope), operator_did: owner, nonce: policyV3Nonce(pool, owner).toString() };
  }

  private intent(action: V3Action, scope: PolicyScopeV3, body: Body): V3Intent {
    const pool = this.ledger.poolView();
    const request: Body = { action };
    if (action === 'set_policy_v3') {
      const draft = parsePolicyJsonV3(body.policy);
      assertPolicyMatchesPath(draft, scope, optionalDid(body, 'operator_did'));
      const stored = getPolicyV3(pool, scope);
      const policy = completePolicy(draft, { policyId: policyIdV3(this.deps.profile, scope), revision: (stored?.revision ?? 0n) + 1n });
      request.operator_did = policy.operatorDid;
      request.policy = policyToJson(policy);
      return { action, scope, operatorDid: policy.operatorDid, operation: { kind: 'SetPolicy', policy }, request };
    }
    const operatorDid = optionalDid(body, 'operator_did') ?? ownerOf(pool, this.deps.clock.nowMs(), scope);
    request.operator_did = operatorDid;
    return { action, scope, operatorDid, operation: { kind: 'ClearPolicy', scope }, request };
  }

  /**
   * Scope owner first (404 / 409 for a missing or inactive scope), then the common policy pre-checks; the persona
   * controller gate applies when the operator is the owner (otherwise the ledger reports `invalid_policy_scope`).
   */
  private prechecks(i: V3Intent, signerKeyId: string): void {
    const owner = ownerOf(this.ledger.poolView(), this.deps.clock.nowMs(), i.scope);
    policyPrechecks(this.ledger, this.deps.allowPrivateEndpoints ?? false, {
      operatorDid: i.operatorDid,
      signerKeyId,
      persona: i.scope.kind === 'Persona' && owner === i.operatorDid ? i.scope.id : null,
      ruleset: i.operation.kind === 'SetPolicy' ? i.operation.policy.ruleset : null,
    });
  }

  private encode(i: V3Intent, nonce: bigint, validUntil: bigint, signerKeyId: string): Uint8Array {
    return encodePolicyV3Payload({ operatorDid: i.operatorDid, operation: i.operation, nonce, validUntil, signerKeyId });
  }

  private call(payload: Uint8Array, signature: Uint8Array, signerKeyId: string): Call {
    return { name: EXTRINSIC, args: { signedPayload: payload, signature, signerKeyId } };
  }

  prepare(scopeSeg: string, id: string, body: Body): Body {
    const scope = parseV3Scope(scopeSeg, id);
    const action = body.action;
    if (action !== 'set_policy_v3' && action !== 'clear_policy_v3') {
      throw new DdnError('unsupported_action', 'action must be set_policy_v3 or clear_policy_v3', { action: action ?? null });
    }
    const i = this.intent(action, scope, body);
    const signerKeyId = parseSignerKeyId(body);
    const validUntil = validUntilOrDefault(body, this.deps.clock.nowMs(), this.deps.profile);
    this.prechecks(i, signerKeyId);
    const nonce = policyV3Nonce(this.ledger.poolView(), i.operatorDid);
    const payload = this.encode(i, nonce, validUntil, signerKeyId);
    dryRun(this.ledger, this.call(payload, NO_SIGNATURE, signerKeyId));
    const hex = to0x(payload);
    const out: Body = {
      action,
      operation: i.operation.kind,
      extrinsic: EXTRINSIC,
      scope: scopeToJson(scope),
      operator_did: i.operatorDid,
      nonce_domain: 'policy_v3_nonce',
      nonce: nonce.toString(),
      valid_until: validUntil.toString(),
      signer_key_id: signerKeyId,
    };
    if (i.request.policy !== undefined) out.policy = i.request.policy;
    Object.assign(out, {
      canonical_payload: hex,
      payload_to_sign: hex,
      request: { ...i.request, nonce: nonce.toString(), valid_until: validUntil.toString(), signer_key_id: signerKeyId, canonical_payload: hex },
    });
    return out;
  }

  /** `PUT` (set) and `DELETE` (clear) `/policies/v3/{scope}/{id}`. */
  async submit(action: V3Action, scopeSeg: string, id: string, body: Body): Promise<Body> {
    const scope = parseV3Scope(scopeSeg, id);
    requireAction(body, action);
    const s = policySignedFields(body, this.deps.profile);
    const i = this.intent(action, scope, body);
    assertCanonical(s.canonical, this.encode(i, s.nonce, s.validUntil, s.signerKeyId), decodesV3);
    const call = this.call(s.canonical, s.signature, s.signerKeyId);
    if (!this.ledger.isPending(call)) this.prechecks(i, s.signerKeyId);
    const expected = policyV3Nonce(this.ledger.poolView(), i.operatorDid);
    const { txHash, duplicate } = await submitToLedger(
      this.ledger,
      call,
      { subject: scope.id, action, nonceDomain: 'policy_v3_nonce', nonce: s.nonce.toString(), limitKey: `${i.operatorDid}|policy_v3_nonce` },
      { expectedNonce: expected, receivedNonce: s.nonce },
    );
    const fields: Body = {
      scope: scopeToJson(scope),
      operator_did: i.operatorDid,
      action,
      operation: i.operation.kind,
      extrinsic: EXTRINSIC,
    };
    if (i.operation.kind === 'SetPolicy') {
      fields.policy_id = to0x(i.operation.policy.policyId);
      fields.revision = Number(i.operation.policy.revision);
    }
    Object.assign(fields, { nonce_domain: 'policy_v3_nonce', nonce: s.nonce.toString() });
    return accepted(txHash, duplicate, fields);
  }
}
