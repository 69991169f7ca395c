/** Directory routes (http-api.md §3–§9): thin handlers over DirectoryService and its use-cases. */
import { json, jsonPayload, type HttpServer } from '../http/server.js';
import type { JsonObject } from '../http/json-body.js';
import { DdnError } from '../base/errors.js';
import { adjustDocument } from '../http/openapi-additions.js';
import { deliveryViewToJson } from '../ports/directory-port-json.js';
import { canonicalPersona } from '../protocol/persona-name.js';
import { registerExplorerRoutes } from '../explorer/routes.js';
import { ACTIONS } from './actions.js';
import { registerApplicationRoutes } from './application-routes.js';
import { registerExplorerReadRoutes } from './explorer-read-routes.js';
import { registerDidResolutionRoutes } from './did-resolution-routes.js';
import { registerHistoryRoutes } from './history-routes.js';
import { LocalDirectoryPort } from './local-port.js';
import { profileDocument } from './openapi-profile.js';
import { registerPersonaRoutes } from './persona-routes.js';
import { registerPolicyRoutes } from './policy-routes.js';
import { withDirectoryRateClasses } from './rate-classes.js';
import { ResolveCache } from './resolve-cache.js';
import { assertDid, type DirectoryService } from './service.js';

const body = (b: JsonObject | undefined): JsonObject => b ?? {};

export function registerDirectoryRoutes(directoryServer: HttpServer, service: DirectoryService): void {
  const server = withDirectoryRateClasses(directoryServer);
  adjustDocument(directoryServer.fastify, (doc) => profileDocument(doc, service.deps.profile));
  const resolved = new ResolveCache(service.deps.ledger, (did, view) => service.resolvePart(did, view), service.deps.resolveCacheBytes);
  server.route('GET', '/resolve/:did', ({ params }) => jsonPayload(200, resolved.body(params.did)));
  server.route('GET', '/registration-status/:did', ({ params }) => json(200, service.registrationStatus(params.did)));
  server.route('GET', '/dids/:did/nonces', ({ params }) => json(200, service.nonces(params.did)));
  server.route('GET', '/transactions/:tx_hash', ({ params }) => json(200, service.transaction(params.tx_hash)));
  server.route('GET', '/blocks/latest', () => json(200, service.block('latest')));
  server.route('GET', '/blocks/:number', ({ params }) => json(200, service.block(params.number)));
  server.route('GET', '/aliases/:alias', ({ params }) => json(200, service.aliasLookup(params.alias)));

  // ddn-internal: what a Relay or Cache in another process asks through HttpDirectoryPort (src/ports).
  const port = new LocalDirectoryPort(service.deps.ledger, service.deps.clock);
  server.route('GET', '/delivery-view/:did', async ({ params, query }) => {
    assertDid(params.did);
    let persona: string | null = null;
    if (query.persona !== undefined) {
      persona = canonicalPersona(query.persona) ?? null;
      if (persona === null) throw new DdnError('invalid_persona', 'invalid persona');
    }
    const view = await port.resolveDelivery(params.did, persona, query.tag ?? null);
    if (!view) throw new DdnError('did_not_found', 'DID not found', { did: params.did });
    return json(200, deliveryViewToJson(view));
  });

  server.route('GET', '/delivery-resolution/:did', ({ params, query }) => {
    const r = service.deliveryResolution(params.did, query);
    return json(200, r.body, { 'cache-control': r.cacheControl });
  });
  registerPersonaRoutes(server, service);
  registerPolicyRoutes(server, service);
  registerApplicationRoutes(server, service);
  registerHistoryRoutes(server, service);
  registerExplorerReadRoutes(server, service);
  registerDidResolutionRoutes(server, service);
  registerExplorerRoutes(server);

  server.route('POST', '/register-did/prepare', (ctx) => json(200, service.prepareRegistration(body(ctx.body))));
  server.route('POST', '/register-did', async (ctx) => json(202, await service.submitRegistration(body(ctx.body))));

  server.route('POST', '/dids/:did/prepare', (ctx) => json(200, service.prepareMutation(ctx.params.did, body(ctx.body))));
  for (const spec of ACTIONS) {
    server.route(spec.method, spec.pattern, async (ctx) => json(202, await service.submitMutation(spec, ctx.params as Record<string, string>, body(ctx.body))));
  }
}
