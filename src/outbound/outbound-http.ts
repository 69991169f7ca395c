/**
 * Outbound HTTP, the one client of node-to-node requests and of a remote Directory: one undici `Agent` per
 * instance (keep-alive, at most 64 connections per origin), a timeout, a cap on the answer read, and an address
 * guard for endpoints taken from DID documents (http-api.md §10.4) — loopback, private and special-use addresses
 * are refused (before connecting, after DNS resolution) unless the node runs with `--allow-private-endpoints`.
 * The Relay, event processing (Send, Call) and the remote Directory lookups (keepalive-json.ts) all go through it.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions, type LookupOneOptions, type LookupOptions } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import tls from 'node:tls';
import { Agent, errors as undiciErrors, type Dispatcher } from 'undici';
import { isSpecialAddress } from '../protocol/public-endpoint.js';
import { LookupGate } from './lookup-gate.js';

export type OutboundFailure = 'blocked_address' | 'timeout' | 'network' | 'invalid_url';

export class OutboundError extends Error {
  constructor(
    readonly kind: OutboundFailure,
    message: string,
    /** True when the request may have reached the server (outcome unknown). */
    readonly maybeDelivered = false,
  ) {
    super(message);
    this.name = 'OutboundError';
  }
}

export interface OutboundRequest {
  method: 'POST' | 'GET';
  url: string;
  headers: Record<string, string>;
  body?: Buffer;
  timeoutMs: number;
  /** The id of the request this call is made for, passed on as `X-Request-Id`; none outside a request. */
  requestId?: string;
}

export interface OutboundResponse {
  status: number;
  body: Buffer;
}

export interface OutboundHttpOptions {
  allowPrivate: boolean;
  /** Response bodies larger than this are cut off (protects the Relay from a hostile endpoint). Default 1 MiB. */
  maxResponseBytes?: number;
  /** What an answer over `maxResponseBytes` gives: its first bytes (`truncate`, default) or an error (`fail`). */
  oversize?: 'truncate' | 'fail';
  /** How long establishing a connection (DNS, TCP, TLS) may take; default 5 000 ms. */
  connectTimeoutMs?: number;
  /** Extra trusted CA certificates (PEM) besides the system store — tests with a self-signed server only. */
  extraCa?: readonly string[];
  /** Fixed host → address answers before DNS (tests only); the address guard still applies. */
  hosts?: Readonly<Record<string, string>>;
  /** Where names are looked up: the process's {@link systemLookups} unless given (tests give a gate of their own). */
  lookups?: LookupGate;
  /** Told of every request's result (`2xx`…`5xx`, or the failure code) and duration in seconds (metrics). */
  observe?: (result: string, seconds: number) => void;
}

/** How long establishing a connection may take by default (`connectTimeoutMs`), and a lookup may wait for its turn. */
const CONNECT_TIMEOUT_MS = 5_000;

export class OutboundHttp {
  private readonly agent: Agent;
  private readonly maxResponseBytes: number;

  constructor(private readonly opts: OutboundHttpOptions) {
    const ca = opts.extraCa !== undefined && opts.extraCa.length > 0 ? [...tls.rootCertificates, ...opts.extraCa] : undefined;
    this.agent = new Agent({
      connections: 64,
      connect: { lookup: this.guardedLookup(), timeout: opts.connectTimeoutMs ?? CONNECT_TIMEOUT_MS, ...(ca === undefined ? {} : { ca }) },
    });
    this.maxResponseBytes = opts.maxResponseBytes ?? 1024 * 1024;
  }

