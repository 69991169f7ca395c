/**
 * The declared shapes of every Directory route (OpenAPI), by method and pattern: success answer, path, query and
 * body, from src/wire/. The Directory's server wrapper (rate-classes.ts) gives each route its entry; a route with
 * neither its own declared success answer nor an entry here is refused when it is added, so no route documents a
 * bare JSON object. Documentation only: the services' own parsers check requests (and report the spec's codes).
 */
import { Type, type TSchema } from 'typebox';
import { ErrorBodySchema } from '../http/schemas.js';
import type { HttpMethod, RouteSchema } from '../http/server.js';
import { DID_ACTION_ROUTES } from '../protocol/did-actions.js';
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
import {
  AliasSchema,
  BlockSchema,
  DeliveryQuerySchema,
  DeliveryResolutionSchema,
  DeliveryViewSchema,
  DidRecordSchema,
  NoncesSchema,
  RegistrationStatusSchema,
  TransactionSchema,
} from '../wire/directory.js';
import {
  MutationPrepareBodySchema,
  MutationPrepareSchema,
  MutationSubmitBodySchema,
  MutationSubmitSchema,
  RegistrationPrepareBodySchema,
  RegistrationPrepareSchema,
  RegistrationSubmitBodySchema,
  RegistrationSubmitSchema,
} from '../wire/directory-writes.js';
import { CurrentPolicySchema, OverviewQuerySchema, OverviewSchema, SearchQuerySchema, SearchSchema } from '../wire/explorer.js';
import { ApplicationHistorySchema, DidHistorySchema, GenesisSchema, HistoryQuerySchema, PersonaHistorySchema } from '../wire/history.js';
import {
  ChallengeCreateBodySchema,
  ChallengeSchema,
  ChallengeStatusSchema,
  ChallengeVerifyBodySchema,
  ChallengeVerifySchema,
  OperatorNonceSchema,
  PersonaNoncesSchema,
  PersonaPrepareBodySchema,
  PersonaPrepareSchema,
  PersonaRecordSchema,
  PersonaSubmitBodySchema,
  PersonaSubmitSchema,
} from '../wire/personas.js';
import {
  DidPolicyV2Schema,
  PersonaPolicyV2Schema,
  PolicyV2PrepareBodySchema,
  PolicyV2PrepareSchema,
  PolicyV2SubmitBodySchema,
  PolicyV2SubmitSchema,
  PolicyV3NonceSchema,
  PolicyV3ParamsSchema,
  PolicyV3PrepareBodySchema,
  PolicyV3PrepareSchema,
  PolicyV3Schema,
  PolicyV3SubmitBodySchema,
  PolicyV3SubmitSchema,
} from '../wire/policies.js';

/** A non-JSON answer (the explorer's pages and assets), in the shape fastify's OpenAPI plugin takes. */
const textAnswer = (description: string, ...mediaTypes: string[]): TSchema =>
  ({ description, content: Object.fromEntries(mediaTypes.map((t) => [t, { schema: Type.String() }])) }) as unknown as TSchema;

interface Entry {
  summary: string;
  ok: [number, TSchema];
  /** Error statuses of the route besides those every route documents (src/http/schemas.ts), from the spec. */
  errors?: number[];
  body?: TSchema;
  querystring?: TSchema;
  params?: TSchema;
}

const read = (summary: string, ok: TSchema, more: Omit<Entry, 'summary' | 'ok'> = {}): Entry => ({ summary, ok: [200, ok], ...more });
const prepare = (summary: string, body: TSchema, ok: TSchema, more: Omit<Entry, 'summary' | 'ok' | 'body'> = {}): Entry => ({
  summary,
  body,
  ok: [200, ok],
  ...more,
});
const submit = (summary: string, body: TSchema, ok: TSchema, more: Omit<Entry, 'summary' | 'ok' | 'body'> = {}): Entry => ({
  summary,
  body,
  ok: [202, ok],
  ...more,
});

const APP = { params: ApplicationParamsSchema };
const V3 = { params: PolicyV3ParamsSchema };

