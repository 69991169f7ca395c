/**
 * Authentication of node-to-node requests at a receiving role (http-api.md §10.6), shared by the Relay and the
 * Cache: reads the `X-DDN-Node-*` headers, looks up the node DID through the DirectoryPort, runs the pure
 * checks of `protocol/node-signature.ts` and refuses a nonce already recorded. Recording the nonce is left to
 * the caller's durable write (so it commits together with the request's effect).
 */
import type { Clock } from '../base/clock.js';
import { DdnError, type ErrorCode } from '../base/errors.js';
import type { DirectoryPort } from '../ports/directory-port.js';
import type { NonceClaim, NonceRegistry } from '../ports/nonce-registry.js';
import {
  NODE_NONCE_SCOPE,
  checkNodeRequestTiming,
  candidateRequestUrls,
  nodeSignatureError,
  readNodeHeaders,
  verifyNodeRequest,
  type VerifiedNodeRequest,
} from '../protocol/node-signature.js';
import type { Profile } from '../protocol/profile.js';

/** What {@link authenticateNodeRequest} needs. */
export interface NodeAuthDeps {
  profile: Profile;
  directory: DirectoryPort;
  nonces: NonceRegistry;
  clock: Clock;
  skewSeconds: number;
  /** `<P>RelayService` for `/relay` and `/cache/store`. */
  serviceType: string;
  /** This role's public base URLs (the URL check of §10.6). */
  ownBaseUrls(): readonly string[];
  /** The server's base path (§0.1), when the role is mounted under one. */
  basePath?: string;
  /** The code of a failed DID lookup (`policy_lookup_failed` on store and relay routes). */
  lookupFailureCode?: ErrorCode;
}

/** The request parts the check reads. */
export interface NodeAuthRequest {
  method: string;
  rawUrl: string;
  rawBody: Uint8Array | undefined;
  header(name: string): string | undefined;
  /** The request's id, passed on with the node DID's lookup. */
  requestId?: string;
}

/** A node request that passed §10.6, with the nonce claim to record. */
export interface AuthenticatedNode extends VerifiedNodeRequest {
  claim: NonceClaim;
}

/** The nonce claim of a verified node request. */
export function nodeNonceClaim(v: VerifiedNodeRequest): NonceClaim {
  return { scope: NODE_NONCE_SCOPE, did: v.nodeDid, keyId: v.keyId, nonce: v.nonce, expiresAtMs: v.nonceExpiresAtMs };
}

/**
 * `null` when the request carries no `X-DDN-Node-*` header; the verified node otherwise. Throws 403
 * `invalid_node_signature` (`details.reason`) on any failed check, or the lookup-failure code when the
 * Directory cannot answer.
 */
export async function authenticateNodeRequest(req: NodeAuthRequest, deps: NodeAuthDeps): Promise<AuthenticatedNode | null> {
  const headers = readNodeHeaders((n) => req.header(n));
  if (headers === null) return null;
  const timestampMs = checkNodeRequestTiming(headers, deps.clock.nowMs(), deps.skewSeconds);
  let record;
  try {
    record = await deps.directory.getDid(headers.nodeDid, req.requestId);
  } catch (err) {
    if (err instanceof DdnError && err.code !== 'policy_lookup_failed') throw err;
    throw new DdnError(deps.lookupFailureCode ?? 'policy_lookup_failed', 'the node DID could not be looked up', {
      retry_after_seconds: 1,
    });
  }
  // verified on the event loop: for one signature before a store, cheaper than a thread-pool round trip (measured)
  const verified = verifyNodeRequest({
    profile: deps.profile,
    headers,
    nodeRecord: record,
    method: req.method,
    candidateUrls: candidateRequestUrls(deps.ownBaseUrls(), req.rawUrl, deps.basePath),
    body: req.rawBody,
    nowMs: deps.clock.nowMs(),
    skewSeconds: deps.skewSeconds,
    serviceType: deps.serviceType,
    timestampMs,
  });
  const claim = nodeNonceClaim(verified);
  if (await deps.nonces.isNonceClaimed(claim, deps.clock.nowMs())) throw nodeSignatureError('nonce_replayed');
  const { nodeDid, serviceId, keyId, nonce, nonceExpiresAtMs } = verified;
  return { nodeDid, serviceId, keyId, nonce, nonceExpiresAtMs, claim };
}
