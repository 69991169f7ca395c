/**
 * Schemas shared by every role's routes: the §0.6 error body and the error answers every route documents.
 * Role-specific wire shapes live next to their role (`src/wire/`).
 */
import { Type, type Static, type TSchema } from 'typebox';

/** The error body of http-api.md §0.6 (Directory and Cache). */
export const ErrorBodySchema = Type.Object(
  {
    code: Type.String({ description: 'Stable error code (src/base/errors.ts)' }),
    error: Type.String({ description: 'Identical to `code`; deployed clients read `error`' }),
    message: Type.String(),
    details: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  },
  { title: 'Error' },
);
export type ErrorBodyWire = Static<typeof ErrorBodySchema>;

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
