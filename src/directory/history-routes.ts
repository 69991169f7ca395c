/** History routes (docs/explorer.md): a DID's, a persona's and an application's finalized operations, paged. */
import { json, type HttpServer } from '../http/server.js';
import { HistoryService } from './history.js';
import type { DirectoryService } from './service.js';

export function registerHistoryRoutes(server: HttpServer, service: DirectoryService): void {
  const history = new HistoryService(service.deps.ledger);
  server.route('GET', '/dids/:did/history', ({ params, query }) => json(200, history.did(params.did, query)));
  server.route('GET', '/personas/:persona/history', ({ params, query }) => json(200, history.persona(params.persona, query)));
  server.route('GET', '/applications/:application_id/history', ({ params, query }) => json(200, history.application(params.application_id, query)));
}
