/** History routes (docs/explorer.md): a DID's, a persona's and an application's finalized operations, paged. */
import { json } from '../http/server.js';
import type { Route } from '../http/route.js';
import { ApplicationParamsSchema } from '../wire/applications.js';
import { ApplicationHistorySchema, DidHistorySchema, HistoryQuerySchema, PersonaHistorySchema } from '../wire/history.js';
import { HistoryService } from './history.js';
import { read } from './route-kit.js';
import type { DirectoryService } from './service.js';

export function historyRoutes(service: DirectoryService): Route[] {
  const history = new HistoryService(service.deps.ledger);
  const query = HistoryQuerySchema;
  return [
    read({
      url: '/dids/:did/history',
      summary: "A DID's finalized operations, newest first",
      query,
      answers: { 200: DidHistorySchema },
      errors: ['invalid_request', 'invalid_did', 'did_not_found'],
      handle: ({ params, query }) => json(200, history.did(params.did, query)),
    }),
    read({
      url: '/personas/:persona/history',
      summary: "A persona's finalized operations, newest first",
      query,
      answers: { 200: PersonaHistorySchema },
      errors: ['invalid_request', 'invalid_persona', 'persona_not_found'],
      handle: ({ params, query }) => json(200, history.persona(params.persona, query)),
    }),
    read({
      url: '/applications/:application_id/history',
      summary: "An application's finalized operations, newest first",
      params: ApplicationParamsSchema,
      query,
      answers: { 200: ApplicationHistorySchema },
      errors: ['invalid_request', 'invalid_application_id', 'application_not_found'],
      handle: ({ params, query }) => json(200, history.application(params.application_id, query)),
    }),
  ];
}
