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
 * The parser reads the request through the route's own schemas ({@link RouteContext}): its body is
 * {@link Unchecked}`<body schema>` (each declared field, `unknown` until the parser checks it in the spec's order), its
 * query the declared query fields, its path parameters the URL's (which a `params` schema must name exactly), and with
 * a `headers` schema only the declared headers. A parser takes the fields it reads as `Unchecked<its schema>` (or
 * {@link Reads}`<names>`), so a parser reading a field the route's schema does not declare, or a route whose schema
 * lacks a field its parser reads, is a compile error (test/http/route-types.test.ts).
 */
import type { Server } from 'node:http';
import type { Static, TObject, TSchema, TUnion } from 'typebox';
import type { DdnError, ErrorCode } from '../base/errors.js';
import type { Reads } from './json-body.js';
import type { RateClass } from './rate-limit.js';
import type { HttpMethod, HttpResponse, JsonAnswer, ParamNames, PathParams, PayloadAnswer, RequestContext } from './context.js';

/** The success (and other non-error) answers of a route: the schema of each status's body. */
export type Answers = { readonly [status: number]: TSchema };

/** What a handler of a route with answers `R` may return: one of its statuses, with that status's body. */
export type AnswerOf<R extends Answers> = { [S in keyof R & number]: JsonAnswer<S, Static<R[S]>> | PayloadAnswer<S> }[keyof R & number];

/** The field names of request schema `S`, of every member when `S` is a union; none when no schema is declared. */
export type FieldName<S> =
  S extends TUnion<infer T> ? FieldName<T[number]> : S extends TObject<infer P> ? KeysOf<P> : S extends TSchema ? KeysOf<Static<S>> : never;
type KeysOf<T> = T extends object ? Extract<keyof T, string> : never;

export type { Reads };

/**
 * The request body of a route whose body schema is `S`, as its parser reads it: the fields `S` declares, unchecked.
 * Any JSON object is one (a field it lacks reads `undefined`, which is `unknown`); only the fields are typed.
 */
export type Unchecked<S> = Reads<FieldName<S>>;

/**
 * The body's fields of a route whose body schema is `S`: the request's JSON object, `{}` when it had none (every
 * declared field then reads `undefined`, which its parser refuses in the spec's order).
 */
export const bodyFields = <S>(ctx: { readonly body: Unchecked<S> | undefined }): Unchecked<S> => ctx.body ?? ({} as Unchecked<S>);

/** A wire body built in-process (`Static<S>`, the SDK's type) as the parser of a route with body schema `S` reads it. */
export const fieldsOfWire = <S extends TSchema>(_schema: S, body: Static<S>): Unchecked<S> => body as unknown as Unchecked<S>;

/** The query of a route whose query schema is `Q`: its declared parameters (form-decoded, the first of a repeated one). */
export type QueryOf<Q> = { readonly [K in FieldName<Q>]?: string };

/** One request header by case-insensitive name: a declared one when the route has a `headers` schema `H`, else any. */
export type HeaderOf<H> = (name: H extends TSchema ? FieldName<H> : string) => string | undefined;

/**
 * What a route's parser, handler and rate target see of a request: the request with its body, query and headers typed
 * by the route's schemas `B`, `Q`, `H` and its path parameters by its URL `U` (src/http/context.ts `Context` at run
 * time, whose body, query and header functions are these).
 */
export type RouteContext<U extends string, B = undefined, Q = undefined, H = undefined> = Omit<
  RequestContext<PathParams<U>>,
  'body' | 'query' | 'header' | 'headers'
> & {
  /** The parsed JSON object body; `undefined` when the request had none (and always on a route without a body schema). */
  readonly body: B extends TSchema ? Unchecked<B> | undefined : undefined;
  readonly query: QueryOf<Q>;
  readonly header: HeaderOf<H>;
};

/** A `params` schema `P` of URL `U`: it names exactly the URL's `:params` (else `never`, a compile error). */
export type ParamsOf<U extends string, P> = [FieldName<P>] extends [ParamNames<U>] ? ([ParamNames<U>] extends [FieldName<P>] ? P : never) : never;

/**
 * The declaration of one route; `U` its URL pattern, `R` its answers, `I` its parser's result, `B`, `Q`, `H` and `P`
 * its body, query, headers and params schemas (undefined when it declares none).
 */
export interface RouteDef<
  U extends string,
  R extends Answers,
  I,
  B extends TSchema | undefined = undefined,
  Q extends TSchema | undefined = undefined,
  H extends TSchema | undefined = undefined,
  P extends TSchema | undefined = undefined,
> {
  method: HttpMethod;
  /** Relative to the role's base path, fastify's syntax: `/dids/:did/aliases/:alias`. */
  url: U;
  summary: string;
  description?: string;
  /** OpenAPI tags; the role's name when absent. */
  tags?: string[];
  /** The path parameters, exactly the URL's names ({@link ParamsOf}); one string per `:name` of the URL when absent. */
  params?: P & NoInfer<ParamsOf<U, P>>;
  query?: Q;
  /** Request headers the route reads (the Cache's proof headers): then the only ones its context gives. */
  headers?: H;
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
  rateTarget?: (ctx: RouteContext<U, B, Q, H>) => string | undefined;
  /**
   * A write another process of the deployment may take instead (src/http/hand-over.ts): handed to it before the
   * parser runs, when the server has a hand-over and it names a process.
   */
  handOver?: boolean;
  /**
   * The spec-ordered parser, run before the handler (fastify's preHandler): throws the spec's codes. It reads the
   * request through the route's schemas ({@link RouteContext}).
   */
  parse: (ctx: RouteContext<U, B, Q, H>) => I;
  handle: (input: I, ctx: RouteContext<U, B, Q, H>) => AnswerOf<R> | Promise<AnswerOf<R>>;
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
  readonly handOver?: boolean;
  readonly parse: (ctx: RequestContext) => unknown;
  readonly handle: (input: unknown, ctx: RequestContext) => HttpResponse | Promise<HttpResponse>;
}

/**
 * Declares a route: the types of its parser's result and its handler's answer are checked against each other, its
 * parser's reads against its request schemas ({@link RouteContext}) and its answer against its answer schemas here,
 * then erased (the router guarantees exactly the URL's parameter names; the request's body, query and header function
 * are what the context types say).
 */
export function defineRoute<
  U extends string,
  R extends Answers,
  I,
  B extends TSchema | undefined = undefined,
  Q extends TSchema | undefined = undefined,
  H extends TSchema | undefined = undefined,
  P extends TSchema | undefined = undefined,
>(def: RouteDef<U, R, I, B, Q, H, P>): Route {
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

/** The parser of a route that reads nothing before its handler: the request (its typed context) is the input. */
export const asIs = <C>(ctx: C): C => ctx;
