/**
 * The DirectoryPort over HTTP, for a Relay or Cache process that does not host the Directory. It may be given
 * several base URLs (scaled-out Directory processes): a lookup starts at the one that last answered and moves to
 * the next on a connection failure, a timeout, a 5xx or an answer that is not JSON (src/base/failover.ts). A clean
 * 200/404 from any of them is the answer. When every base fails the lookup is `policy_lookup_failed` (503): a
 * failed lookup is never taken as "not found" or "no policy". A lookup made for a request carries its id as
 * `X-Request-Id`.
 */
import type { Logger } from 'pino';
import { DdnError } from '../base/errors.js';
import { BaseFailover, FailoverExhausted } from '../base/failover.js';
import type { DeliveryView, DidView, DirectoryPort } from '../ports/directory-port.js';
import { deliveryViewFromJson } from '../ports/directory-port-json.js';
import { KeepAliveJson } from '../outbound/keepalive-json.js';

export interface HttpDirectoryPortOptions {
  /** Per attempt (one base), default 5 s. */
  timeoutMs?: number;
  /** Told when a base fails and another is tried. */
  logger?: Logger;
}

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

export class HttpDirectoryPort implements DirectoryPort {
  private readonly failover: BaseFailover;
  private readonly timeoutMs: number;
  private readonly http = new KeepAliveJson();

  /** `directoryUrls`: one base URL or several of the same Directory, tried in order. */
  constructor(directoryUrls: string | readonly string[], opts: HttpDirectoryPortOptions = {}) {
    this.failover = new BaseFailover(directoryUrls, opts.logger?.child({ component: 'directory-port' }));
    this.timeoutMs = opts.timeoutMs ?? 5000;
  }

  /** The base URL the next lookup starts at (the last one that answered). */
  get currentBase(): string {
    return this.failover.current;
  }

  private async fetchJson(url: string, timeoutMs = this.timeoutMs, requestId?: string): Promise<Answer> {
    const { status, body } = await this.http.get(url, timeoutMs, { requestId });
    if (typeof body !== 'object' || body === null) throw new Error(`HTTP ${status} without a JSON object`);
    return { status, body: body as Record<string, unknown> };
  }

  /**
   * The Directory's `GET /health` body (readiness, and the chain a Relay- or Cache-only process reports), from
   * the first base that answers 200 within `timeoutMs`, with that base. Throws when none does.
   */
  async health(timeoutMs: number): Promise<{ url: string; body: Record<string, unknown> }> {
    let url = this.failover.current;
    const a = await this.failover.send((base) => {
      url = base;
      return this.fetchJson(`${base}/health`, Math.min(timeoutMs, this.timeoutMs));
    });
    if (a.status !== 200) throw new Error(`the Directory answered /health with HTTP ${a.status}`);
    return { url, body: a.body };
  }

  /** Closes its idle keep-alive connections. */
  close(): void {
    this.http.close();
  }

  /** `path`'s answer, from the first base that answers; `requestId` goes along as `X-Request-Id` (every attempt). */
  private async get(path: string, notFoundCodes: readonly string[], requestId: string | undefined): Promise<Record<string, unknown> | null> {
    let a: Answer;
    try {
      a = await this.failover.send((base) => this.fetchJson(`${base}${path}`, this.timeoutMs, requestId));
    } catch (e) {
      if (!(e instanceof FailoverExhausted)) throw e;
      const last = 'answer' in e.last ? (e.last.answer as Answer) : undefined;
      const details = { attempts: e.attempts, ...(last === undefined ? {} : { status: last.status, code: last.body.code }) };
      throw new DdnError('policy_lookup_failed', last === undefined ? 'the Directory is unreachable' : 'the Directory could not answer', details);
    }
    if (a.status === 200) return a.body;
    if (a.status === 404 && notFoundCodes.includes(String(a.body.code))) return null;
    throw new DdnError('policy_lookup_failed', 'the Directory could not answer', { status: a.status, code: a.body.code });
  }

  async getDid(did: string, requestId?: string): Promise<DidView | null> {
    const v = await this.get(`/delivery-view/${encodeURIComponent(did)}`, ['did_not_found'], requestId);
    return v ? deliveryViewFromJson(v).recipient : null;
  }

  async lookupAlias(alias: string, requestId?: string): Promise<string | null> {
    const v = await this.get(`/aliases/${encodeURIComponent(alias)}`, ['alias_not_found'], requestId);
    return v ? String(v.did) : null;
  }

  async resolveDelivery(did: string, persona: string | null, tag: string | null, requestId?: string): Promise<DeliveryView | null> {
    const q = new URLSearchParams();
    if (persona !== null) q.set('persona', persona);
    if (tag !== null) q.set('tag', tag);
    const qs = q.toString();
    const v = await this.get(`/delivery-view/${encodeURIComponent(did)}${qs ? `?${qs}` : ''}`, ['did_not_found'], requestId);
    return v ? deliveryViewFromJson(v) : null;
  }
}
