/**
 * The Cache routes (http-api.md §11): thin handlers that read the request (path DID, proof headers, body)
 * and call {@link CacheService}. `POST /cache/store` authenticates node-signed requests first (§11.1 step 2).
 */
import { DdnError } from '../base/errors.js';
import { authenticateNodeRequest, type NodeAuthDeps } from '../shared/node-auth.js';
import { envelopeRecipientOf } from '../http/rate-limit.js';
import { json, jsonPayload, type HttpServer } from '../http/server.js';
import { asIs, defineRoute, type Route, type RouteContext, type Unchecked } from '../http/route.js';
import { withProfileLabel } from '../http/openapi-additions.js';
import type { RoleDefinition } from '../http/openapi.js';
import { isDid } from '../protocol/did.js';
import { ackFromBody, proofFromHeaders, type ProofInput } from './proof-request.js';
import { Type, type TSchema } from 'typebox';
import { CACHE_RETRIEVAL_ERRORS, CACHE_STORE_ERRORS } from './error-codes.js';
import {
  CacheAckBodySchema,
  CacheAckResponseSchema,
  type CacheAckResponse,
  CacheChunksResponseSchema,
  CacheLimitsSchema,
  CacheMessageResponseSchema,
  CacheMessagesResponseSchema,
  CacheStoreResponseSchema,
  CacheSummaryResponseSchema,
} from '../wire/cache.js';
import type { CacheService } from './service.js';
import { chunksBody, messageBody, messagesBody, storeResponse, summaryBody } from './views.js';
import { EnvelopeSchema } from '../wire/envelope.js';

/** What the routes need besides the service. */
export interface CacheRouteOptions {
  /** Node-request authentication for `POST /cache/store` (§10.6). */
  nodeAuth: Omit<NodeAuthDeps, 'serviceType' | 'ownBaseUrls' | 'skewSeconds'>;
}

function pathDid(did: string): string {
  if (!isDid(did)) throw new DdnError('invalid_did', 'the path is not a valid DID', { field: 'did' });
  return did;
}

/** The JSON object body, typed by the route's body schema `S`: required before anything else is checked. */
function jsonObjectOf<S extends TSchema>(ctx: RouteContext<string, S>): Unchecked<S> {
  if (ctx.body === undefined || ctx.rawBody === undefined) throw new DdnError('invalid_json', 'request body must be a JSON object');
  return ctx.body;
}

/**
 * A store's body and its bytes. The body's fields are the envelope's, unchecked: the service checks them in
 * §11.1's order, after the node signature (step 2).
 */
function storeOf(ctx: RouteContext<string, typeof EnvelopeSchema>): { body: Unchecked<typeof EnvelopeSchema>; raw: Buffer } {
  const body = jsonObjectOf(ctx);
  if (ctx.rawBody === undefined) throw new DdnError('invalid_json', 'request body must be a JSON object');
  return { body, raw: ctx.rawBody };
}

const DID = { did: Type.String({ description: 'The recipient DID' }) };

/** The retrieval proof's headers (§11.4): the six required, the two optional ones that must agree with the path. */
const PROOF_HEADERS = Type.Object({
  'X-Service-Id': Type.String({ description: "the recipient's Cache service id (a DID URL)" }),
  'X-Cache-Endpoint': Type.String({ description: 'this Cache as the service publishes it' }),
  'X-Key-Id': Type.String({ description: "a verification method listed in the service's `authorization`" }),
  'X-Timestamp': Type.String({ description: 'ISO-8601, Unix ms or Unix s, within the clock skew' }),
  'X-Nonce': Type.String({ description: 'unique per operation, DID and key' }),
  'X-Signature': Type.String({ description: 'Base64 Ed25519 signature of the proof text' }),
  'X-Recipient-DID': Type.Optional(Type.String({ description: 'when sent, equal to the path DID' })),
  'X-Device-Id': Type.Optional(Type.String({ description: 'when sent, equal to the path device' })),
});

/** A retrieval's request: the path DID and the recipient's proof, read from the headers in the spec's order. */
interface Retrieval {
  did: string;
  proof: ProofInput;
}

/** A retrieval route's request: the path DID (and device), the proof headers. */
type RetrievalCtx = Omit<RouteContext<'/:did', undefined, undefined, typeof PROOF_HEADERS>, 'params'> & { params: { did: string; device?: string } };

/** The parser of a retrieval (§11.4): the path DID first, then the proof headers. */
function retrievalOf(ctx: RetrievalCtx): Retrieval {
  const did = pathDid(ctx.params.did);
  return { did, proof: proofFromHeaders(ctx.header, ctx.params.device === undefined ? { did } : { did, device: ctx.params.device }) };
}

/** The fields every retrieval route shares: the retrieval budget, the proof headers, the proof's refusals. */
const RETRIEVAL = { method: 'GET' as const, tags: ['cache'], headers: PROOF_HEADERS, rateClass: 'cache-retrieval' as const, parse: retrievalOf };

