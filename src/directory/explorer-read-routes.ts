/** The Directory's read routes for the web explorer (docs/explorer.md): overview, search, a subject's current policy. */
import { DdnError } from '../base/errors.js';
import { json } from '../http/server.js';
import type { Route } from '../http/route.js';
import { CurrentPolicySchema, OverviewQuerySchema, OverviewSchema, SearchQuerySchema, SearchSchema } from '../wire/explorer.js';
import { PolicyV3ParamsSchema } from '../wire/policies.js';
import { currentPolicy } from './current-policy.js';
import { OverviewService } from './overview.js';
import { read } from './route-kit.js';
import { search } from './search.js';
import type { DirectoryService } from './service.js';

export function explorerReadRoutes(service: DirectoryService): Route[] {
  const ledger = service.deps.ledger;
  const overview = new OverviewService(ledger);
  return [
    read({
      url: '/overview',
      summary: 'Counts of DIDs, personas and applications; the latest operations and blocks (finalized)',
      query: OverviewQuerySchema,
      answers: { 200: OverviewSchema },
      errors: ['invalid_request'],
      handle: ({ query }) => json(200, overview.overview(query)),
    }),
    read({
      url: '/search',
      summary: 'Every record a DID, alias, persona, application id, transaction hash or block number names',
      query: SearchQuerySchema,
      answers: { 200: SearchSchema },
      errors: ['invalid_request'],
      handle: ({ query }) => json(200, search(ledger, query.q)),
    }),
    read({
      url: '/policies/:scope/:id',
      summary: "A subject's delivery policy, v3 else v2, or none",
      params: PolicyV3ParamsSchema,
      answers: { 200: CurrentPolicySchema },
      // the path's scope (parseV3Scope), then whether the subject exists (`not_found`, as every route's, is listed for all)
      errors: ['invalid_request', 'invalid_did', 'invalid_persona', 'invalid_application_id', 'did_not_found', 'persona_not_found', 'application_not_found'],
      handle: ({ params }) => {
        // `/policies/v3/{scope}` (its id missing, or empty: a trailing slash is not significant) fits this route's
        // pattern, but names no route: 404 `not_found`, as a missing or empty segment of any other route (§0.4)
        if (params.scope === 'v3') throw new DdnError('not_found', 'no such route');
        return json(200, currentPolicy(ledger, params.scope, params.id));
      },
    }),
  ];
}
