/**
 * What a role's OpenAPI document needs beyond fastify's routes: WebSocket routes, served by an `upgrade` handler on
 * Node's server that fastify's OpenAPI plugin never sees (each described by the code that attaches it, merged in as
 * a `GET` whose success is `101 Switching Protocols`), and adjustments of the whole document (the profile's rules).
 */
import type { TSchema } from 'typebox';
import { codesOf, ErrorBodySchema, withCodes } from './schemas.js';

export interface UpgradeRoute {
  /** OpenAPI path, e.g. `/ws/{did}/{device}`. */
  path: string;
  summary: string;
  /** Path and query parameters: name, where, description, required. */
  parameters: { name: string; in: 'path' | 'query'; description: string; required?: boolean }[];
  /** The refusals before the upgrade (§0.6 error bodies), by status. */
  errors: number[];
  /** What the session carries after the upgrade. */
  messages: string;
}

const UPGRADES = new WeakMap<object, UpgradeRoute[]>();
const ADJUSTMENTS = new WeakMap<object, ((doc: OpenApiDoc) => OpenApiDoc)[]>();

/** An OpenAPI document as the additions read it. */
export type OpenApiDoc = Record<string, unknown> & { paths?: Record<string, Record<string, unknown>> };

/** Adjusts the served document of the server that owns `fastify` (applied in order, after the upgrades). */
export function adjustDocument(fastify: object, adjust: (doc: OpenApiDoc) => OpenApiDoc): void {
  ADJUSTMENTS.set(fastify, [...(ADJUSTMENTS.get(fastify) ?? []), adjust]);
}

/** Describes a WebSocket route of the server that owns `fastify`. */
export function describeUpgrade(fastify: object, route: UpgradeRoute): void {
  const list = UPGRADES.get(fastify) ?? [];
  list.push(route);
  UPGRADES.set(fastify, list);
}

const HANDSHAKE = [
  { name: 'Upgrade', in: 'header', required: true, schema: { type: 'string', const: 'websocket' } },
  { name: 'Connection', in: 'header', required: true, schema: { type: 'string', description: 'contains `Upgrade`' } },
  { name: 'Sec-WebSocket-Key', in: 'header', required: true, schema: { type: 'string' } },
  { name: 'Sec-WebSocket-Version', in: 'header', required: true, schema: { type: 'string', const: '13' } },
];

const errorContent = (status: number): { description: string; content: Record<string, { schema: TSchema }> } => ({
  description: 'refused before the upgrade',
  content: { 'application/json': { schema: withCodes(ErrorBodySchema, codesOf(status)) } },
});

/** `doc` (an OpenAPI document) with the WebSocket routes of `fastify` added and its adjustments applied. */
export function withAdditions(fastify: object, doc: object): object {
  return (ADJUSTMENTS.get(fastify) ?? []).reduce((d, adjust) => adjust(d), withUpgrades(fastify, doc as OpenApiDoc));
}

function withUpgrades(fastify: object, doc: OpenApiDoc): OpenApiDoc {
  const routes = UPGRADES.get(fastify);
  if (routes === undefined) return doc;
  const paths: Record<string, Record<string, unknown>> = { ...doc.paths };
  for (const r of routes) {
    const responses: Record<string, unknown> = {
      101: {
        description: `Switching Protocols: the WebSocket session. ${r.messages}`,
        headers: { Upgrade: { schema: { type: 'string', const: 'websocket' } } },
      },
    };
    for (const status of r.errors) responses[String(status)] = errorContent(status);
    const parameters = [...r.parameters.map((p) => ({ ...p, required: p.in === 'path' || p.required === true, schema: { type: 'string' } })), ...HANDSHAKE];
    paths[r.path] = { ...paths[r.path], get: { summary: r.summary, tags: ['websocket'], 'x-websocket': true, parameters, responses } };
  }
  return { ...doc, paths };
}
