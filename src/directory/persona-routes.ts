/** Persona routes (http-api.md §7): thin handlers over PersonaService and PersonaChallenges. */
import { json, type HttpServer, type RequestContext } from '../http/server.js';
import { splitTarget } from '../http/url.js';
import type { DirectoryService } from './service.js';
import { assertDid, type Body } from './submission.js';

const bodyOf = (ctx: RequestContext<object>): Body => ctx.body ?? {};

function firstValue(v: string | undefined): string | undefined {
  const first = v?.split(',')[0]?.trim();
  return first ? first : undefined;
}

/**
 * This Directory's base URL as the client reached it (§7.2 `directory_url`): the request's scheme (or
 * `X-Forwarded-Proto` behind a TLS terminator, so https is never downgraded) and host, plus any base path.
 */
export function directoryUrlOf(ctx: RequestContext<object>): string | undefined {
  const host = firstValue(ctx.header('x-forwarded-host')) ?? ctx.header('host');
  if (!host) return undefined;
  const proto = firstValue(ctx.header('x-forwarded-proto')) ?? ctx.protocol;
  const path = splitTarget(ctx.rawUrl).path;
  const at = path.lastIndexOf('/personas/');
  return `${proto}://${host}${at > 0 ? path.slice(0, at) : ''}`;
}

export function registerPersonaRoutes(server: HttpServer, service: DirectoryService): void {
  const personas = service.personas;
  const challenges = service.personaChallenges;

  server.route('GET', '/personas/:persona', ({ params }) => json(200, personas.read(params.persona)));
  server.route('GET', '/personas/:persona/nonces', ({ params }) => json(200, personas.nonces(params.persona)));
  server.route('GET', '/persona-operators/:did/nonce', ({ params }) => {
    assertDid(params.did);
    return json(200, personas.operatorNonce(params.did));
  });

  server.route('POST', '/personas/:persona/dns-challenges', async (ctx) =>
    json(201, await challenges.create(ctx.params.persona, bodyOf(ctx), directoryUrlOf(ctx))),
  );
  server.route('GET', '/personas/:persona/dns-challenges/:challenge_id', async (ctx) =>
    json(200, await challenges.get(ctx.params.persona, ctx.params.challenge_id, directoryUrlOf(ctx))),
  );
  server.route('POST', '/personas/:persona/dns-challenges/:challenge_id/verify', async (ctx) =>
    json(200, await challenges.verify(ctx.params.persona, ctx.params.challenge_id, bodyOf(ctx))),
  );

  server.route('PUT', '/personas/:persona', async (ctx) => json(202, await personas.submitRegistration(ctx.params.persona, bodyOf(ctx))));
  server.route('POST', '/personas/:persona/named/prepare', (ctx) => json(200, personas.prepareNamed(ctx.params.persona, bodyOf(ctx))));
  server.route('PUT', '/personas/:persona/named', async (ctx) => json(202, await personas.submitNamed(ctx.params.persona, bodyOf(ctx))));
  server.route('POST', '/personas/:persona/prepare', (ctx) => json(200, personas.prepareControl(ctx.params.persona, bodyOf(ctx))));
  server.route('DELETE', '/personas/:persona', async (ctx) => json(202, await personas.submitControl(ctx.params.persona, bodyOf(ctx), 'revoke_persona')));
  server.route('PUT', '/personas/:persona/controllers', async (ctx) =>
    json(202, await personas.submitControl(ctx.params.persona, bodyOf(ctx), 'rotate_persona_controllers')),
  );
  server.route('POST', '/personas/:persona/transfer/prepare', async (ctx) => json(200, await personas.prepareTransfer(ctx.params.persona, bodyOf(ctx))));
  server.route('PUT', '/personas/:persona/transfer', async (ctx) => json(202, await personas.submitTransfer(ctx.params.persona, bodyOf(ctx))));
}
