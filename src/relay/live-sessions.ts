/**
 * Live delivery sessions (http-api.md §10.8): WebSocket connections per recipient DID on this node. A push is a
 * notification-grade duplicate sent only after the durable store (§10.7); it never replaces the Cache copy.
 */
import type { WebSocket } from 'ws';

export interface LiveSessionLimits {
  maxSessionsPerDid: number;
  /** A session whose send buffer exceeds this is skipped for an envelope (32 MiB). */
  maxBufferedBytes: number;
  pingIntervalMs: number;
}

export const DEFAULT_LIVE_LIMITS: LiveSessionLimits = {
  maxSessionsPerDid: 8,
  maxBufferedBytes: 32 * 1024 * 1024,
  pingIntervalMs: 30_000,
};

interface Session {
  did: string;
  device: string;
  socket: WebSocket;
}

export class LiveSessions {
  private readonly byDid = new Map<string, Set<Session>>();
  private readonly pinger: NodeJS.Timeout;
  private closing = false;

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

  count(did: string): number {
    return this.byDid.get(did)?.size ?? 0;
  }

  /** Registers an open socket; it is removed when it closes. Sends the welcome frame first. */
  add(did: string, device: string, socket: WebSocket): void {
    if (this.closing) {
      socket.close(1001, 'server shutting down');
      return;
    }
    const session: Session = { did, device, socket };
    let set = this.byDid.get(did);
    if (!set) this.byDid.set(did, (set = new Set()));
    set.add(session);
    socket.on('close', () => {
      set!.delete(session);
      if (set!.size === 0 && this.byDid.get(did) === set) this.byDid.delete(did);
    });
    socket.on('error', () => socket.terminate());
    socket.send(JSON.stringify({ type: 'welcome', status: 'ok', connectionKey: `${did}::${device}` }));
  }

  /**
   * Sends the bare envelope text to every open session of `did` on this node; returns how many received it.
   * Sessions with a full send buffer are skipped (the Cache copy remains).
   */
  push(did: string, envelopeJson: string): number {
    let n = 0;
    for (const s of this.byDid.get(did) ?? []) {
      if (s.socket.readyState !== s.socket.OPEN) continue;
      if (s.socket.bufferedAmount > this.limits.maxBufferedBytes) continue;
      s.socket.send(envelopeJson);
      n++;
    }
    return n;
  }

  private pingAll(): void {
    for (const set of this.byDid.values()) for (const s of set) if (s.socket.readyState === s.socket.OPEN) s.socket.ping();
  }

  /**
   * Closes every session with 1001 (going away); clients reconnect. Resolves once every socket is closed;
   * one that has not completed the closing handshake after `graceMs` is terminated.
   */
  async closeAll(graceMs = 1000): Promise<void> {
    this.closing = true;
    clearInterval(this.pinger);
    const sockets = [...this.byDid.values()].flatMap((set) => [...set].map((s) => s.socket));
    this.byDid.clear();
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
