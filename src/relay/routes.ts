/**
 * The Relay routes (http-api.md §10.3, §10.5): thin handlers that read the request, authenticate node-signed
 * requests (step 2, §10.6) and call {@link RelayService}. Every answer — errors raised before the handler runs
 * included (413, 415, `invalid_json`) — is a DeliveryResult whose `http_status` equals the HTTP status.
 */
import { DdnError, isDdnError } from '../base/errors.js';
import { authenticateNodeRequest, type NodeAuthDeps } from '../shared/node-auth.js';
import { envelopeRecipientOf } from '../http/rate-limit.js';
import { json, jsonPayload, type HttpServer } from '../http/server.js';
import { asIs, defineRoute, type AnswerOf, type RouteContext, type RouteEntry, type Unchecked, type UpgradeRoute } from '../http/route.js';
import { withProfileLabel } from '../http/openapi-additions.js';
import type { RoleDefinition } from '../http/openapi.js';
import { deliveryResultText, failureResult, retryAfterOf, type DeliveryResult } from './delivery-result.js';
import { Type } from 'typebox';
import { relayPostErrors } from './error-codes.js';
import { DeliveryResultSchema, RelayLimitsSchema } from '../wire/relay.js';
import type { RelayService } from './service.js';
import { EnvelopeSchema } from '../wire/envelope.js';

/** What the routes need besides the service. */
export interface RelayRouteOptions {
  /** Node-request authentication (§10.6); the service type, own URLs and skew come from the settings. */
  nodeAuth: Omit<NodeAuthDeps, 'serviceType' | 'ownBaseUrls' | 'skewSeconds'>;
  /** Told of every DeliveryResult answered to `POST /relay` (metrics). */
  onResult?: (result: DeliveryResult) => void;
  /** The WebSocket route of live sessions (src/relay/websocket-route.ts `liveRoute`), last in the list; none: not served. */
  live?: UpgradeRoute;
}

/** A DeliveryResult answered with its own status (one of the statuses the Relay's table lists). */
function respond(result: DeliveryResult): AnswerOf<PostAnswers> {
  const retryAfter = retryAfterOf(result);
  const headers = retryAfter === undefined ? undefined : { 'retry-after': String(retryAfter) };
  return jsonPayload(result.http_status as 202, deliveryResultText(result), headers);
}

/** Every status `POST /relay` answers: its DeliveryResult, success or not. */
type PostAnswers = { 202: typeof DeliveryResultSchema };

/**
 * A post's request: its JSON object body and the bytes it was signed over (§10.6). The body's fields are the
 * envelope's, unchecked: the service checks them in §10.3's order, after the node signature (step 2).
 */
interface Post {
  body: Unchecked<typeof EnvelopeSchema>;
  rawBody: Buffer;
  pathRecipient: string | null;
}

/** The Relay's routes: `POST /relay`, `POST /relay/{recipientDid}`, `GET /relay/limits` and the live sessions' `/ws/{did}/{device}`. */
export function relayRoutes(service: RelayService, options: RelayRouteOptions): RouteEntry[] {
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
  const errors = relayPostErrors();

  type Ctx = RouteContext<string, typeof EnvelopeSchema>;
  const relay = async (post: Post, ctx: Ctx): Promise<AnswerOf<PostAnswers>> => {
    let node;
    try {
      node = await authenticateNodeRequest(
        { method: ctx.method, rawUrl: ctx.rawUrl, rawBody: post.rawBody, header: ctx.header, requestId: ctx.requestId },
        nodeAuth,
      );
    } catch (err) {
      if (isDdnError(err)) return respond(observed(failureResult(err)));
      throw err;
    }
    return respond(
      observed(
        await service.relay({ body: post.body, rawBody: post.rawBody, pathRecipient: post.pathRecipient, node, trace: ctx.trace, client: ctx.clientKey }),
      ),
    );
  };
  /** The post's body (a JSON object is required before anything else is checked). */
  const bodyOf = (ctx: Ctx, pathRecipient: string | null): Post => {
    if (ctx.body === undefined || ctx.rawBody === undefined) throw new DdnError('invalid_json', 'request body must be a JSON object');
    return { body: ctx.body, rawBody: ctx.rawBody, pathRecipient };
  };
  // A post answers DeliveryResult-shaped errors and counts per client address and per recipient.
  const post = {
    method: 'POST' as const,
    tags: ['relay'],
    body: EnvelopeSchema,
    answers: { 202: DeliveryResultSchema },
    errors,
    errorSchema: DeliveryResultSchema,
    errorBody: (err: DdnError) => observed(failureResult(err)),
    rateClass: 'relay-post' as const,
    handle: relay,
  };
  return [
    defineRoute({
      ...post,
      url: '/relay',
      summary: 'Deliver an envelope (§10.3)',
      rateTarget: (ctx) => envelopeRecipientOf(ctx.body),
      parse: (ctx) => bodyOf(ctx, null),
    }),
    defineRoute({
      ...post,
      url: '/relay/:recipientDid',
      summary: 'Deliver an envelope to the DID in the path (§10.3)',
      params: Type.Object({ recipientDid: Type.String({ description: 'The recipient DID' }) }),
      rateTarget: (ctx) => ctx.params.recipientDid,
      parse: (ctx) => bodyOf(ctx, ctx.params.recipientDid),
    }),
    defineRoute({
      method: 'GET',
      url: '/relay/limits',
      summary: "The Relay's limits (§10.5)",
      tags: ['relay'],
      answers: { 200: RelayLimitsSchema },
      errors: [],
      rateClass: 'read',
      parse: asIs,
      handle: () => json(200, service.limits()),
    }),
    ...(options.live === undefined ? [] : [options.live]),
  ];
}

/** The Relay role: its routes ({@link relayRoutes}), its document labelled with the node's profile. */
export function relayRole(service: RelayService, options: RelayRouteOptions): RoleDefinition {
  // the profile's document (its label; its routes, statuses and codes are the same on both profiles)
  return { routes: relayRoutes(service, options), adjustDocument: (doc) => withProfileLabel(doc, service.settings.profile.p) };
}

/** Adds the Relay role to `server`. */
export function registerRelayRoutes(server: HttpServer, service: RelayService, options: RelayRouteOptions): void {
  server.add(relayRole(service, options));
}
