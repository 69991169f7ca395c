/**
 * One route, one object: its method and URL, its declared shapes (path, query, headers, body, each success answer),
 * the error codes it can answer, its rate class, its spec-ordered parser and its handler. A role exports its routes
 * as one list of these; the server adds them to fastify and the OpenAPI document is built from the same objects
 * (src/http/openapi.ts), so nothing is joined by a pattern string.
 *
 * The parser runs in fastify's `preHandler` step, before the handler: it reads the raw request in the spec's order
 * of checks and throws the spec's codes (schemas are never used to validate — the parsers decide the codes). Its
 * result is the handler's input, and the handler's answer is typed by the route's answer schemas (TypeBox `Static`):
 * a body that does not match the schema of its status is a compile error.
 *
 * The parser's result is tied to the request schemas the same way ({@link Tied}): where it carries the wire body
 * (member `body`) or the query (member `query`), every field of that member is a field the route's `body` / `query`
 * schema declares, of the schema's type — or `unknown`, a field read but left for the use-case to check in the
 * spec's order ({@link Unchecked}). A field the schema does not declare, a field of another type, or a `body` on a
 * route that declares none is a compile error (test/http/route-types.test.ts). The rest of a parser's result is
 * domain values the parser derived (bigints, bytes, checked names), which no schema describes.
 */
import type { Server } from 'node:http';
import type { Static, TSchema } from 'typebox';
import type { DdnError, ErrorCode } from '../base/errors.js';
import type { RateClass } from './rate-limit.js';
import type { HttpMethod, HttpResponse, JsonAnswer, PathParams, PayloadAnswer, RequestContext } from './context.js';

/** The success (and other non-error) answers of a route: the schema of each status's body. */
export type Answers = { readonly [status: number]: TSchema };

/** What a handler of a route with answers `R` may return: one of its statuses, with that status's body. */
export type AnswerOf<R extends Answers> = { [S in keyof R & number]: JsonAnswer<S, Static<R[S]>> | PayloadAnswer<S> }[keyof R & number];

/**
 * The wire member `X` of a parser's result checked against the request schema `S` it comes from: `X` itself when
 * every field of `X` is declared by `S` and of its type (or `unknown`: read, not yet checked); otherwise `never`.
 * No schema declared (`S` undefined): always `never` — a route without a body schema has no wire body to pass on.
 */
export type FieldsOf<X, S> = S extends TSchema
  ? Exclude<keyof X, keyof Static<S>> extends never
    ? { [K in keyof X]: K extends keyof Static<S> ? (unknown extends X[K] ? unknown : Static<S>[K]) : never }
    : never
  : never;

/**
 * What a parser's result `I` must be for a route whose body schema is `B` and query schema `Q`: its `body` and
 * `query` members (when it has them) are fields of those schemas ({@link FieldsOf}). A parser that passes the
 * request itself on ({@link asIs}) claims nothing and is not checked.
 */
export type Tied<I, B, Q> =
  I extends RequestContext<infer _P>
    ? unknown
    : ('body' extends keyof I ? { body: FieldsOf<I['body' & keyof I], B> } : unknown) &
        ('query' extends keyof I ? { query: FieldsOf<I['query' & keyof I], Q> } : unknown);

/**
 * The fields of request schema `S`, read from the raw request but not checked yet: a parser that hands the JSON
 * object on for the use-case to check in the spec's order (the Relay's and the Cache's envelope) types it so.
 */
export type Unchecked<S extends TSchema> = { readonly [K in keyof Static<S>]?: unknown };

/**
 * The declaration of one route; `U` its URL pattern, `R` its answers, `I` its parser's result, `B` and `Q` its body
 * and query schemas (undefined when it declares none).
 */
