/**
 * Schemas shared by every role's routes: the §0.6 error body and the error answers every route documents.
 * Role-specific wire shapes live next to their role (`src/wire/`).
 */
import { Type, type TSchema } from 'typebox';
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
