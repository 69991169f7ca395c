/**
 * Handing a write to another process of the same deployment (the leader shape of docs/deployment.md): a process
 * that does not produce the blocks passes the writes of routes marked `handOver` to the one that does, after its
 * own client rate gate and the body's read but before the route parses it, and answers with that process's answer
 * as it came — status, body bytes and headers — so a `202` or an error is the producer's own.
 *
 * The hop is recognised by `x-ddn-hand-over: <token>`, the deployment's shared secret (kept in its database):
 * a request that carries the token is never handed on, its client gate was passed where it arrived, and its client
 * address is the one that process saw (`x-ddn-handed-for`), so budgets count the client once and by its own
 * address. A request whose header does not carry the token is served as any other (the header means nothing).
 * Only an answer marked `x-ddn-hand-over: taken` by a process that recognised the token is relayed; any other
 * outcome — no producer known, a connection refused or lost, a timeout, an unmarked answer — leaves the write to
 * this process, which admits it itself (every process can: docs/deployment.md). A write the producer stored before
 * the hop broke is then a duplicate of the same transaction (`202` again) or refused for its used nonce.
 */
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { timingSafeEqual } from 'node:crypto';
import { Agent, type Dispatcher } from 'undici';
import type { HandOverPeer, HandOverSource } from '../ports/hand-over-source.js';
import { jsonPayload, type HttpResponse } from './context.js';

/** The request header of a hand-over, and the response header of one taken. */
export const HAND_OVER_HEADER = 'x-ddn-hand-over';
/** The client address the handing process counted the request against. */
export const HANDED_FOR_HEADER = 'x-ddn-handed-for';
/** The value of {@link HAND_OVER_HEADER} on the answer to a hand-over that was taken. */
const TAKEN = 'taken';

export type { HandOverPeer, HandOverSource } from '../ports/hand-over-source.js';

/** Hand-overs by outcome since start (metrics `ddn_ledger_hand_overs_total`). */
export interface HandOverCounts {
  /** Handed and answered by the producer. */
  handed: number;
  /** Handed, but admitted here: the hop failed. */
  failed: number;
  /** Admitted here without a hop: as many were in flight to the producer as allowed (it is busy). */
  busy: number;
  /** Taken from another process. */
  taken: number;
}

/** Request headers not passed on (hop-by-hop, or set by the hop). */
const NOT_PASSED = new Set([
  'connection',
  'keep-alive',
  'host',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'expect',
  'content-length',
  'proxy-connection',
]);
/** Answer headers not relayed (hop-by-hop, or written by this process's own answer). */
const NOT_RELAYED = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'content-type', 'date', 'x-request-id', HAND_OVER_HEADER]);
/** The largest answer relayed (a write's answer is a few hundred bytes). */
const MAX_ANSWER_BYTES = 64 * 1024;

