/**
 * Checks real answers against a role's OpenAPI document (`GET /openapi.json`): the schema the document gives for
 * the route and status (else `default`) must accept the JSON body. Used by the OpenAPI suite and by the Directory
 * harness, so every answer the Directory suites read is checked against the document.
 */
import { Ajv, type ValidateFunction } from 'ajv';

interface Operation {
  responses: Record<string, { content?: Record<string, { schema?: Record<string, unknown> }> }>;
}
/** The content types whose answers are JSON (and so checked against a schema). */
export const JSON_TYPES = /^application\/(json|did-resolution|did-url-dereferencing|did\+json|did\+ld\+json)\b/;

export interface OpenApiDocument {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
}

const templateCache = new WeakMap<OpenApiDocument, [string, RegExp][]>();

/** Each path template of `doc` with the pattern of the paths it matches (made once per document). */
function templatesOf(doc: OpenApiDocument): [string, RegExp][] {
  let list = templateCache.get(doc);
  if (list === undefined) {
    list = Object.keys(doc.paths).map((t) => [t, new RegExp(`^${t.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}/?$`)]);
    templateCache.set(doc, list);
  }
  return list;
}

/**
 * The document's path template matching `path` for `method` (most literal characters first: `/blocks/latest` over
 * `{n}`; one with an operation for `method` first: `PUT …/services/{serviceId}`, `DELETE …/services/{id}`).
 */
export function templateOf(doc: OpenApiDocument, path: string, method?: string): string | undefined {
  const all = templatesOf(doc)
    .filter(([, pattern]) => pattern.test(path))
    .map(([t]) => t);
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

/** The §0.6 body of an answer to a request no route matched: the codes the HTTP layer answers before routing. */
const UNMATCHED = {
  type: 'object',
  required: ['code', 'error', 'message'],
  properties: {
    code: {
      enum: [
        'not_found',
        'method_not_allowed',
        'invalid_path',
        'invalid_request',
        'request_timeout',
        'expectation_failed',
        'service_unavailable',
        'rate_limited',
        // a body over the listener's limit is refused before routing
        'payload_too_large',
        'envelope_too_large',
      ],
    },
    error: { type: 'string' },
    message: { type: 'string' },
    details: { type: 'object' },
  },
};

/** One compiler for every checker of a test process: test nodes serve the same schemas again and again. */
const ajv = new Ajv({ strict: false, allErrors: true });
const compiledByObject = new WeakMap<object, ValidateFunction>();
const compiledByText = new Map<string, ValidateFunction>();

/** The validator of `schema`, compiled once per schema text (each node start fetches its documents anew). */
function validatorOf(schema: object): ValidateFunction {
  let validate = compiledByObject.get(schema);
  if (validate === undefined) {
    const text = JSON.stringify(schema);
    validate = compiledByText.get(text);
    if (validate === undefined) {
      validate = ajv.compile(schema);
      compiledByText.set(text, validate);
    }
    compiledByObject.set(schema, validate);
  }
  return validate;
}

/**
 * Validates answers and request bodies against one document: an answer's body against the schema its route gives
 * for its status (no `default`: a status the route does not list is a problem), so an error answer must carry a
 * code the document lists for that route and status; a request body against the route's request schema.
 */
export class OpenApiChecker {
  constructor(readonly doc: OpenApiDocument) {}

  private validate(schema: object, value: unknown): string | undefined {
    const validate = validatorOf(schema);
    return validate(value) ? undefined : ajv.errorsText(validate.errors);
  }

  private operation(method: string, path: string): Operation | undefined {
    const template = templateOf(this.doc, path, method);
    return template === undefined ? undefined : this.doc.paths[template]?.[method.toLowerCase() === 'head' ? 'get' : method.toLowerCase()];
  }

  /** Why `body` does not match the document for this answer; undefined when it does. */
  problem(method: string, path: string, status: number, body: unknown, contentType = 'application/json'): string | undefined {
    const op = this.operation(method, path);
    const where = `${method} ${path} ${status}`;
    if (op === undefined) {
      // unknown paths and methods (404, 405) have no operation: their body is the §0.6 error body
      const why = this.validate(UNMATCHED, body);
      return why === undefined ? undefined : `${where} (no route): ${why} in ${JSON.stringify(body).slice(0, 400)}`;
    }
    const answer = op.responses[String(status)];
    if (answer === undefined) return `${where}: not documented`;
    const content = answer.content ?? {};
    const type = contentType.split(';')[0]!.trim();
    const schema = (content[type] ?? content['application/json'])?.schema;
    if (schema === undefined) return `${where}: no schema for ${type}`;
    const why = this.validate(schema, body);
    return why === undefined ? undefined : `${where}: ${why} in ${JSON.stringify(body).slice(0, 400)}`;
  }

  /** Why the request body `body` does not match the route's request schema; undefined when it does (or has none). */
  requestProblem(method: string, path: string, body: unknown): string | undefined {
    const op = this.operation(method, path) as (Operation & { requestBody?: { content?: Record<string, { schema?: object }> } }) | undefined;
    const schema = op?.requestBody?.content?.['application/json']?.schema;
    if (schema === undefined) return undefined;
    const why = this.validate(schema, body);
    return why === undefined ? undefined : `${method} ${path} request: ${why} in ${JSON.stringify(body).slice(0, 400)}`;
  }

  /**
   * Why `frame` (a JSON text frame the server sent on the WebSocket route at `path`) does not match the route's
   * `x-websocket-frames` (src/http/openapi-additions.ts); undefined when it does. A route describing no frames is one.
   */
  frameProblem(path: string, frame: unknown): string | undefined {
    const op = this.operation('GET', path) as (Operation & { 'x-websocket-frames'?: { 'server-to-client'?: { schema?: object } } }) | undefined;
    const schema = op?.['x-websocket-frames']?.['server-to-client']?.schema;
    if (schema === undefined) return `GET ${path}: no frames described`;
    const why = this.validate(schema, frame);
    return why === undefined ? undefined : `GET ${path} frame: ${why} in ${JSON.stringify(frame).slice(0, 400)}`;
  }
}
