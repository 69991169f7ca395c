/** The Directory's read routes for the web explorer (docs/explorer.md): overview, search, a subject's current policy. */
import { json, type HttpServer } from '../http/server.js';
import { currentPolicy } from './current-policy.js';
import { OverviewService } from './overview.js';
import { search } from './search.js';
import type { DirectoryService } from './service.js';

export function registerExplorerReadRoutes(server: HttpServer, service: DirectoryService): void {
  const ledger = service.deps.ledger;
  const overview = new OverviewService(ledger);
  server.route('GET', '/overview', async ({ query }) => json(200, await overview.overview(query)));
  server.route('GET', '/search', ({ query }) => json(200, search(ledger, query.q)));
  server.route('GET', '/policies/:scope/:id', ({ params }) => json(200, currentPolicy(ledger, params.scope, params.id)));
}