/** The Cache's routes (§11). */
// eslint-disable-next-line max-lines-per-function -- a table: one route object per entry, in the spec's order
export function cacheRoutes(service: CacheService, options: CacheRouteOptions): Route[] {
  const s = service.settings;
  const nodeAuth: NodeAuthDeps = {
    ...options.nodeAuth,
    serviceType: s.profile.relayServiceType,
    skewSeconds: s.proofClockSkewSeconds,
    ownBaseUrls: () => s.publicCacheUrls(),
  };
  const summary = async ({ did, proof }: Retrieval, ctx: RetrievalCtx) =>
    jsonPayload(200, await service.summary(proof, (entries) => summaryBody(did, entries), ctx.trace));
  return [
    defineRoute({
      method: 'POST',
      url: '/cache/store',
      summary: 'Store an envelope (§11.1); node-signed when a Relay stores',
      tags: ['cache'],
      body: EnvelopeSchema,
      answers: { 202: CacheStoreResponseSchema },
      errors: CACHE_STORE_ERRORS,
      // stores count per client address (a Relay's, mostly) and per recipient
      rateClass: 'cache-store',
      rateTarget: (ctx) => envelopeRecipientOf(ctx.body),
      parse: storeOf,
      handle: async ({ body, raw }, ctx) => {
        const node = await authenticateNodeRequest(
          { method: ctx.method, rawUrl: ctx.rawUrl, rawBody: raw, header: ctx.header, requestId: ctx.requestId },
          nodeAuth,
        );
        const result = await service.store({ body, rawBody: raw, node }, ctx.trace);
        return json(202, storeResponse(result));
      },
    }),
    defineRoute({
      ...RETRIEVAL,
      url: '/cache/messages/:did',
      summary: 'Pull the mailbox (§11.5)',
      params: Type.Object(DID),
      answers: { 200: CacheMessagesResponseSchema },
      errors: CACHE_RETRIEVAL_ERRORS,
      handle: async ({ did, proof }, ctx) => jsonPayload(200, await service.messages(proof, (page, nowMs) => messagesBody(did, page, nowMs), ctx.trace)),
    }),
    defineRoute({
      ...RETRIEVAL,
      url: '/cache/summary/:did',
      summary: 'The mailbox summary (§11.5)',
      params: Type.Object(DID),
      answers: { 200: CacheSummaryResponseSchema },
      errors: CACHE_RETRIEVAL_ERRORS,
      handle: summary,
    }),
    defineRoute({
      ...RETRIEVAL,
      url: '/cache/summary/:did/:device',
      summary: 'The mailbox summary for one device (§11.5)',
      params: Type.Object({ ...DID, device: Type.String() }),
      answers: { 200: CacheSummaryResponseSchema },
      errors: CACHE_RETRIEVAL_ERRORS,
      handle: summary,
    }),
    defineRoute({
      ...RETRIEVAL,
      url: '/cache/chunks/:did/:group',
      summary: 'A complete chunk set (§11.5)',
      params: Type.Object({ ...DID, group: Type.String({ description: 'message_group_id' }) }),
      answers: { 200: CacheChunksResponseSchema },
      errors: [...CACHE_RETRIEVAL_ERRORS, 'chunk_set_not_found'],
      handle: async ({ did, proof }, ctx) =>
        jsonPayload(
          200,
          await service.chunks(
            proof,
            ctx.params.group,
            (set, nowMs) => chunksBody(did, set.entries[0]?.meta.chunk?.groupId ?? ctx.params.group, set, nowMs),
            ctx.trace,
          ),
        ),
    }),
    defineRoute({
      ...RETRIEVAL,
      url: '/cache/message/:did/:id',
      summary: 'One message (§11.5)',
      params: Type.Object({ ...DID, id: Type.String({ description: 'message_id' }) }),
      answers: { 200: CacheMessageResponseSchema },
      errors: [...CACHE_RETRIEVAL_ERRORS, 'message_not_found'],
      handle: async ({ proof }, ctx) => jsonPayload(200, await service.message(proof, ctx.params.id, messageBody, ctx.trace)),
    }),
    defineRoute({
      method: 'POST',
      url: '/cache/ack',
      summary: 'Acknowledge (delete) messages (§11.6)',
      tags: ['cache'],
      body: CacheAckBodySchema,
      answers: { 200: CacheAckResponseSchema },
      errors: CACHE_RETRIEVAL_ERRORS,
      rateClass: 'cache-retrieval',
      parse: (ctx) => ackFromBody(jsonObjectOf(ctx), ctx.header),
      handle: async (ack, ctx) => {
        const deleted = await service.ack(ack, ctx.trace);
        const answer: CacheAckResponse = { acked: deleted.length, message_ids: deleted };
        return json(200, answer);
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/cache/limits',
      summary: "The Cache's limits",
      tags: ['cache'],
      answers: { 200: CacheLimitsSchema },
      errors: [],
      rateClass: 'read',
      parse: asIs,
      handle: () => json(200, service.limits()),
    }),
  ];
}

/** The Cache role: its routes ({@link cacheRoutes}), its document labelled with the node's profile. */
export function cacheRole(service: CacheService, options: CacheRouteOptions): RoleDefinition {
  // the same document on every profile (test/app/openapi-types.test.ts), labelled with the node's
  return { routes: cacheRoutes(service, options), adjustDocument: (doc) => withProfileLabel(doc, service.settings.profile.p) };
}

/** Adds the Cache role to `server`. */
export function registerCacheRoutes(server: HttpServer, service: CacheService, options: CacheRouteOptions): void {
  server.add(cacheRole(service, options));
}
