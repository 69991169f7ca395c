/**
 * Retrieval-proof verification (http-api.md §11.4 steps 2–8), pure: the recipient's finalized record, the
 * Cache's settings and `now` are parameters. Step 9 (nonce single-use) is the store's: the result is the
 * claim to record.
 */
import { parseBase64, utf8 } from '../base/bytes.js';
import { DdnError } from '../base/errors.js';
import { verifyAnyEd25519 } from '../crypto/ed25519.js';
import { verifyOnThread } from '../crypto/verify-thread.js';
import type { NonceClaim } from '../ports/nonce-registry.js';
import type { DidDocument } from '../protocol/document.js';
import type { Profile } from '../protocol/profile.js';
import { checkProofTiming } from '../protocol/proof-timing.js';
import { normalizeEndpoint, retrievalProofText, type ProofOperation } from '../protocol/retrieval-proof.js';
import { authorizedServiceKey, findService } from '../protocol/service-keys.js';
import type { ProofInput } from './proof-request.js';

/** The parts of the recipient's record the checks read (a `DidView` fits). */
export interface ProofDidRecord {
  deactivated: boolean;
  document: DidDocument | null;
}

/** Inputs of {@link verifyRetrievalProof}. */
export interface ProofCheck {
  profile: Profile;
  operation: ProofOperation;
  /** `*`, the group id, the message id, or the ack subject (§11.4 table). */
  subject: string;
  proof: ProofInput;
  /** The recipient's finalized record; null when it has none. */
  record: ProofDidRecord | null;
  /** This node's `public_urls.cache`. */
  publicCacheUrls: readonly string[];
  nowMs: number;
  skewSeconds: number;
}

export { checkProofTiming };

/** The nonce scope of a proof operation. */
export function proofNonceScope(operation: ProofOperation): string {
  return `proof:${operation}`;
}

function proofText(c: ProofCheck, cacheEndpoint: string): Uint8Array {
  const p = c.proof;
  return utf8(
    retrievalProofText(c.profile, {
      operation: c.operation,
      did: p.did,
      deviceId: p.deviceId,
      serviceId: p.serviceId,
      cacheEndpoint,
      keyId: p.keyId,
      timestamp: p.timestamp,
      nonce: p.nonce,
      subject: c.subject,
    }),
  );
}

/** A proof that passed steps 2–7: what its signature must verify against (step 8), and the claim to record. */
export interface CheckedProof {
  claim: NonceClaim;
  key: Uint8Array;
  signature: Uint8Array;
  /** The texts the signature may cover, in order: the endpoint normalised, then as sent when that differs. */
  texts: Uint8Array[];
}

/** Steps 2–7 in order; throws the step's code. */
export function checkRetrievalProof(c: ProofCheck): CheckedProof {
  const p = c.proof;
  const tsMs = checkProofTiming(p, c.nowMs, c.skewSeconds);
  if (c.record === null) throw new DdnError('did_not_found', 'the DID has no record', { did: p.did });
  if (c.record.deactivated) throw new DdnError('did_deactivated', 'the DID is deactivated', { did: p.did });
  const document = c.record.document;
  const service = findService(document, p.serviceId, c.profile.cacheServiceType);
  if (document === null || service === undefined) {
    throw new DdnError('cache_service_not_found', `X-Service-Id is not a ${c.profile.cacheServiceType} of the DID`, {
      header: 'X-Service-Id',
    });
  }
  const endpoint = normalizeEndpoint(p.cacheEndpoint);
  const published = service.serviceEndpoint.some((e) => normalizeEndpoint(e) === endpoint);
  const ours = c.publicCacheUrls.some((u) => normalizeEndpoint(u) === endpoint);
  if (!published || !ours) {
    throw new DdnError(
      'cache_endpoint_mismatch',
      published ? 'X-Cache-Endpoint is not an endpoint of this Cache' : 'X-Cache-Endpoint is not published by the service',
      { header: 'X-Cache-Endpoint' },
    );
  }
  const key = authorizedServiceKey(p.did, document, service, p.keyId);
  if (key === undefined) {
    throw new DdnError('key_not_authorized', 'X-Key-Id is not an authorised Ed25519 key of the Cache service', {
      header: 'X-Key-Id',
    });
  }
  const signature = parseBase64(p.signature);
  if (signature === undefined || signature.length !== 64) {
    throw new DdnError('invalid_proof_header', 'X-Signature must be 64 bytes in Base64', { header: 'X-Signature' });
  }
  // The text carries the endpoint without its trailing `/`; a client that signed it as sent is accepted too.
  const texts = [proofText(c, endpoint)];
  if (endpoint !== p.cacheEndpoint) texts.push(proofText(c, p.cacheEndpoint));
  const claim: NonceClaim = {
    scope: proofNonceScope(c.operation),
    did: p.did,
    keyId: p.keyId,
    nonce: p.nonce,
    expiresAtMs: Math.max(tsMs, c.nowMs) + c.skewSeconds * 1000,
  };
  return { claim, key, signature, texts };
}

/** Step 8's failure. */
export const badProofSignature = () => new DdnError('invalid_signature', 'the retrieval proof signature does not verify');

/**
 * Step 8 of a checked proof, on the verifier thread (`crypto/verify-thread.ts`): true when the signature verifies
 * over one of its texts.
 */
export function proofSignatureVerifies(p: CheckedProof): Promise<boolean> {
  return verifyOnThread(p.key, p.texts, p.signature);
}

/**
 * Steps 2–8 in order; throws the step's code. Returns the nonce claim: (operation, DID, key id, nonce),
 * remembered until max(proof timestamp, now) + skew.
 */
export function verifyRetrievalProof(c: ProofCheck): NonceClaim {
  const p = checkRetrievalProof(c);
  if (!verifyAnyEd25519(p.key, p.texts, p.signature)) throw badProofSignature();
  return p.claim;
}
