/**
 * What a role's OpenAPI document needs beyond fastify's routes: WebSocket routes, served by an `upgrade` handler on
 * Node's server that fastify's OpenAPI plugin never sees (each described by the code that attaches it, merged in as
 * a `GET` whose success is `101 Switching Protocols`, the frames it sends under `x-websocket-frames` and its close
 * codes under `x-websocket-close`), and adjustments of the whole document (the profile's rules).
 */
import { isJsonObject } from '../base/guards.js';
import type { TSchema } from 'typebox';
import { ERROR_STATUS, type ErrorCode } from '../base/errors.js';
import { ErrorBodySchema, withCodes } from './schemas.js';

export interface UpgradeRoute {
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

const UPGRADES = new WeakMap<object, UpgradeRoute[]>();
const ADJUSTMENTS = new WeakMap<object, ((doc: OpenApiDoc) => OpenApiDoc)[]>();

/** An OpenAPI document as the additions read it. */
export type OpenApiDoc = Record<string, unknown> & { paths?: Record<string, Record<string, unknown>> };

/** Adjusts the served document of the server that owns `fastify` (applied in order, after the upgrades). */
export function adjustDocument(fastify: object, adjust: (doc: OpenApiDoc) => OpenApiDoc): void {
  ADJUSTMENTS.set(fastify, [...(ADJUSTMENTS.get(fastify) ?? []), adjust]);
}

/** `doc` naming the network profile it describes (`info.x-ddn-profile`): each role's document is its profile's. */
export function withProfileLabel(doc: OpenApiDoc, profile: string): OpenApiDoc {
  return { ...doc, info: { ...(isJsonObject(doc.info) ? doc.info : {}), 'x-ddn-profile': profile } };
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

const errorContent = (codes: ErrorCode[]): { description: string; content: Record<string, { schema: TSchema }> } => ({
  description: `refused before the upgrade: ${codes.join(', ')}`,
  content: { 'application/json': { schema: withCodes(ErrorBodySchema, codes) } },
});

/** `codes` grouped by status, statuses ascending. */
function byStatus(codes: readonly ErrorCode[]): [number, ErrorCode[]][] {
  const out = new Map<number, ErrorCode[]>();
  for (const code of codes) {
    const list = out.get(ERROR_STATUS[code]) ?? [];
    if (!list.includes(code)) list.push(code);
    out.set(ERROR_STATUS[code], list);
  }
  return [...out.entries()].sort(([a], [b]) => a - b);
}

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
    for (const [status, codes] of byStatus(r.errors)) responses[String(status)] = errorContent(codes);
    const parameters = [...r.parameters.map((p) => ({ ...p, required: p.in === 'path' || p.required === true, schema: { type: 'string' } })), ...HANDSHAKE];
    const get: Record<string, unknown> = { summary: r.summary, tags: ['websocket'], 'x-websocket': true, parameters, responses };
    if (r.frames !== undefined) get['x-websocket-frames'] = { 'server-to-client': { ...r.frames, contentType: 'application/json' } };
    if (r.closes !== undefined) get['x-websocket-close'] = r.closes;
    paths[r.path] = { ...paths[r.path], get };
  }
  return { ...doc, paths };
}
