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
import type { CacheService } from './service.js';
import { chunksBody, messageBody, messagesBody, storeResponse, summaryBody } from './views.js';

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

/** Stores count per client address (a Relay's, mostly) and per recipient; retrievals and acks per address. */
const STORE: RouteOptions = { rateClass: 'cache-store', rateTarget: (ctx) => envelopeRecipientOf(ctx.body) };
const RETRIEVAL: RouteOptions = { rateClass: 'cache-retrieval' };

/** Registers every Cache route on `server`. */
export function registerCacheRoutes(server: HttpServer, service: CacheService, options: CacheRouteOptions): void {
  const s = service.settings;
  const nodeAuth: NodeAuthDeps = {
    ...options.nodeAuth,
    serviceType: s.profile.relayServiceType,
    skewSeconds: s.proofClockSkewSeconds,
    ownBaseUrls: () => s.publicCacheUrls(),
  };

  server.route('POST', '/cache/store', async (ctx) => {
    const { body, raw } = requireBody(ctx);
    const node = await authenticateNodeRequest(
      { method: ctx.method, rawUrl: ctx.rawUrl, rawBody: raw, header: ctx.header },
      nodeAuth,
    );
    const result = await service.store({ body, rawBody: raw, node });
    return json(202, storeResponse(result));
  }, STORE);

  server.route('GET', '/cache/messages/:did', async (ctx) => {
    const did = pathDid(ctx.params.did);
    const body = await service.messages(proofFromHeaders(ctx.header, { did }), (page, nowMs) => messagesBody(did, page, nowMs));
    return jsonPayload(200, body);
  }, RETRIEVAL);

  const summary = async (ctx: RequestContext<{ did: string; device?: string }>) => {
    const did = pathDid(ctx.params.did);
    const proof = proofFromHeaders(ctx.header, { did, device: ctx.params.device });
    return jsonPayload(200, await service.summary(proof, (entries) => summaryBody(did, entries)));
  };
  server.route('GET', '/cache/summary/:did', summary, RETRIEVAL);
  server.route('GET', '/cache/summary/:did/:device', summary, RETRIEVAL);

  server.route('GET', '/cache/chunks/:did/:group', async (ctx) => {
    const did = pathDid(ctx.params.did);
    const body = await service.chunks(proofFromHeaders(ctx.header, { did }), ctx.params.group, (set, nowMs) =>
      chunksBody(did, set.entries[0]?.meta.chunk?.groupId ?? ctx.params.group, set, nowMs),
    );
    return jsonPayload(200, body);
  }, RETRIEVAL);

  server.route('GET', '/cache/message/:did/:id', async (ctx) => {
    const did = pathDid(ctx.params.did);
    return jsonPayload(200, await service.message(proofFromHeaders(ctx.header, { did }), ctx.params.id, messageBody));
  }, RETRIEVAL);

  server.route('POST', '/cache/ack', async (ctx) => {
    const { body } = requireBody(ctx);
    const deleted = await service.ack(ackFromBody(body, ctx.header));
    return json(200, { acked: deleted.length, message_ids: deleted });
  }, RETRIEVAL);

  server.route('GET', '/cache/limits', () => json(200, service.limits()), { rateClass: 'read' });
}
