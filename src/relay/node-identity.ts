/**
 * The node identity (http-api.md §0.1, §10.6): the DID a node signs node-to-node requests as, and the service it
 * acts under — `#relay` (`<P>RelayService`) on a node with a Relay, else `#cache` (`<P>CacheService`): a
 * Cache-only node's event Calls are signed as its own Cache service (§10.9 "the node's own service"). Pure: the
 * DID is derived from the node key, and the document it registers is a function of the key and the service's
 * public URLs.
 *
 * Document: VM `#node` (Ed25519VerificationKey2020, the node key, listed in `authentication`) and, when the node
 * has public URLs for its service, that service with those URLs and `authorization: [#node]`.
 */
import { base58 } from '@scure/base';
import type { Ed25519KeyPair } from '../crypto/ed25519.js';
import { sha256 } from '../crypto/hash.js';
import { DOC, type DidDocument, type Service } from '../protocol/document.js';
import { multibaseEd25519 } from '../protocol/keys.js';
import type { NodeIdentity } from '../protocol/node-signature.js';
import type { Profile } from '../protocol/profile.js';

/** Fragment of the node key's verification method. */
export const NODE_KEY_FRAGMENT = 'node';
/** The service a node acts under; also its fragment. */
export type NodeServiceKind = 'relay' | 'cache';

/** The node DID: `did:<p>:` + base58 of the first 16 bytes of sha256(node public key) — stable across restarts. */
export function nodeDidFor(profile: Profile, publicKey: Uint8Array): string {
  return `did:${profile.p}:${base58.encode(sha256(publicKey).subarray(0, 16))}`;
}

/** Who the node signs as: its DID, its service (`#relay` unless told otherwise) and `#node` (§10.6). */
export function nodeIdentityOf(profile: Profile, key: Ed25519KeyPair, service: NodeServiceKind = 'relay'): NodeIdentity {
  const did = nodeDidFor(profile, key.publicKey);
  return { did, serviceId: `${did}#${service}`, keyId: `${did}#${NODE_KEY_FRAGMENT}`, key };
}

/**
 * The service `identity` acts under, listing `urls` (at most 5, each ≤ 128 bytes as the ledger bounds), or null
 * when none.
 */
export function nodeServiceOf(profile: Profile, identity: NodeIdentity, urls: readonly string[]): Service | null {
  const endpoints = urls.filter((u) => Buffer.byteLength(u, 'utf8') <= DOC.maxEndpointBytes).slice(0, DOC.maxEndpoints);
  if (endpoints.length === 0) return null;
  return {
    id: identity.serviceId,
    type: identity.serviceId.endsWith('#cache') ? profile.cacheServiceType : profile.relayServiceType,
    serviceEndpoint: endpoints,
    authorization: [identity.keyId],
    priority: null,
  };
}

/** The document a node registers on first start; `urls` are the public URLs of its service. */
export function nodeDocument(profile: Profile, identity: NodeIdentity, urls: readonly string[]): DidDocument {
  const vm = {
    id: identity.keyId,
    type: 'Ed25519VerificationKey2020',
    controller: identity.did,
    publicKeyMultibase: multibaseEd25519(identity.key.publicKey),
  };
  const service = nodeServiceOf(profile, identity, urls);
  return {
    id: identity.did,
    verificationMethod: [vm],
    authentication: [vm.id],
    keyAgreement: [],
    service: service === null ? null : [service],
  };
}

/** True when `current` already publishes `wanted` (same type, endpoints in order and authorization). */
export function serviceMatches(current: Service | undefined, wanted: Service): boolean {
  if (current === undefined) return false;
  const same = (a: readonly string[] | null, b: readonly string[] | null) =>
    (a ?? []).length === (b ?? []).length && (a ?? []).every((x, i) => x === (b ?? [])[i]);
  return current.type === wanted.type && same(current.serviceEndpoint, wanted.serviceEndpoint) && same(current.authorization, wanted.authorization);
}
