/**
 * The Relay's in-process path to this node's own Cache (http-api.md §10.4.1 step 2: "in-process when the
 * endpoint is one of this node's `public_urls.cache`"). The store runs through the Cache's own use-case with
 * the node identity, exactly as a node-signed request that passed §10.6 — no socket, no address guard, and no
 * JSON either way: an envelope the Relay already parsed, verified and resolved is handed over as such
 * (`CacheService.storeAdmitted`), any other as its text (`CacheService.store`, parsed as a body over HTTP), and
 * the Cache answers in its wire types (`src/wire/`), which the Relay reads as it reads an HTTP answer.
 */
import { randomUUID } from 'node:crypto';
import type { Clock } from '../base/clock.js';
import { DdnError } from '../base/errors.js';
import type { RequestTrace } from '../base/request-trace.js';
import { storeResponse } from '../cache/views.js';
import type { CacheService } from '../cache/service.js';
import { errorBody, toDdnError } from '../http/error-body.js';
import { parseJsonBody } from '../http/json-body.js';
import { nodeNonceClaim, type AuthenticatedNode } from '../shared/node-auth.js';
import type { NodeIdentity } from '../protocol/node-signature.js';
import type { CacheAnswer, LocalCachePort, StoreItem } from '../relay/cache-store-client.js';

/** How the Relay and the Cache of the node share their lookups. */
export interface LocalCacheOptions {
  /**
   * The Relay reads the DID records the Cache reads (one DirectoryPort for both): the Cache then takes the Relay's
   * sender-signature check as its own. False when the Relay may reuse records the Cache asks for afresh.
   */
  sharedDidRecords: boolean;
}

/** A {@link LocalCachePort} over `cache`; each store carries a fresh node nonce. */
export function localCachePort(cache: CacheService, clock: Clock, skewSeconds: number, o: LocalCacheOptions): LocalCachePort {
  const nodeOf = (node: NodeIdentity): AuthenticatedNode => {
    const verified = {
      nodeDid: node.did,
      serviceId: node.serviceId,
      keyId: node.keyId,
      nonce: randomUUID(),
      nonceExpiresAtMs: clock.nowMs() + skewSeconds * 1000,
    };
    return { ...verified, claim: nodeNonceClaim(verified) };
  };
  return {
    async store(item: StoreItem, node: NodeIdentity, trace?: RequestTrace): Promise<CacheAnswer> {
      try {
        const admitted = item.admitted;
        const r =
          admitted === undefined
            ? await cache.store({ body: bodyOf(item.bytes), rawBody: item.bytes, node: nodeOf(node) }, trace)
            : await cache.storeAdmitted({ ...admitted, rawBody: item.bytes, node: nodeOf(node), senderVerified: o.sharedDidRecords }, trace);
        return { ok: true, body: storeResponse(r) };
      } catch (err) {
        const e = toDdnError(err);
        return { ok: false, status: e.status, body: errorBody(e) };
      }
    },
  };
}

/** The same parse as a body over HTTP (JSON object, nesting bound, no prototype keys). */
function bodyOf(raw: Buffer): Record<string, unknown> {
  const body = parseJsonBody(raw, 'application/json');
  if (body === undefined) throw new DdnError('invalid_json', 'not a JSON object');
  return body;
}
