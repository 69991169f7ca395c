/** Application routes (http-api.md §9): thin handlers over ApplicationService. */
import { json } from '../http/server.js';
import { bodyFields, type Route, type RouteContext, type Unchecked } from '../http/route.js';
import {
  ApplicationAuthorizationBodySchema,
  ApplicationAuthorizationPrepareBodySchema,
  ApplicationAuthorizationPrepareSchema,
  ApplicationParamsSchema,
  ApplicationPolicySchema,
  ApplicationRegistrationBodySchema,
  ApplicationRegistrationPrepareBodySchema,
  ApplicationRegistrationPrepareSchema,
  ApplicationSchema,
  ApplicationSubmitSchema,
} from '../wire/applications.js';
import { APPLICATION, codes, prepare, PREPARED, read, submit, SUBMITTED } from './route-kit.js';
import type { DirectoryService } from './service.js';
import { parseAuthorizationPrepare, parseAuthorizationSubmit } from './changes/application-authorization.js';
import { parseApplicationRegistrationPrepare, parseApplicationRegistrationSubmit, type ApplicationRequest } from './changes/application-registration.js';

/** The application id of the path and the body's fields (`{}` when absent). */
const requestOf = <S>(ctx: Omit<RouteContext<'/:application_id', S>, 'body'> & { body: Unchecked<S> | undefined }): ApplicationRequest<Unchecked<S>> => ({
  id: ctx.params.application_id,
  body: bodyFields(ctx),
});

/** The application routes (§9); a write's target is the application. */
export function applicationRoutes(service: DirectoryService): Route[] {
  const apps = service.applications;
  const params = ApplicationParamsSchema;
  const readErrors = codes(APPLICATION, ['policy_not_found']);
  const write = codes(SUBMITTED, APPLICATION);
  const target = (ctx: { params: { application_id: string } }): string => ctx.params.application_id;
  return [
    read({
      url: '/applications/:application_id',
      summary: 'An application (§9)',
      params,
      answers: { 200: ApplicationSchema },
      errors: readErrors,
      handle: ({ params }) => json(200, apps.read(params.application_id)),
    }),
    read({
      url: '/applications/:application_id/policy',
      summary: "An application's policy (§9)",
      params,
      answers: { 200: ApplicationPolicySchema },
      errors: readErrors,
      handle: ({ params }) => json(200, apps.readPolicy(params.application_id)),
    }),
    prepare({
      method: 'POST',
      url: '/applications/:application_id/registration/prepare',
      summary: 'Prepare an application registration (§9)',
      params,
      body: ApplicationRegistrationPrepareBodySchema,
      answers: { 200: ApplicationRegistrationPrepareSchema },
      errors: codes(PREPARED, APPLICATION),
      parse: (ctx) => parseApplicationRegistrationPrepare(requestOf(ctx)),
      handle: (r) => json(200, apps.prepareRegistration(r)),
    }),
    submit({
      method: 'PUT',
      url: '/applications/:application_id/registration',
      summary: 'Register an application (§9)',
      params,
      body: ApplicationRegistrationBodySchema,
      answers: { 202: ApplicationSubmitSchema },
      errors: write,
      target,
      parse: (ctx) => parseApplicationRegistrationSubmit(requestOf(ctx)),
      handle: async (r) => json(202, await apps.submitRegistration(r)),
    }),
    prepare({
      method: 'POST',
      url: '/applications/:application_id/authorization/prepare',
      summary: 'Prepare an application change (§9)',
      params,
      body: ApplicationAuthorizationPrepareBodySchema,
      answers: { 200: ApplicationAuthorizationPrepareSchema },
      errors: codes(PREPARED, APPLICATION),
      parse: (ctx) => parseAuthorizationPrepare(requestOf(ctx)),
      handle: (req) => json(200, apps.prepareAuthorization(req)),
    }),
    submit({
      method: 'PUT',
      url: '/applications/:application_id/authorization',
      summary: 'Change an application (§9)',
      params,
      body: ApplicationAuthorizationBodySchema,
      answers: { 202: ApplicationSubmitSchema },
      errors: write,
      target,
      parse: (ctx) => parseAuthorizationSubmit(requestOf(ctx)),
      handle: async (req) => json(202, await apps.submitAuthorization(req)),
    }),
  ];
}
