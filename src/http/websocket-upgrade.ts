/**
 * What every WebSocket route checks and answers before the upgrade, so that no refusal is the WebSocket library's
 * text/html page: the handshake (method GET → 405, `Upgrade: websocket`, a valid `Sec-WebSocket-Key`, version 13
 * or 8 → 400 `invalid_request`), and a refusal written on the raw socket with the §0.6 JSON error body. An upgrade
 * has a request id like every other request (src/http/request-id.ts): kept on the request, echoed in the `101`
 * and in a refusal, and bound into the lines logged about it.
 */
import type { IncomingMessage } from 'node:http';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { WebSocketServer } from 'ws';
import { DdnError, type ErrorCode } from '../base/errors.js';
import { authenticateChallenge, errorBody } from './error-body.js';
import { upgradeRequestId } from './request-id.js';

/**
 * The codes every WebSocket route can refuse an upgrade with, whatever its own checks: the handshake's (405
 * `method_not_allowed`, 400 `invalid_request`, also the WebSocket library's own refusals), a path no route serves
 * (404 `not_found`), an unexpected failure (500 `internal_error`).
 */
export const UPGRADE_CODES = ['invalid_request', 'not_found', 'method_not_allowed', 'internal_error'] as const satisfies readonly ErrorCode[];

const WS_KEY_RE = /^[+/0-9A-Za-z]{22}==$/;

/** Throws the refusal of a malformed WebSocket handshake. */
export function checkUpgradeHandshake(req: IncomingMessage): void {
  if (req.method !== 'GET') throw new DdnError('method_not_allowed', 'a WebSocket upgrade must be a GET request', { allow: 'GET' });
  const bad = (header: string, message: string) => new DdnError('invalid_request', message, { header });
  if ((req.headers.upgrade ?? '').toLowerCase() !== 'websocket') throw bad('Upgrade', 'the Upgrade header must be "websocket"');
  if (!WS_KEY_RE.test(req.headers['sec-websocket-key'] ?? '')) throw bad('Sec-WebSocket-Key', 'missing or invalid Sec-WebSocket-Key');
  const version = req.headers['sec-websocket-version'];
  if (version !== '13' && version !== '8') throw bad('Sec-WebSocket-Version', 'Sec-WebSocket-Version must be 13 or 8');
}

/** Gives the upgrade its request id (kept in its `x-request-id` header, where {@link echoRequestIds} finds it). */
export function tagUpgrade(req: IncomingMessage): string {
  const id = upgradeRequestId(req.headers['x-request-id']);
  req.headers['x-request-id'] = id;
  return id;
}

/** The upgrade's id, once {@link tagUpgrade} gave it one. */
export function upgradeIdOf(req: IncomingMessage): string | undefined {
  const id = req.headers['x-request-id'];
  return typeof id === 'string' ? id : undefined;
}

/** `X-Request-Id` in every `101 Switching Protocols` of `wss`. */
export function echoRequestIds(wss: WebSocketServer): void {
  wss.on('headers', (headers: string[], req: IncomingMessage) => {
    const id = upgradeIdOf(req);
    if (id !== undefined) headers.push(`X-Request-Id: ${id}`);
  });
}

/** `logger` with the upgrade's `reqId` (for the lines written about it). */
export function upgradeLogger(logger: Logger | undefined, req: IncomingMessage): Logger | undefined {
  return logger?.child({ reqId: upgradeIdOf(req) });
}

/** Answers a refused upgrade and closes the socket; `retryAfterSeconds` (when it gives one) becomes `Retry-After`. */
export function refuseUpgrade(socket: Duplex, req: IncomingMessage, err: DdnError, retryAfterSeconds: (err: DdnError) => number | undefined): void {
  const body = JSON.stringify(errorBody(err));
  const retryAfter = retryAfterSeconds(err);
  let extra = retryAfter === undefined ? '' : `Retry-After: ${retryAfter}\r\n`;
  if (err.status === 405) extra += 'Allow: GET\r\n';
  const challenge = authenticateChallenge(err);
  if (challenge !== undefined) extra += `WWW-Authenticate: ${challenge}\r\n`;
  const id = upgradeIdOf(req);
  if (id !== undefined) extra += `X-Request-Id: ${id}\r\n`;
  socket.end(
    `HTTP/1.1 ${err.status} ${STATUS_CODES[err.status] ?? ''}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n${extra}Connection: close\r\n\r\n${body}`,
  );
}
