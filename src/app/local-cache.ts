/**
 * The Relay's in-process path to this node's own Cache (http-api.md §10.4.1 step 2: "in-process when the
 * endpoint is one of this node's `public_urls.cache`"). The store runs through the Cache's own use-case with
 * the node identity, exactly as a node-signed request that passed §10.6 — no socket, no address guard.
 */
import { randomUUID } from 'node:crypto';
import type { Clock } from '../base/clock.js';
import { DdnError, isDdnError } from '../base/errors.js';
import type { RequestTrace } from '../base/request-trace.js';
import { storeResponse } from '../cache/views.js';
import type { CacheService } from '../cache/service.js';
import { errorBody, toDdnError } from '../http/error-body.js';
import { parseJsonBody } from '../http/json-body.js';
import { nodeNonceClaim, type AuthenticatedNode } from '../shared/node-auth.js';
import type { NodeIdentity } from '../protocol/node-signature.js';
import type { LocalCachePort } from '../relay/cache-store-client.js';

/** A {@link LocalCachePort} over `cache`; each store carries a fresh node nonce. */
export function localCachePort(cache: CacheService, clock: Clock, skewSeconds: number): LocalCachePort {
  return {
    async store(rawBody: Buffer, node: NodeIdentity, trace?: RequestTrace) {
      // the same parse as a body over HTTP (JSON object, nesting bound, no prototype keys)
      let body: Record<string, unknown> | undefined;
      try {
        body = parseJsonBody(rawBody, 'application/json');
      } catch (err) {
        const e = toDdnError(err);
        return { status: e.status, body: { ...errorBody(e) } };
      }
      if (body === undefined) return { status: 400, body: { ...errorBody(new DdnError('invalid_json', 'not a JSON object')) } };
      const verified = {
        nodeDid: node.did,
        serviceId: node.serviceId,
        keyId: node.keyId,
        nonce: randomUUID(),
        nonceExpiresAtMs: clock.nowMs() + skewSeconds * 1000,
      };
      const authenticated: AuthenticatedNode = { ...verified, claim: nodeNonceClaim(verified) };
      try {
        const r = await cache.store({ body, rawBody, node: authenticated }, trace);
        return { status: 202, body: storeResponse(r) };
      } catch (err) {
        const e = isDdnError(err) ? err : toDdnError(err);
        return { status: e.status, body: { ...errorBody(e) } };
      }
    },
  };
}
