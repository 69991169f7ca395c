/**
 * What a ledger operation is about, for the explorer: the subject the Directory recorded when it submitted the
 * change (`TxMeta.subject`) and whether that is a DID, a persona or an application. A policy call's subject is
 * its scope's id, so its kind comes from the scope in its signed payload. Pure.
 */
import { decodeExtrinsic } from '../ledger/extrinsic.js';
import type { TxRecord } from '../ledger/store.js';
import type { SubjectKind } from '../wire/explorer.js';
import { describeCall } from './history-changes.js';

const APPLICATION_CALLS = new Set([
  'register_application',
  'update_application',
  'set_application_status',
  'set_application_domain',
  'set_application_linked_did',
]);
const POLICY_CALLS = new Set(['apply_policy_v2_with_proof', 'apply_policy_v3_with_proof']);
const SCOPE_KINDS: Record<string, SubjectKind> = { Did: 'did', Persona: 'persona', Application: 'application' };

/** True for a call whose subject's kind is read from its bytes (a policy's scope). */
export function kindNeedsBytes(extrinsic: string): boolean {
  return POLICY_CALLS.has(extrinsic);
}

export function subjectKindOf(tx: { extrinsic: string; meta: Pick<TxRecord['meta'], 'subject'>; bytes?: Uint8Array | undefined }): SubjectKind {
  if (POLICY_CALLS.has(tx.extrinsic)) {
    const call = tx.bytes === undefined ? undefined : decodeExtrinsic(tx.bytes);
    const scope = call === undefined ? undefined : describeCall(call).scope;
    return scope === undefined ? null : (SCOPE_KINDS[scope.kind] ?? null);
  }
  if (tx.meta.subject.startsWith('did:')) return 'did';
  if (tx.extrinsic === 'apply_persona_with_proof') return 'persona';
  if (APPLICATION_CALLS.has(tx.extrinsic)) return 'application';
  return null;
}
