/**
 * Closing in stages (RFC 9112 §9.6) a connection answered while its client may still be sending the request's body
 * (a body refused for the body budget, too large to drain, or late): Node destroys such a socket as soon as the
 * answer is written, and the bytes the client sends after that make the kernel reset the connection, which can
 * drop the answer before the client reads it. An armed socket is instead half-closed after the answer, and what
 * the client still sends is read and dropped until it closes its side or {@link LINGER_MS} pass; then it is
 * destroyed. A request that arrives behind the answer on such a socket is never served.
 *
 * At most {@link MAX_LINGERING_CLOSES} sockets of a server linger at once; beyond, a socket is closed at once as
 * before. A lingering socket stays counted by the connection caps until it closes.
 */
import type { Socket } from 'node:net';

/** How long a socket closing in stages reads what its client still sends. */
export const LINGER_MS = 2000;
/** Sockets of one server closing in stages at once. */
export const MAX_LINGERING_CLOSES = 256;

/** The sockets of one server that close in stages after their answer. */
export class LingeringCloses {
  private readonly armed = new WeakSet<Socket>();
  private active = 0;

  constructor(
    private readonly lingerMs = LINGER_MS,
    private readonly max = MAX_LINGERING_CLOSES,
  ) {}

  /** Sockets lingering now (tests). */
  get lingering(): number {
    return this.active;
  }

  /** True once `socket` is to close in stages: no further request on it is served. */
  has(socket: Socket): boolean {
    return this.armed.has(socket);
  }

  /**
   * Makes the close that Node's server performs after `socket`'s current answer (`destroySoon`, for an answer
   * with `Connection: close`) a lingering one.
   */
  arm(socket: Socket): void {
    // an injected request's socket (fastify.inject) is no network socket: nothing to close
    if (this.armed.has(socket) || socket.destroyed || typeof socket.destroySoon !== 'function') return;
    this.armed.add(socket);
    const destroySoon = socket.destroySoon.bind(socket);
    socket.destroySoon = () => this.closeWithinBound(socket, undefined, destroySoon);
  }

  /**
   * Writes `response` (a whole closing answer) on `socket`, which no request owns (a refusal before any route), and
   * closes in stages; beyond the bound of lingering sockets, it is written and the socket destroyed at once. Either
   * way {@link has} is true from now on: what the parser still reports about the socket is not answered again.
   */
  answerAndClose(socket: Socket, response: string): void {
    this.armed.add(socket);
    this.closeWithinBound(socket, response, () => socket.end(response, () => socket.destroy()));
  }

  /** Closes `socket` in stages (after `last`), or by `atOnce` when {@link max} sockets linger already. */
  private closeWithinBound(socket: Socket, last: string | undefined, atOnce: () => void): void {
    if (this.active >= this.max) {
      atOnce();
      return;
    }
    this.active++;
    closeInStages(socket, this.lingerMs, () => this.active--, last);
  }
}

/**
 * Ends `socket`'s sending side (after `last`, when given, and whatever is queued) and reads and drops what its peer
 * still sends until the peer closes or `lingerMs` pass; then destroys it. `closed` runs once it has closed.
 */
export function closeInStages(socket: Socket, lingerMs: number, closed: () => void, last?: string): void {
  const timer = setTimeout(() => socket.destroy(), lingerMs);
  timer.unref();
  socket.once('close', () => {
    clearTimeout(timer);
    closed();
  });
  socket.once('end', () => socket.destroy());
  socket.resume();
  if (last === undefined) socket.end();
  else socket.end(last);
}
