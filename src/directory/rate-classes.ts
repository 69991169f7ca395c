/**
 * The request-rate class of every Directory route (src/http/rate-limit.ts), chosen from its method and
 * pattern so that no route is left out: reads count as `read`; DID registration (prepare and submit share one
 * budget) as `registration`; DNS challenges as `dns-challenge`; every other change as `directory-write`.
 * Writes (not their preparations) also count against their target, once they succeed: the DID, persona or
 * application of the path (a v3 policy's scope and id).
 */
import type { HttpMethod, HttpServer, RouteOptions } from '../http/server.js';
import type { RateClass } from '../http/rate-limit.js';
import { directoryRouteSchema } from './route-schemas.js';

function classOf(method: HttpMethod, pattern: string): RateClass {
  if (method === 'GET' || method === 'HEAD') return 'read';
  if (pattern.startsWith('/register-did')) return 'registration';
  if (pattern.includes('/dns-challenges')) return 'dns-challenge';
  return 'directory-write';
}

/** The route options of a Directory route: its class and, for a write with a path target, that target. */
export function directoryRateOptions(method: HttpMethod, pattern: string): RouteOptions {
  const rateClass = classOf(method, pattern);
  const first = /\/:([A-Za-z_]+)/.exec(pattern)?.[1];
  // a preparation changes nothing and needs no signature: only its client address is counted, so that nobody can
  // use up a DID's budget by preparing changes to it
  if (rateClass === 'read' || first === undefined || pattern.endsWith('/prepare')) return { rateClass };
  if (first === 'scope') return { rateClass, rateTarget: (ctx) => `${ctx.params.scope}/${ctx.params.id}` };
  return { rateClass, rateTarget: (ctx) => ctx.params[first] };
}

/**
 * The declared shapes of a Directory route: its own (explicit options win), else its entry in route-schemas.ts.
 * Throws (a programming error) for a route that declares no success answer.
 */
function documented(method: HttpMethod, pattern: string, options: RouteOptions): RouteOptions['schema'] {
  const own = options.schema ?? {};
  const declared = Object.keys(own.response ?? {}).some((s) => s.startsWith('2'));
  const schema = declared ? own : { ...directoryRouteSchema(method, pattern), ...own };
  if (!Object.keys(schema.response ?? {}).some((s) => s.startsWith('2'))) {
    throw new Error(`Directory route ${method} ${pattern} declares no success answer (src/directory/route-schemas.ts)`);
  }
  return { ...schema, tags: own.tags ?? ['directory'] };
}

/**
 * `server`, with every route added through it given its {@link directoryRateOptions} (explicit options win) and
 * its declared shapes (route-schemas.ts).
 */
export function withDirectoryRateClasses(server: HttpServer): HttpServer {
  return {
    fastify: server.fastify,
    route(method, pattern, handler, options = {}) {
      server.route(method, pattern, handler, { ...directoryRateOptions(method, pattern), ...options, schema: documented(method, pattern, options) });
    },
  };
}
