/**
 * The Call step (http-api.md §10.9): `POST` the rendered JSON to the first endpoint of `(service_did,
 * service_id)` — which must be `https` with a host equal to `registered_domain` or a subdomain of it — signed as a
 * node request (§10.6; `service_id` = this node's own service), 10 s timeout, no retry. The receiver verifies the
 * `X-DDN-Node-*` headers against the node DID's document like any node-to-node request.
 */
import { postNodeSigned } from '../outbound/node-post.js';
import type { Logger } from 'pino';
import type { Clock } from '../base/clock.js';
import type { DirectoryPort } from '../ports/directory-port.js';
import type { NodeIdentity } from '../protocol/node-signature.js';
import type { Profile } from '../protocol/profile.js';
import { OutboundError, type OutboundHttp } from '../outbound/outbound-http.js';

/** What a Call needs. */
export interface CallDeps {
  profile: Profile;
  clock: Clock;
  identity: NodeIdentity;
  directory: DirectoryPort;
  outbound: OutboundHttp;
  logger?: Logger;
}

/** The Call step's fields (JSON form, §8.1). */
export interface CallTarget {
  serviceDid: string;
  serviceId: string;
  registeredDomain: string;
}

/** True when `url` is https and its host is `domain` or a subdomain of it. */
export function endpointUnderDomain(url: string, domain: string): boolean {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return false;
  }
  const host = u.hostname.toLowerCase();
  const d = domain.toLowerCase();
  return u.protocol === 'https:' && (host === d || host.endsWith(`.${d}`));
}

/** Runs a Call; true on a 2xx answer. */
export async function runCall(deps: CallDeps, t: CallTarget, rendered: unknown): Promise<boolean> {
  const rec = await deps.directory.getDid(t.serviceDid);
  const service = rec?.deactivated === false ? rec.document?.service?.find((s) => s.id === t.serviceId) : undefined;
  const endpoint = service?.serviceEndpoint[0];
  if (endpoint === undefined || !endpointUnderDomain(endpoint, t.registeredDomain)) {
    deps.logger?.info({ service_id: t.serviceId, endpoint }, 'Call skipped: no https endpoint under the registered domain');
    return false;
  }
  const body = Buffer.from(JSON.stringify(rendered), 'utf8');
  try {
    const res = await postNodeSigned(deps, endpoint, body, 10_000);
    if (res.status >= 200 && res.status < 300) return true;
    deps.logger?.info({ endpoint, status: res.status }, 'Call refused');
  } catch (err) {
    if (!(err instanceof OutboundError)) throw err;
    deps.logger?.info({ endpoint, kind: err.kind, err: err.message }, 'Call failed');
  }
  return false;
}