const ENTRIES: Record<string, Entry> = {
  'GET /resolve/:did': read('The DID record (§3.1)', DidRecordSchema, { errors: [425] }),
  'GET /registration-status/:did': read('Registration status (§3.2)', RegistrationStatusSchema),
  'GET /dids/:did/nonces': read('Next usable nonces (§3.3)', NoncesSchema),
  'GET /transactions/:tx_hash': read('A transaction (§3.4)', TransactionSchema),
  'GET /aliases/:alias': read('The DID of an alias (§3.6)', AliasSchema),
  'GET /blocks/latest': read('The newest block (§3.5)', BlockSchema),
  'GET /blocks/:number': read('A block, or `latest` (§3.5)', BlockSchema, {
    params: Type.Object({ number: Type.String({ description: 'a block number or `latest`' }) }),
  }),
  'GET /delivery-view/:did': read('What a Relay or Cache in another process needs to deliver [ddn-internal]', DeliveryViewSchema, {
    querystring: DeliveryQuerySchema,
  }),
  'GET /delivery-resolution/:did': read('Recipient key and winning delivery rule (§6)', DeliveryResolutionSchema, {
    querystring: DeliveryQuerySchema,
    errors: [409, 422],
  }),
  'POST /register-did/prepare': prepare('Prepare a DID registration (§4.1)', RegistrationPrepareBodySchema, RegistrationPrepareSchema),
  'POST /register-did': submit('Register a DID (§4.2)', RegistrationSubmitBodySchema, RegistrationSubmitSchema),
  'POST /dids/:did/prepare': prepare('Prepare a DID mutation (§5.1)', MutationPrepareBodySchema, MutationPrepareSchema),

  'GET /personas/:persona': read('A persona (§7.1)', PersonaRecordSchema),
  'GET /personas/:persona/nonces': read("A persona's nonces (§7.1)", PersonaNoncesSchema),
  'GET /persona-operators/:did/nonce': read("An operator's persona nonce (§7.1)", OperatorNonceSchema),
  'POST /personas/:persona/dns-challenges': { summary: 'Create a DNS challenge (§7.2)', body: ChallengeCreateBodySchema, ok: [201, ChallengeSchema] },
  'GET /personas/:persona/dns-challenges/:challenge_id': read('A DNS challenge and its status (§7.2)', ChallengeStatusSchema),
  'POST /personas/:persona/dns-challenges/:challenge_id/verify': prepare('Verify a DNS challenge (§7.3)', ChallengeVerifyBodySchema, ChallengeVerifySchema, {
    errors: [410, 422],
  }),
  'PUT /personas/:persona': submit('Register or renew a DNS persona (§7.4)', PersonaSubmitBodySchema, PersonaSubmitSchema),
  'POST /personas/:persona/named/prepare': prepare('Prepare a named persona (§7.5)', PersonaPrepareBodySchema, PersonaPrepareSchema),
  'PUT /personas/:persona/named': submit('Register a named persona (§7.5)', PersonaSubmitBodySchema, PersonaSubmitSchema),
  'POST /personas/:persona/prepare': prepare('Prepare a revocation or controller rotation (§7.6)', PersonaPrepareBodySchema, PersonaPrepareSchema),
  'DELETE /personas/:persona': submit('Revoke a persona (§7.6)', PersonaSubmitBodySchema, PersonaSubmitSchema),
  'PUT /personas/:persona/controllers': submit("Rotate a persona's controllers (§7.6)", PersonaSubmitBodySchema, PersonaSubmitSchema),
  'POST /personas/:persona/transfer/prepare': prepare('Prepare a persona transfer (§7.7)', PersonaPrepareBodySchema, PersonaPrepareSchema),
  'PUT /personas/:persona/transfer': submit('Transfer a persona (§7.7)', PersonaSubmitBodySchema, PersonaSubmitSchema),

  'GET /delivery-policies/dids/:did': read("A DID's v2 policy and constraints (§8.2)", DidPolicyV2Schema),
  'GET /delivery-policies/personas/:persona': read("A persona's v2 policy and constraints (§8.2)", PersonaPolicyV2Schema),
  'POST /delivery-policies/prepare': prepare('Prepare a v2 policy write (§8.2)', PolicyV2PrepareBodySchema, PolicyV2PrepareSchema),
  'PUT /delivery-policies/dids/:did': submit("Set a DID's v2 policy (§8.2)", PolicyV2SubmitBodySchema, PolicyV2SubmitSchema),
  'DELETE /delivery-policies/dids/:did': submit("Clear a DID's v2 policy (§8.2)", PolicyV2SubmitBodySchema, PolicyV2SubmitSchema),
  'PUT /delivery-policies/dids/:did/constraints': submit("Set a DID's constraints (§8.2)", PolicyV2SubmitBodySchema, PolicyV2SubmitSchema),
  'PUT /delivery-policies/personas/:persona': submit("Set a persona's v2 policy (§8.2)", PolicyV2SubmitBodySchema, PolicyV2SubmitSchema),
  'DELETE /delivery-policies/personas/:persona': submit("Clear a persona's v2 policy (§8.2)", PolicyV2SubmitBodySchema, PolicyV2SubmitSchema),
  'PUT /delivery-policies/personas/:persona/constraints': submit("Set a persona's constraints (§8.2)", PolicyV2SubmitBodySchema, PolicyV2SubmitSchema),
  'GET /policies/v3/:scope/:id': read("A scope's v3 policy (§8.3)", PolicyV3Schema, V3),
  'GET /policies/v3/:scope/:id/nonce': read("A scope owner's v3 nonce (§8.3)", PolicyV3NonceSchema, V3),
  'POST /policies/v3/:scope/:id/prepare': prepare('Prepare a v3 policy write (§8.3)', PolicyV3PrepareBodySchema, PolicyV3PrepareSchema, V3),
  'PUT /policies/v3/:scope/:id': submit('Set a v3 policy (§8.3)', PolicyV3SubmitBodySchema, PolicyV3SubmitSchema, V3),
  'DELETE /policies/v3/:scope/:id': submit('Clear a v3 policy (§8.3)', PolicyV3SubmitBodySchema, PolicyV3SubmitSchema, V3),

  'GET /applications/:application_id': read('An application (§9)', ApplicationSchema, APP),
  'GET /applications/:application_id/policy': read("An application's policy (§9)", ApplicationPolicySchema, APP),
  'POST /applications/:application_id/registration/prepare': prepare(
    'Prepare an application registration (§9)',
    ApplicationRegistrationPrepareBodySchema,
    ApplicationRegistrationPrepareSchema,
    APP,
  ),
  'PUT /applications/:application_id/registration': submit('Register an application (§9)', ApplicationRegistrationBodySchema, ApplicationSubmitSchema, APP),
  'POST /applications/:application_id/authorization/prepare': prepare(
    'Prepare an application change (§9)',
    ApplicationAuthorizationPrepareBodySchema,
    ApplicationAuthorizationPrepareSchema,
    APP,
  ),
  'PUT /applications/:application_id/authorization': submit('Change an application (§9)', ApplicationAuthorizationBodySchema, ApplicationSubmitSchema, APP),

  'GET /overview': read('Counts of DIDs, personas and applications; the latest operations and blocks (finalized)', OverviewSchema, {
    querystring: OverviewQuerySchema,
  }),
  'GET /search': read('Every record a DID, alias, persona, application id, transaction hash or block number names', SearchSchema, {
    querystring: SearchQuerySchema,
  }),
  'GET /policies/:scope/:id': read("A subject's delivery policy, v3 else v2, or none", CurrentPolicySchema, { params: PolicyV3ParamsSchema }),
  'GET /dids/:did/history': read("A DID's finalized operations, newest first", DidHistorySchema, { querystring: HistoryQuerySchema }),
  'GET /personas/:persona/history': read("A persona's finalized operations, newest first", PersonaHistorySchema, { querystring: HistoryQuerySchema }),
  'GET /applications/:application_id/history': read("An application's finalized operations, newest first", ApplicationHistorySchema, {
    querystring: HistoryQuerySchema,
    ...APP,
  }),
  'GET /export/genesis': read("The chain's genesis, for a mirror", GenesisSchema),
  'GET /explorer/assets/:file': read('An explorer asset (script or style)', textAnswer('the asset', 'text/javascript', 'text/css')),
};

