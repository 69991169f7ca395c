/** Persona routes (http-api.md §7): thin handlers over PersonaService and PersonaChallenges. */
import { json, type RequestContext } from '../http/server.js';
import { bodyFields, type Route, type RouteContext, type Unchecked } from '../http/route.js';
import {
  ChallengeCreateBodySchema,
  ChallengeSchema,
  ChallengeStatusSchema,
  ChallengeVerifyBodySchema,
  ChallengeVerifySchema,
  OperatorNonceSchema,
  PersonaNoncesSchema,
  NamedPersonaPrepareBodySchema,
  NamedPersonaSubmitBodySchema,
  PersonaControlPrepareBodySchema,
  PersonaDnsSubmitBodySchema,
  PersonaPrepareSchema,
  PersonaRecordSchema,
  PersonaRevokeBodySchema,
  PersonaRotateBodySchema,
  PersonaSubmitSchema,
  PersonaTransferPrepareBodySchema,
  PersonaTransferSubmitBodySchema,
} from '../wire/personas.js';
import { codes, DID_READ, PERSONA, prepare, PREPARED, read, submit, SUBMITTED } from './route-kit.js';
import { splitTarget } from '../http/url.js';
import { parseChallengeCreate, parseChallengeVerify } from './challenge-requests.js';
import type { DirectoryService } from './service.js';
import type { PersonaRequest } from './changes/persona-common.js';
import { parseControlPrepare, parseControlSubmit } from './changes/persona-control.js';
import { parseDnsPersonaSubmit } from './changes/persona-dns.js';
import { parseNamedPrepare, parseNamedSubmit } from './changes/persona-named.js';
import { parseTransferPrepare, parseTransferSubmit } from './changes/persona-transfer.js';
import { dnsPersonaOf, namedPersonaOf } from './persona-fields.js';
import { assertDid, parsePersonaName } from './submission.js';

/** A DNS challenge's own refusals (§7.2, §7.3). */
const CHALLENGE = [
  'challenge_not_found',
  'challenge_expired',
  'challenge_mismatch',
  'challenge_already_used',
  'dns_verification_failed',
  'service_unavailable',
] as const;

/** A persona change's path name, canonical by the route's rule (any, DNS or named persona), and its body's fields. */
const requestOf = <S>(
  ctx: Omit<RouteContext<'/:persona', S>, 'body'> & { body: Unchecked<S> | undefined },
  nameOf: (raw: string) => string,
): PersonaRequest<Unchecked<S>> => ({
  persona: nameOf(ctx.params.persona),
  body: bodyFields(ctx),
});

function firstValue(v: string | undefined): string | undefined {
  const first = v?.split(',')[0]?.trim();
  return first ? first : undefined;
}

/**
 * This Directory's base URL as the client reached it (§7.2 `directory_url`): the request's scheme (or
 * `X-Forwarded-Proto` behind a TLS terminator, so https is never downgraded) and host, plus any base path.
 */
export function directoryUrlOf(ctx: Pick<RequestContext, 'header' | 'protocol' | 'rawUrl'>): string | undefined {
  const host = firstValue(ctx.header('x-forwarded-host')) ?? ctx.header('host');
  if (!host) return undefined;
  const proto = firstValue(ctx.header('x-forwarded-proto')) ?? ctx.protocol;
  const path = splitTarget(ctx.rawUrl).path;
  const at = path.lastIndexOf('/personas/');
  return `${proto}://${host}${at > 0 ? path.slice(0, at) : ''}`;
}

