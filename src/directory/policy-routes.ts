/** Delivery-policy routes (http-api.md §8.2, §8.3): thin handlers over PolicyV2Service and PolicyV3Service. */
import { json, type HttpServer, type RequestContext } from '../http/server.js';
import type { DirectoryService } from './service.js';
import type { Body } from './submission.js';

const bodyOf = (ctx: RequestContext<object>): Body => ctx.body ?? {};

export function registerPolicyRoutes(server: HttpServer, service: DirectoryService): void {
  const v2 = service.policiesV2;
  const v3 = service.policiesV3;

  server.route('GET', '/delivery-policies/dids/:did', ({ params }) => json(200, v2.readDid(params.did)));
  server.route('GET', '/delivery-policies/personas/:persona', ({ params }) => json(200, v2.readPersona(params.persona)));
  server.route('POST', '/delivery-policies/prepare', (ctx) => json(200, v2.prepare(bodyOf(ctx))));
  server.route('PUT', '/delivery-policies/dids/:did', async (ctx) => json(202, await v2.submit('set_did_policy_v2', ctx.params.did, bodyOf(ctx))));
  server.route('DELETE', '/delivery-policies/dids/:did', async (ctx) => json(202, await v2.submit('clear_did_policy_v2', ctx.params.did, bodyOf(ctx))));
  server.route('PUT', '/delivery-policies/dids/:did/constraints', async (ctx) =>
    json(202, await v2.submit('set_did_constraints', ctx.params.did, bodyOf(ctx))),
  );
  server.route('PUT', '/delivery-policies/personas/:persona', async (ctx) =>
    json(202, await v2.submit('set_persona_policy_v2', ctx.params.persona, bodyOf(ctx))),
  );
  server.route('DELETE', '/delivery-policies/personas/:persona', async (ctx) =>
    json(202, await v2.submit('clear_persona_policy_v2', ctx.params.persona, bodyOf(ctx))),
  );
  server.route('PUT', '/delivery-policies/personas/:persona/constraints', async (ctx) =>
    json(202, await v2.submit('set_persona_constraints', ctx.params.persona, bodyOf(ctx))),
  );

  server.route('GET', '/policies/v3/:scope/:id', ({ params }) => json(200, v3.read(params.scope, params.id)));
  server.route('GET', '/policies/v3/:scope/:id/nonce', ({ params }) => json(200, v3.nonce(params.scope, params.id)));
  server.route('POST', '/policies/v3/:scope/:id/prepare', (ctx) => json(200, v3.prepare(ctx.params.scope, ctx.params.id, bodyOf(ctx))));
  server.route('PUT', '/policies/v3/:scope/:id', async (ctx) => json(202, await v3.submit('set_policy_v3', ctx.params.scope, ctx.params.id, bodyOf(ctx))));
  server.route('DELETE', '/policies/v3/:scope/:id', async (ctx) => json(202, await v3.submit('clear_policy_v3', ctx.params.scope, ctx.params.id, bodyOf(ctx))));
}
