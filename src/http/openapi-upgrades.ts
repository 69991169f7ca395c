/**
 * WebSocket routes in a role's OpenAPI document. They are served by an `upgrade` handler on Node's server, not by
 * fastify, so fastify's OpenAPI plugin never sees them: each is described here, by the code that attaches it, and
 * merged into the served document as a `GET` whose success is `101 Switching Protocols`.
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

/** `doc` (an OpenAPI document) with the WebSocket routes of `fastify` added. */
export function withUpgrades(fastify: object, doc: object): object {
  const routes = UPGRADES.get(fastify);
  if (routes === undefined) return doc;
  const paths: Record<string, unknown> = { ...(doc as { paths?: Record<string, unknown> }).paths };
  for (const r of routes) {
    const responses: Record<string, unknown> = {
      101: {
        description: `Switching Protocols: the WebSocket session. ${r.messages}`,
        headers: { Upgrade: { schema: { type: 'string', const: 'websocket' } } },
      },
    };
    for (const status of r.errors) responses[String(status)] = errorContent(status);
    const parameters = [...r.parameters.map((p) => ({ ...p, required: p.in === 'path' || p.required === true, schema: { type: 'string' } })), ...HANDSHAKE];
    paths[r.path] = { ...(paths[r.path] as object | undefined), get: { summary: r.summary, tags: ['websocket'], 'x-websocket': true, parameters, responses } };
  }
  return { ...doc, paths };
}
