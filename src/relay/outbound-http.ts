/**
 * Outbound HTTP for node-to-node requests to endpoints taken from DID documents (http-api.md §10.4): keep-alive
 * agents, a timeout, and an address guard — loopback, private and special-use addresses are refused (before
 * connecting, after DNS resolution) unless the node runs with `--allow-private-endpoints`.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import tls from 'node:tls';
import { isSpecialAddress } from '../protocol/public-endpoint.js';

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
  /** Response bodies larger than this are cut off (protects the Relay from a hostile endpoint). */
  maxResponseBytes?: number;
  /** Extra trusted CA certificates (PEM) besides the system store — tests with a self-signed server only. */
  extraCa?: readonly string[];
  /** Fixed host → address answers before DNS (tests only); the address guard still applies. */
  hosts?: Readonly<Record<string, string>>;
  /** Told of every request's result (`2xx`…`5xx`, or the failure code) and duration in seconds (metrics). */
  observe?: (result: string, seconds: number) => void;
}


export class OutboundHttp {
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;
  private readonly maxResponseBytes: number;

  constructor(private readonly opts: OutboundHttpOptions) {
    const lookup = this.guardedLookup();
    this.httpAgent = new http.Agent({ keepAlive: true, maxSockets: 64, lookup });
    const ca = opts.extraCa !== undefined && opts.extraCa.length > 0 ? [...tls.rootCertificates, ...opts.extraCa] : undefined;
    this.httpsAgent = new https.Agent({ keepAlive: true, maxSockets: 64, lookup, ...(ca === undefined ? {} : { ca }) });
    this.maxResponseBytes = opts.maxResponseBytes ?? 1024 * 1024;
  }

  private guardedLookup(): LookupFunction {
    const allowPrivate = this.opts.allowPrivate;
    const hosts = this.opts.hosts ?? {};
    return (hostname, options, callback) => {
      const fixed = hosts[hostname.toLowerCase()];
      const resolve = fixed === undefined
        ? (cb: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void) =>
            dnsLookup(hostname, { ...options, all: true }, (e, a) => cb(e, a as unknown as LookupAddress[]))
        : (cb: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void) => cb(null, [{ address: fixed, family: isIP(fixed) === 6 ? 6 : 4 }]);
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

  private send(req: OutboundRequest): Promise<OutboundResponse> {
    let url: URL;
    try {
      url = new URL(req.url);
    } catch {
      return Promise.reject(new OutboundError('invalid_url', `invalid URL ${req.url}`));
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      return Promise.reject(new OutboundError('invalid_url', `unsupported scheme ${url.protocol}`));
    }
    const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    if (!this.opts.allowPrivate && isIP(host) && isSpecialAddress(host)) {
      return Promise.reject(new OutboundError('blocked_address', `${host} is not a public address`));
    }
    const lib = url.protocol === 'https:' ? https : http;
    const agent = url.protocol === 'https:' ? this.httpsAgent : this.httpAgent;
    return new Promise((resolve, reject) => {
      let sent = false;
      const r = lib.request(
        url,
        {
          method: req.method,
          agent,
          headers: { ...(req.requestId === undefined ? {} : { 'x-request-id': req.requestId }), ...req.headers, ...(req.body ? { 'content-length': String(req.body.length) } : {}) },
          timeout: req.timeoutMs,
        },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (c: Buffer) => {
            size += c.length;
            if (size <= this.maxResponseBytes) chunks.push(c);
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
          res.on('error', (e) => reject(new OutboundError('network', e.message, true)));
        },
      );
      r.on('timeout', () => r.destroy(new OutboundError('timeout', `no answer from ${url.origin} within ${req.timeoutMs} ms`, sent)));
      r.on('error', (e) => reject(e instanceof OutboundError ? e : new OutboundError('network', e.message, sent)));
      r.on('finish', () => {
        sent = true;
      });
      r.end(req.body);
    });
  }

  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}
