/**
 * `GET /export/stream?cursor=<seq>` (docs/mirrors.md): a WebSocket that sends the export feed's lines after the
 * cursor — first what is already finalized (backfill), then each entry as its block is finalized (live), one JSON
 * text frame per line. Lines are read from the ledger store a page at a time and the next page waits until the
 * last one was written to the socket, so a session never holds more than one page; a consumer that leaves a page
 * unwritten for `stallMs` cannot keep up and is closed with code 1008 and the reason `consumer_too_slow`.
 *
 * A consumer whose socket buffers absorb the whole feed never leaves a page unwritten, so the stream also pings
 * every session (at its opening and every `pingIntervalMs`): one that has not answered a ping when the next is due
 * does not read, and its connection is dropped (it would not read a close frame either). Sessions are shared out by client address
 * (src/directory/feed-stream-slots.ts): beyond its address's share or the total a newcomer is refused with 503,
 * unless a session that has kept a ping unanswered for `displaceAfterMs` can give it its place.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { WebSocketServer, type WebSocket } from 'ws';
import { DdnError, type ErrorCode } from '../base/errors.js';
import { retryAfterSeconds, toDdnError } from '../http/error-body.js';
import { checkUpgradeHandshake, echoRequestIds, refuseUpgrade, tagUpgrade, UPGRADE_CODES, upgradeLogger } from '../http/websocket-upgrade.js';
import { parseQuery, splitTarget } from '../http/url.js';
import type { Ledger } from '../ledger/chain.js';
import { parseCursor, type ExportFeed } from './export-feed.js';
import { admitToStream, type FeedStreamSlot, type SlotLimits } from './feed-stream-slots.js';
import { addressKey, clientAddress } from '../http/rate-limit.js';
import { systemClock, type Clock } from '../base/clock.js';

/** Where a session sends its lines (a WebSocket, or a test's stand-in). */
export interface FeedSink {
  /** Sends one text frame; `done` is called once it was written to the socket (or failed). */
  send(text: string, done: (err?: Error) => void): void;
  close(code: number, reason: string): void;
}

export interface FeedStreamLimits extends SlotLimits {
  /** Lines read and sent per page (default 500). */
  pageSize: number;
  /** How long a page may stay unwritten before the consumer is closed as too slow (default 30 s). */
  stallMs: number;
  /** How often every session is pinged; one that has not answered a ping when the next is due is closed (15 s). */
  pingIntervalMs: number;
}

export const DEFAULT_FEED_STREAM_LIMITS: Readonly<FeedStreamLimits> = Object.freeze({
  pageSize: 500,
  stallMs: 30_000,
  maxSessions: 64,
  maxSessionsPerAddress: 4,
  pingIntervalMs: 15_000,
  displaceAfterMs: 5_000,
});

/** Close code and reason for a consumer that cannot keep up. */
export const SLOW_CONSUMER_CLOSE = { code: 1008, reason: 'consumer_too_slow' } as const;
/** A client's ping is answered only while less than this waits to be sent to it. */
const PONG_BACKLOG_BYTES = 64 * 1024;

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
    private readonly limits: Pick<FeedStreamLimits, 'pageSize' | 'stallMs'>,
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
  feed: ExportFeed;
  ledger: Pick<Ledger, 'onBlock'>;
  limits?: Partial<FeedStreamLimits>;
  logger?: Logger;
  /** The client address of an upgrade (default: the socket's peer), e.g. the rate limits' (trusted proxies). */
  clientOf?: (req: IncomingMessage) => string;
  clock?: Clock;
}

/** The stream's sessions on one HTTP server; `close()` ends them (code 1001) and stops listening for blocks. */
export interface FeedStream {
  readonly sessions: number;
  /** Sessions closed or displaced because they did not answer pings, and upgrades refused for lack of room. */
  readonly counts: FeedStreamCounts;
  /** Serves `GET /export/stream` on `server`: its upgrade handler (once; the export routes' WebSocket entry calls it). */
  attach(server: Server): void;
  close(): void;
}

