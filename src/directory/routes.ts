/**
 * The Directory's routes (http-api.md §3–§9), one object each (src/http/route.ts, declared through route-kit.ts):
 * thin handlers over DirectoryService and its use-cases. {@link directoryRoutes} is the role's one list; the
 * OpenAPI document is built from it.
 */
import { Type, type Static } from 'typebox';
import { DdnError } from '../base/errors.js';
import { json, jsonPayload, type HttpServer } from '../http/server.js';
import { bodyFields, isUpgrade, type Route, type RouteEntry } from '../http/route.js';
import type { DirectoryLedger } from '../ledger/ports.js';
import type { RoleDefinition } from '../http/openapi.js';
import { deliveryViewToJson } from '../ports/directory-port-json.js';
import { canonicalPersona } from '../protocol/persona-name.js';
import { explorerRoutes } from '../explorer/routes.js';
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
  mutationSubmitBodySchema,
  MutationSubmitSchema,
  RegistrationPrepareBodySchema,
  RegistrationPrepareSchema,
  RegistrationSubmitBodySchema,
  RegistrationSubmitSchema,
} from '../wire/directory-writes.js';
import { ACTIONS } from './actions.js';
import { parseDidActionPrepare, parseDidActionSubmit } from './changes/did-actions.js';
import { parseRegistrationPrepare, parseRegistrationSubmit } from './changes/did-registration.js';
import { applicationRoutes } from './application-routes.js';
import { exportRoutes, type ExportFeedParts } from './export-routes.js';
import { explorerReadRoutes } from './explorer-read-routes.js';
import { didResolutionRoutes } from './did-resolution-routes.js';
import { historyRoutes } from './history-routes.js';
import { LocalDirectoryPort } from './local-port.js';
import { profileDocument } from './openapi-profile.js';
import { personaRoutes } from './persona-routes.js';
import { policyRoutes } from './policy-routes.js';
import { codes, DID_READ, PREPARED, prepare, read, REGISTRATION, submit, SUBMITTED } from './route-kit.js';
import { assertDid, type DirectoryService } from './service.js';

/** The §3 reads and §6 resolutions. */
// eslint-disable-next-line max-lines-per-function -- a table: one route object per entry, in the spec's order
function readRoutes(service: DirectoryService): Route[] {
  const resolved = service.resolveCache;
  // ddn-internal: what a Relay or Cache in another process asks through HttpDirectoryPort (src/ports).
  const port = new LocalDirectoryPort(service.deps.ledger, service.deps.clock);
  return [
    read({
      url: '/resolve/:did',
      summary: 'The DID record (§3.1)',
      answers: { 200: DidRecordSchema },
      errors: [...DID_READ, 'registration_pending'],
      handle: ({ params }) => jsonPayload(200, resolved.body(params.did)),
    }),
    read({
      url: '/registration-status/:did',
      summary: 'Registration status (§3.2)',
      answers: { 200: RegistrationStatusSchema },
      errors: DID_READ,
      handle: ({ params }) => json(200, service.registrationStatus(params.did)),
    }),
    read({
      url: '/dids/:did/nonces',
      summary: 'Next usable nonces (§3.3)',
      answers: { 200: NoncesSchema },
      errors: DID_READ,
      handle: ({ params }) => json(200, service.nonces(params.did)),
    }),
    read({
      url: '/transactions/:tx_hash',
      summary: 'A transaction (§3.4)',
      answers: { 200: TransactionSchema },
      errors: ['invalid_request', 'transaction_not_found'],
      handle: ({ params }) => json(200, service.transaction(params.tx_hash)),
    }),
    read({
      url: '/blocks/latest',
      summary: 'The newest block (§3.5)',
      answers: { 200: BlockSchema },
      errors: ['block_not_found'],
      handle: () => json(200, service.block('latest')),
    }),
    read({
      url: '/blocks/:number',
      summary: 'A block, or `latest` (§3.5)',
      params: Type.Object({ number: Type.String({ description: 'a block number or `latest`' }) }),
      answers: { 200: BlockSchema },
      errors: ['invalid_request', 'block_not_found'],
      handle: ({ params }) => json(200, service.block(params.number)),
    }),
    read({
      url: '/aliases/:alias',
      summary: 'The DID of an alias (§3.6)',
      answers: { 200: AliasSchema },
      errors: ['invalid_alias', 'alias_not_found'],
      handle: ({ params }) => json(200, service.aliasLookup(params.alias)),
    }),
    read({
      url: '/delivery-view/:did',
      summary: 'What a Relay or Cache in another process needs to deliver [ddn-internal]',
      query: DeliveryQuerySchema,
      answers: { 200: DeliveryViewSchema },
      errors: [...DID_READ, 'invalid_persona'],
      parse: ({ params, query }) => {
        assertDid(params.did);
        let persona: string | null = null;
        if (query.persona !== undefined) {
          persona = canonicalPersona(query.persona) ?? null;
          if (persona === null) throw new DdnError('invalid_persona', 'invalid persona');
        }
        return { did: params.did, persona, tag: query.tag ?? null };
      },
      handle: async ({ did, persona, tag }) => {
        const view = await port.resolveDelivery(did, persona, tag);
        if (!view) throw new DdnError('did_not_found', 'DID not found', { did });
        // the port's JSON form is untyped (src/ports/directory-port-json.ts): its members are the schema's
        return json(200, deliveryViewToJson(view) as Static<typeof DeliveryViewSchema>);
      },
    }),
    read({
      url: '/delivery-resolution/:did',
      summary: 'Recipient key and winning delivery rule (§6)',
      query: DeliveryQuerySchema,
      answers: { 200: DeliveryResolutionSchema },
      errors: [...DID_READ, 'invalid_request', 'invalid_persona', 'did_deactivated', 'key_agreement_not_found', 'persona_not_deliverable', 'persona_not_found'],
      handle: ({ params, query }) => {
        const r = service.deliveryResolution(params.did, query);
        return json(200, r.body, { 'cache-control': r.cacheControl });
      },
    }),
  ];
}

