/**
 * A read-only view of the Directory's routes for a mirror: every GET (and HEAD) route and the WebSocket route are
 * registered as is; every other route answers 403 `read_only_mirror` with the primary's URL, whatever it would have
 * done.
 */
import { DdnError } from '../base/errors.js';
import { routeOf, type HttpServer, type RouteHandler } from '../http/server.js';
import { asIs, isUpgrade, type RouteEntry } from '../http/route.js';
import { isRoleDefinition } from '../http/openapi.js';

/** The refusal of a write at a mirror. */
export function readOnlyRefusal(primaryUrl: string): DdnError {
  return new DdnError('read_only_mirror', `this is a read-only mirror; send writes to the primary Directory at ${primaryUrl}`, {
    primary_url: primaryUrl,
  });
}

/** `server`, with every non-GET route replaced by the refusal (its declared shapes kept, its only code the refusal). */
export function readOnlyServer(server: HttpServer, primaryUrl: string): HttpServer {
  const readOnly = (route: RouteEntry): RouteEntry =>
    isUpgrade(route) || route.method === 'GET' || route.method === 'HEAD'
      ? route
      : {
          ...route,
          errors: ['read_only_mirror'],
          parse: asIs,
          handle: () => {
            throw readOnlyRefusal(primaryUrl);
          },
        };
  return {
    fastify: server.fastify,
    add: (added) => server.add(isRoleDefinition(added) ? { ...added, routes: added.routes.map(readOnly) } : added.map(readOnly)),
    route: (method, pattern, handler, options) => server.add([readOnly(routeOf(method, pattern, handler as RouteHandler, options))]),
    routes: () => server.routes(),
    upgrades: () => server.upgrades(),
    adjustments: () => server.adjustments(),
  };
}
