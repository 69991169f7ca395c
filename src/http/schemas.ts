/**
 * Schemas shared by every role's routes: the §0.6 error body and the error answers every route documents.
 * Role-specific wire shapes live next to their role (`src/wire/`).
 */
import { Type, type TSchema } from 'typebox';
import { ERROR_STATUS, type ErrorCode } from '../base/errors.js';
import { ErrorBodySchema } from '../wire/errors.js';

/** The error body of http-api.md §0.6 (declared in `src/wire/errors.ts`). */
export { ErrorBodySchema };

/** `GET /openapi.json` 200: an OpenAPI 3.1 document. */
export const OpenApiDocumentSchema = Type.Object(
  {
    openapi: Type.String(),
    info: Type.Object({ title: Type.String(), version: Type.String() }),
    paths: Type.Record(Type.String(), Type.Record(Type.String(), Type.Unknown())),
  },
  { title: 'OpenApiDocument' },
);

/** The path parameters of `pattern` as a schema of strings (routes that declare none). */
export function paramsOf(pattern: string): TSchema | undefined {
  const names = pattern
    .split('/')
    .filter((s) => s.startsWith(':'))
    .map((s) => s.slice(1));
  if (names.length === 0) return undefined;
  return Type.Object(Object.fromEntries(names.map((n) => [n, Type.String()])));
}

/**
 * The error answers of a route: 400 (bad path, query or body), 404, 429, 500, 503, and for methods with a body
 * 413 and 415; `default` covers the route's own error statuses. All carry `schema` (the §0.6 body by default).
 */
export function errorResponses(schema: TSchema | undefined, method: string): Record<string, TSchema> {
  const body = schema ?? ErrorBodySchema;
  const statuses = method === 'GET' || method === 'HEAD' ? [400, 404, 429, 500, 503] : [400, 404, 413, 415, 429, 500, 503];
  const out: Record<string, TSchema> = { default: body };
  for (const s of statuses) out[String(s)] = body;
  return out;
}

/** The registry's codes (src/base/errors.ts) answered with `status`, in registry order. */
export function codesOf(status: number): string[] {
  return Object.entries(ERROR_STATUS)
    .filter(([, s]) => s === status)
    .map(([code]) => code);
}

type JsonSchema = Record<string, unknown> & { properties?: Record<string, Record<string, unknown>> };

/**
 * `schema` with its `code` (and `error`, its copy) members limited to `codes`; a schema whose `code` is already
 * enumerated, or that has none, as it is.
 */
export function withCodes<T>(schema: T, codes: readonly string[]): T {
  const s = schema as JsonSchema;
  if (typeof s !== 'object' || s === null || s.properties?.code === undefined || s.properties.code.enum !== undefined || codes.length === 0) return schema;
  const properties: Record<string, Record<string, unknown>> = { ...s.properties, code: { ...s.properties.code, enum: [...codes] } };
  if (s.properties.error !== undefined) properties.error = { ...s.properties.error, enum: [...codes] };
  return { ...s, properties } as T;
}

/**
 * A route's answers with every error body's `code` enumerated from the registry: under a 4xx/5xx status, the codes
 * of that status; under `default`, the codes of every status the route does not list. Success answers unchanged.
 */
export function enumerateErrorCodes(response: Record<string, unknown>): Record<string, unknown> {
  const listed = new Set(
    Object.keys(response)
      .filter((k) => /^[0-9]{3}$/.test(k))
      .map(Number),
  );
  const out: Record<string, unknown> = {};
  for (const [status, schema] of Object.entries(response)) {
    if (status === 'default') {
      const rest = [...new Set(Object.values(ERROR_STATUS))].filter((s) => !listed.has(s)).flatMap(codesOf);
      out[status] = withCodes(schema, rest);
    } else out[status] = Number(status) >= 400 ? withCodes(schema, codesOf(Number(status))) : schema;
  }
  return out;
}

/** Codes the HTTP layer itself answers on any route (src/http/server.ts), by status. */
export const TRANSPORT_CODES: Readonly<Record<number, readonly ErrorCode[]>> = {
  400: ['invalid_json', 'invalid_request', 'invalid_path'],
  404: ['not_found'],
  408: ['request_timeout'],
  415: ['unsupported_media_type'],
  417: ['expectation_failed'],
  429: ['rate_limited'],
  500: ['internal_error'],
  503: ['service_unavailable'],
};

/**
 * The error answers of a route whose codes a spec table lists per status (the Relay's §10.5, the Cache's §11.8):
 * `schema` with `code` enumerated as the table's codes plus the transport's of that status.
 */
export function tableErrorAnswers(schema: TSchema, table: Readonly<Record<number, readonly ErrorCode[]>>): Record<number, TSchema> {
  const out: Record<number, TSchema> = {};
  for (const [status, codes] of Object.entries(table))
    out[Number(status)] = withCodes(schema, [...new Set([...codes, ...(TRANSPORT_CODES[Number(status)] ?? [])])]);
  return out;
}
