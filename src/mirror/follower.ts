/**
 * A mirror's follower: reads the primary Directory's export stream (`/export/stream?cursor=<seq>`) from the last
 * entry this mirror holds, gathers the lines into blocks and imports each through the ledger's own runtime
 * ({@link Ledger.importBlock}: parent link, block hash, extrinsics root, every signature and outcome checked). The
 * mirror's store numbers the entries itself; a seq that differs from the primary's stops the follower as well.
 *
 * It defends itself against its primary. A line or a block larger than the bounds does not verify (the
 * assembler holds at most one block, {@link FollowerOptions.limits}). An upgrade not answered within
 * `handshakeTimeoutMs`, a connection that brings nothing — no line, no pong to the follower's pings — for a whole
 * `pingIntervalMs`, a frame that is not a feed line (a proxy's page, a binary frame) or lines that do not continue
 * the stream are transport errors: the connection is dropped and opened again, with a delay that doubles up to
 * `retryMs.max` and starts over once a block was imported, forever. Only a block that does not verify stops
 * following for good (reported by `status()` and `GET /mirror/status`: the first such block, whatever comes after
 * it), and the mirror keeps serving what it verified.
 */
import type { Logger } from 'pino';
import WebSocket from 'ws';
import type { Ledger } from '../ledger/chain.js';
import { BlockImportError } from '../ledger/errors.js';
import { FeedFormatError, parseFeedLine } from '../ledger/feed.js';
import { BlockAssembler, DEFAULT_BLOCK_BOUNDS, type BlockBounds } from './block-assembler.js';

/** How a follower bounds what its primary may cost it, and how patient it is. */
export interface FollowerLimits extends BlockBounds {
  /** The largest line (one WebSocket frame) taken; a larger one does not verify. */
  maxLineBytes: number;
  /** The upgrade must be answered within this. */
  handshakeTimeoutMs: number;
  /** The follower pings this often; a connection that brought nothing in one interval is dropped. */
  pingIntervalMs: number;
}

export const DEFAULT_FOLLOWER_LIMITS: Readonly<FollowerLimits> = Object.freeze({
  ...DEFAULT_BLOCK_BOUNDS,
  maxLineBytes: 4 * 1024 * 1024,
  handshakeTimeoutMs: 10_000,
  pingIntervalMs: 15_000,
});

export interface FollowerOptions {
  /** The primary Directory's base URL (http or https). */
  from: string;
  ledger: Ledger;
  logger?: Logger;
  /** First and largest delay before reconnecting (default 500 ms, 30 s). */
  retryMs?: { first: number; max: number };
  limits?: Partial<FollowerLimits>;
}

export interface FollowerStatus {
  primary_url: string;
  /** The seq of the last feed entry this mirror holds. */
  seq: number;
  /** Its head block. */
  block: number;
  connected: boolean;
  /** Why following stopped: the first block that did not verify. */
  error?: string;
  /** Why the last connection ended or could not be opened, while following goes on (it is retried); until a block is imported. */
  last_connection_error?: string;
}

/** The stream URL of a Directory base URL and a cursor. */
export function streamUrl(from: string, cursor: number): string {
  const u = new URL(`${from.replace(/\/+$/, '')}/export/stream`);
  u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
  u.searchParams.set('cursor', String(cursor));
  return u.toString();
}

/** A frame that is not a feed line: the connection is dropped and opened again. */
class TransportError extends Error {}

export class FeedFollower {
  private ws: WebSocket | undefined;
  private connected = false;
  private stopped = false;
  private failure: string | undefined;
  private lastConnectionError: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private delayMs: number;
  private readonly retry: { first: number; max: number };
  private readonly limits: FollowerLimits;
  private readonly listeners = new Set<() => void>();
  /** Connections ended by {@link dropConnection}: the error their end emits is not the reason. */
  private readonly dropped = new WeakSet<WebSocket>();

  constructor(private readonly o: FollowerOptions) {
    this.retry = o.retryMs ?? { first: 500, max: 30_000 };
    this.delayMs = this.retry.first;
    this.limits = { ...DEFAULT_FOLLOWER_LIMITS, ...o.limits };
  }

  /** The seq this mirror held when it started following (0: from scratch). */
  startSeq = 0;

  start(): void {
    this.startSeq = this.seq;
    this.connect();
  }

  /** The seq of the last entry held (everything a mirror holds is final). */
  get seq(): number {
    return this.o.ledger.finalizedFeedSeq();
  }

  status(): FollowerStatus {
    const s: FollowerStatus = { primary_url: this.o.from, seq: this.seq, block: this.o.ledger.headNumber, connected: this.connected };
    if (this.failure !== undefined) s.error = this.failure;
    else if (this.lastConnectionError !== undefined) s.last_connection_error = this.lastConnectionError;
    return s;
  }

