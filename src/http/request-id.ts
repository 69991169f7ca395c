/**
 * Request ids (`X-Request-Id`): an incoming one is kept when acceptable, else the server makes one up; either is
 * echoed in the response, bound into the request's log lines (`reqId`) and passed on by the Relay's node-to-node
 * calls.
 */
import { randomBytes } from 'node:crypto';

/** An incoming `X-Request-Id` we accept as is: 1–128 visible ASCII characters without spaces or quotes. */
const ACCEPTED = /^[A-Za-z0-9._:/+=@-]{1,128}$/;

/** `value` when it is an acceptable request id, else undefined (a new one is generated). */
export function acceptedRequestId(value: string | undefined): string | undefined {
  return value !== undefined && ACCEPTED.test(value) ? value : undefined;
}

/** A request fastify does not see (a WebSocket upgrade): its acceptable `X-Request-Id`, else a random one. */
export function upgradeRequestId(sent: string | string[] | undefined): string {
  return acceptedRequestId(typeof sent === 'string' ? sent : undefined) ?? `ws-${randomBytes(6).toString('base64url')}`;
}