  private guardedLookup(): LookupFunction {
    const allowPrivate = this.opts.allowPrivate;
    const hosts = this.opts.hosts ?? {};
    const lookups = this.opts.lookups ?? systemLookups();
    return (hostname, options, callback) => {
      const fixed = hosts[hostname.toLowerCase()];
      const resolve = (cb: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void): void =>
        fixed === undefined ? lookups.lookup(hostname, familyOf(options), cb) : cb(null, [{ address: fixed, family: isIP(fixed) === 6 ? 6 : 4 }]);
      resolve((err, addresses) => {
        if (err) return callback(err, '', 4);
        const list = addresses as unknown as LookupAddress[];
        const usable = allowPrivate ? list : list.filter((a) => !isSpecialAddress(a.address));
        if (usable.length === 0) {
          return callback(new OutboundError('blocked_address', `${hostname} resolves only to non-public addresses`), '', 4);
        }
        if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, usable);
        return callback(null, usable[0]!.address, usable[0]!.family);
      });
    };
  }

  /**
   * Sends one request; rejects with OutboundError on any transport failure (never on an HTTP status). Made while
   * serving a request, it carries that request's id as `X-Request-Id`.
   */
  request(req: OutboundRequest): Promise<OutboundResponse> {
    const observe = this.opts.observe;
    if (observe === undefined) return this.send(req);
    const startedAt = performance.now();
    const seconds = (): number => (performance.now() - startedAt) / 1000;
    return this.send(req).then(
      (res) => {
        observe(`${Math.min(5, Math.max(1, Math.floor(res.status / 100)))}xx`, seconds());
        return res;
      },
      (err: unknown) => {
        observe(err instanceof OutboundError ? err.kind : 'network', seconds());
        throw err;
      },
    );
  }

  private async send(req: OutboundRequest): Promise<OutboundResponse> {
    let url: URL;
    try {
      url = new URL(req.url);
    } catch {
      throw new OutboundError('invalid_url', `invalid URL ${req.url}`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new OutboundError('invalid_url', `unsupported scheme ${url.protocol}`);
    const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    if (!this.opts.allowPrivate && isIP(host) && isSpecialAddress(host)) throw new OutboundError('blocked_address', `${host} is not a public address`);
    try {
      return await new Promise<OutboundResponse>((resolve, reject) => {
        const handler = new AnswerCollector(this.maxResponseBytes, this.opts.oversize === 'fail', resolve, reject);
        this.agent.dispatch(
          {
            origin: url.origin,
            path: `${url.pathname}${url.search}`,
            method: req.method,
            headers: headerList(req),
            ...(req.body === undefined ? {} : { body: req.body }),
            headersTimeout: req.timeoutMs,
            bodyTimeout: req.timeoutMs,
          },
          handler,
        );
      });
    } catch (e) {
      throw outboundFailure(e, url, req.timeoutMs);
    }
  }

  close(): void {
    void this.agent.destroy().catch(() => undefined);
  }
}

/** The address family a connect's lookup options ask for (0: any). */
function familyOf(options: LookupOneOptions | LookupAllOptions | LookupOptions): number {
  const f = options.family;
  return f === 4 || f === 'IPv4' ? 4 : f === 6 || f === 'IPv6' ? 6 : 0;
}

let system: LookupGate | undefined;

/**
 * The process's turns at the system resolver (`dns.lookup`, on libuv's pool), shared by every {@link OutboundHttp}:
 * at most one lookup fewer than the pool has threads (`UV_THREADPOOL_SIZE`, 4 by default) at once, at most 1,000
 * waiting, each waiting at most 5 s (the connect timeout) — see `lookup-gate.ts`.
 */
export function systemLookups(): LookupGate {
  if (system !== undefined) return system;
  const poolThreads = Number(process.env.UV_THREADPOOL_SIZE) || 4;
  system = new LookupGate((hostname, family, cb) => dnsLookup(hostname, { family, all: true }, cb), {
    maxInFlight: Math.max(1, poolThreads - 1),
    maxWaiting: 1_000,
    waitMs: CONNECT_TIMEOUT_MS,
  });
  return system;
}

/**
 * The answer of one dispatched request, collected as its chunks arrive (at most `maxBytes` kept; past that, the
 * rest is dropped, or the request aborted when `failOversize`). A dispatch handler instead of undici's `request()`:
 * that one wraps every answer in a `Readable` stream (and an async resource) only for it to be read whole here,
 * about a tenth of a two-hop Relay's event loop (bench/HISTORY.md, session 30).
 */
class AnswerCollector implements Dispatcher.DispatchHandler {
  private status = 0;
  private readonly chunks: Buffer[] = [];
  private size = 0;
  private settled = false;

  constructor(
    private readonly maxBytes: number,
    private readonly failOversize: boolean,
    private readonly resolve: (res: OutboundResponse) => void,
    private readonly reject: (err: unknown) => void,
  ) {}

  /** Present so undici takes this as a handler of its current interface (nothing to do before the answer). */
  onRequestStart(): void {}

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number): void {
    // 1xx answers are informational: the final status follows
    if (statusCode >= 200) this.status = statusCode;
  }

  /**
   * Keeps `chunk` itself, no copy: it is never reused or overwritten after this returns. undici 7's HTTP/1 parser
   * (lib/dispatcher/client-h1.js, `wasm_on_body`) hands over a view of the chunk it got from `socket.read()`, not
   * of llhttp's wasm memory (into which that chunk is only copied to parse it); and Node's socket gives every read a
   * buffer of its own (lib/internal/stream_base_commons.js `onStreamRead`: `new FastBuffer(arrayBuffer, …)` per
   * read; TLS copies its clear text into a new allocation per read too) unless the socket was opened with a
   * user `onread` buffer, which undici's connector (lib/core/connect.js) does not pass. The test "keeps every
   * answer of many concurrent ones byte for byte" guards it.
   */
  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.settled) return;
    this.size += chunk.length;
    if (this.size <= this.maxBytes) this.chunks.push(chunk);
    else if (this.failOversize) {
      const err = new OutboundError('network', `answer larger than ${this.maxBytes} bytes`, true);
      this.fail(err);
      controller.abort(err);
    }
  }

  onResponseEnd(): void {
    if (this.settled) return;
    this.settled = true;
    this.resolve({ status: this.status, body: this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks) });
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    this.fail(err);
  }

  private fail(err: unknown): void {
    if (this.settled) return;
    this.settled = true;
    this.reject(err);
  }
}

