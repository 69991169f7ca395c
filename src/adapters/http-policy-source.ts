/**
 * Event policies (src/events/policy-source.ts) over HTTP from a Directory: `GET /applications/{id}/policy`,
 * `GET /policies/v3/{scope}/{id}`. A failed lookup throws `policy_lookup_failed`.
 */
import type { Logger } from 'pino';
import { DdnError } from '../base/errors.js';
import { BaseFailover, FailoverExhausted } from '../base/failover.js';
import type { EventPolicySource, EventScope } from '../events/policy-source.js';
import { KeepAliveJson } from '../outbound/keepalive-json.js';

/** Policies from a Directory over HTTP: one base URL or several (tried in turn, src/base/failover.ts). */
export class HttpPolicySource implements EventPolicySource {
  private readonly failover: BaseFailover;

  private readonly http = new KeepAliveJson();

  constructor(
    directoryUrls: string | readonly string[],
    private readonly timeoutMs = 5000,
    logger?: Logger,
  ) {
    this.failover = new BaseFailover(directoryUrls, logger?.child({ component: 'directory-policies' }));
  }

  /** Closes its idle keep-alive connections. */
  close(): void {
    this.http.close();
  }

  async policy(scope: EventScope): Promise<Record<string, unknown> | null> {
    const id = encodeURIComponent(scope.id);
    const path = scope.type === 'APPLICATION' ? `/applications/${id}/policy` : `/policies/v3/${scope.type === 'DID' ? 'did' : 'persona'}/${id}`;
    let res: { status: number; body: Record<string, unknown> };
    try {
      res = await this.failover.send(async (base) => {
        const r = await this.http.get(`${base}${path}`, this.timeoutMs);
        return { status: r.status, body: (r.body ?? {}) as Record<string, unknown> };
      });
    } catch (e) {
      if (!(e instanceof FailoverExhausted)) throw e;
      throw new DdnError('policy_lookup_failed', 'no Directory answered a policy lookup', { attempts: e.attempts });
    }
    const { status, body } = res;
    if (status === 404) return null;
    if (status !== 200 || typeof body.policy !== 'object' || body.policy === null) {
      throw new DdnError('policy_lookup_failed', 'the Directory could not answer a policy lookup', { status, code: body.code });
    }
    return body.policy as Record<string, unknown>;
  }
}
