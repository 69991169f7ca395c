/**
 * A role's OpenAPI 3.1 document, built from its route objects only (src/http/route.ts): per route its parameters,
 * request body, success answers and, per error status, the codes it can answer — its own (`errors`, each placed
 * under its status from the registry) and those the HTTP layer answers on any route ({@link transportCodes}). No
 * route has a `default` answer: every status it can give is listed.
 */
import type { TSchema } from 'typebox';
import { ERROR_STATUS, type ErrorCode } from '../base/errors.js';
import { withUpgrades, type OpenApiDoc } from './openapi-additions.js';
import type { Route, RouteEntry, UpgradeDoc } from './route.js';
import { ErrorBodySchema, paramsOf, withCodes } from './schemas.js';

export type { OpenApiDoc };

/** How a role's whole document differs from the one its routes give (its profile's rules). */
export type DocumentAdjustment = (doc: OpenApiDoc) => OpenApiDoc;

/**
 * What a role exports: its one route list and the adjustment of its whole document (the profile's label, the
 * Directory's profile forms). The server adds the routes and builds the document from both ({@link serverDocument}).
 */
export interface RoleDefinition {
  readonly routes: readonly RouteEntry[];
  readonly adjustDocument?: DocumentAdjustment;
}

/** Whether `added` is a role's definition rather than a bare list of routes. */
export const isRoleDefinition = (added: readonly RouteEntry[] | RoleDefinition): added is RoleDefinition => !Array.isArray(added);

/** What the document of a server is built from: its route objects, its WebSocket routes, its roles' adjustments. */
export interface ServedParts {
  routes: readonly Route[];
  upgrades: readonly UpgradeDoc[];
  /** Applied in the order the roles were added, after the routes and upgrades are in. */
  adjustments: readonly DocumentAdjustment[];
}

/** What the document of one server needs besides its routes. */
export interface DocumentOptions {
  title: string;
  version: string;
  /** The role's base path (§0.1), prefixed to every path. */
  basePath?: string;
  /** The 413 code of the server (`payload_too_large` or `envelope_too_large`). */
  tooLargeCode: ErrorCode;
}

const BODYLESS = new Set(['GET', 'HEAD']);

/**
 * The codes the HTTP layer (src/http/server.ts and its body reader) can answer on `route`, whatever its handler
 * does: a bad path or query, an empty parameter, an unsupported `Expect`, headers over Node's size limit, an
 * internal failure, an overloaded node; with a body the body's own refusals; with a rate class the rate limit.
 */
export function transportCodes(route: Pick<Route, 'method' | 'rateClass'>, tooLargeCode: ErrorCode): ErrorCode[] {
  const codes: ErrorCode[] = [
    'invalid_path',
    'invalid_request',
    'not_found',
    'expectation_failed',
    'headers_too_large',
    'internal_error',
    'service_unavailable',
  ];
  if (!BODYLESS.has(route.method)) codes.push('invalid_json', 'request_timeout', tooLargeCode, 'unsupported_media_type', 'rate_limited');
  else if (route.rateClass !== undefined) codes.push('rate_limited');
  return codes;
}

/** Every code `route` can answer, grouped by status (statuses ascending, codes in declaration order). */
export function codesByStatus(route: Pick<Route, 'method' | 'rateClass' | 'errors'>, tooLargeCode: ErrorCode): Map<number, ErrorCode[]> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of [...route.errors, ...transportCodes(route, tooLargeCode)]) {
    const status = ERROR_STATUS[code];
    const list = byStatus.get(status) ?? [];
    if (!list.includes(code)) list.push(code);
    byStatus.set(status, list);
  }
  return new Map([...byStatus.entries()].sort(([a], [b]) => a - b));
}

/** A response object given in place of a schema (several media types, headers): it carries `content`. */
function isResponseObject(s: TSchema): s is TSchema & { content: Record<string, unknown>; description?: string } {
  return typeof (s as { content?: unknown }).content === 'object';
}

function jsonAnswer(description: string, schema: TSchema): Record<string, unknown> {
  return { description, content: { 'application/json': { schema } } };
}

function parameters(where: 'path' | 'query' | 'header', schema: TSchema | undefined): Record<string, unknown>[] {
  const s = schema as { properties?: Record<string, Record<string, unknown>>; required?: string[] } | undefined;
  if (s?.properties === undefined) return [];
  return Object.entries(s.properties).map(([name, p]) => {
    const { description, ...rest } = p;
    return {
      name,
      in: where,
      required: where === 'path' || (s.required ?? []).includes(name),
      schema: rest,
      ...(typeof description === 'string' ? { description } : {}),
    };
  });
}

/** The OpenAPI path of a route pattern: `/dids/{did}` for `/dids/:did`, under `basePath`. */
export function openApiPath(url: string, basePath?: string): string {
  const base = basePath === undefined || basePath === '/' ? '' : `/${basePath.replace(/^\/+|\/+$/g, '')}`.replace(/^\/$/, '');
  const path = url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
  return base === '' ? path : path === '/' ? base : `${base}${path}`;
}

/** The answers of `route`: its own, then each error status with its codes enumerated. */
function responses(route: Route, tooLargeCode: ErrorCode): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [status, schema] of Object.entries(route.answers)) {
    out[status] = isResponseObject(schema) ? schema : jsonAnswer(Number(status) < 300 ? 'success' : 'answer', schema);
  }
  const errorSchema = route.errorSchema ?? ErrorBodySchema;
  for (const [status, codes] of codesByStatus(route, tooLargeCode)) {
    const schema = withCodes(errorSchema, codes);
    const own = out[String(status)] as { content?: Record<string, unknown> } | undefined;
    // a status the route answers in its own media types too (W3C's): the §0.6 body beside them
    out[String(status)] =
      own === undefined ? jsonAnswer(`error: ${codes.join(', ')}`, schema) : { ...own, content: { ...own.content, 'application/json': { schema } } };
  }
  return out;
}

/** The operation object of `route`. */
function operation(route: Route, tags: string[], tooLargeCode: ErrorCode): Record<string, unknown> {
  const op: Record<string, unknown> = { summary: route.summary, tags: route.tags ?? tags };
  if (route.description !== undefined) op.description = route.description;
  const params = [...parameters('path', route.params ?? paramsOf(route.url)), ...parameters('query', route.query), ...parameters('header', route.headers)];
  if (params.length > 0) op.parameters = params;
  if (route.body !== undefined) op.requestBody = { required: true, content: { 'application/json': { schema: route.body } } };
  op.responses = responses(route, tooLargeCode);
  return op;
}

/** The document of a server: its routes' ({@link openApiDocument}), its WebSocket routes', then its roles' adjustments. */
export function serverDocument(parts: ServedParts, tags: string[], o: DocumentOptions): OpenApiDoc {
  const doc = withUpgrades(parts.upgrades, openApiDocument(parts.routes, tags, o));
  return parts.adjustments.reduce((d, adjust) => adjust(d), doc);
}

/** The document of a server with `routes` (in order; a `HEAD` is served by its `GET` and not listed). */
export function openApiDocument(routes: readonly Route[], tags: string[], o: DocumentOptions): OpenApiDoc {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    if (route.method === 'HEAD') continue;
    const path = openApiPath(route.url, o.basePath);
    paths[path] = { ...paths[path], [route.method.toLowerCase()]: operation(route, tags, o.tooLargeCode) };
  }
  return { openapi: '3.1.0', info: { title: o.title, version: o.version }, paths };
}
