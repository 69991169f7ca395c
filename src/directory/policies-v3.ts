/**
 * Delivery policies version 3 (http-api.md §8.3) on DID, persona and application scopes: read and owner nonce;
 * prepare, set and clear run the write pipeline with the change kind of src/directory/changes/policy-v3.ts.
 */
import { DdnError } from '../base/errors.js';
import { policyV3Nonce } from '../ledger/runtime/nonces.js';
import { getPolicyV3 } from '../ledger/runtime/policy-state.js';
import { policyToJson, scopeToJson } from '../protocol/policy/json-render.js';
import { ownerOf, parseV3Scope, PREPARE_POLICY_V3, SUBMIT_POLICY_V3, type PolicyV3Prepare, type PolicyV3Submit } from './changes/policy-v3.js';
import type { DirectoryDeps } from './deps.js';
import { prepareChangeSync, submitChange } from './write-pipeline.js';
import type { PolicyV3NonceResponse, PolicyV3PrepareResponse, PolicyV3Response, PolicyV3SubmitResponse } from '../wire/policies.js';

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

  /** `POST /policies/v3/{scope}/{id}/prepare`, as its route's parser read it. */
  prepare(input: PolicyV3Prepare): PolicyV3PrepareResponse {
    return prepareChangeSync(this.deps, PREPARE_POLICY_V3, input);
  }

  /** `PUT` (set) and `DELETE` (clear) `/policies/v3/{scope}/{id}`, as the route's parser read it. */
  submit(input: PolicyV3Submit): Promise<PolicyV3SubmitResponse> {
    return submitChange(this.deps, SUBMIT_POLICY_V3, input);
  }
}
