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
import { parseBodyNow } from './body-intake.js';
import { Context, type HttpResponse, type RequestContext, type RequestLogger } from './context.js';
import { toDdnError } from './error-body.js';
import { HAND_OVER_HEADER, type HandOver } from './hand-over.js';
import type { RateLimits } from './rate-limit.js';
import { queryError, refusalOf } from './request-state.js';
import { asIs, type Route } from './route.js';

export interface RunnerDeps {
  answers: Answerer;
  rate: RateLimits | undefined;
  logOf: (request: FastifyRequest) => RequestLogger;
  clientKeyOf: (req: IncomingMessage) => string;
  /** The client address of `req` as the rate limits see it (what a hand-over passes on). */
  clientAddressOf: (req: IncomingMessage) => string;
  /** Where the writes of routes marked `handOver` may go instead (src/http/hand-over.ts). */
  handOver: HandOver | undefined;
}

type Done = (err?: Error) => void;

/** What fastify's error handler receives: the error itself (it maps and logs it), a non-Error as a DdnError. */
const errorOf = (err: unknown): Error => (err instanceof Error ? err : toDdnError(err));

/** The target's rate gate of a write that has a target (undefined: none applies), and the target. */
function gateOf(route: Route, rate: RateLimits | undefined, ctx: RequestContext): { target: string | undefined; gate: Promise<void> | undefined } {
  const targetOf = route.rateTarget;
  if (rate === undefined || targetOf === undefined) return { target: undefined, gate: undefined };
  const target = targetOf(ctx);
  return { target, gate: rate.checkTarget(route, target) };
}

/** Counts a write that succeeded against its target's budget (failed ones are not: see RateLimits.countTarget). */
function counted(route: Route, rate: RateLimits | undefined, r: HttpResponse, target: string | undefined, ctx: RequestContext): HttpResponse {
  if (r.status < 300) rate?.countTarget(route, target)?.catch((err: unknown) => ctx.log.warn({ err }, 'rate limits: a write could not be counted'));
  return r;
}

/** Whether `request` was handed over by another process (it passed its client gate there); its answer is marked so. */
function taken(handOver: HandOver, request: FastifyRequest, reply: FastifyReply): boolean {
  if (handOver.handedFor(request.raw) === undefined) return false;
  reply.raw.setHeader(HAND_OVER_HEADER, 'taken');
  return true;
}

/**
 * The preHandler that hands a write to the process producing the blocks, once its body is read and before anything
 * parses it (its client gate left the parse for later): its answer is that process's; when there is none to hand
 * it to, or the hop fails, the body is parsed and the write goes on here.
 */
function handingOn(handOver: HandOver, mounted: Mounted, d: RunnerDeps) {
  return (request: FastifyRequest, reply: FastifyReply, done: Done): void => {
    const here = (): void => {
      try {
        parseBodyNow(request);
      } catch (err) {
        done(errorOf(err));
        return;
      }
      done();
    };
    handOver
      .handOn(request.raw, request.ddnRawBody, d.clientAddressOf(request.raw), request.id)
      .then((r) => (r === undefined ? here() : d.answers.write(request, reply, mounted, r)), here);
  };
}

/**
 * The client's rate gate: a client over its route's budget is refused before its body is read (and the connection
 * then closed). A write another process handed over passed its gate there.
 */
function clientGate(route: Route, rate: RateLimits | undefined, handOver: HandOver | undefined) {
  return (request: FastifyRequest, reply: FastifyReply, done: Done): void => {
    if (handOver !== undefined) {
      // a write that may be handed on is parsed only where it is admitted (handingOn)
      request.ddnParseLater = true;
      if (taken(handOver, request, reply)) {
        done();
        return;
      }
    }
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
}

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

  /**
   * The route's parser, from fastify's lifecycle: after the checks every route makes and the target's rate gate
   * (so a write over its target's budget is refused before its fields are read, as when the handler read them),
   * its result is the handler's input.
   */
  const preHandler = (request: FastifyRequest, _reply: FastifyReply, done: Done): void => {
    const parse = (ctx: RequestContext): void => {
      try {
        request.ddnInput = route.parse(ctx);
      } catch (err) {
        done(errorOf(err));
        return;
      }
      done();
    };
    let ctx: RequestContext;
    let gate: Promise<void> | undefined;
    try {
      ctx = contextOf(request);
      request.ddnCtx = ctx;
      gate = gateOf(route, rate, ctx).gate;
    } catch (err) {
      done(errorOf(err));
      return;
    }
    if (gate === undefined) parse(ctx);
    else
      gate.then(
        () => parse(ctx),
        (err: unknown) => done(errorOf(err)),
      );
  };

  /**
   * The handler's answer, for a write that has a target after that target's rate check (made here for a route
   * without a parser, in the preHandler for one with a parser); a write that succeeds is then counted against
   * its target.
   */
  function run(input: unknown, ctx: RequestContext, gated: boolean): HttpResponse | Promise<HttpResponse> {
    if (rate === undefined || route.rateTarget === undefined) return route.handle(input, ctx);
    const { target, gate } = gated ? { target: route.rateTarget(ctx), gate: undefined } : gateOf(route, rate, ctx);
    const after = (): HttpResponse | Promise<HttpResponse> => {
      const r = route.handle(input, ctx);
      return r instanceof Promise ? r.then((v) => counted(route, rate, v, target, ctx)) : counted(route, rate, r, target, ctx);
    };
    return gate === undefined ? after() : gate.then(after);
  }

  const parsed = route.parse !== asIs;
  /** A synchronous handler's answer is written in the same call. */
  const handler: RouteHandlerMethod = (request, reply) => {
    try {
      const ctx = parsed ? request.ddnCtx! : contextOf(request);
      const r = run(parsed ? request.ddnInput : ctx, ctx, parsed);
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

  const handOver = route.handOver === true ? d.handOver : undefined;
  const preHandlers = [...(handOver === undefined ? [] : [handingOn(handOver, mounted, d)]), ...(parsed ? [preHandler] : [])];
  return {
    handler,
    ...(preHandlers.length > 0 ? { preHandler: preHandlers } : {}),
    ...((rate !== undefined && route.rateClass !== undefined) || handOver !== undefined ? { onRequest: clientGate(route, rate, handOver) } : {}),
  };
}
