/**
 * The Directory's public-endpoint rule for policy writes (http-api.md §8.1, product spec): every `serviceEndpoint`
 * of the service a Forward / Store / Archive target or a Call step names (pool-state document of `service_did`)
 * must be a public HTTPS URI; a Call step's endpoints must also lie within its `registered_domain`. A service that
 * does not exist is left to the ledger (`InvalidRouteTarget`).
 */
import { DdnError } from '../base/errors.js';
import { getDidRecord } from '../ledger/records.js';
import type { StateReader } from '../ledger/state.js';
import { hostWithinDomain, publicEndpointProblem } from '../protocol/public-endpoint.js';
import type { PolicyRule } from '../protocol/policy/types.js';

function endpointsOf(state: StateReader, serviceDid: string, serviceId: string): string[] | undefined {
  return getDidRecord(state, serviceDid)?.document?.service?.find((s) => s.id === serviceId)?.serviceEndpoint;
}

/** Throws 400 `invalid_delivery_policy` (`details.reason: "non_public_endpoint"`) at the first violation. */
export function assertPublicEndpoints(state: StateReader, ruleset: readonly PolicyRule[]): void {
  for (const rule of ruleset) {
    if (rule.action.kind !== 'DeliveryPlanV1') continue;
    for (const step of rule.action.plan.steps) {
      const op = step.operation;
      const refs: { serviceDid: string; serviceId: string; domain?: string }[] =
        op.kind === 'Forward' || op.kind === 'Store' || op.kind === 'Archive'
          ? op.targets
          : op.kind === 'Call'
            ? [{ serviceDid: op.serviceDid, serviceId: op.serviceId, domain: op.registeredDomain }]
            : [];
      for (const ref of refs) {
        for (const endpoint of endpointsOf(state, ref.serviceDid, ref.serviceId) ?? []) {
          let problem: string | null = publicEndpointProblem(endpoint);
          if (problem === null && ref.domain !== undefined && !hostWithinDomain(endpoint, ref.domain)) problem = 'outside_registered_domain';
          if (problem !== null) {
            throw new DdnError('invalid_delivery_policy', `service ${ref.serviceId} has a non-public endpoint ${endpoint}`, {
              reason: 'non_public_endpoint',
              rule_id: rule.id,
              step_id: step.id,
              service_did: ref.serviceDid,
              service_id: ref.serviceId,
              endpoint,
              problem,
            });
          }
        }
      }
    }
  }
}
