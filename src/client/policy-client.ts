/**
 * The delivery-policy SDK (http-api.md §8): v3 policies of a DID, persona or application scope, and the v2 routes
 * (policies and stored constraints of a DID or persona). Every write is prepared by the Directory, checked locally
 * — including that the policy to be signed is exactly the one given, with its id computed here — signed and
 * submitted.
 */
import { toBase64 } from '../base/bytes.js';
import { didOfUrl } from '../protocol/did.js';
import { DirectoryApi } from './directory-api.js';
import { encodePath, type HttpMethod } from './http.js';
import type { Signer } from './persona-client.js';
import { checkPolicyV2Payload, checkPolicyV3Payload, preparedBytes, type PreparedBytes } from './signed-checks.js';
import type { DidPolicyV2Response, PersonaPolicyV2Response, PolicySubmitResponse, PolicyV3NonceResponse, PolicyV3Response } from './types.js';

type Json = Record<string, unknown>;

/** A policy scope as the routes name it. */
export interface ScopeRef {
  type: 'did' | 'persona' | 'application';
  id: string;
}

/** The v2 write actions of §8.2. */
export type PolicyV2Action =
  'set_did_policy_v2' | 'clear_did_policy_v2' | 'set_did_constraints' | 'set_persona_policy_v2' | 'clear_persona_policy_v2' | 'set_persona_constraints';

const V2_ROUTES: Record<
  PolicyV2Action,
  { method: HttpMethod; scope: 'did' | 'persona'; suffix: string; kind: 'SetPolicy' | 'ClearPolicy' | 'SetDidConstraints' | 'SetPersonaConstraints' }
> = {
  set_did_policy_v2: { method: 'PUT', scope: 'did', suffix: '', kind: 'SetPolicy' },
  clear_did_policy_v2: { method: 'DELETE', scope: 'did', suffix: '', kind: 'ClearPolicy' },
  set_did_constraints: { method: 'PUT', scope: 'did', suffix: '/constraints', kind: 'SetDidConstraints' },
  set_persona_policy_v2: { method: 'PUT', scope: 'persona', suffix: '', kind: 'SetPolicy' },
  clear_persona_policy_v2: { method: 'DELETE', scope: 'persona', suffix: '', kind: 'ClearPolicy' },
  set_persona_constraints: { method: 'PUT', scope: 'persona', suffix: '/constraints', kind: 'SetPersonaConstraints' },
};

interface PreparedPolicy extends PreparedBytes {
  request: Json;
  operator_did?: string;
}

/** The operator a signer belongs to, when it can be told without the Directory. */
function operatorOf(signer: Signer, operatorDid: string | undefined, scope: ScopeRef): string | undefined {
  if (operatorDid !== undefined) return operatorDid;
  if (signer.keyId !== 'root') return didOfUrl(signer.keyId);
  return scope.type === 'did' ? scope.id : undefined;
}

export class PolicyClient extends DirectoryApi {
  private v3Path(scope: ScopeRef, suffix = ''): string {
    return encodePath`/policies/v3/${scope.type}/${scope.id}` + suffix;
  }

  /** `GET /policies/v3/{scope}/{id}`. */
  readV3(scope: ScopeRef): Promise<PolicyV3Response> {
    return this.call('GET', this.v3Path(scope));
  }
  /** `GET /policies/v3/{scope}/{id}/nonce`. */
  nonceV3(scope: ScopeRef): Promise<PolicyV3NonceResponse> {
    return this.call('GET', this.v3Path(scope, '/nonce'));
  }
  /** `GET /delivery-policies/dids/{did}` or `…/personas/{persona}`. */
  readV2(scope: ScopeRef & { type: 'did' }): Promise<DidPolicyV2Response>;
  readV2(scope: ScopeRef & { type: 'persona' }): Promise<PersonaPolicyV2Response>;
  readV2(scope: ScopeRef): Promise<DidPolicyV2Response | PersonaPolicyV2Response>;
  readV2(scope: ScopeRef): Promise<DidPolicyV2Response | PersonaPolicyV2Response> {
    return this.call('GET', scope.type === 'did' ? encodePath`/delivery-policies/dids/${scope.id}` : encodePath`/delivery-policies/personas/${scope.id}`);
  }

  /** Sets (policy given) or clears (policy undefined) the v3 policy of `scope`. */
  async writeV3(scope: ScopeRef, a: { policy?: Json; signer: Signer; operatorDid?: string }): Promise<PolicySubmitResponse> {
    const action = a.policy === undefined ? 'clear_policy_v3' : 'set_policy_v3';
    const body: Json = { action, signer_key_id: a.signer.keyId, ...(a.policy === undefined ? {} : { policy: a.policy }) };
    const prepared = await this.call<PreparedPolicy>('POST', this.v3Path(scope, '/prepare'), body);
    checkPolicyV3Payload(this.profile, preparedBytes(prepared), {
      kind: a.policy === undefined ? 'ClearPolicy' : 'SetPolicy',
      signerKeyId: a.signer.keyId,
      operatorDid: operatorOf(a.signer, a.operatorDid, scope),
      policy: a.policy,
    });
    const signed = { ...prepared.request, signature: toBase64(a.signer.key.sign(preparedBytes(prepared))) };
    return this.call(a.policy === undefined ? 'DELETE' : 'PUT', this.v3Path(scope), signed);
  }

  /** A v2 write (§8.2): `policy` for the set actions, `constraints` for the constraint actions. */
  async writeV2(
    action: PolicyV2Action,
    id: string,
    a: { policy?: Json; constraints?: Json; operatorDid?: string; signer: Signer },
  ): Promise<PolicySubmitResponse> {
    const route = V2_ROUTES[action];
    const body: Json = { action, [route.scope]: id, signer_key_id: a.signer.keyId };
    if (a.operatorDid !== undefined) body.operator_did = a.operatorDid;
    if (a.policy !== undefined) body.policy = a.policy;
    if (a.constraints !== undefined) body.delivery_constraints = a.constraints;
    const prepared = await this.call<PreparedPolicy>('POST', '/delivery-policies/prepare', body);
    checkPolicyV2Payload(this.profile, preparedBytes(prepared), {
      kind: route.kind,
      signerKeyId: a.signer.keyId,
      operatorDid: operatorOf(a.signer, a.operatorDid, { type: route.scope, id }),
      policy: a.policy,
    });
    const path = (route.scope === 'did' ? encodePath`/delivery-policies/dids/${id}` : encodePath`/delivery-policies/personas/${id}`) + route.suffix;
    return this.call(route.method, path, { ...prepared.request, signature: toBase64(a.signer.key.sign(preparedBytes(prepared))) });
  }
}
