/**
 * Which Caches a recipient can retrieve from with a given Ed25519 key (http-api.md §11.4 steps 5–7, §12 item 17):
 * every `<P>CacheService` of its document whose `authorization` lists a verification method of that key — of type
 * `Ed25519VerificationKey2020`, `Ed25519VerificationKey2018` or `Multikey`, controlled by the DID, and listed in
 * `authentication` when that list is not empty — once per endpoint.
 */
import { bytesEqual } from '../base/bytes.js';
import { decodeSigningKeyMultibase } from '../protocol/keys.js';
import type { Profile } from '../protocol/profile.js';
import { normalizeEndpoint } from '../protocol/retrieval-proof.js';
import type { CacheTarget } from './cache-client.js';
import type { RenderedDidDocumentJson } from './types.js';

const SIGNING_TYPES = new Set(['Ed25519VerificationKey2020', 'Ed25519VerificationKey2018', 'Multikey']);

/** Filters of {@link cacheTargetsFor}. */
export interface CacheTargetOptions {
  /** Use only this verification method (full id). */
  keyId?: string;
  deviceId?: string;
}

/**
 * The test a service's `authorization` entry must pass to be used with `publicKey` (§11.4 step 7): a verification
 * method of the DID of an Ed25519 type whose key is `publicKey`, listed in `authentication` when that list is not
 * empty (and equal to `keyId` when given).
 */
export function keyUsableWith(document: RenderedDidDocumentJson, publicKey: Uint8Array, keyId?: string): (id: string) => boolean {
  const did = document.id;
  const auth = document.authentication ?? [];
  return (id: string): boolean => {
    if (keyId !== undefined && id !== keyId) return false;
    if (auth.length > 0 && !auth.includes(id)) return false;
    const vm = document.verificationMethod.find((v) => v.id === id && v.controller === did);
    if (vm === undefined || !SIGNING_TYPES.has(vm.type)) return false;
    const key = decodeSigningKeyMultibase(vm.publicKeyMultibase);
    return key !== undefined && bytesEqual(key, publicKey);
  };
}

/** The Cache targets of `document` for the key `publicKey`, in document order, one per endpoint. */
export function cacheTargetsFor(profile: Profile, document: RenderedDidDocumentJson, publicKey: Uint8Array, opts: CacheTargetOptions = {}): CacheTarget[] {
  const did = document.id;
  const usable = keyUsableWith(document, publicKey, opts.keyId);
  const seen = new Set<string>();
  const out: CacheTarget[] = [];
  for (const s of document.service ?? []) {
    if (s.type !== profile.cacheServiceType) continue;
    const keyId = (s.authorization ?? []).find(usable);
    if (keyId === undefined) continue;
    for (const e of typeof s.serviceEndpoint === 'string' ? [s.serviceEndpoint] : s.serviceEndpoint) {
      const endpoint = normalizeEndpoint(e);
      if (seen.has(endpoint)) continue;
      seen.add(endpoint);
      out.push({ did, serviceId: s.id, endpoint, keyId, deviceId: opts.deviceId ?? '' });
    }
  }
  return out;
}
