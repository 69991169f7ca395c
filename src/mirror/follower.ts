/**
 * A mirror's follower: reads the primary Directory's export stream (`/export/stream?cursor=<seq>`) from the last
 * entry this mirror holds, gathers the lines into blocks and imports each through the ledger's own runtime
 * ({@link Ledger.importBlock}: parent link, block hash, extrinsics root, every signature and outcome checked). The
 * mirror's store numbers the entries itself; a seq that differs from the primary's stops the follower as well.
 * A dropped connection is retried with a growing delay; a block that does not verify stops following for good
 * (reported by `status()` and `GET /mirror/status`), and the mirror keeps serving what it verified.
 */
import type { Logger } from 'pino';
import WebSocket from 'ws';
import { BlockImportError, type Ledger } from '../ledger/chain.js';
import { FeedFormatError, parseFeedLine } from '../ledger/feed.js';
import { BlockAssembler } from './block-assembler.js';

export interface FollowerOptions {
  /** The primary Directory's base URL (http or https). */
  from: string;
  ledger: Ledger;
  logger?: Logger;
  /** First and largest delay before reconnecting (default 500 ms, 30 s). */
  retryMs?: { first: number; max: number };
}

export interface FollowerStatus {
  primary_url: string;
  /** The seq of the last feed entry this mirror holds. */
  seq: number;
  /** Its head block. */
  block: number;
  connected: boolean;
  /** Why following stopped, when a block did not verify. */
  error?: string;
}

/** The stream URL of a Directory base URL and a cursor. */
export function streamUrl(from: string, cursor: number): string {
  const u = new URL(`${from.replace(/\/+$/, '')}/export/stream`);
  u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
  u.searchParams.set('cursor', String(cursor));
  return u.toString();
}

export class FeedFollower {
  private ws: WebSocket | undefined;
  private connected = false;
  private stopped = false;
  private failure: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private delayMs: number;
  private readonly retry: { first: number; max: number };
  private readonly listeners = new Set<() => void>();

  constructor(private readonly o: FollowerOptions) {
    this.retry = o.retryMs ?? { first: 500, max: 30_000 };
    this.delayMs = this.retry.first;
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
    return s;
  }

  /** Called after every imported block (tests, lag measurement). */
  onProgress(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private connect(): void {
    if (this.stopped) return;
    const assembler = new BlockAssembler(this.seq);
    const ws = new WebSocket(streamUrl(this.o.from, this.seq), { maxPayload: 16 * 1024 * 1024 });
    this.ws = ws;
    ws.on('open', () => {
      this.connected = true;
      this.delayMs = this.retry.first;
      this.o.logger?.info({ from: this.o.from, seq: this.seq }, 'following the export stream');
    });
    ws.on('message', (data, isBinary) => {
      if (this.stopped || this.ws !== ws) return;
      try {
        if (isBinary) throw new FeedFormatError('a binary frame on the export stream');
        this.apply(assembler, JSON.parse(rawText(data)) as unknown);
      } catch (e) {
        this.fail(e);
      }
    });
    ws.on('error', (err) => this.o.logger?.warn({ err: err.message, from: this.o.from }, 'export stream connection failed'));
    ws.on('close', (code, reason) => {
      if (this.ws !== ws) return;
      this.ws = undefined;
      this.connected = false;
      if (this.stopped || this.failure !== undefined) return;
      this.o.logger?.info({ code, reason: reason.toString(), retry_ms: this.delayMs }, 'export stream closed; reconnecting');
      this.timer = setTimeout(() => this.connect(), this.delayMs);
      this.delayMs = Math.min(this.delayMs * 2, this.retry.max);
    });
  }

  private apply(assembler: BlockAssembler, json: unknown): void {
    const done = assembler.push(parseFeedLine(json));
    if (done === undefined) return;
    this.o.ledger.importBlock(done.block, done.txs);
    if (this.seq !== done.lastSeq) {
      throw new BlockImportError(`block ${done.block.header.number} ends at feed entry ${this.seq} here but at ${done.lastSeq} at the primary`);
    }
    for (const l of this.listeners) l();
  }

  private fail(e: unknown): void {
    if (!(e instanceof BlockImportError || e instanceof FeedFormatError || e instanceof SyntaxError)) {
      // not the feed's fault (e.g. the mirror's own disk): the connection starts again from what was stored
      this.o.logger?.error({ err: e }, 'applying the export stream failed; reconnecting');
      this.ws?.close(1011, 'mirror_failed');
      return;
    }
    this.failure = e.message;
    this.o.logger?.error({ err: e.message, seq: this.seq }, "the primary's feed does not verify; following stopped");
    this.ws?.close(1008, 'feed_does_not_verify');
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
