/**
 * Live delivery over the Relay's WebSocket (http-api.md §10.8): `GET /ws/{did}/{device}` on the Relay base URL,
 * a welcome frame `{"type":"welcome","status":"ok","connectionKey":"<did>::<device>"}`, then bare envelopes as text
 * frames. The session reconnects after a drop until stopped; a live copy is a notification, the Cache keeps the
 * durable one (§10.7).
 */
import WebSocket from 'ws';
import { encodePath } from './http.js';

/** Options of {@link LiveReceiver}. */
export interface LiveReceiverOptions {
  relayUrl: string;
  did: string;
  device: string;
  /** Called for every envelope frame, in order. */
  onEnvelope(envelope: Record<string, unknown>): void;
  /** Human-readable state changes (connected, dropped, reconnecting). */
  onStatus?(line: string): void;
  /** Pause before reconnecting; default 1000 ms, doubling to 30 s. */
  reconnectMs?: number;
}

/** The WebSocket URL of a Relay base URL (`http` → `ws`, `https` → `wss`). */
export function liveUrl(relayUrl: string, did: string, device: string): string {
  const base = relayUrl.replace(/^http/, 'ws').replace(/\/+$/, '');
  return base + encodePath`/ws/${did}/${device}`;
}

/** One live session, reconnecting until {@link LiveReceiver.stop}. */
export class LiveReceiver {
  private socket: WebSocket | undefined;
  private stopped = false;
  private delayMs: number;
  private timer: NodeJS.Timeout | undefined;
  private readonly firstWelcome: Promise<void>;
  private welcomed!: () => void;
  private refused!: (e: Error) => void;

  constructor(private readonly opts: LiveReceiverOptions) {
    this.delayMs = opts.reconnectMs ?? 1000;
    this.firstWelcome = new Promise<void>((resolve, reject) => {
      this.welcomed = resolve;
      this.refused = reject;
    });
  }

  /** Opens the session; resolves at the first welcome frame, rejects if the first connection fails. */
  start(): Promise<void> {
    this.connect(true);
    return this.firstWelcome;
  }

  private connect(first: boolean): void {
    const { did, device } = this.opts;
    const ws = new WebSocket(liveUrl(this.opts.relayUrl, did, device));
    this.socket = ws;
    let welcomed = false;
    ws.on('message', (data, isBinary) => {
      if (isBinary) return;
      let frame: unknown;
      try {
        frame = JSON.parse(data.toString('utf8'));
      } catch {
        return;
      }
      if (typeof frame !== 'object' || frame === null || Array.isArray(frame)) return;
      const f = frame as Record<string, unknown>;
      if (!welcomed) {
        if (f.type === 'welcome' && f.status === 'ok' && f.connectionKey === `${did}::${device}`) {
          welcomed = true;
          this.delayMs = this.opts.reconnectMs ?? 1000;
          this.opts.onStatus?.(`live session open for ${did} (device ${device})`);
          if (first) this.welcomed();
        } else {
          ws.close(1002, 'unexpected first frame');
        }
        return;
      }
      this.opts.onEnvelope(f);
    });
    ws.on('unexpected-response', (_req, res) => {
      const e = new Error(`the Relay refused the live session: HTTP ${res.statusCode}`);
      if (first && !welcomed) this.refused(e);
      this.opts.onStatus?.(e.message);
      ws.terminate();
    });
    ws.on('error', (e) => {
      if (first && !welcomed) this.refused(e);
    });
    ws.on('close', () => {
      if (first && !welcomed) this.refused(new Error('the live session closed before its welcome frame'));
      if (this.stopped || (first && !welcomed)) return;
      this.opts.onStatus?.(`live session dropped; reconnecting in ${this.delayMs} ms`);
      this.timer = setTimeout(() => this.connect(false), this.delayMs);
      this.delayMs = Math.min(this.delayMs * 2, 30_000);
    });
  }

  /** Closes the session and stops reconnecting. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    const ws = this.socket;
    if (ws === undefined || ws.readyState === WebSocket.CLOSED) return;
    await new Promise<void>((resolve) => {
      ws.once('close', () => resolve());
      ws.close(1000);
    });
  }
}