for (const [action, r] of Object.entries(DID_ACTION_ROUTES)) {
  ENTRIES[`${r.method} ${r.pattern}`] = submit(`DID mutation \`${action}\` (§5.2)`, MutationSubmitBodySchema, MutationSubmitSchema);
}

/** The explorer's pages (`/explorer`, `/explorer/:p1`, …): HTML. */
const EXPLORER_PAGE = read('The explorer (HTML)', textAnswer('an HTML page', 'text/html'));

/** The declared shapes of a Directory route; undefined when none are declared (a programming error). */
export function directoryRouteSchema(method: HttpMethod, pattern: string): RouteSchema | undefined {
  const e = ENTRIES[`${method} ${pattern}`] ?? (/^\/explorer(\/:p[0-9]+)*$/.test(pattern) ? EXPLORER_PAGE : undefined);
  if (e === undefined) return undefined;
  const response: Record<number, TSchema> = { [e.ok[0]]: e.ok[1] };
  // every change can be refused by the signer, key or state checks (403) and by a nonce or state conflict (409)
  for (const status of [...(method === 'GET' ? [] : [403, 409]), ...(e.errors ?? [])]) response[status] = ErrorBodySchema;
  const out: RouteSchema = { summary: e.summary, response };
  if (e.params !== undefined) out.params = e.params;
  if (e.querystring !== undefined) out.querystring = e.querystring;
  if (e.body !== undefined) out.body = e.body;
  return out;
}
