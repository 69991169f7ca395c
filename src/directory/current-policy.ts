/**
 * `GET /policies/{scope}/{id}` (docs/explorer.md): a subject's delivery policy, whichever version it has — v3
 * (which wins on delivery), else v2 — or none, in one answer that is 200 whenever the subject exists.
 */
import { DdnError } from '../base/errors.js';
import type { LedgerReads } from '../ledger/ports.js';
import { getDidRecord } from '../ledger/records.js';
import { getApplication } from '../ledger/runtime/application-state.js';
import { getPersona } from '../ledger/runtime/persona-state.js';
import { getPolicyV2, getPolicyV3 } from '../ledger/runtime/policy-state.js';
import type { StateReader } from '../ledger/state.js';
import { policyToJson } from '../protocol/policy/json-render.js';
import type { PolicyScopeV3 } from '../protocol/policy/types.js';
import type { CurrentPolicyResponse } from '../wire/explorer.js';
import { parseV3Scope } from './changes/policy-v3.js';

function assertSubject(view: StateReader, scope: PolicyScopeV3): void {
  switch (scope.kind) {
    case 'Did':
      if (getDidRecord(view, scope.id) === undefined) throw new DdnError('did_not_found', 'DID not found', { did: scope.id });
      return;
    case 'Persona':
      if (getPersona(view, scope.id) === undefined) throw new DdnError('persona_not_found', 'persona not found', { persona: scope.id });
      return;
    case 'Application':
      if (getApplication(view, scope.id) === undefined) throw new DdnError('application_not_found', 'application not found', { application_id: scope.id });
  }
}

export function currentPolicy(ledger: LedgerReads, scopeSeg: string, id: string): CurrentPolicyResponse {
  const scope = parseV3Scope(scopeSeg, id);
  const view = ledger.finalizedView();
  assertSubject(view, scope);
  const v3 = getPolicyV3(view, scope);
  const v2 = v3 === undefined && scope.kind !== 'Application' ? getPolicyV2(view, scope) : undefined;
  const block = ledger.finalizedRefNow();
  return {
    scope: scopeSeg as CurrentPolicyResponse['scope'],
    id: scope.id,
    version: v3 !== undefined ? 3 : v2 !== undefined ? 2 : null,
    policy: v3 !== undefined ? policyToJson(v3) : v2 !== undefined ? policyToJson(v2) : null,
    block_number: block.number,
    block_hash: block.hash,
  };
}
