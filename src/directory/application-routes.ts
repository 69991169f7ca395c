/** Application routes (http-api.md §9): thin handlers over ApplicationService. */
import { json, type HttpServer, type RequestContext } from '../http/server.js';
import type { DirectoryService } from './service.js';
import type { Body } from './submission.js';

const bodyOf = (ctx: RequestContext<object>): Body => ctx.body ?? {};

export function registerApplicationRoutes(server: HttpServer, service: DirectoryService): void {
  const apps = service.applications;
  server.route('GET', '/applications/:application_id', ({ params }) => json(200, apps.read(params.application_id)));
  server.route('GET', '/applications/:application_id/policy', ({ params }) => json(200, apps.readPolicy(params.application_id)));
  server.route('POST', '/applications/:application_id/registration/prepare', (ctx) =>
    json(200, apps.prepareRegistration(ctx.params.application_id, bodyOf(ctx))),
  );
  server.route('PUT', '/applications/:application_id/registration', async (ctx) =>
    json(202, await apps.submitRegistration(ctx.params.application_id, bodyOf(ctx))),
  );
  server.route('POST', '/applications/:application_id/authorization/prepare', (ctx) =>
    json(200, apps.prepareAuthorization(ctx.params.application_id, bodyOf(ctx))),
  );
  server.route('PUT', '/applications/:application_id/authorization', async (ctx) =>
    json(202, await apps.submitAuthorization(ctx.params.application_id, bodyOf(ctx))),
  );
}