/**
 * The request's headers as undici's flat list (name, value, …): `X-Request-Id` from `requestId`, unless the headers
 * carry one of their own (in any casing), then the headers in their order. Not an object spread: copying the headers
 * into a new object cost about 1.5 % of a two-hop Relay's event loop (bench/HISTORY.md, session 33).
 */
function headerList(req: OutboundRequest): string[] {
  const list: string[] = [];
  const { headers } = req;
  let own = false;
  for (const name in headers) {
    list.push(name, headers[name]!);
    // header names are case-insensitive: an `X-Request-Id` of the headers' own is theirs in any casing
    if (name.length === 12 && name.toLowerCase() === 'x-request-id') own = true;
  }
  if (req.requestId !== undefined && !own) list.unshift('x-request-id', req.requestId);
  return list;
}

/** Error codes of a request that failed before anything was sent. */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL', 'UND_ERR_CONNECT_TIMEOUT']);

/** An undici or socket error as an {@link OutboundError}. */
function outboundFailure(e: unknown, url: URL, timeoutMs: number): OutboundError {
  if (e instanceof OutboundError) return e;
  const cause = e instanceof Error && e.cause instanceof OutboundError ? e.cause : undefined;
  if (cause !== undefined) return cause;
  if (e instanceof undiciErrors.HeadersTimeoutError || e instanceof undiciErrors.BodyTimeoutError) {
    return new OutboundError('timeout', `no answer from ${url.origin} within ${timeoutMs} ms`, true);
  }
  if (e instanceof undiciErrors.ConnectTimeoutError) return new OutboundError('timeout', `no connection to ${url.origin} in time`, false);
  const code = (e as { code?: unknown } | null)?.code;
  const message = e instanceof Error ? e.message : String(e);
  return new OutboundError('network', message, !(typeof code === 'string' && NOT_SENT.has(code)));
}
