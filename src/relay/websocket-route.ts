/**
 * `GET /ws/{did}/{device}` (http-api.md §10.8): checks before the upgrade answer with ordinary HTTP responses and
 * the §0.6 error body; then a plain upgrade (no authentication, no subprotocol) and the welcome frame.
 */
import type { IncomingMessage, Server } from 'node:http';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { WebSocketServer } from 'ws';
import { DdnError, isDdnError } from '../base/errors.js';
import { utf8Length } from '../base/bytes.js';
import { errorBody, toDdnError } from '../http/error-body.js';
import { decodePathSegments, splitTarget } from '../http/url.js';
import type { DirectoryPort } from '../ports/directory-port.js';
import { isDid } from '../protocol/did.js';
import type { LiveSessions } from './live-sessions.js';

export interface WebSocketRouteOptions {
  server: Server;
  basePath: string;
  directory: DirectoryPort;
  sessions: LiveSessions;
  logger?: Logger;
}

/** Parses `/ws/{did}/{device}` under the base path; undefined for any other path. */
export function parseWsPath(rawUrl: string, basePath: string): { did: string; device: string } | undefined {
  const { path } = splitTarget(rawUrl);
  const segs = decodePathSegments(path);
  const base = basePath.split('/').filter(Boolean);
  if (segs.length !== base.length + 3 || base.some((b, i) => segs[i] !== b) || segs[base.length] !== 'ws') return undefined;
  return { did: segs[base.length + 1]!, device: segs[base.length + 2]! };
}

async function admit(opts: WebSocketRouteOptions, did: string, device: string): Promise<void> {
  if (!isDid(did)) throw new DdnError('invalid_did', 'malformed DID');
  if (device.length === 0 || utf8Length(device) > 64 || device.trim() !== device) {
    throw new DdnError('invalid_request', 'device must be 1–64 bytes without surrounding whitespace', { field: 'device' });
  }
  const rec = await opts.directory.getDid(did);
  if (!rec) throw new DdnError('did_not_found', 'DID not found');
  if (rec.deactivated) throw new DdnError('did_deactivated', 'DID is deactivated');
  if (opts.sessions.count(did) >= opts.sessions.limits.maxSessionsPerDid) {
    throw new DdnError('rate_limited', 'too many live sessions for this DID', { retry_after_seconds: 5 });
  }
}

function refuse(socket: Duplex, err: DdnError): void {
  const body = JSON.stringify(errorBody(err));
  const extra = err.status === 429 || err.status === 503 ? 'Retry-After: 5\r\n' : '';
  socket.end(
    `HTTP/1.1 ${err.status} ${STATUS_CODES[err.status] ?? ''}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n${extra}Connection: close\r\n\r\n${body}`,
  );
}

/** Attaches the upgrade handler to the Relay's HTTP server. */
export function attachWebSocketRoute(opts: WebSocketRouteOptions): WebSocketServer {
  const wss = new WebSocketServer({ noServer: true, handleProtocols: () => false, maxPayload: 64 * 1024 });
  opts.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    let target: { did: string; device: string } | undefined;
    try {
      target = parseWsPath(req.url ?? '/', opts.basePath);
    } catch (e) {
      refuse(socket, toDdnError(e));
      return;
    }
    if (!target) {
      refuse(socket, new DdnError('not_found', 'no such route'));
      return;
    }
    const { did, device } = target;
    admit(opts, did, device).then(
      () => {
        wss.handleUpgrade(req, socket, head, (ws) => {
          ws.on('message', () => undefined); // client data frames are ignored
          opts.sessions.add(did, device, ws);
        });
      },
      (e: unknown) => {
        if (!isDdnError(e)) opts.logger?.error({ err: e }, 'websocket admission failed');
        refuse(socket, toDdnError(e));
      },
    );
  });
  return wss;
}