  /** Called after every imported block (tests, lag measurement). */
  onProgress(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private connect(): void {
    if (this.stopped) return;
    const assembler = new BlockAssembler(this.seq, this.limits);
    const ws = new WebSocket(streamUrl(this.o.from, this.seq), { maxPayload: this.limits.maxLineBytes, handshakeTimeout: this.limits.handshakeTimeoutMs });
    this.ws = ws;
    const live = () => !this.stopped && this.failure === undefined && this.ws === ws;
    let heard = false;
    let pinger: NodeJS.Timeout | undefined;
    ws.on('open', () => {
      this.connected = true;
      heard = true;
      pinger = setInterval(() => {
        if (!heard) {
          this.dropConnection(ws, `nothing from the primary for ${this.limits.pingIntervalMs} ms`);
          return;
        }
        heard = false;
        ws.ping();
      }, this.limits.pingIntervalMs);
      pinger.unref();
      this.o.logger?.info({ from: this.o.from, seq: this.seq }, 'following the export stream');
    });
    ws.on('pong', () => (heard = true));
    ws.on('ping', () => (heard = true));
    ws.on('message', (data, isBinary) => {
      heard = true;
      if (!live()) return;
      try {
        if (isBinary) throw new TransportError('a binary frame on the export stream');
        const text = rawText(data);
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          throw new TransportError(`a frame that is not JSON on the export stream: ${JSON.stringify(text.slice(0, 60))}`);
        }
        this.apply(assembler, json, Buffer.byteLength(text));
      } catch (e) {
        this.fail(ws, e);
      }
    });
    ws.on('error', (err: Error & { code?: string }) => {
      if (err.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH' && live()) {
        this.fail(ws, new BlockImportError(`a feed line after entry ${this.seq} is larger than ${this.limits.maxLineBytes} bytes`));
        return;
      }
      if (live() && !this.dropped.has(ws)) this.lastConnectionError = err.message;
      this.o.logger?.warn({ err: err.message, from: this.o.from }, 'export stream connection failed');
    });
    ws.on('close', (code, reason) => {
      clearInterval(pinger);
      this.dropped.delete(ws);
      if (this.ws !== ws) return;
      this.ws = undefined;
      this.connected = false;
      if (this.stopped || this.failure !== undefined) return;
      this.o.logger?.info({ code, reason: reason.toString(), retry_ms: this.delayMs }, 'export stream closed; reconnecting');
      this.timer = setTimeout(() => this.connect(), this.delayMs);
      this.delayMs = Math.min(this.delayMs * 2, this.retry.max);
    });
  }

  private apply(assembler: BlockAssembler, json: unknown, bytes: number): void {
    const done = assembler.push(parseFeedLine(json), bytes);
    if (done === undefined) return;
    this.o.ledger.importBlock(done.block, done.txs);
    if (this.seq !== done.lastSeq) {
      throw new BlockImportError(`block ${done.block.header.number} ends at feed entry ${this.seq} here but at ${done.lastSeq} at the primary`);
    }
    // progress: the next reconnection waits the shortest delay again, and what went wrong before is over
    this.delayMs = this.retry.first;
    this.lastConnectionError = undefined;
    for (const l of this.listeners) l();
  }

  /** Ends the connection (its close reconnects) and remembers why. */
  private dropConnection(ws: WebSocket, why: string): void {
    if (this.ws !== ws) return;
    this.lastConnectionError = why;
    this.dropped.add(ws);
    this.o.logger?.warn({ reason: why, from: this.o.from }, 'dropping the export stream connection');
    ws.terminate();
  }

  private fail(ws: WebSocket, e: unknown): void {
    if (!(e instanceof BlockImportError)) {
      // a transport error, or not the feed's fault (e.g. the mirror's own disk): start again from what was stored
      if (!(e instanceof TransportError || e instanceof FeedFormatError)) this.o.logger?.error({ err: e }, 'applying the export stream failed; reconnecting');
      this.dropConnection(ws, e instanceof Error ? e.message : String(e));
      return;
    }
    // the first block that does not verify is the one reported; nothing after it is looked at
    if (this.failure !== undefined) return;
    this.failure = e.message;
    this.o.logger?.error({ err: e.message, seq: this.seq }, "the primary's feed does not verify; following stopped");
    ws.close(1008, 'feed_does_not_verify');
  }

  /** Stops following (the connection is closed). */
  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.ws?.close(1000, 'mirror_stopping');
    this.ws = undefined;
  }
}

function rawText(data: WebSocket.RawData): string {
  if (Buffer.isBuffer(data)) return data.toString('utf8');
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data).toString('utf8');
}
