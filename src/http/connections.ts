/**
 * Bounds on the connections of a role's listener: header, request and keep-alive timeouts (Node's own,
 * checked every `connectionsCheckingInterval`), and caps on open connections per remote address (an IPv6 address
 * counted as its /64, like the rate limits) and in total,
 * shared by every listener of a process (they share its file descriptors). A connection beyond a cap is refused
 * before any HTTP parsing: it gets one `503` JSON response with `Connection: close`, whatever it sends is read
 * and discarded, and it is closed when the client closes or after {@link REFUSAL_LINGER_MS}; with more than
 * {@link MAX_LINGERING_REFUSALS} such sockets open, further ones are destroyed at once.
 *
 * Upgraded (WebSocket) connections stay counted until they close; Node stops applying its HTTP timeouts to a
 * socket once it is upgraded.
 */
import { STATUS_CODES, createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { DdnError } from '../base/errors.js';
import { closeInStages } from './lingering-close.js';
import { addressKey, clientAddress } from './rate-limit.js';

/** Timeouts and caps of a listener; every value in milliseconds or connections. */
export interface ConnectionSettings {
  /** The request line and headers must arrive within this from the connection's or request's start. */
  headersTimeoutMs: number;
  /** A body must arrive within this after the headers (408 `request_timeout`); 0: no bound. */
  requestTimeoutMs: number;
  /** An idle kept-alive connection is closed after this. */
  keepAliveTimeoutMs: number;
  /** Open connections of the process, every listener together; 0: no cap. */
  maxConnections: number;
  /** Open connections of one remote address (IPv6: one /64, as the rate limits count), every listener together; 0: no cap. */
  maxConnectionsPerAddress: number;
}

export const DEFAULT_CONNECTION_SETTINGS: Readonly<ConnectionSettings> = Object.freeze({
  headersTimeoutMs: 20_000,
  requestTimeoutMs: 120_000,
  keepAliveTimeoutMs: 72_000,
  maxConnections: 4096,
  maxConnectionsPerAddress: 256,
});

/** How long a refused connection may stay open to read its request and our answer. */
export const REFUSAL_LINGER_MS = 2000;
/** Refused sockets kept open at once (beyond: destroyed without an answer). */
export const MAX_LINGERING_REFUSALS = 256;

/** Counts the open connections of a process by remote address; one gate is shared by all its listeners. */
export class ConnectionGate {
  private total = 0;
  private readonly byAddress = new Map<string, number>();
  private lingering = 0;

  constructor(private readonly limits: Pick<ConnectionSettings, 'maxConnections' | 'maxConnectionsPerAddress'>) {}

  /** Open connections counted now (tests, health). */
  get open(): number {
    return this.total;
  }

  /** Counts `socket` until it closes and returns true, or returns false when a cap is reached. */
  admit(socket: Socket): boolean {
    // one host usually holds a whole IPv6 /64: its addresses share one count, as in the rate limits
    const address = addressKey(clientAddress(socket.remoteAddress, undefined, undefined));
    const n = this.byAddress.get(address) ?? 0;
    const { maxConnections, maxConnectionsPerAddress } = this.limits;
    if ((maxConnections > 0 && this.total >= maxConnections) || (maxConnectionsPerAddress > 0 && n >= maxConnectionsPerAddress)) {
      return false;
    }
    this.total++;
    this.byAddress.set(address, n + 1);
    socket.once('close', () => {
      this.total--;
      const left = (this.byAddress.get(address) ?? 1) - 1;
      if (left === 0) this.byAddress.delete(address);
      else this.byAddress.set(address, left);
    });
    return true;
  }

  /** Answers a refused socket with `response` and closes it gracefully, or destroys it when too many linger. */
  refuse(socket: Socket, response: string): void {
    socket.on('error', () => socket.destroy());
    if (this.lingering >= MAX_LINGERING_REFUSALS) {
      socket.destroy();
      return;
    }
    this.lingering++;
    // read and drop the request, so closing never resets the connection under the client's unread answer
    closeInStages(socket, REFUSAL_LINGER_MS, () => this.lingering--, response);
  }
}

/** The error a connection beyond a cap is answered with (503, `details.reason` `connection_limit`). */
export function connectionRefused(): DdnError {
  return new DdnError('service_unavailable', 'too many open connections; retry later', { reason: 'connection_limit', retry_after_seconds: 1 });
}

/** A complete HTTP/1.1 response with a JSON body that closes the connection, for writing on a raw socket. */
export function rawJsonResponse(status: number, body: object, headers: Record<string, string> = {}): string {
  const text = JSON.stringify(body);
  let head = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\n`;
  for (const [name, value] of Object.entries(headers)) head += `${name}: ${value}\r\n`;
  return `${head}Content-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`;
}

/**
 * A Node HTTP server calling `handler` for every request, with `settings`' timeouts, and `gate` (when given)
 * deciding on every new connection before Node's HTTP machinery sees it; a refused one is answered `refusal`.
 */
export function createBoundedServer(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
  settings: ConnectionSettings,
  gate: ConnectionGate | undefined,
  refusal: string,
): Server {
  const headersTimeout = settings.headersTimeoutMs;
  // Node's own request timeout is a backstop counted from the request's start; the body reader's own bound
  // (requestTimeoutMs after the headers) answers first, with a JSON 408.
  const requestTimeout = settings.requestTimeoutMs === 0 ? 0 : headersTimeout + settings.requestTimeoutMs;
  const shortest = requestTimeout === 0 ? headersTimeout : Math.min(headersTimeout, requestTimeout);
  const server = createServer(
    {
      headersTimeout,
      requestTimeout,
      // how often Node looks for connections past their header or request deadline
      connectionsCheckingInterval: Math.max(10, Math.min(1000, Math.floor(shortest / 4))),
    },
    handler,
  );
  server.keepAliveTimeout = settings.keepAliveTimeoutMs;
  server.setTimeout(0);
  if (gate !== undefined) {
    // A refused socket must never reach Node's connection listener (which would parse its requests), so the
    // decision sits in front of every 'connection' listener.
    const emit = server.emit as (this: Server, event: string | symbol, ...args: unknown[]) => boolean;
    server.emit = function emitAdmitted(this: Server, event: string | symbol, ...args: unknown[]): boolean {
      if (event === 'connection' && !gate.admit(args[0] as Socket)) {
        gate.refuse(args[0] as Socket, refusal);
        return true;
      }
      return emit.apply(this, [event, ...args]);
    } as Server['emit'];
  }
  return server;
}
