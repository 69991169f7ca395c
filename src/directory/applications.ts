/**
 * Applications (http-api.md §9): the application and application-policy reads; registration and the
 * authorization actions run the write pipeline with the change kinds of src/directory/changes/application-*.ts.
 */
import { DdnError } from '../base/errors.js';
import { getApplication, verifiedDomain } from '../ledger/runtime/application-state.js';
import { getPolicyV3 } from '../ledger/runtime/policy-state.js';
import { policyToJson } from '../protocol/policy/json-render.js';
import { assertApplicationId, statusName } from './application-fields.js';
import {
  PREPARE_APPLICATION_AUTHORIZATION,
  SUBMIT_APPLICATION_AUTHORIZATION,
  type AuthorizationPrepare,
  type AuthorizationSubmit,
} from './changes/application-authorization.js';
import {
  PREPARE_APPLICATION_REGISTRATION,
  SUBMIT_APPLICATION_REGISTRATION,
  type Registration,
  type SignedRegistration,
} from './changes/application-registration.js';
import type { DirectoryDeps } from './deps.js';
import { prepareChangeSync, submitChange } from './write-pipeline.js';
import type {
  ApplicationAuthorizationPrepareResponse,
  ApplicationPolicyResponse,
  ApplicationRegistrationPrepareResponse,
  ApplicationResponse,
  ApplicationSubmitResponse,
} from '../wire/applications.js';

export class ApplicationService {
  constructor(private readonly deps: DirectoryDeps) {}

  private get ledger() {
    return this.deps.ledger;
  }

  // ---------------------------------------------------------------- reads

  read(id: string): ApplicationResponse {
    assertApplicationId(id);
    const view = this.ledger.finalizedView();
    const app = getApplication(view, id);
    if (!app) throw new DdnError('application_not_found', 'application not found', { application_id: id });
    const policy = getPolicyV3(view, { kind: 'Application', id });
    const block = this.ledger.finalizedRefNow();
    return {
      application_id: id,
      control_did: app.controlDid,
      status: statusName(app.status),
      application_revision: Number(app.revision),
      registered_at: app.registeredAt,
      updated_at: app.updatedAt,
      domain: app.domain,
      domain_verified: app.domain !== null && verifiedDomain(view, this.deps.clock.nowMs(), id) === app.domain,
      linked_dids: [...app.linkedDids],
      policy_revision: policy ? Number(policy.revision) : null,
      block_number: block.number,
      block_hash: block.hash,
    };
  }

  readPolicy(id: string): ApplicationPolicyResponse {
    assertApplicationId(id);
    const view = this.ledger.finalizedView();
    const app = getApplication(view, id);
    if (!app || app.status !== 'Active') {
      throw new DdnError('application_not_found', app ? 'application is not active' : 'application not found', { application_id: id });
    }
    const policy = getPolicyV3(view, { kind: 'Application', id });
    if (!policy) throw new DdnError('policy_not_found', 'the application has no policy', { application_id: id });
    const block = this.ledger.finalizedRefNow();
    return {
      application_id: id,
      control_did: app.controlDid,
      application_revision: Number(app.revision),
      policy_revision: Number(policy.revision),
      policy_ttl_seconds: policy.policyTtlSeconds,
      policy: policyToJson(policy),
      block_hash: block.hash,
      block_number: block.number,
    };
  }

  // ---------------------------------------------------------------- changes

  prepareRegistration(r: Registration): ApplicationRegistrationPrepareResponse {
    return prepareChangeSync(this.deps, PREPARE_APPLICATION_REGISTRATION, r);
  }

  submitRegistration(r: SignedRegistration): Promise<ApplicationSubmitResponse> {
    return submitChange(this.deps, SUBMIT_APPLICATION_REGISTRATION, r);
  }

  /** `req`: the route parser's (the id checked, the body's fields read, their refusals deferred past the application). */
  prepareAuthorization(req: AuthorizationPrepare): ApplicationAuthorizationPrepareResponse {
    return prepareChangeSync(this.deps, PREPARE_APPLICATION_AUTHORIZATION, req);
  }

  submitAuthorization(req: AuthorizationSubmit): Promise<ApplicationSubmitResponse> {
    return submitChange(this.deps, SUBMIT_APPLICATION_AUTHORIZATION, req);
  }
}