/** What the stream's sessions came to, since it started (metrics). */
export interface FeedStreamCounts {
  /** Sessions closed, or displaced by a newcomer, because they did not answer pings. */
  notReading: number;
  /** Upgrades refused (503) because the client address had its share. */
  refusedAddressShare: number;
  /** Upgrades refused (503) because every session was taken by consumers that read. */
  refusedFull: number;
}

/** One open (or opening) session: its place, its socket once upgraded, its ping timer. */
interface Slot extends FeedStreamSlot {
  readonly socket: Duplex;
  /** What the last ping carried. */
  pingPayload?: Buffer;
  ws?: WebSocket;
  session?: FeedStreamSession;
  pinger?: NodeJS.Timeout;
}

const sinkOf = (ws: WebSocket): FeedSink => ({
  // ws reports success as `null` or `undefined`
  send: (text, done) => ws.send(text, (err) => done(err ?? undefined)),
  close: (code, reason) => ws.close(code, reason),
});

/** What {@link admitUpgrade} decides with. */
interface Admission {
  readonly slots: ReadonlySet<Slot>;
  readonly counts: FeedStreamCounts;
  readonly limits: FeedStreamLimits;
  readonly clock: Clock;
  clientOf(req: IncomingMessage): string;
  readonly logger: Logger | undefined;
  /** Frees the place of a session that does not read (the one displaced). */
  dropNotReading(slot: Slot): void;
}

/**
 * Every code `GET /export/stream` can refuse its upgrade with (its OpenAPI entry): the handshake's, a query that
 * does not decode or a bad `cursor`, the sessions' caps (503 `service_unavailable`, `details.reason`).
 */
export const FEED_STREAM_UPGRADE_ERRORS: readonly ErrorCode[] = [...UPGRADE_CODES, 'invalid_cursor', 'service_unavailable'];

/**
 * Admits an upgrade to `GET /export/stream`: its cursor and its place (displacing a session of the same address
 * that does not answer pings), or throws the refusal (404 another path, 400 a bad handshake or cursor, 503 full).
 */
function admitUpgrade(req: IncomingMessage, socket: Duplex, a: Admission): { cursor: number; slot: Slot } {
  const target = splitTarget(req.url ?? '/');
  if (target.path !== '/export/stream') throw new DdnError('not_found', 'no such route');
  checkUpgradeHandshake(req);
  const cursor = parseCursor(parseQuery(target.query).cursor, 'cursor');
  const address = addressKey(a.clientOf(req));
  const { limits } = a;
  const decision = admitToStream([...a.slots], address, a.clock.nowMs(), limits);
  if (!decision.admitted) {
    if (decision.full === 'address') a.counts.refusedAddressShare++;
    else a.counts.refusedFull++;
    throw decision.full === 'address'
      ? new DdnError('service_unavailable', 'too many export stream sessions from this client address; try again later', {
          reason: 'export_stream_address_share',
          limit: limits.maxSessionsPerAddress,
          retry_after_seconds: 5,
        })
      : new DdnError('service_unavailable', 'too many export stream sessions; try again later', {
          reason: 'export_stream_sessions',
          limit: limits.maxSessions,
          retry_after_seconds: 5,
        });
  }
  if (decision.displace !== undefined) {
    const displaced = decision.displace;
    upgradeLogger(a.logger, req)?.info({ address: displaced.address }, 'export stream session displaced: it does not answer pings');
    a.dropNotReading(displaced);
  }
  return { cursor, slot: { address, socket, awaitingPongSince: undefined } };
}

/** A session's incoming frames: client frames ignored, pongs matched to the last ping, pings answered while it reads. */
function handleFrames(ws: WebSocket, slot: Slot): void {
  ws.on('message', () => undefined); // client frames are ignored
  ws.on('pong', (data) => {
    if (slot.pingPayload !== undefined && data.equals(slot.pingPayload)) slot.awaitingPongSince = undefined;
  });
  // a client's pings are answered while what was sent to it drains; one that does not read gets no pongs
  ws.on('ping', (data) => {
    if (ws.bufferedAmount < PONG_BACKLOG_BYTES) ws.pong(data);
  });
}

