/**
 * The Forward step (http-api.md §10.4.2): targets in order, for each its `<P>RelayService` endpoints;
 * `POST {endpoint}/relay` node-signed (§10.6) with the envelope plus provenance
 * (`policy_context.resume_after` = this step). The first 2xx with `success: true` is a Success and the receiving
 * Relay continues with this step's successors (mode `policy_handoff`). Downstream: one attempt per endpoint,
 * 10 s timeout. A chunk set is forwarded whole, in sequence order, to the same endpoint.
 */
import { postNodeSigned } from '../../outbound/node-post.js';
import type { Logger } from 'pino';
import type { Clock } from '../../base/clock.js';
import type { RequestTrace } from '../../base/request-trace.js';
import type { NodeIdentity } from '../../protocol/node-signature.js';
import type { Profile } from '../../protocol/profile.js';
import { normalizeEndpoint } from '../../protocol/retrieval-proof.js';
import { OutboundError, type OutboundHttp } from '../../outbound/outbound-http.js';

/** Sends one envelope to another Relay; true when it answered 2xx with `success: true`. */
export interface RelayForwarder {
  /** Forwards `body` to `endpoint`, for request `trace` (its id passed on as `X-Request-Id`). */
  forward(endpoint: string, body: Buffer, trace?: RequestTrace): Promise<boolean>;
}

/** What {@link HttpRelayForwarder} needs. */
export interface ForwarderDeps {
  profile: Profile;
  clock: Clock;
  identity: NodeIdentity;
  outbound: OutboundHttp;
  timeoutMs?: number;
  logger?: Logger;
}

/** Node-signed `POST {endpoint}/relay`. */
export class HttpRelayForwarder implements RelayForwarder {
  constructor(private readonly deps: ForwarderDeps) {}

  async forward(endpoint: string, body: Buffer, trace?: RequestTrace): Promise<boolean> {
    const url = `${endpoint.replace(/\/+$/, '')}/relay`;
    try {
      const res = await postNodeSigned(this.deps, url, body, this.deps.timeoutMs ?? 10_000, trace?.id);
      let parsed: unknown = null;
      try {
        parsed = JSON.parse(res.body.toString('utf8'));
      } catch {
        parsed = null;
      }
      const ok = res.status >= 200 && res.status < 300 && typeof parsed === 'object' && parsed !== null && (parsed as { success?: unknown }).success === true;
      if (!ok) (trace?.log ?? this.deps.logger)?.info({ endpoint, status: res.status, code: (parsed as { code?: unknown } | null)?.code }, 'forward refused');
      return ok;
    } catch (err) {
      if (!(err instanceof OutboundError)) throw err;
      (trace?.log ?? this.deps.logger)?.info({ endpoint, kind: err.kind }, 'forward failed');
      return false;
    }
  }
}

/** The result of forwarding to the targets of one step. */
export interface ForwardReport {
  /** The endpoint that accepted (as published, one trailing `/` removed), or null. */
  accepted: string | null;
  attempts: number;
}

/** Tries each endpoint in order until one accepts every body (one attempt per endpoint). */
export async function forwardToEndpoints(
  endpoints: readonly string[],
  bodies: readonly Buffer[],
  forwarder: RelayForwarder,
  trace?: RequestTrace,
): Promise<ForwardReport> {
  let attempts = 0;
  for (const endpoint of endpoints) {
    let ok = true;
    for (const body of bodies) {
      attempts++;
      if (!(await forwarder.forward(endpoint, body, trace))) {
        ok = false;
        break;
      }
    }
    if (ok) return { accepted: normalizeEndpoint(endpoint), attempts };
  }
  return { accepted: null, attempts };
}