/** §4 registration and §5 DID changes: each route's parser reads the request's shape, the use-case its state. */
function didChangeRoutes(service: DirectoryService): Route[] {
  const registration = codes(PREPARED, REGISTRATION);
  const profile = service.deps.profile;
  return [
    prepare({
      method: 'POST',
      url: '/register-did/prepare',
      summary: 'Prepare a DID registration (§4.1)',
      rateClass: 'registration',
      body: RegistrationPrepareBodySchema,
      answers: { 200: RegistrationPrepareSchema },
      errors: registration,
      parse: (ctx) => parseRegistrationPrepare(profile, bodyFields(ctx)),
      handle: (input) => json(200, service.prepareParsedRegistration(input)),
    }),
    // registration has no target before the DID exists: its budget is the client address's
    prepare({
      method: 'POST',
      url: '/register-did',
      summary: 'Register a DID (§4.2)',
      rateClass: 'registration',
      body: RegistrationSubmitBodySchema,
      answers: { 202: RegistrationSubmitSchema },
      errors: codes(SUBMITTED, REGISTRATION),
      parse: (ctx) => parseRegistrationSubmit(profile, bodyFields(ctx)),
      handle: async (input) => json(202, await service.submitParsedRegistration(input)),
    }),
    prepare({
      method: 'POST',
      url: '/dids/:did/prepare',
      summary: 'Prepare a DID mutation (§5.1)',
      body: MutationPrepareBodySchema,
      answers: { 200: MutationPrepareSchema },
      errors: codes(PREPARED, REGISTRATION),
      parse: (ctx) => parseDidActionPrepare(ctx.params.did, bodyFields(ctx)),
      handle: (input) => json(200, service.prepareParsedMutation(input)),
    }),
    ...ACTIONS.map((spec) =>
      submit({
        method: spec.method,
        url: spec.pattern,
        summary: `DID mutation \`${spec.action}\` (§5.2)`,
        body: mutationSubmitBodySchema(spec.action),
        answers: { 202: MutationSubmitSchema },
        errors: codes(SUBMITTED, REGISTRATION),
        target: (ctx) => ctx.params.did,
        parse: (ctx) => parseDidActionSubmit(profile, { spec, params: ctx.params, body: bodyFields(ctx) }),
        handle: async (input) => json(202, await service.submitParsedMutation(input)),
      }),
    ),
  ];
}

/**
 * `entry`, answering from a pool that holds every pending change this process has heard of: with a ledger shared
 * by several processes, a change another process accepted is copied when a read needs it, not as it comes
 * (src/store/postgres/ledger-sync.ts), so every route that reads the pool — all but a submission (a `202`), the
 * explorer's pages and the export feed — waits for that catch-up when one is due: one round trip, shared by the
 * reads arriving meanwhile. A submission's checks are confirmed by the
 * ledger's statement, and its refusals checked again on a fresh pool (write-pipeline.ts `submitChange`).
 */
function onFreshPool(ledger: Pick<DirectoryLedger, 'freshPool'>, entry: RouteEntry): RouteEntry {
  if (isUpgrade(entry) || 202 in entry.answers) return entry;
  const handle = entry.handle;
  return {
    ...entry,
    handle: (input, ctx) => {
      const fresh = ledger.freshPool();
      return fresh === undefined ? handle(input, ctx) : fresh.then(() => handle(input, ctx));
    },
  };
}

/**
 * `entry`, marked as a write another Directory process may take: every submission (a `202`) goes to the process
 * that produces the blocks when the deployment has one (src/http/hand-over.ts, docs/deployment.md).
 */
function handedOver(entry: RouteEntry): RouteEntry {
  return isUpgrade(entry) || !(202 in entry.answers) ? entry : { ...entry, handOver: true };
}

/**
 * The Directory's routes, in one list; with `exportFeed`, its export feed's too (`GET /export`, `/export/genesis`
 * and the WebSocket `/export/stream`, last: a node serves them, a test harness may not).
 */
export function directoryRoutes(service: DirectoryService, exportFeed?: ExportFeedParts): RouteEntry[] {
  // the explorer's pages and the export feed (finalized blocks only) read no pending change: they never wait
  const onPool = (routes: RouteEntry[]): RouteEntry[] => routes.map((r) => handedOver(onFreshPool(service.deps.ledger, r)));
  return [
    ...onPool(readRoutes(service)),
    ...onPool(personaRoutes(service)),
    ...onPool(policyRoutes(service)),
    ...onPool(applicationRoutes(service)),
    ...onPool(historyRoutes(service)),
    ...onPool(explorerReadRoutes(service)),
    ...onPool(didResolutionRoutes(service)),
    ...explorerRoutes(),
    ...onPool(didChangeRoutes(service)),
    ...(exportFeed === undefined ? [] : exportRoutes(exportFeed)),
  ];
}

/** The Directory role: its routes ({@link directoryRoutes}), and its document stating the profile's request forms. */
export function directoryRole(service: DirectoryService, exportFeed?: ExportFeedParts): RoleDefinition {
  return { routes: directoryRoutes(service, exportFeed), adjustDocument: (doc) => profileDocument(doc, service.deps.profile) };
}

/** Adds the Directory role to `server`. */
export function registerDirectoryRoutes(server: HttpServer, service: DirectoryService, exportFeed?: ExportFeedParts): void {
  server.add(directoryRole(service, exportFeed));
}
