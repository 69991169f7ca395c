/**
 * Checks real answers against a role's OpenAPI document (`GET /openapi.json`): the schema the document gives for
 * the route and status (else `default`) must accept the JSON body. Used by the OpenAPI suite and by the Directory
 * harness, so every answer the Directory suites read is checked against the document.
 */
import { Ajv, type ValidateFunction } from 'ajv';

interface Operation {
  responses: Record<string, { content?: Record<string, { schema?: Record<string, unknown> }> }>;
}
export interface OpenApiDocument {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
}

/**
 * The document's path template matching `path` for `method` (most literal characters first: `/blocks/latest` over
 * `{n}`; one with an operation for `method` first: `PUT …/services/{serviceId}`, `DELETE …/services/{id}`).
 */
export function templateOf(doc: OpenApiDocument, path: string, method?: string): string | undefined {
  const all = Object.keys(doc.paths).filter((t) => new RegExp(`^${t.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}/?$`).test(path));
  const withMethod = all.filter((t) => method !== undefined && doc.paths[t]?.[method.toLowerCase()] !== undefined);
  const matching = withMethod.length > 0 ? withMethod : all;
  return matching.sort((a, b) => b.replace(/\{[^}]+\}/g, '').length - a.replace(/\{[^}]+\}/g, '').length)[0];
}

/** An object schema that names no member: what a route documenting "a JSON object" has. */
export function isGeneric(schema: Record<string, unknown>): boolean {
  if (schema.type !== 'object') return false;
  const props = schema.properties as object | undefined;
  const extra = schema.additionalProperties;
  return (props === undefined || Object.keys(props).length === 0) && schema.patternProperties === undefined && (extra === undefined || extra === true);
}

/** `method path status` of every answer (success or error) whose JSON schema is generic or missing. */
export function genericAnswers(doc: OpenApiDocument): string[] {
  const out: string[] = [];
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      for (const [status, answer] of Object.entries(op.responses)) {
        const content = answer.content ?? {};
        if (Object.keys(content).length === 0 && status !== '101') out.push(`${method} ${path} ${status}: no content`);
        for (const [type, c] of Object.entries(content)) {
          if (c.schema === undefined || (type.startsWith('application/json') && isGeneric(c.schema))) out.push(`${method} ${path} ${status}`);
        }
      }
    }
  }
  return out;
}

/** Validates answers against one document. */
export class OpenApiChecker {
  private readonly ajv = new Ajv({ strict: false, allErrors: true });
  private readonly compiled = new Map<object, ValidateFunction>();

  constructor(readonly doc: OpenApiDocument) {}

  /** Why `body` does not match the document for this answer; undefined when it does. */
  problem(method: string, path: string, status: number, body: unknown): string | undefined {
    const template = templateOf(this.doc, path, method);
    // unknown paths and methods (404, 405) have no operation: their body is the §0.6 error body of any route
    const op = (template === undefined ? undefined : this.doc.paths[template]?.[method.toLowerCase()]) ?? Object.values(Object.values(this.doc.paths)[0]!)[0]!;
    const answer = op.responses[String(status)] ?? op.responses.default;
    if (answer === undefined) return `${method} ${path} ${status}: not documented`;
    const schema = answer.content?.['application/json']?.schema;
    if (schema === undefined) return `${method} ${path} ${status}: no JSON schema`;
    let validate = this.compiled.get(schema);
    if (validate === undefined) {
      validate = this.ajv.compile(schema);
      this.compiled.set(schema, validate);
    }
    if (validate(body)) return undefined;
    return `${method} ${path} ${status}: ${this.ajv.errorsText(validate.errors)} in ${JSON.stringify(body).slice(0, 400)}`;
  }
}
