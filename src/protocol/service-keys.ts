/**
 * Keys a DID authorises for one of its services: Cache retrieval proofs (http-api.md §11.4 steps 5–7) and
 * node-to-node requests (§10.6) both name a service of the DID and a verification method listed in that
 * service's `authorization`.
 */
import type { DidDocument, Service } from './document.js';
import { decodeSigningKeyMultibase } from './keys.js';

/** Verification-method types that carry an Ed25519 key (§11.4 step 7). */
export const ED25519_VM_TYPES: readonly string[] = Object.freeze(['Ed25519VerificationKey2020', 'Ed25519VerificationKey2018', 'Multikey']);

/** The service of `document` with id `serviceId` and type `type`, if any. */
export function findService(document: DidDocument | null, serviceId: string, type: string): Service | undefined {
  return document?.service?.find((s) => s.id === serviceId && s.type === type);
}

/**
 * The one rule for a key a DID authorises for one of its services, with no other condition: the Ed25519 public
 * key of `keyId` when it is listed in `service.authorization`, is a verification method of `did` with
 * `controller` = `did` and an Ed25519 type, and its key decodes as in ledger-rules.md §3.5; `undefined`
 * otherwise. Service authorization is its own reference (service-spec: "adding a verification method does not
 * authorize it for authentication or service use; those are separate references"), so the document's
 * `authentication` list plays no part: a key the service authorises is accepted whether or not it is in
 * `authentication`, and a key it does not list is refused even when it is. A service without `authorization`
 * authorises no key. Pure: used for retrieval proofs, node requests and live-session proofs alike.
 */
export function authorizedServiceKey(did: string, document: DidDocument, service: Service, keyId: string): Uint8Array | undefined {
  if (!(service.authorization ?? []).includes(keyId)) return undefined;
  const vm = document.verificationMethod.find((v) => v.id === keyId && v.controller === did);
  if (vm === undefined || !ED25519_VM_TYPES.includes(vm.type)) return undefined;
  return decodedKey(vm.publicKeyMultibase);
}

/** Keys decoded lately, by their `publicKeyMultibase`; at most {@link MAX_DECODED_KEYS}, emptied when full. */
const decodedKeys = new Map<string, Uint8Array | undefined>();
export const MAX_DECODED_KEYS = 4096;

/**
 * {@link decodeSigningKeyMultibase} of `value`, decoded once while it is held: every node-signed store and every
 * retrieval proof decodes the same few keys (a base58 decode each, ~1 % of a Cache's event loop in the two-hop
 * figure, bench/HISTORY.md session 33). The bytes are shared: callers only read them (a signature check).
 */
function decodedKey(value: string): Uint8Array | undefined {
  if (decodedKeys.has(value)) return decodedKeys.get(value);
  const key = decodeSigningKeyMultibase(value);
  if (decodedKeys.size >= MAX_DECODED_KEYS) decodedKeys.clear();
  decodedKeys.set(value, key);
  return key;
}
