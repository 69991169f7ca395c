/**
 * Delivery policies version 2 (http-api.md §8.1, §8.2): the reads, and the six write actions on DID and persona
 * scopes, which run the write pipeline with the change kind of src/directory/changes/policy-v2.ts.
 */
import { DdnError } from '../base/errors.js';
import { getDidRecord } from '../ledger/records.js';
import { getPersona } from '../ledger/runtime/persona-state.js';
import { getDidConstraints, getPolicyV2 } from '../ledger/runtime/policy-state.js';
import { constraintsToJson, NETWORK_CONSTRAINTS } from '../protocol/constraints.js';
import { policyToJson } from '../protocol/policy/json-render.js';
import { PREPARE_POLICY_V2, SUBMIT_POLICY_V2, type PolicyV2Prepare, type PolicyV2Submit } from './changes/policy-v2.js';
import type { DirectoryDeps } from './deps.js';
import { assertDid, parsePersonaName } from './submission.js';
import { prepareChangeSync, submitChange } from './write-pipeline.js';
import type { DidPolicyV2Response, PersonaPolicyV2Response, PolicyV2PrepareResponse, PolicyV2SubmitResponse } from '../wire/policies.js';

export class PolicyV2Service {
  constructor(private readonly deps: DirectoryDeps) {}

  private get ledger() {
    return this.deps.ledger;
  }

  /** `POST /delivery-policies/prepare`, as its route's parser read it. */
  prepare(input: PolicyV2Prepare): PolicyV2PrepareResponse {
    return prepareChangeSync(this.deps, PREPARE_POLICY_V2, input);
  }

  /** `PUT` / `DELETE /delivery-policies/{dids|personas}/{id}[/constraints]`, as the route's parser read it. */
  submit(input: PolicyV2Submit): Promise<PolicyV2SubmitResponse> {
    return submitChange(this.deps, SUBMIT_POLICY_V2, input);
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
