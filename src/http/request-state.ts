/**
 * What the server keeps on a request beyond fastify's own: marks set on Node's request before fastify sees it (a
 * refusal decided before the body, the response, the body's reservation, the arrival time) and the per-request
 * values decorated onto fastify's request (the raw body, the logger, the handler's context and parsed input).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyRequest } from 'fastify';
import type { BodyError, BodyHold } from './body-reader.js';
import type { RequestContext, RequestLogger } from './context.js';
import { parseQuery } from './url.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The body bytes as received (src/http/body-intake.ts); null when there were none. */
    ddnRawBody: Buffer | null;
    /** The request's logger, made on first use. */
    ddnLog: RequestLogger | null;
    /** The handler's view of the request, made by the route's parser step (src/http/route-runner.ts). */
    ddnCtx: RequestContext | null;
    /** The route parser's result. */
    ddnInput: unknown;
    /**
     * The body is read but not parsed by the content-type parser: a write that may be handed to another process
     * (src/http/route-runner.ts) is parsed only where it is admitted.
     */
    ddnParseLater: boolean;
  }
  interface FastifyContextConfig {
    /** The route object (src/http/route.ts). */
    ddn?: unknown;
  }
}

declare module 'node:http' {
  interface IncomingMessage {
    /**
     * A request answered without reading its body (an unsupported `Expect`, or `Expect: 100-continue` with a body
     * announced over the limit): the error is set on Node's request before fastify sees it, and answered by the
     * route it reaches (so the Relay's carries its DeliveryResult).
     */
    ddnRefusal?: BodyError;
    /** The response of a request (set before fastify sees it), so a body's reservation ends with its answer. */
    ddnResponse?: ServerResponse;
    /** The reservation of a request's body, made when its bytes are first reserved. */
    ddnHold?: BodyHold;
    /** When a request reached fastify (`performance.now()`), set when its id is made: the start of its answer time. */
    ddnArrivedAt?: number;
  }
}

export const refuse = (req: IncomingMessage, err: BodyError): void => {
  req.ddnRefusal = err;
};
export const refusalOf = (req: IncomingMessage): BodyError | undefined => req.ddnRefusal;
export const setResponse = (req: IncomingMessage, res: ServerResponse): void => {
  req.ddnResponse = res;
};
export const responseOf = (req: IncomingMessage): ServerResponse | undefined => req.ddnResponse;
export const holdOn = (req: IncomingMessage): BodyHold | undefined => req.ddnHold;
export const setHold = (req: IncomingMessage, hold: BodyHold): void => {
  req.ddnHold = hold;
};
export const markArrival = (req: IncomingMessage): void => {
  req.ddnArrivedAt = performance.now();
};

/** Seconds from `request`'s arrival until now. */
export function secondsSince(request: FastifyRequest): number {
  return (performance.now() - (request.raw.ddnArrivedAt ?? performance.now())) / 1000;
}

/** Marks the query of a request whose query string could not be decoded (the error is answered by the route). */
const BAD_QUERY = Symbol('bad query');
type Query = Record<string, string> & { [BAD_QUERY]?: unknown };

/** Our query rules (first occurrence wins, bad encoding is 400), as fastify's query parser: it must not throw. */
export function queryOf(raw: string): Query {
  try {
    return parseQuery(raw);
  } catch (err) {
    const q: Query = Object.create(null) as Query;
    q[BAD_QUERY] = err;
    return q;
  }
}

/** The decoding error of a query made by {@link queryOf}; undefined when it decoded. */
export const queryError = (query: unknown): unknown => (query as Query)[BAD_QUERY];
