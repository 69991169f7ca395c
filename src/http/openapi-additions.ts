/**
 * What a role's OpenAPI document needs beyond its route objects: its WebSocket routes (the `upgrade` entries of its
 * route list, src/http/route.ts), each merged in as a `GET` whose success is `101 Switching Protocols`, the frames it
 * sends under `x-websocket-frames` and its close codes under `x-websocket-close`. The adjustments of the whole
 * document (the profile's rules) are part of the role's definition (src/http/openapi.ts `RoleDefinition`).
 */
import { isJsonObject } from '../base/guards.js';
import type { TSchema } from 'typebox';
import { ERROR_STATUS, type ErrorCode } from '../base/errors.js';
import { ErrorBodySchema, withCodes } from './schemas.js';
import type { UpgradeDoc } from './route.js';

/** An OpenAPI document as the additions read it. */
export type OpenApiDoc = Record<string, unknown> & { paths?: Record<string, Record<string, unknown>> };

/** `doc` naming the network profile it describes (`info.x-ddn-profile`): each role's document is its profile's. */
export function withProfileLabel(doc: OpenApiDoc, profile: string): OpenApiDoc {
  return { ...doc, info: { ...(isJsonObject(doc.info) ? doc.info : {}), 'x-ddn-profile': profile } };
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

/** `doc` with the WebSocket routes `routes` added, each as a `GET` answering `101`. */
export function withUpgrades(routes: readonly UpgradeDoc[], doc: OpenApiDoc): OpenApiDoc {
  if (routes.length === 0) return doc;
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
