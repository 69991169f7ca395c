/**
 * Live delivery sessions (http-api.md §10.8): WebSocket connections per recipient DID on this node. A push is a
 * notification-grade duplicate sent only after the durable store (§10.7); it never replaces the Cache copy.
 *
 * A session is `pending` while it owes its first-frame proof (it receives nothing, not even the welcome), then open:
 * `authenticated` when it proved control of the DID, else admitted proof-less under `--relay-live-auth open`.
 * Bounded: sessions in all (pending included) and per DID (open ones), and the bytes buffered for them — per
 * session (a session over its cap does not read: it is terminated, which frees its buffer) and in all (the sessions
 * furthest behind are terminated first). An open session that leaves a ping unanswered until the next is due is
 * terminated too: a peer gone without closing (a device that lost its network) would otherwise hold its place, and
 * the DID's per-DID cap, until the kernel gave up on the connection.
 */
import type { WebSocket } from 'ws';
import { DdnError } from '../base/errors.js';

export interface LiveSessionLimits {
  /** Sessions on this process, pending ones included. */
  maxSessions: number;
  /** Open sessions per DID. */
  maxSessionsPerDid: number;
  /** A session with more than this buffered is terminated at its next push. */
  maxBufferedBytes: number;
  /** Bytes buffered for every session together; beyond it the sessions furthest behind are terminated. */
  maxTotalBufferedBytes: number;
  /** Open sessions are pinged this often; one that has not answered the last ping when the next is due is closed. */
  pingIntervalMs: number;
}

export const DEFAULT_LIVE_LIMITS: LiveSessionLimits = Object.freeze({
  maxSessions: 10_000,
  maxSessionsPerDid: 8,
  maxBufferedBytes: 32 * 1024 * 1024,
  maxTotalBufferedBytes: 256 * 1024 * 1024,
  pingIntervalMs: 30_000,
});

/** What a push reached on this process. */
export interface LiveReach {
  /** Open sessions that were sent the envelope. */
  sessions: number;
  /** Of those, the ones that proved control of the DID. */
  authenticated: number;
}

export const NO_REACH: LiveReach = Object.freeze({ sessions: 0, authenticated: 0 });

/** How long a client waits before retrying a refused session (`Retry-After`). */
export const LIVE_RETRY_AFTER_SECONDS = 5;

interface Session {
  did: string;
  device: string;
  socket: WebSocket;
  state: 'pending' | 'open' | 'gone';
  authenticated: boolean;
  /** A ping was sent and no pong has come since. */
  awaitingPong: boolean;
}

/** A pending session: opened once its proof holds, or dropped. */
export interface PendingSession {
  /** Opens it (authenticated) and sends the welcome; throws 429 `rate_limited` when the DID is at its cap. */
  open(): void;
}

const rateLimited = (what: string) => new DdnError('rate_limited', `too many live sessions ${what}`, { retry_after_seconds: LIVE_RETRY_AFTER_SECONDS });

export class LiveSessions {
  private readonly byDid = new Map<string, Set<Session>>();
  private readonly pending = new Set<Session>();
  /** Open sessions that may have bytes buffered (drained ones are dropped from it as they are seen). */
  private readonly backlogged = new Set<Session>();
  private readonly pinger: NodeJS.Timeout;
  private sessionCount = 0;
  private closing = false;
  /** Told when a DID's first session opens here and when its last one goes. */
  private presence: ((did: string) => void) | undefined;

  constructor(readonly limits: LiveSessionLimits = DEFAULT_LIVE_LIMITS) {
    this.pinger = setInterval(() => this.pingAll(), limits.pingIntervalMs);
    this.pinger.unref();
  }

  /** Open sessions of every DID, and the bytes queued on their sockets (metrics). */
  totals(): { sessions: number; bufferedBytes: number } {
    let sessions = 0;
    let bufferedBytes = 0;
    for (const set of this.byDid.values()) {
      for (const s of set) {
        sessions++;
        bufferedBytes += s.socket.bufferedAmount;
      }
    }
    return { sessions, bufferedBytes };
  }

  /** Open sessions of `did` here (pending ones excluded). */
  count(did: string): number {
    return this.byDid.get(did)?.size ?? 0;
  }

  /** The DIDs with an open session here. */
  dids(): IterableIterator<string> {
    return this.byDid.keys();
  }

  /** Calls `changed(did)` from now on when `did`'s first session opens here and when its last one goes. */
  watch(changed: (did: string) => void): void {
    this.presence = changed;
  }

  /** Every session here, pending ones included. */
  total(): number {
    return this.sessionCount;
  }

  /** Throws 429 `rate_limited` when another session (pending, or open for `did`) would exceed a cap. */
  checkCapacity(did: string | undefined): void {
    if (this.sessionCount >= this.limits.maxSessions) throw rateLimited('on this Relay');
    if (did !== undefined && this.count(did) >= this.limits.maxSessionsPerDid) throw rateLimited('for this DID');
  }

  /** Registers an open socket and sends the welcome frame; it is removed when it closes. */
  add(did: string, device: string, socket: WebSocket, authenticated: boolean): void {
    const session = this.track(did, device, socket, authenticated);
    if (session !== undefined) this.open(session);
  }

