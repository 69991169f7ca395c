/** Key and document helpers for SDK users. */
import { randomBytes } from 'node:crypto';
import { keyPairFromSeed, type Ed25519KeyPair } from '../crypto/ed25519.js';
import { multibaseEd25519, multibaseX25519 } from '../protocol/keys.js';
import type { DidDocumentJson, KeyAgreementJson, ServiceJson, VerificationMethodJson } from './types.js';

export { keyPairFromSeed, type Ed25519KeyPair };

/** A fresh key pair together with the 32-byte seed it came from (keep the seed secret to keep the key). */
export interface GeneratedKeyPair extends Ed25519KeyPair {
  readonly seed: Uint8Array;
}

/** A new Ed25519 key pair from 32 random bytes of `node:crypto`. */
export function generateKeyPair(): GeneratedKeyPair {
  const seed = new Uint8Array(randomBytes(32));
  const kp = keyPairFromSeed(seed);
  return { seed, ...kp };
}

/** An `Ed25519VerificationKey2020` method `<did>#<fragment>` whose key is `z` + base58(`ed01` ‖ key). */
export function ed25519VerificationMethod(did: string, fragment: string, publicKey: Uint8Array): VerificationMethodJson {
  return { id: `${did}#${fragment}`, type: 'Ed25519VerificationKey2020', controller: did, publicKeyMultibase: multibaseEd25519(publicKey) };
}

/** An `X25519KeyAgreementKey2020` entry `<did>#<fragment>` whose key is `z` + base58(`ec01` ‖ key). */
export function x25519KeyAgreement(did: string, fragment: string, publicKey: Uint8Array): KeyAgreementJson {
  return { id: `${did}#${fragment}`, type: 'X25519KeyAgreementKey2020', controller: did, publicKeyMultibase: multibaseX25519(publicKey) };
}

/** Options of {@link didDocumentFor}. */
export interface DidDocumentOptions {
  /** Fragment of the signing method; default `root`. */
  fragment?: string;
  /** X25519 public key published as key agreement `#<keyAgreementFragment>` (default `ka`). */
  keyAgreementPublicKey?: Uint8Array;
  keyAgreementFragment?: string;
  /** Services, kept as given. */
  services?: ServiceJson[];
}

/**
 * A DID document (http-api.md §2.6) with one `Ed25519VerificationKey2020` method `<did>#root` for `publicKey`,
 * listed in `authentication`; optionally an X25519 key agreement and services.
 */
export function didDocumentFor(did: string, publicKey: Uint8Array, opts: DidDocumentOptions = {}): DidDocumentJson {
  const vm = ed25519VerificationMethod(did, opts.fragment ?? 'root', publicKey);
  const doc: DidDocumentJson = { id: did, verificationMethod: [vm], authentication: [vm.id] };
  if (opts.keyAgreementPublicKey) doc.keyAgreement = [x25519KeyAgreement(did, opts.keyAgreementFragment ?? 'ka', opts.keyAgreementPublicKey)];
  if (opts.services) doc.service = opts.services;
  return doc;
}