/** True when `sent` is `token` (compared in constant time). */
function sameToken(sent: string, token: string): boolean {
  const a = Buffer.from(sent);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The header's single value, or undefined. */
function single(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return typeof v === 'string' ? v : undefined;
}

const HANDED = Symbol('ddnHandedFor');
type Marked = IncomingMessage & { [HANDED]?: string | null };

export interface HandOverOptions {
  source: HandOverSource;
  /** Longest wait for the producer's answer (default 10 s): beyond it, the write is admitted here. */
  timeoutMs?: number;
  /** Connections to the producer at most (default 64). */
  connections?: number;
  /**
   * Hand-overs in flight at most (default {@link DEFAULT_MAX_IN_FLIGHT}): beyond, a write is admitted here. A busy
   * producer answers slower, so more of its hand-overs are in flight at once: the writes it cannot take at its pace
   * are then admitted where they arrive, and a saturated deployment admits on every process.
   */
  maxInFlight?: number;
}

/** The default of {@link HandOverOptions.maxInFlight}. */
export const DEFAULT_MAX_IN_FLIGHT = 16;

/** One process's hand-overs: recognising those it takes, and handing its own writes on. */
export class HandOver {
  readonly counts: HandOverCounts = { handed: 0, failed: 0, busy: 0, taken: 0 };
  private readonly agent: Dispatcher;
  private readonly timeoutMs: number;
  private readonly maxInFlight: number;
  private inFlight = 0;

  constructor(private readonly o: HandOverOptions) {
    this.timeoutMs = o.timeoutMs ?? 10_000;
    this.maxInFlight = o.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT;
    this.agent = new Agent({
      connections: o.connections ?? 64,
      connectTimeout: Math.min(this.timeoutMs, 2_000),
      headersTimeout: this.timeoutMs,
      bodyTimeout: this.timeoutMs,
    });
  }

  /**
   * The client address another process handed `req` for, when it carries the deployment's token (decided once per
   * request); undefined for a request that arrived from a client.
   */
  handedFor(req: IncomingMessage): string | undefined {
    const marked = req as Marked;
    const known = marked[HANDED];
    if (known !== undefined) return known ?? undefined;
    const sent = single(req.headers, HAND_OVER_HEADER);
    const token = sent === undefined ? undefined : this.o.source.token();
    const handed = token !== undefined && sent !== undefined && sameToken(sent, token) ? (single(req.headers, HANDED_FOR_HEADER) ?? '') : undefined;
    marked[HANDED] = handed ?? null;
    if (handed !== undefined) this.counts.taken++;
    return handed;
  }

  /**
   * The producer's answer to `req` (whose body, read already, is `body`), when it is to be handed on and the
   * producer answers; undefined when this process is to admit it: it produces, none is known, the request was
   * handed to it, as many hand-overs as allowed are in flight, or the hop failed.
   */
  async handOn(req: IncomingMessage, body: Buffer | null, clientAddress: string, requestId: string): Promise<HttpResponse | undefined> {
    // handed here with the token: never handed on again; a forged header is a client's, replaced on the hop
    if (this.handedFor(req) !== undefined) return undefined;
    const peer = this.o.source.peer();
    const token = this.o.source.token();
    if (peer === undefined || token === undefined) return undefined;
    if (this.inFlight >= this.maxInFlight) {
      this.counts.busy++;
      return undefined;
    }
    this.inFlight++;
    try {
      return await this.hop(req, body, { peer, token, clientAddress, requestId });
    } finally {
      this.inFlight--;
    }
  }

  /** One hop: the producer's answer, or undefined (counted, and the source told) when it failed. */
  private async hop(
    req: IncomingMessage,
    body: Buffer | null,
    o: { peer: HandOverPeer; token: string; clientAddress: string; requestId: string },
  ): Promise<HttpResponse | undefined> {
    const { peer, token, clientAddress, requestId } = o;
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value === undefined || NOT_PASSED.has(name)) continue;
      headers[name] = Array.isArray(value) ? value.join(', ') : value;
    }
    headers['x-request-id'] = requestId;
    headers[HAND_OVER_HEADER] = token;
    headers[HANDED_FOR_HEADER] = clientAddress;
    try {
      const answer = await this.agent.request({
        origin: peer.url,
        path: req.url ?? '/',
        method: req.method as Dispatcher.HttpMethod,
        headers,
        ...(body === null ? {} : { body }),
      });
      const length = Number(answer.headers['content-length']);
      if (answer.headers[HAND_OVER_HEADER] !== TAKEN || !(length <= MAX_ANSWER_BYTES)) {
        await answer.body.dump();
        throw new Error('the answer is not a hand-over taken');
      }
      const payload = Buffer.from(await answer.body.arrayBuffer());
      const relayed: Record<string, string> = {};
      for (const [name, value] of Object.entries(answer.headers)) {
        if (value === undefined || NOT_RELAYED.has(name)) continue;
        relayed[name] = Array.isArray(value) ? value.join(', ') : value;
      }
      const type = answer.headers['content-type'];
      this.counts.handed++;
      this.o.source.answered(peer);
      return { ...jsonPayload(answer.statusCode, payload, relayed), ...(typeof type === 'string' ? { contentType: type } : {}) };
    } catch {
      this.counts.failed++;
      this.o.source.failed(peer);
      return undefined;
    }
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}