  /** Registers a socket that owes its proof: it counts towards the total and receives nothing until opened. */
  addPending(did: string, device: string, socket: WebSocket): PendingSession | undefined {
    const session = this.track(did, device, socket, false);
    if (session === undefined) return undefined;
    session.state = 'pending';
    this.pending.add(session);
    return {
      open: () => {
        if (session.state !== 'pending') return;
        if (this.count(did) >= this.limits.maxSessionsPerDid) throw rateLimited('for this DID');
        this.pending.delete(session);
        session.authenticated = true;
        this.open(session);
      },
    };
  }

  private track(did: string, device: string, socket: WebSocket, authenticated: boolean): Session | undefined {
    if (this.closing) {
      socket.close(1001, 'server shutting down');
      return undefined;
    }
    const session: Session = { did, device, socket, state: 'open', authenticated, awaitingPong: false };
    this.sessionCount++;
    socket.on('close', () => this.forget(session));
    socket.on('pong', () => (session.awaitingPong = false));
    socket.on('error', () => socket.terminate());
    return session;
  }

  private open(session: Session): void {
    let set = this.byDid.get(session.did);
    const first = set === undefined;
    if (!set) this.byDid.set(session.did, (set = new Set()));
    set.add(session);
    if (first) this.presence?.(session.did);
    session.state = 'open';
    session.socket.send(JSON.stringify({ type: 'welcome', status: 'ok', connectionKey: `${session.did}::${session.device}` }));
  }

  private forget(session: Session): void {
    if (session.state === 'gone') return;
    session.state = 'gone';
    this.sessionCount--;
    this.pending.delete(session);
    this.backlogged.delete(session);
    const set = this.byDid.get(session.did);
    if (set === undefined) return;
    set.delete(session);
    if (set.size > 0) return;
    this.byDid.delete(session.did);
    this.presence?.(session.did);
  }

  /** Terminates a session that does not read: its buffered bytes are freed with its socket. */
  private drop(session: Session): void {
    session.socket.terminate();
    this.forget(session);
  }

  /** Bytes buffered for every open session (drained sessions leave the backlog as they are seen). */
  bufferedBytes(): number {
    let total = 0;
    for (const s of this.backlogged) {
      const n = s.socket.bufferedAmount;
      if (n === 0 || s.state !== 'open') this.backlogged.delete(s);
      else total += n;
    }
    return total;
  }

  /** Terminates the sessions furthest behind until `bytes` more fit under the total cap; false when they do not. */
  private makeRoom(bytes: number): boolean {
    let total = this.bufferedBytes();
    while (total + bytes > this.limits.maxTotalBufferedBytes) {
      let worst: Session | undefined;
      for (const s of this.backlogged) if (worst === undefined || s.socket.bufferedAmount > worst.socket.bufferedAmount) worst = s;
      if (worst === undefined) return false;
      total -= worst.socket.bufferedAmount;
      this.drop(worst);
    }
    return true;
  }

  /**
   * Sends the bare envelope text to every open session of `did` on this node; returns how many received it and how
   * many of those are authenticated. A session over its buffer cap is terminated instead.
   */
  push(did: string, envelopeJson: string): LiveReach {
    const set = this.byDid.get(did);
    if (set === undefined) return NO_REACH;
    const bytes = Buffer.byteLength(envelopeJson, 'utf8');
    let sessions = 0;
    let authenticated = 0;
    for (const s of [...set]) {
      if (s.state !== 'open' || s.socket.readyState !== s.socket.OPEN) continue;
      if (s.socket.bufferedAmount > this.limits.maxBufferedBytes) {
        this.drop(s);
        continue;
      }
      if (!this.makeRoom(bytes) || s.state !== 'open') continue;
      s.socket.send(envelopeJson);
      this.backlogged.add(s);
      sessions++;
      if (s.authenticated) authenticated++;
    }
    return { sessions, authenticated };
  }

  /** Terminates the open sessions that did not answer the last ping, and pings the others. */
  private pingAll(): void {
    for (const set of this.byDid.values()) {
      for (const s of [...set]) {
        if (s.socket.readyState !== s.socket.OPEN) continue;
        if (s.awaitingPong) {
          this.drop(s);
          continue;
        }
        s.awaitingPong = true;
        s.socket.ping();
      }
    }
  }

  /**
   * Closes every session with 1001 (going away); clients reconnect. Resolves once every socket is closed;
   * one that has not completed the closing handshake after `graceMs` is terminated.
   */
  async closeAll(graceMs = 1000): Promise<void> {
    this.closing = true;
    clearInterval(this.pinger);
    const sockets = [...this.pending, ...[...this.byDid.values()].flatMap((set) => [...set])].map((s) => s.socket);
    const dids = [...this.byDid.keys()];
    this.byDid.clear();
    for (const did of dids) this.presence?.(did);
    this.pending.clear();
    this.backlogged.clear();
    await Promise.all(
      sockets.map(
        (socket) =>
          new Promise<void>((resolve) => {
            if (socket.readyState === socket.CLOSED) return resolve();
            const timer = setTimeout(() => socket.terminate(), graceMs);
            socket.once('close', () => {
              clearTimeout(timer);
              resolve();
            });
            socket.close(1001, 'server shutting down');
          }),
      ),
    );
  }
}
