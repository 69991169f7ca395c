/**
 * A read-only view of the Directory's routes for a mirror: every GET (and HEAD) route is registered as is; every
 * other route answers 403 `read_only_mirror` with the primary's URL, whatever it would have done.
 */
import { DdnError } from '../base/errors.js';
import type { HttpServer } from '../http/server.js';

/** The refusal of a write at a mirror. */
export function readOnlyRefusal(primaryUrl: string): DdnError {
  return new DdnError('read_only_mirror', `this is a read-only mirror; send writes to the primary Directory at ${primaryUrl}`, {
    primary_url: primaryUrl,
  });
}

/** `server`, with every non-GET route replaced by the refusal. */
export function readOnlyServer(server: HttpServer, primaryUrl: string): HttpServer {
  return {
    fastify: server.fastify,
    route(method, pattern, handler, options) {
      if (method === 'GET' || method === 'HEAD') server.route(method, pattern, handler, options);
      else
        server.route(method, pattern, () => {
          throw readOnlyRefusal(primaryUrl);
        });
    },
  };
}
