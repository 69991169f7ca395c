/**
 * The DirectoryPort over HTTP, for a Relay or Cache process that does not host the Directory. Any answer other
 * than a clean 200/404 — connection refused, timeout, 5xx — is `policy_lookup_failed` (503): a failed lookup
 * is never taken as "not found" or "no policy".
 */
import { DdnError } from '../base/errors.js';
import type { DeliveryView, DidView, DirectoryPort } from '../ports/directory-port.js';
import { deliveryViewFromJson, didViewFromJson } from '../ports/directory-port-json.js';

export interface HttpDirectoryPortOptions {
  timeoutMs?: number;
  fetch?: typeof fetch;
}

export class HttpDirectoryPort implements DirectoryPort {
  private readonly base: string;
  private readonly timeoutMs: number;
  private readonly fetchImpl: typeof fetch;

  constructor(directoryUrl: string, opts: HttpDirectoryPortOptions = {}) {
    this.base = directoryUrl.replace(/\/+$/, '');
    this.timeoutMs = opts.timeoutMs ?? 5000;
    this.fetchImpl = opts.fetch ?? fetch;
  }

  private async get(path: string, notFoundCodes: readonly string[]): Promise<Record<string, unknown> | null> {
    let res: Response;
    try {
      res = await this.fetchImpl(`${this.base}${path}`, { signal: AbortSignal.timeout(this.timeoutMs) });
    } catch (e) {
      throw new DdnError('policy_lookup_failed', 'the Directory is unreachable', { reason: e instanceof Error ? e.message : String(e) });
    }
    let body: Record<string, unknown>;
    try {
      body = (await res.json()) as Record<string, unknown>;
    } catch {
      throw new DdnError('policy_lookup_failed', 'the Directory answered without JSON', { status: res.status });
    }
    if (res.status === 200) return body;
    if (res.status === 404 && notFoundCodes.includes(String(body.code))) return null;
    throw new DdnError('policy_lookup_failed', 'the Directory could not answer', { status: res.status, code: body.code });
  }

  async getDid(did: string): Promise<DidView | null> {
    const v = await this.get(`/delivery-view/${encodeURIComponent(did)}`, ['did_not_found']);
    return v ? deliveryViewFromJson(v).recipient : null;
  }

  async lookupAlias(alias: string): Promise<string | null> {
    const v = await this.get(`/aliases/${encodeURIComponent(alias)}`, ['alias_not_found']);
    return v ? String(v.did) : null;
  }

  async resolveDelivery(did: string, persona: string | null, tag: string | null): Promise<DeliveryView | null> {
    const q = new URLSearchParams();
    if (persona !== null) q.set('persona', persona);
    if (tag !== null) q.set('tag', tag);
    const qs = q.toString();
    const v = await this.get(`/delivery-view/${encodeURIComponent(did)}${qs ? `?${qs}` : ''}`, ['did_not_found']);
    return v ? deliveryViewFromJson(v) : null;
  }
}