export interface RouteDef<U extends string, R extends Answers, I, B extends TSchema | undefined = undefined, Q extends TSchema | undefined = undefined> {
  method: HttpMethod;
  /** Relative to the role's base path, fastify's syntax: `/dids/:did/aliases/:alias`. */
  url: U;
  summary: string;
  description?: string;
  /** OpenAPI tags; the role's name when absent. */
  tags?: string[];
  /** The path parameters (documentation); one string per `:name` of the URL when absent. */
  params?: TSchema;
  query?: Q;
  /** Request headers the route reads (the Cache's proof headers). */
  headers?: TSchema;
  /** The request body (a JSON object). */
  body?: B;
  answers: R;
  /**
   * Every error code this route's parser and handler can answer (the registry gives each its status), beside the
   * codes the HTTP layer answers on any route (src/http/openapi.ts `transportCodes`).
   */
  errors: readonly ErrorCode[];
  /** The schema of this route's error bodies when they are not the §0.6 body (the Relay's DeliveryResult). */
  errorSchema?: TSchema;
  /** Builds this route's error body instead of the §0.6 shape; the status is still the code's. */
  errorBody?: (err: DdnError) => object;
  /** The request-rate class the route counts against (src/http/rate-limit.ts); none: never limited. */
  rateClass?: RateClass;
  /** A write's target (DID, persona…) for its class's per-target budget; undefined: none. */
  rateTarget?: (ctx: RequestContext<PathParams<U>>) => string | undefined;
  /**
   * The spec-ordered parser, run before the handler (fastify's preHandler): throws the spec's codes. Its result's
   * `body` / `query` members are tied to `B` / `Q` by {@link defineRoute}.
   */
  parse: (ctx: RequestContext<PathParams<U>>) => I & NoInfer<Tied<I, B, Q>>;
  handle: (input: I, ctx: RequestContext<PathParams<U>>) => AnswerOf<R> | Promise<AnswerOf<R>>;
}

/** A route with its types erased, as lists hold them. */
export interface Route {
  readonly method: HttpMethod;
  readonly url: string;
  readonly summary: string;
  readonly description?: string;
  readonly tags?: string[];
  readonly params?: TSchema;
  readonly query?: TSchema;
  readonly headers?: TSchema;
  readonly body?: TSchema;
  readonly answers: Answers;
  readonly errors: readonly ErrorCode[];
  readonly errorSchema?: TSchema;
  readonly errorBody?: (err: DdnError) => object;
  readonly rateClass?: RateClass;
  readonly rateTarget?: (ctx: RequestContext) => string | undefined;
  readonly parse: (ctx: RequestContext) => unknown;
  readonly handle: (input: unknown, ctx: RequestContext) => HttpResponse | Promise<HttpResponse>;
}

/**
 * Declares a route: the types of its parser's result and its handler's answer are checked against each other, its
 * parser's result against its request schemas ({@link Tied}) and its answer against its answer schemas here, then
 * erased (the router guarantees exactly the URL's parameter names).
 */
export function defineRoute<U extends string, R extends Answers, I, B extends TSchema | undefined = undefined, Q extends TSchema | undefined = undefined>(
  def: RouteDef<U, R, I, B, Q>,
): Route {
  return def as unknown as Route;
}

/** The OpenAPI description of a WebSocket route (src/http/openapi-additions.ts merges it into the document). */
export interface UpgradeDoc {
  /** OpenAPI path, e.g. `/ws/{did}/{device}`. */
  path: string;
  summary: string;
  /** Path and query parameters: name, where, description, required. */
  parameters: { name: string; in: 'path' | 'query'; description: string; required?: boolean }[];
  /**
   * Every code a refusal before the upgrade can carry (§0.6 error bodies; the registry gives each its status), the
   * handshake's (`method_not_allowed`, `invalid_request`) and the route's own.
   */
  errors: readonly ErrorCode[];
  /** What the session carries after the upgrade. */
  messages: string;
  /** The JSON text frames the server sends after the upgrade: the operation's `x-websocket-frames`. */
  frames?: { description: string; schema: TSchema };
  /** How the server ends a session: the operation's `x-websocket-close` (code, reason, when). */
  closes?: readonly { code: number; reason: string; when: string }[];
}

/**
 * A WebSocket route, in its role's list beside the route objects: served by an `upgrade` handler on Node's server,
 * which fastify never sees. `attach` adds that handler (it answers every upgrade of the server: one per server).
 */
export interface UpgradeRoute {
  readonly kind: 'upgrade';
  readonly doc: UpgradeDoc;
  readonly attach: (server: Server) => void;
}

/** One entry of a role's route list: a route object, or its WebSocket route. */
export type RouteEntry = Route | UpgradeRoute;

/** Whether `entry` is a WebSocket route. */
export const isUpgrade = (entry: RouteEntry): entry is UpgradeRoute => 'kind' in entry && entry.kind === 'upgrade';

/** The parser of a route that reads nothing before its handler: the request itself is the input. */
export const asIs = <C>(ctx: C): C => ctx;
