/**
 * The Directory's OpenAPI document for its profile: the served document names the profile, and on every profile
 * but `openpayload` (docs/compatibility.md) it states the product spec's request forms — `canonical_payload`
 * required on DID changes, `valid_until` in Unix milliseconds, a named persona's `controller_keys` and
 * `controller_threshold` required, service ids DID URLs — where `openpayload` also takes the deployed clients' forms.
 */
import { withProfileLabel, type OpenApiDoc } from '../http/openapi-additions.js';
import type { Profile } from '../protocol/profile.js';

type Schema = Record<string, unknown> & { properties?: Record<string, Schema>; required?: string[]; anyOf?: Schema[] };

const SUBMIT_METHODS = ['post', 'put', 'patch', 'delete'];
const UNIX_MS = {
  anyOf: [
    { type: 'string', pattern: '^[0-9]+$' },
    { type: 'integer', minimum: 0 },
  ],
  description: 'Unix ms',
};
const SERVICE_ID = { type: 'string', pattern: '^did:[a-z0-9]+:[^#]+#.+$', description: 'a DID URL of the DID itself: `<did>#<fragment>`' };

function requiring(schema: Schema, names: string[]): Schema {
  const present = names.filter((n) => schema.properties?.[n] !== undefined);
  return present.length === 0 ? schema : { ...schema, required: [...new Set([...(schema.required ?? []), ...present])] };
}

/** A signed request body in the spec's forms only (each branch of a body that is one of several forms). */
function specForms(path: string, body: Schema): Schema {
  if (body.anyOf !== undefined) return { ...body, anyOf: body.anyOf.map((branch) => specForms(path, branch)) };
  let out = body;
  const props = body.properties ?? {};
  if (props.valid_until !== undefined) out = { ...out, properties: { ...out.properties, valid_until: { ...props.valid_until, ...UNIX_MS } } };
  if (path.startsWith('/dids/{did}') && !path.endsWith('/prepare')) out = requiring(out, ['canonical_payload']);
  if (path === '/personas/{persona}/named') out = requiring(out, ['controller_keys', 'controller_threshold']);
  const service = props.service;
  if (service?.properties?.id !== undefined) {
    out = {
      ...out,
      properties: { ...out.properties, service: { ...service, properties: { ...service.properties, id: { ...service.properties.id, ...SERVICE_ID } } } },
    };
  }
  return out;
}

/** The Directory's document for `profile`. */
export function profileDocument(doc: OpenApiDoc, profile: Profile): OpenApiDoc {
  if (profile.acceptsDeployedClientForms) return withProfileLabel(doc, profile.p);
  const paths: Record<string, Record<string, unknown>> = {};
  for (const [path, ops] of Object.entries(doc.paths ?? {})) {
    paths[path] = Object.fromEntries(
      Object.entries(ops).map(([method, op]) => {
        const content = (op as { requestBody?: { content?: Record<string, { schema?: Schema }> } }).requestBody?.content;
        const schema = content?.['application/json']?.schema;
        if (!SUBMIT_METHODS.includes(method) || schema === undefined) return [method, op];
        const requestBody = {
          ...(op as { requestBody: object }).requestBody,
          content: { ...content, 'application/json': { schema: specForms(path, schema) } },
        };
        return [method, { ...(op as object), requestBody }];
      }),
    );
  }
  return withProfileLabel({ ...doc, paths }, profile.p);
}