/** The persona routes (§7). */
// eslint-disable-next-line max-lines-per-function -- a table: one route object per entry, in the spec's order
export function personaRoutes(service: DirectoryService): Route[] {
  const personas = service.personas;
  const profile = service.deps.profile;
  const challenges = service.personaChallenges;
  const persona = codes(PERSONA, ['invalid_persona']);
  const write = codes(SUBMITTED, PERSONA);
  const target = (ctx: { params: { persona: string } }): string => ctx.params.persona;
  return [
    read({
      url: '/personas/:persona',
      summary: 'A persona (§7.1)',
      answers: { 200: PersonaRecordSchema },
      errors: persona,
      handle: ({ params }) => json(200, personas.read(params.persona)),
    }),
    read({
      url: '/personas/:persona/nonces',
      summary: "A persona's nonces (§7.1)",
      answers: { 200: PersonaNoncesSchema },
      errors: persona,
      handle: ({ params }) => json(200, personas.nonces(params.persona)),
    }),
    read({
      url: '/persona-operators/:did/nonce',
      summary: "An operator's persona nonce (§7.1)",
      answers: { 200: OperatorNonceSchema },
      errors: DID_READ,
      parse: ({ params }) => {
        assertDid(params.did);
        return params.did;
      },
      handle: (did) => json(200, personas.operatorNonce(did)),
    }),
    submit({
      method: 'POST',
      url: '/personas/:persona/dns-challenges',
      summary: 'Create a DNS challenge (§7.2)',
      rateClass: 'dns-challenge',
      body: ChallengeCreateBodySchema,
      answers: { 201: ChallengeSchema },
      errors: codes(PREPARED, PERSONA, CHALLENGE),
      target,
      parse: (ctx) => parseChallengeCreate(ctx.params.persona, bodyFields(ctx)),
      handle: async (req, ctx) => json(201, await challenges.create(req, directoryUrlOf(ctx))),
    }),
    read({
      url: '/personas/:persona/dns-challenges/:challenge_id',
      summary: 'A DNS challenge and its status (§7.2)',
      answers: { 200: ChallengeStatusSchema },
      errors: codes(persona, CHALLENGE),
      handle: async (ctx) => json(200, await challenges.get(ctx.params.persona, ctx.params.challenge_id, directoryUrlOf(ctx))),
    }),
    submit({
      method: 'POST',
      url: '/personas/:persona/dns-challenges/:challenge_id/verify',
      summary: 'Verify a DNS challenge (§7.3)',
      rateClass: 'dns-challenge',
      body: ChallengeVerifyBodySchema,
      answers: { 200: ChallengeVerifySchema },
      errors: codes(PREPARED, PERSONA, CHALLENGE),
      target,
      parse: (ctx) => parseChallengeVerify(profile, ctx.params.persona, ctx.params.challenge_id, bodyFields(ctx)),
      handle: async (req) => json(200, await challenges.verify(req)),
    }),
    submit({
      method: 'PUT',
      url: '/personas/:persona',
      summary: 'Register or renew a DNS persona (§7.4)',
      body: PersonaDnsSubmitBodySchema,
      answers: { 202: PersonaSubmitSchema },
      errors: codes(write, CHALLENGE),
      target,
      parse: (ctx) => parseDnsPersonaSubmit(profile, requestOf(ctx, dnsPersonaOf)),
      handle: async (req) => json(202, await personas.submitRegistration(req)),
    }),
    prepare({
      method: 'POST',
      url: '/personas/:persona/named/prepare',
      summary: 'Prepare a named persona (§7.5)',
      body: NamedPersonaPrepareBodySchema,
      answers: { 200: PersonaPrepareSchema },
      errors: codes(PREPARED, PERSONA),
      parse: (ctx) => parseNamedPrepare(profile, requestOf(ctx, namedPersonaOf)),
      handle: (req) => json(200, personas.prepareNamed(req)),
    }),
    submit({
      method: 'PUT',
      url: '/personas/:persona/named',
      summary: 'Register a named persona (§7.5)',
      body: NamedPersonaSubmitBodySchema,
      answers: { 202: PersonaSubmitSchema },
      errors: write,
      target,
      parse: (ctx) => parseNamedSubmit(profile, requestOf(ctx, namedPersonaOf)),
      handle: async (req) => json(202, await personas.submitNamed(req)),
    }),
    prepare({
      method: 'POST',
      url: '/personas/:persona/prepare',
      summary: 'Prepare a revocation or controller rotation (§7.6)',
      body: PersonaControlPrepareBodySchema,
      answers: { 200: PersonaPrepareSchema },
      errors: codes(PREPARED, PERSONA),
      parse: (ctx) => parseControlPrepare(profile, requestOf(ctx, parsePersonaName)),
      handle: (req) => json(200, personas.prepareControl(req)),
    }),
    submit({
      method: 'DELETE',
      url: '/personas/:persona',
      summary: 'Revoke a persona (§7.6)',
      body: PersonaRevokeBodySchema,
      answers: { 202: PersonaSubmitSchema },
      errors: write,
      target,
      parse: (ctx) => parseControlSubmit(profile, 'revoke_persona', requestOf(ctx, parsePersonaName)),
      handle: async (req) => json(202, await personas.submitControl(req)),
    }),
    submit({
      method: 'PUT',
      url: '/personas/:persona/controllers',
      summary: "Rotate a persona's controllers (§7.6)",
      body: PersonaRotateBodySchema,
      answers: { 202: PersonaSubmitSchema },
      errors: write,
      target,
      parse: (ctx) => parseControlSubmit(profile, 'rotate_persona_controllers', requestOf(ctx, parsePersonaName)),
      handle: async (req) => json(202, await personas.submitControl(req)),
    }),
    prepare({
      method: 'POST',
      url: '/personas/:persona/transfer/prepare',
      summary: 'Prepare a persona transfer (§7.7)',
      body: PersonaTransferPrepareBodySchema,
      answers: { 200: PersonaPrepareSchema },
      errors: codes(PREPARED, PERSONA, CHALLENGE),
      parse: (ctx) => parseTransferPrepare(profile, requestOf(ctx, dnsPersonaOf)),
      handle: async (req) => json(200, await personas.prepareTransfer(req)),
    }),
    submit({
      method: 'PUT',
      url: '/personas/:persona/transfer',
      summary: 'Transfer a persona (§7.7)',
      body: PersonaTransferSubmitBodySchema,
      answers: { 202: PersonaSubmitSchema },
      errors: codes(write, CHALLENGE),
      target,
      parse: (ctx) => parseTransferSubmit(profile, requestOf(ctx, dnsPersonaOf)),
      handle: async (req) => json(202, await personas.submitTransfer(req)),
    }),
  ];
}
