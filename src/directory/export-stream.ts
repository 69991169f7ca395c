/**
 * `GET /export/stream?cursor=<seq>` (docs/mirrors.md): a WebSocket that sends the export feed's lines after the
 * cursor — first what is already finalized (backfill), then each entry as its block is finalized (live), one JSON
 * text frame per line. Lines are read from the ledger store a page at a time and the next page waits until the
 * last one was written to the socket, so a session never holds more than one page; a consumer that leaves a page
 * unwritten for `stallMs` cannot keep up and is closed with code 1008 and the reason `consumer_too_slow`.
 */
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { WebSocketServer, type WebSocket } from 'ws';
import { DdnError } from '../base/errors.js';
import { retryAfterSeconds, toDdnError } from '../http/error-body.js';
import { checkUpgradeHandshake, echoRequestIds, refuseUpgrade, tagUpgrade, upgradeLogger } from '../http/websocket-upgrade.js';
import { parseQuery, splitTarget } from '../http/url.js';
import type { Ledger } from '../ledger/chain.js';
import { parseCursor, type ExportFeed } from './export-feed.js';

/** Where a session sends its lines (a WebSocket, or a test's stand-in). */
export interface FeedSink {
  /** Sends one text frame; `done` is called once it was written to the socket (or failed). */
  send(text: string, done: (err?: Error) => void): void;
  close(code: number, reason: string): void;
}

export interface FeedStreamLimits {
  /** Lines read and sent per page (default 500). */
  pageSize: number;
  /** How long a page may stay unwritten before the consumer is closed as too slow (default 30 s). */
  stallMs: number;
  /** Open sessions at most; more are refused with 503 (default 64). */
  maxSessions: number;
}

export const DEFAULT_FEED_STREAM_LIMITS: FeedStreamLimits = { pageSize: 500, stallMs: 30_000, maxSessions: 64 };

/** Close code and reason for a consumer that cannot keep up. */
export const SLOW_CONSUMER_CLOSE = { code: 1008, reason: 'consumer_too_slow' } as const;

/** One consumer of the stream: its position, and the pump that moves it forward. */
export class FeedStreamSession {
  private sent: number;
  private pumping = false;
  private again = false;
  private closed = false;

  constructor(
    private readonly feed: ExportFeed,
    private readonly sink: FeedSink,
    cursor: number,
    private readonly limits: FeedStreamLimits,
    private readonly onError?: (err: unknown) => void,
  ) {
    this.sent = cursor;
  }

  /** The seq of the last line sent. */
  get position(): number {
    return this.sent;
  }

  /** New finalized entries may exist: send them (once the pump is free, if it is busy). */
  notify(): void {
    if (this.closed) return;
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = true;
    this.pump()
      .catch((err: unknown) => {
        this.onError?.(err);
        this.close(1011, 'internal_error');
      })
      .finally(() => {
        this.pumping = false;
      });
  }

  /** The session ended (the socket closed): nothing more is sent. */
  end(): void {
    this.closed = true;
  }

  private close(code: number, reason: string): void {
    if (this.closed) return;
    this.closed = true;
    this.sink.close(code, reason);
  }

  private async pump(): Promise<void> {
    for (;;) {
      this.again = false;
      const page = this.feed.page(this.sent, this.limits.pageSize);
      if (page.lines.length === 0) {
        if (!this.again) return;
        continue;
      }
      if (!(await this.sendPage(page.lines))) {
        this.close(SLOW_CONSUMER_CLOSE.code, SLOW_CONSUMER_CLOSE.reason);
        return;
      }
      if (this.closed) return;
      this.sent = page.lastSeq;
    }
  }

  /** Sends the lines; true once the last was written, false when it was not within `stallMs`. */
  private sendPage(lines: readonly string[]): Promise<boolean> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => resolve(false), this.limits.stallMs);
      lines.forEach((line, i) =>
        this.sink.send(line, (err) => {
          if (i !== lines.length - 1 && err === undefined) return;
          clearTimeout(timer);
          if (err !== undefined && !this.closed) reject(err);
          else resolve(true);
        }),
      );
    });
  }
}

/** Answers a refused upgrade with the usual JSON error body (`Retry-After` on 503). */
function refuse(socket: Duplex, req: IncomingMessage, err: DdnError): void {
  refuseUpgrade(socket, req, err, (e) => (e.status === 503 ? retryAfterSeconds(e) : undefined));
}

export interface FeedStreamOptions {
  server: Server;
  feed: ExportFeed;
  ledger: Pick<Ledger, 'onBlock'>;
  limits?: Partial<FeedStreamLimits>;
  logger?: Logger;
}

/** The stream's sessions on one HTTP server; `close()` ends them (code 1001) and stops listening for blocks. */
export interface FeedStream {
  readonly sessions: number;
  close(): void;
}

const sinkOf = (ws: WebSocket): FeedSink => ({
  // ws reports success as `null` or `undefined`
  send: (text, done) => ws.send(text, (err) => done(err ?? undefined)),
  close: (code, reason) => ws.close(code, reason),
});

/** Attaches `GET /export/stream` to the Directory's HTTP server (every other upgrade is refused with 404). */
export function attachFeedStream(o: FeedStreamOptions): FeedStream {
  const limits = { ...DEFAULT_FEED_STREAM_LIMITS, ...o.limits };
  const wss = new WebSocketServer({ noServer: true, handleProtocols: () => false, maxPayload: 1024 });
  const sessions = new Map<WebSocket, FeedStreamSession>();
  wss.on('wsClientError', (err: Error, socket: Duplex, req: IncomingMessage) => refuse(socket, req, new DdnError('invalid_request', err.message)));
  echoRequestIds(wss);
  const stopListening = o.ledger.onBlock(() => {
    for (const s of sessions.values()) s.notify();
  });
  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    socket.on('error', () => socket.destroy());
    tagUpgrade(req);
    let cursor: number;
    try {
      const target = splitTarget(req.url ?? '/');
      if (target.path !== '/export/stream') throw new DdnError('not_found', 'no such route');
      checkUpgradeHandshake(req);
      cursor = parseCursor(parseQuery(target.query).cursor, 'cursor');
      if (sessions.size >= limits.maxSessions) throw new DdnError('service_unavailable', 'too many export stream sessions; try again later');
    } catch (e) {
      refuse(socket, req, toDdnError(e));
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      const session = new FeedStreamSession(o.feed, sinkOf(ws), cursor, limits, (err) => upgradeLogger(o.logger, req)?.error({ err }, 'export stream failed'));
      sessions.set(ws, session);
      ws.on('message', () => undefined); // client frames are ignored
      ws.on('close', () => {
        session.end();
        sessions.delete(ws);
      });
      session.notify();
    });
  };
  o.server.on('upgrade', onUpgrade);
  return {
    get sessions() {
      return sessions.size;
    },
    close() {
      stopListening();
      o.server.off('upgrade', onUpgrade);
      for (const ws of sessions.keys()) ws.close(1001, 'server_closing');
      wss.close();
    },
  };
}