/** The stream's limits, clock and client addresses: those of `o`, else the defaults. */
function settingsOf(o: FeedStreamOptions): { limits: FeedStreamLimits; clock: Clock; clientOf: (req: IncomingMessage) => string } {
  return {
    limits: { ...DEFAULT_FEED_STREAM_LIMITS, ...o.limits },
    clock: o.clock ?? systemClock,
    clientOf: o.clientOf ?? ((req: IncomingMessage) => clientAddress(req.socket.remoteAddress, undefined, undefined)),
  };
}

/** The export stream `GET /export/stream`, to attach to the Directory's HTTP server (every other upgrade is refused with 404). */
export function createFeedStream(o: FeedStreamOptions): FeedStream {
  const { limits, clock, clientOf } = settingsOf(o);
  // pongs are answered by hand (below): never onto a socket whose peer does not read
  const wss = new WebSocketServer({ noServer: true, handleProtocols: () => false, maxPayload: 1024, autoPong: false });
  // every session's place, from its admission until its socket closes
  const slots = new Set<Slot>();
  const counts: FeedStreamCounts = { notReading: 0, refusedAddressShare: 0, refusedFull: 0 };
  wss.on('wsClientError', (err: Error, socket: Duplex, req: IncomingMessage) => refuse(socket, req, new DdnError('invalid_request', err.message)));
  echoRequestIds(wss);
  const stopListening = o.ledger.onBlock(() => {
    for (const s of slots) s.session?.notify();
  });
  const release = (slot: Slot): void => {
    slots.delete(slot);
    clearInterval(slot.pinger);
    slot.session?.end();
  };
  /** Frees the place of a session that does not read; its socket is destroyed (it would not read a close frame). */
  const dropNotReading = (slot: Slot): void => {
    counts.notReading++;
    release(slot);
    slot.socket.destroy();
  };
  // a pong counts only with the payload of the ping it answers: a client must read the ping to answer it
  const ping = (slot: Slot): void => {
    slot.awaitingPongSince = clock.nowMs();
    slot.pingPayload = randomBytes(8);
    slot.ws!.ping(slot.pingPayload);
  };
  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    socket.on('error', () => socket.destroy());
    tagUpgrade(req);
    let cursor: number;
    let slot: Slot;
    try {
      ({ cursor, slot } = admitUpgrade(req, socket, { slots, counts, limits, clock, clientOf, logger: o.logger, dropNotReading }));
    } catch (e) {
      refuse(socket, req, toDdnError(e));
      return;
    }
    slots.add(slot);
    socket.once('close', () => release(slot));
    wss.handleUpgrade(req, socket, head, (ws) => {
      if (!slots.has(slot)) {
        ws.terminate();
        return;
      }
      slot.ws = ws;
      const session = new FeedStreamSession(o.feed, sinkOf(ws), cursor, limits, (err) => upgradeLogger(o.logger, req)?.error({ err }, 'export stream failed'));
      slot.session = session;
      handleFrames(ws, slot);
      ws.on('close', () => release(slot));
      // the first ping before the first page: a consumer that reads answers it at once
      ping(slot);
      slot.pinger = setInterval(() => {
        if (slot.awaitingPongSince !== undefined) {
          upgradeLogger(o.logger, req)?.info({ address: slot.address }, 'export stream session closed: it does not answer pings');
          dropNotReading(slot);
        } else ping(slot);
      }, limits.pingIntervalMs);
      slot.pinger.unref();
      session.notify();
    });
  };
  let attached: Server | undefined;
  return {
    get sessions() {
      return slots.size;
    },
    counts,
    attach(server) {
      if (attached !== undefined) throw new Error('the export stream is attached already');
      attached = server.on('upgrade', onUpgrade);
    },
    close() {
      stopListening();
      attached?.off('upgrade', onUpgrade);
      for (const slot of [...slots]) {
        release(slot);
        slot.ws?.close(1001, 'server_closing');
      }
      wss.close();
    },
  };
}
