/**
 * What the v2 and v3 policy change kinds share (http-api.md §8): both sign a policy payload with the operator's
 * nonce of their version, carried by one extrinsic; prepare and submit differ between versions only in how the
 * body is read, the payload codec, the pre-checks and the subject fields. {@link policySteps} builds both
 * descriptors from a {@link PolicyVersion}. Also the shared rules: the Directory pre-checks (operator active,
 * signer resolvable, persona controller gate, public endpoints) and the path / body agreement.
 */
import { to0x } from '../../base/bytes.js';
import { DdnError } from '../../base/errors.js';
import type { LedgerPool } from '../../ledger/ports.js';
import { getPersona } from '../../ledger/runtime/persona-state.js';
import type { Call } from '../../ledger/extrinsic.js';
import type { StateReader } from '../../ledger/state.js';
import type { PolicyV2Operation } from '../../protocol/payloads/policy-v2.js';
import type { PolicyV3Operation } from '../../protocol/payloads/policy-v3.js';
import type { PolicyRule } from '../../protocol/policy/types.js';
import type { DirectoryDeps } from '../deps.js';
import { assertPublicEndpoints } from '../policy-endpoints.js';
import { activeDidRecord, NO_SIGNATURE, resolveSigner, signedRequestFields, type Body, type SignedFields } from '../submission.js';
import type { NoncePrepared, SubmitSteps, SyncPrepareSteps } from '../write-pipeline.js';
import type { DeliveryConstraintsJson, DeliveryPolicyJson } from '../../wire/json-forms.js';

/** The request fields of a policy write, in normalised form (policy filled). */
export type PolicyRequest = Body & { policy?: DeliveryPolicyJson; delivery_constraints?: DeliveryConstraintsJson };

/** A policy write read from a body: the operator signing it, the ledger operation, the normalised request fields. */
export interface PolicyIntent {
  action: string;
  operatorDid: string;
  operation: PolicyV2Operation | PolicyV3Operation;
  request: PolicyRequest;
}

/** A policy write read from a prepare body. */
export type PolicyDraft<I extends PolicyIntent> = I & { signerKeyId: string; validUntil: bigint };

/** A policy write read from a submit body. */
export type PolicySubmission<I extends PolicyIntent> = I & { s: SignedFields };

/** What a version's answers carry of their own: its extrinsic and nonce domain, and the subject fields. */
export interface PolicyWire {
  extrinsic: 'apply_policy_v2_with_proof' | 'apply_policy_v3_with_proof';
  nonceDomain: 'policy_nonce' | 'policy_v3_nonce';
  preparedSubject: object;
  acceptedSubject: object;
}

/** The prepared body of a policy version (its wire type, e.g. `PolicyV2PrepareResponse`, is checked where the kind is declared). */
export type PolicyPrepared<I extends PolicyIntent, W extends PolicyWire> = {
  action: I['action'];
  operation: I['operation']['kind'];
  extrinsic: W['extrinsic'];
} & W['preparedSubject'] & {
    operator_did: string;
    nonce_domain: W['nonceDomain'];
    nonce: string;
    valid_until: string;
    signer_key_id: string;
    policy?: DeliveryPolicyJson;
    delivery_constraints?: DeliveryConstraintsJson;
    canonical_payload: string;
    payload_to_sign: string;
    request: Body;
  };

/** The kind's fields of a policy version's 202 body. */
export type PolicyAccepted<I extends PolicyIntent, W extends PolicyWire> = W['acceptedSubject'] & {
  operator_did: string;
  action: I['action'];
  extrinsic: W['extrinsic'];
  operation: I['operation']['kind'];
  policy_id?: string;
  revision?: number;
  nonce_domain: W['nonceDomain'];
  nonce: string;
};

/** What a policy version is: its extrinsic, nonce, codec, pre-checks and subject. */
export interface PolicyVersion<I extends PolicyIntent, W extends PolicyWire> {
  extrinsic: W['extrinsic'];
  nonceDomain: W['nonceDomain'];
  nonceOf(state: StateReader, did: string): bigint;
  encode(i: I, nonce: bigint, validUntil: bigint, signerKeyId: string): Uint8Array;
  decodes(bytes: Uint8Array): boolean;
  precheck(env: DirectoryDeps, i: I, signerKeyId: string): void;
  /** The pending marker's subject (the DID, persona or scope id). */
  subject(i: I): string;
  /** The subject fields of the prepared body and of the 202 body. */
  preparedSubject(i: I): W['preparedSubject'];
  acceptedSubject(i: I): W['acceptedSubject'];
}

