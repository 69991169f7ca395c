/**
 * Signed `POST /register-did` bodies of fresh DIDs, built by the client alone (no prepare, http-api.md §4): what the
 * load generator sends to measure the registration rate (bench/figures/resolve-scale.ts).
 */
import { randomBytes } from 'node:crypto';
import { toBase64 } from '../src/base/bytes.js';
import { didDocumentFor } from '../src/client/keys.js';
import { documentHash } from '../src/protocol/document.js';
import { parseDidDocument } from '../src/protocol/document-json.js';
import { generateDid } from '../src/protocol/did.js';
import { multibaseEd25519 } from '../src/protocol/keys.js';
import { registrationSigningBytes } from '../src/protocol/payloads/registration.js';
import { makeProfile, type Profile } from '../src/protocol/profile.js';
import { fastKeyPair } from './bigledger-worker.js';

/** The key a registration is signed with. */
export interface SigningKey {
  publicKey: Uint8Array;
  sign(message: Uint8Array): Uint8Array;
}

/** A client-built, signed `POST /register-did` body of `did` with `document`, valid until `expiryMs`. */
export function registrationBody(profile: Profile, key: SigningKey, did: string, document: Record<string, unknown>, expiryMs: bigint): Record<string, unknown> {
  const bytes = registrationSigningBytes(profile, {
    did,
    rootPubkey: key.publicKey,
    alias: null,
    documentHash: documentHash(parseDidDocument(document, did)),
    expiryMs,
  });
  return {
    did,
    root_pubkey: multibaseEd25519(key.publicKey, false),
    did_document: document,
    timestamp: `v2:0:${expiryMs}`,
    signature: toBase64(key.sign(bytes)),
  };
}

/** `count` request bodies, each a new DID and key, expiring 50 minutes from now. */
export function signedRegistrations(profileName: string, count: number): Buffer[] {
  const profile = makeProfile(profileName);
  const expiryMs = BigInt(Date.now() + 50 * 60_000);
  return Array.from({ length: count }, () => {
    const key = fastKeyPair(randomBytes(32));
    const did = generateDid(profile);
    return Buffer.from(JSON.stringify(registrationBody(profile, key, did, didDocumentFor(did, key.publicKey), expiryMs)));
  });
}
