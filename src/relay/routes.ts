/**
 * The Relay routes (http-api.md §10.3, §10.5): thin handlers that read the request, authenticate node-signed
 * requests (step 2, §10.6) and call {@link RelayService}. Every answer — errors raised before the handler runs
 * included (413, 415, `invalid_json`) — is a DeliveryResult whose `http_status` equals the HTTP status.
 */
import { DdnError, isDdnError } from '../base/errors.js';
import { authenticateNodeRequest, type NodeAuthDeps } from '../shared/node-auth.js';
import { envelopeRecipientOf } from '../http/rate-limit.js';
import { json, type HttpResponse, type HttpServer, type RequestContext, type RouteOptions } from '../http/server.js';
import { failureResult, retryAfterOf, type DeliveryResult } from './delivery-result.js';
import { Type } from 'typebox';
import { tableErrorAnswers } from '../http/schemas.js';
import { RELAY_POST_ERRORS } from './error-codes.js';
import { DeliveryResultSchema, RelayLimitsSchema } from '../wire/relay.js';
import type { RelayService } from './service.js';
import { EnvelopeSchema } from '../wire/envelope.js';

/** What the routes need besides the service. */
export interface RelayRouteOptions {
  /** Node-request authentication (§10.6); the service type, own URLs and skew come from the settings. */
  nodeAuth: Omit<NodeAuthDeps, 'serviceType' | 'ownBaseUrls' | 'skewSeconds'>;
  /** Told of every DeliveryResult answered to `POST /relay` (metrics). */
  onResult?: (result: DeliveryResult) => void;
}

/** The envelope (http-api.md §2.7): a JSON object the Relay's own parser checks field by field, in the spec's order. */
function respond(result: DeliveryResult): HttpResponse {
  const retryAfter = retryAfterOf(result);
  return json(result.http_status, result, retryAfter === undefined ? undefined : { 'retry-after': String(retryAfter) });
}

/** Registers `POST /relay`, `POST /relay/{recipientDid}` and `GET /relay/limits` on `server`. */
export function registerRelayRoutes(server: HttpServer, service: RelayService, options: RelayRouteOptions): void {
  const s = service.settings;
  const nodeAuth: NodeAuthDeps = {
    ...options.nodeAuth,
    serviceType: s.profile.relayServiceType,
    skewSeconds: s.proofClockSkewSeconds,
    ownBaseUrls: () => s.publicRelayUrls(),
    lookupFailureCode: 'policy_lookup_failed',
  };
  const onResult = options.onResult;
  const observed = (result: DeliveryResult): DeliveryResult => {
    onResult?.(result);
    return result;
  };
  // A post answers DeliveryResult-shaped errors and counts per client address and per recipient.
  const relayPost: RouteOptions = {
    errorBody: (err) => observed(failureResult(err)),
    rateClass: 'relay-post',
    rateTarget: (ctx) => ctx.params.recipientDid ?? envelopeRecipientOf(ctx.body),
    errorSchema: DeliveryResultSchema,
  };
  const post = (summary: string, params?: ReturnType<typeof Type.Object>): RouteOptions => ({
    ...relayPost,
    schema: {
      summary,
      tags: ['relay'],
      ...(params === undefined ? {} : { params }),
      body: EnvelopeSchema,
      response: { ...tableErrorAnswers(DeliveryResultSchema, RELAY_POST_ERRORS), 202: DeliveryResultSchema },
    },
  });

  const relay = async (ctx: RequestContext<Record<string, string>>, pathRecipient: string | null): Promise<HttpResponse> => {
    if (ctx.body === undefined || ctx.rawBody === undefined) throw new DdnError('invalid_json', 'request body must be a JSON object');
    let node;
    try {
      node = await authenticateNodeRequest(
        { method: ctx.method, rawUrl: ctx.rawUrl, rawBody: ctx.rawBody, header: ctx.header, requestId: ctx.requestId },
        nodeAuth,
      );
    } catch (err) {
      if (isDdnError(err)) return respond(observed(failureResult(err)));
      throw err;
    }
    return respond(observed(await service.relay({ body: ctx.body, rawBody: ctx.rawBody, pathRecipient, node, trace: ctx.trace, client: ctx.clientKey })));
  };

  server.route('POST', '/relay', (ctx) => relay(ctx, null), post('Deliver an envelope (§10.3)'));
  server.route(
    'POST',
    '/relay/:recipientDid',
    (ctx) => relay(ctx, ctx.params.recipientDid),
    post('Deliver an envelope to the DID in the path (§10.3)', Type.Object({ recipientDid: Type.String({ description: 'The recipient DID' }) })),
  );
  server.route('GET', '/relay/limits', () => json(200, service.limits()), {
    rateClass: 'read',
    schema: { summary: "The Relay's limits (§10.5)", tags: ['relay'], response: { 200: RelayLimitsSchema } },
  });
}
