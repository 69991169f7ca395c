/**
 * What the v2 and v3 policy change kinds share (http-api.md §8): the extrinsic, the Directory pre-checks (operator
 * active, signer resolvable, persona controller gate, public endpoints) and the path / body agreement.
 */
import { DdnError } from '../base/errors.js';
import type { Ledger } from '../ledger/chain.js';
import { getPersona } from '../ledger/runtime/persona-state.js';
import type { Call } from '../ledger/extrinsic.js';
import type { PolicyRule } from '../protocol/policy/types.js';
import { assertPublicEndpoints } from './policy-endpoints.js';
import { activeDidRecord, resolveSigner } from './submission.js';

/** The extrinsic of a v2 or v3 policy write: the signed payload, its signature and signer. */
export function policyCall(name: 'apply_policy_v2_with_proof' | 'apply_policy_v3_with_proof', payload: Uint8Array, signature: Uint8Array, signerKeyId: string): Call {
  return { name, args: { signedPayload: payload, signature, signerKeyId } };
}

export interface PolicyPrecheck {
  operatorDid: string;
  signerKeyId: string;
  /** The persona whose active controller must sign (persona-scoped writes), or null. */
  persona: string | null;
  /** The ruleset of a SetPolicy, for the public-endpoint rule; null for other operations. */
  ruleset: readonly PolicyRule[] | null;
}

/**
 * §2.2 step 5 for policy writes, against the pool state: the operator DID is active (404 / 409), the signer
 * resolves (403 `signer_not_authorized`), a persona-scoped write is signed by a controller of the persona as its
 * operator (404 `persona_not_found`, 403 `invalid_persona_controller`), and route endpoints are public (§8.1).
 */
export function policyPrechecks(ledger: Ledger, allowPrivateEndpoints: boolean, p: PolicyPrecheck): void {
  const pool = ledger.poolView();
  const rec = activeDidRecord(pool, p.operatorDid, 'operator_did');
  resolveSigner(p.operatorDid, rec, p.signerKeyId);
  if (p.persona !== null) {
    const persona = getPersona(pool, p.persona);
    if (!persona) throw new DdnError('persona_not_found', 'persona not found', { persona: p.persona });
    if (persona.operatorDid !== p.operatorDid || persona.controllerThreshold !== 1 || !persona.controllerKeyIds.includes(p.signerKeyId)) {
      throw new DdnError('invalid_persona_controller', 'persona-scoped writes are signed by an active controller of the persona’s operator', {
        persona: p.persona,
        signer_key_id: p.signerKeyId,
      });
    }
  }
  if (p.ruleset !== null && !allowPrivateEndpoints) assertPublicEndpoints(pool, p.ruleset);
}

/** A policy body's scope and `operator_did` must agree with the path (http-api.md §8.2–§8.3, 400 `path_body_mismatch`). */
export function assertPolicyMatchesPath(
  draft: { scope: { kind: string; id: string }; operatorDid: string },
  scope: { kind: string; id: string },
  givenOperatorDid: string | undefined,
): void {
  if (draft.scope.kind !== scope.kind || draft.scope.id !== scope.id) {
    throw new DdnError('path_body_mismatch', 'policy.scope differs from the path', { field: 'policy.scope' });
  }
  if (givenOperatorDid !== undefined && givenOperatorDid !== draft.operatorDid) {
    throw new DdnError('path_body_mismatch', 'operator_did differs from policy.operator_did', { field: 'operator_did' });
  }
}
