/**
 * A signing thread of `bench/bigledger.ts`: builds and signs `register_with_proof_v2` extrinsics for DID indexes
 * `from` … `to - 1` (real Ed25519 keys derived from the index, real signatures) and posts them in batches.
 */
import { createHash } from 'node:crypto';
import { parentPort, workerData } from 'node:worker_threads';
import { blake2_256 } from '../src/crypto/hash.js';
import { keyPairFromSeed } from '../src/crypto/ed25519.js';
import { sodium } from '../src/crypto/ed25519-sodium.js';
import { didDocumentFor } from '../src/client/keys.js';
import { encodeDocument } from '../src/protocol/document.js';
import { parseDidDocument } from '../src/protocol/document-json.js';
import { generateDid } from '../src/protocol/did.js';
import { makeProfile } from '../src/protocol/profile.js';
import { registrationSigningBytes } from '../src/protocol/payloads/registration.js';
import { encodeExtrinsic } from '../src/ledger/extrinsic.js';

export interface SignJob {
  profile: string;
  from: number;
  to: number;
  batch: number;
  /** Registrations expire this long after they are signed (ledger-rules: at most one hour ahead of the block). */
  expiryAheadMs: number;
}

/** One signed registration: its DID, the seed of its root key (hex), its extrinsic bytes. */
export interface SignedRegistration {
  did: string;
  seedHex: string;
  bytes: Uint8Array;
}

/** The root key seed of DID number `i` of a generated ledger (reproducible: the bench signs updates with it). */
export function seedOf(i: number): Buffer {
  return createHash('sha256').update(`ddn-bigledger-${i}`).digest();
}

/** The service every generated DID publishes (the bench's writers update it). */
export const BIG_SERVICE_TYPE = 'BenchService';

/** libsodium's key pair when it is loaded (several times faster than node:crypto's KeyObjects), else node:crypto's. */
export function fastKeyPair(seed: Uint8Array): { publicKey: Uint8Array; sign(m: Uint8Array): Uint8Array } {
  if (sodium === null) return keyPairFromSeed(Uint8Array.from(seed));
  const lib = sodium;
  const publicKey = new Uint8Array(32);
  const secretKey = new Uint8Array(64);
  lib.crypto_sign_seed_keypair(publicKey, secretKey, seed);
  return {
    publicKey,
    sign: (m) => {
      const sig = new Uint8Array(64);
      lib.crypto_sign_detached(sig, m, secretKey);
      return sig;
    },
  };
}

function sign(job: SignJob, i: number): SignedRegistration {
  const profile = makeProfile(job.profile);
  const seed = seedOf(i);
  const key = fastKeyPair(seed);
  const did = generateDid(profile, seed.subarray(0, 16));
  const json = didDocumentFor(did, key.publicKey, {
    services: [{ id: `${did}#svc`, type: BIG_SERVICE_TYPE, serviceEndpoint: ['https://r.bench.example/'] }],
  });
  const docBlob = encodeDocument(parseDidDocument(json, did));
  const expiryMs = BigInt(Date.now() + job.expiryAheadMs);
  const msg = registrationSigningBytes(profile, { did, rootPubkey: key.publicKey, alias: null, documentHash: blake2_256(docBlob), expiryMs });
  const bytes = encodeExtrinsic({
    name: 'register_with_proof_v2',
    args: { did, alias: null, rootPubkey: key.publicKey, expiryMs, docBlob, signature: key.sign(msg) },
  });
  return { did, seedHex: seed.toString('hex'), bytes };
}

if (parentPort !== null) {
  const port = parentPort;
  const job = workerData as SignJob;
  // one batch at a time, each when the main thread asks: signing never runs far ahead of the blocks (expiry)
  let next = job.from;
  port.on('message', () => {
    const out: SignedRegistration[] = [];
    for (; next < job.to && out.length < job.batch; next++) out.push(sign(job, next));
    port.postMessage(out);
  });
}
