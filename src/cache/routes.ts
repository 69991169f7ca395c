/**
 * The Cache routes (http-api.md §11): thin handlers that read the request (path DID, proof headers, body)
 * and call {@link CacheService}. `POST /cache/store` authenticates node-signed requests first (§11.1 step 2).
 */
import { DdnError } from '../base/errors.js';
import { authenticateNodeRequest, type NodeAuthDeps } from '../shared/node-auth.js';
import { envelopeRecipientOf } from '../http/rate-limit.js';
import { json, jsonPayload, type HttpServer, type RequestContext, type RouteOptions } from '../http/server.js';
import { isDid } from '../protocol/did.js';
import { ackFromBody, proofFromHeaders } from './proof-request.js';
import { Type, type TSchema } from 'typebox';
import { ErrorBodySchema, tableErrorAnswers } from '../http/schemas.js';
import { CACHE_ERRORS } from './error-codes.js';
import {
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

function requireBody(ctx: RequestContext<unknown>): { body: Record<string, unknown>; raw: Buffer } {
  if (ctx.body === undefined || ctx.rawBody === undefined) throw new DdnError('invalid_json', 'request body must be a JSON object');
  return { body: ctx.body, raw: ctx.rawBody };
}

/** Every error status of the Cache's routes with the codes §11.8 lists for it. */
const ERRORS = tableErrorAnswers(ErrorBodySchema, CACHE_ERRORS);

/** Stores count per client address (a Relay's, mostly) and per recipient; retrievals and acks per address. */
const STORE: RouteOptions = {
  rateClass: 'cache-store',
  rateTarget: (ctx) => envelopeRecipientOf(ctx.body),
  schema: {
    summary: 'Store an envelope (§11.1); node-signed when a Relay stores',
    tags: ['cache'],
    body: EnvelopeSchema,
    response: { ...ERRORS, 202: CacheStoreResponseSchema },
  },
};
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

/** A retrieval route (§11.5): retrieval budget, the recipient's proof in headers, `params` and its answer. */
function retrieval(summary: string, params: Parameters<typeof Type.Object>[0], ok: { response: Record<number, TSchema> }): RouteOptions {
  return {
    rateClass: 'cache-retrieval',
    schema: { summary, tags: ['cache'], params: Type.Object(params), headers: PROOF_HEADERS, response: { ...ERRORS, ...ok.response } },
  };
}

/** Registers every Cache route on `server`. */
export function registerCacheRoutes(server: HttpServer, service: CacheService, options: CacheRouteOptions): void {
  const s = service.settings;
  const nodeAuth: NodeAuthDeps = {
    ...options.nodeAuth,
    serviceType: s.profile.relayServiceType,
    skewSeconds: s.proofClockSkewSeconds,
    ownBaseUrls: () => s.publicCacheUrls(),
  };

  server.route(
    'POST',
    '/cache/store',
    async (ctx) => {
      const { body, raw } = requireBody(ctx);
      const node = await authenticateNodeRequest(
        { method: ctx.method, rawUrl: ctx.rawUrl, rawBody: raw, header: ctx.header, requestId: ctx.requestId },
        nodeAuth,
      );
      const result = await service.store({ body, rawBody: raw, node }, ctx.trace);
      return json(202, storeResponse(result));
    },
    STORE,
  );

  server.route(
    'GET',
    '/cache/messages/:did',
    async (ctx) => {
      const did = pathDid(ctx.params.did);
      const body = await service.messages(proofFromHeaders(ctx.header, { did }), (page, nowMs) => messagesBody(did, page, nowMs), ctx.trace);
      return jsonPayload(200, body);
    },
    retrieval('Pull the mailbox (§11.5)', DID, { response: { 200: CacheMessagesResponseSchema } }),
  );

  const summary = async (ctx: RequestContext<{ did: string; device?: string }>) => {
    const did = pathDid(ctx.params.did);
    const proof = proofFromHeaders(ctx.header, { did, device: ctx.params.device });
    return jsonPayload(200, await service.summary(proof, (entries) => summaryBody(did, entries), ctx.trace));
  };
  const summaryOk = { response: { 200: CacheSummaryResponseSchema } };
  server.route('GET', '/cache/summary/:did', summary, retrieval('The mailbox summary (§11.5)', DID, summaryOk));
  server.route(
    'GET',
    '/cache/summary/:did/:device',
    summary,
    retrieval('The mailbox summary for one device (§11.5)', { ...DID, device: Type.String() }, summaryOk),
  );

  server.route(
    'GET',
    '/cache/chunks/:did/:group',
    async (ctx) => {
      const did = pathDid(ctx.params.did);
      const body = await service.chunks(
        proofFromHeaders(ctx.header, { did }),
        ctx.params.group,
        (set, nowMs) => chunksBody(did, set.entries[0]?.meta.chunk?.groupId ?? ctx.params.group, set, nowMs),
        ctx.trace,
      );
      return jsonPayload(200, body);
    },
    retrieval(
      'A complete chunk set (§11.5)',
      { ...DID, group: Type.String({ description: 'message_group_id' }) },
      { response: { 200: CacheChunksResponseSchema } },
    ),
  );

  server.route(
    'GET',
    '/cache/message/:did/:id',
    async (ctx) => {
      const did = pathDid(ctx.params.did);
      return jsonPayload(200, await service.message(proofFromHeaders(ctx.header, { did }), ctx.params.id, messageBody, ctx.trace));
    },
    retrieval('One message (§11.5)', { ...DID, id: Type.String({ description: 'message_id' }) }, { response: { 200: CacheMessageResponseSchema } }),
  );

  server.route(
    'POST',
    '/cache/ack',
    async (ctx) => {
      const { body } = requireBody(ctx);
      const deleted = await service.ack(ackFromBody(body, ctx.header), ctx.trace);
      const answer: CacheAckResponse = { acked: deleted.length, message_ids: deleted };
      return json(200, answer);
    },
    {
      rateClass: 'cache-retrieval',
      schema: {
        summary: 'Acknowledge (delete) messages (§11.6)',
        tags: ['cache'],
        body: Type.Object({ did: Type.Optional(Type.String()), message_ids: Type.Array(Type.String()) }, { additionalProperties: true }),
        response: { ...ERRORS, 200: CacheAckResponseSchema },
      },
    },
  );

  server.route('GET', '/cache/limits', () => json(200, service.limits()), {
    rateClass: 'read',
    schema: { summary: "The Cache's limits", tags: ['cache'], response: { 200: CacheLimitsSchema } },
  });
}
