/**
 * A route object run by fastify: the rate gate in `onRequest` (before the body is read), the route's parser in
 * `preHandler` (after the body is read and parsed as JSON: the request's refusals, path and query checks, then the
 * route's own spec-ordered checks), the handler with the parser's result, the write with its target's rate budget.
 */
import type { IncomingMessage } from 'node:http';
import type { FastifyReply, FastifyRequest, RouteHandlerMethod } from 'fastify';
import { DdnError } from '../base/errors.js';
import type { Answerer, Mounted } from './answers.js';
import { BodyError, isBodyless } from './body-reader.js';
import { Context, type HttpResponse, type RequestContext, type RequestLogger } from './context.js';
import { toDdnError } from './error-body.js';
import type { RateLimits } from './rate-limit.js';
import { queryError, refusalOf } from './request-state.js';
import { asIs } from './route.js';

export interface RunnerDeps {
  answers: Answerer;
  rate: RateLimits | undefined;
  logOf: (request: FastifyRequest) => RequestLogger;
  clientKeyOf: (req: IncomingMessage) => string;
}

type Done = (err?: Error) => void;

/** The fastify hooks and handler of one route. */
export function routeHooks(mounted: Mounted, d: RunnerDeps) {
  const route = mounted.route;
  const rate = d.rate;

  /** The request as the route sees it, after the checks every route makes; throws their refusals. */
  function contextOf(request: FastifyRequest): RequestContext {
    const refused = refusalOf(request.raw);
    if (refused !== undefined) throw refused;
    const bad = queryError(request.query);
    if (bad !== undefined) throw bad;
    const params = request.params as Record<string, string>;
    // an empty segment is never a parameter (`/dids//nonces`)
    for (const name in params) if (params[name] === '') throw new DdnError('not_found', 'no such route');
    return new Context(request, params, request.query as Record<string, string>, d.logOf, d.clientKeyOf);
  }

  /** The route's parser, from fastify's lifecycle: its result is the handler's input. */
  const preHandler = (request: FastifyRequest, _reply: FastifyReply, done: Done): void => {
    let ctx: RequestContext;
    try {
      ctx = contextOf(request);
      request.ddnCtx = ctx;
      request.ddnInput = route.parse(ctx);
    } catch (err) {
      done(err as Error);
      return;
    }
    done();
  };

  /**
   * The handler's answer, for a write that has a target after that target's rate check; a write that succeeds is
   * then counted against its target (failed ones are not: see RateLimits.checkTarget).
   */
  function run(input: unknown, ctx: RequestContext): HttpResponse | Promise<HttpResponse> {
    const targetOf = route.rateTarget;
    if (rate === undefined || targetOf === undefined) return route.handle(input, ctx);
    const target = targetOf(ctx);
    const gate = rate.checkTarget(route, target);
    if (gate === undefined) return route.handle(input, ctx);
    return gate
      .then(() => route.handle(input, ctx))
      .then((r) => {
        if (r.status < 300) rate.countTarget(route, target)?.catch((err: unknown) => ctx.log.warn({ err }, 'rate limits: a write could not be counted'));
        return r;
      });
  }

  const parsed = route.parse !== asIs;
  /** A synchronous handler's answer is written in the same call. */
  const handler: RouteHandlerMethod = (request, reply) => {
    try {
      const ctx = parsed ? request.ddnCtx! : contextOf(request);
      const r = run(parsed ? request.ddnInput : ctx, ctx);
      if (r instanceof Promise) {
        r.then(
          (v) => d.answers.write(request, reply, mounted, v),
          (err: unknown) => d.answers.sendError(request, reply, err, mounted),
        );
      } else d.answers.write(request, reply, mounted, r);
    } catch (err) {
      d.answers.sendError(request, reply, err, mounted);
    }
  };

  /** A client over its route's budget is refused before its body is read (and the connection then closed). */
  const onRequest = (request: FastifyRequest, _reply: FastifyReply, done: Done): void => {
    const gate = rate?.admitClient(route, request.raw);
    if (gate === undefined) {
      done();
      return;
    }
    gate.then(
      () => done(),
      (err: unknown) => done(isBodyless(request.method) ? toDdnError(err) : new BodyError(toDdnError(err), true)),
    );
  };

  return {
    handler,
    ...(parsed ? { preHandler } : {}),
    ...(rate !== undefined && route.rateClass !== undefined ? { onRequest } : {}),
  };
}