const callOf = (name: PolicyWire['extrinsic'], payload: Uint8Array, signature: Uint8Array, signerKeyId: string): Call => ({
  name,
  args: { signedPayload: payload, signature, signerKeyId },
});

/** The prepare and submit descriptors of a policy version, given how each reads its route. */
export function policySteps<I extends PolicyIntent, P, S, W extends PolicyWire>(
  v: PolicyVersion<I, W>,
  read: {
    prepare(env: DirectoryDeps, req: P): PolicyDraft<I>;
    submit(env: DirectoryDeps, req: S): PolicySubmission<I>;
  },
): {
  prepare: SyncPrepareSteps<DirectoryDeps, P, PolicyDraft<I>, NoncePrepared, PolicyPrepared<I, W>>;
  submit: SubmitSteps<DirectoryDeps, S, PolicySubmission<I>, PolicyAccepted<I, W>>;
} {
  const prepare: SyncPrepareSteps<DirectoryDeps, P, PolicyDraft<I>, NoncePrepared, PolicyPrepared<I, W>> = {
    read: read.prepare,
    precheck: (env, d) => v.precheck(env, d, d.signerKeyId),
    build(env, d) {
      const nonce = v.nonceOf(env.ledger.poolView(), d.operatorDid);
      const payload = v.encode(d, nonce, d.validUntil, d.signerKeyId);
      return { payload, nonce, probe: callOf(v.extrinsic, payload, NO_SIGNATURE, d.signerKeyId) };
    },
    answer(_env, d, { payload, nonce }) {
      const hex = to0x(payload);
      const auth = signedRequestFields(nonce, d.validUntil, d.signerKeyId, hex);
      return {
        action: d.action,
        operation: d.operation.kind,
        extrinsic: v.extrinsic,
        ...v.preparedSubject(d),
        operator_did: d.operatorDid,
        nonce_domain: v.nonceDomain,
        nonce: auth.nonce,
        valid_until: auth.valid_until,
        signer_key_id: d.signerKeyId,
        ...(d.request.policy !== undefined ? { policy: d.request.policy } : {}),
        ...(d.request.delivery_constraints !== undefined ? { delivery_constraints: d.request.delivery_constraints } : {}),
        canonical_payload: hex,
        payload_to_sign: hex,
        request: { ...d.request, ...auth },
      };
    },
  };
  const submit: SubmitSteps<DirectoryDeps, S, PolicySubmission<I>, PolicyAccepted<I, W>> = {
    read: read.submit,
    rebuild: (_env, i) => ({ canonical: i.s.canonical, rebuilt: v.encode(i, i.s.nonce, i.s.validUntil, i.s.signerKeyId), decodes: v.decodes }),
    call: (i) => callOf(v.extrinsic, i.s.canonical, i.s.signature, i.s.signerKeyId),
    precheck: (env, i) => v.precheck(env, i, i.s.signerKeyId),
    admission: (env, i) => ({
      subject: v.subject(i),
      action: i.action,
      limitKey: `${i.operatorDid}|${v.nonceDomain}`,
      nonce: { domain: v.nonceDomain, value: i.s.nonce, current: v.nonceOf(env.ledger.poolView(), i.operatorDid) },
    }),
    answer: (i) => ({
      ...v.acceptedSubject(i),
      operator_did: i.operatorDid,
      action: i.action,
      extrinsic: v.extrinsic,
      operation: i.operation.kind,
      ...(i.operation.kind === 'SetPolicy' ? { policy_id: to0x(i.operation.policy.policyId), revision: Number(i.operation.policy.revision) } : {}),
      nonce_domain: v.nonceDomain,
      nonce: i.s.nonce.toString(),
    }),
  };
  return { prepare, submit };
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
export function policyPrechecks(ledger: Pick<LedgerPool, 'poolView'>, allowPrivateEndpoints: boolean, p: PolicyPrecheck): void {
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
