/**
 * Which Caches a recipient can retrieve from with a given Ed25519 key (http-api.md §11.4 steps 5–7): every
 * `<P>CacheService` of its document whose `authorization` lists a verification method of that key, by the Cache's
 * own rule (`authorizedServiceKey`: of type `Ed25519VerificationKey2020`, `Ed25519VerificationKey2018` or `Multikey`
 * and controlled by the DID; `authentication` plays no part) — once per endpoint.
 */
import { bytesEqual } from '../base/bytes.js';
import type { DidDocument, Service } from '../protocol/document.js';
import type { Profile } from '../protocol/profile.js';
import { normalizeEndpoint } from '../protocol/retrieval-proof.js';
import { authorizedServiceKey } from '../protocol/service-keys.js';
import type { CacheTarget } from './cache-client.js';
import type { RenderedDidDocumentJson, ServiceJson } from './types.js';

/** Filters of {@link cacheTargetsFor}. */
export interface CacheTargetOptions {
  /** Use only this verification method (full id). */
  keyId?: string;
  deviceId?: string;
}

const endpointsOf = (s: ServiceJson): string[] => (typeof s.serviceEndpoint === 'string' ? [s.serviceEndpoint] : s.serviceEndpoint);

/**
 * The first entry of `s.authorization` that authorizes `publicKey` for the service by the Cache's rule (equal to
 * `keyId` when given), or undefined.
 */
export function authorizedKeyIdFor(document: RenderedDidDocumentJson, s: ServiceJson, publicKey: Uint8Array, keyId?: string): string | undefined {
  const did = document.id;
  // Only the verification methods are read by the key rule; the service is passed on its own.
  const keys: DidDocument = { id: did, verificationMethod: document.verificationMethod, authentication: null, keyAgreement: [], service: null };
  const service: Service = { id: s.id, type: s.type, serviceEndpoint: endpointsOf(s), authorization: s.authorization ?? null, priority: s.priority ?? null };
  return (s.authorization ?? []).find((id) => {
    if (keyId !== undefined && id !== keyId) return false;
    const key = authorizedServiceKey(did, keys, service, id);
    return key !== undefined && bytesEqual(key, publicKey);
  });
}

/** The Cache targets of `document` for the key `publicKey`, in document order, one per endpoint. */
export function cacheTargetsFor(profile: Profile, document: RenderedDidDocumentJson, publicKey: Uint8Array, opts: CacheTargetOptions = {}): CacheTarget[] {
  const did = document.id;
  const seen = new Set<string>();
  const out: CacheTarget[] = [];
  for (const s of document.service ?? []) {
    if (s.type !== profile.cacheServiceType) continue;
    const keyId = authorizedKeyIdFor(document, s, publicKey, opts.keyId);
    if (keyId === undefined) continue;
    for (const e of endpointsOf(s)) {
      const endpoint = normalizeEndpoint(e);
      if (seen.has(endpoint)) continue;
      seen.add(endpoint);
      out.push({ did, serviceId: s.id, endpoint, keyId, deviceId: opts.deviceId ?? '' });
    }
  }
  return out;
}
