/**
 * Who may open a live session (`GET /ws/{did}/{device}`): the `--relay-live-auth` mode and the check of a
 * live-session proof (src/protocol/live-proof.ts). The key rule is the Cache retrieval rule (http-api.md §11.4
 * step 7, `authorizedServiceKey`): a verification method of the DID listed in the `authorization` of the named
 * service — here a `<P>RelayService` or a `<P>CacheService` of the DID — and in `authentication` when that list is
 * non-empty. Pure: the DID's record, this Relay's public URLs and `now` are parameters; single use of the nonce is
 * the caller's (it gets the claim to record).
 */
import { parseBase64, utf8 } from '../base/bytes.js';
import { DdnError } from '../base/errors.js';
import { verifyEd25519 } from '../crypto/ed25519.js';
import type { NonceClaim } from '../ports/nonce-registry.js';
import type { DidDocument } from '../protocol/document.js';
import {
  LIVE_AUTH_FRAME_TYPE,
  LIVE_PROOF_FRAME_FIELDS,
  LIVE_PROOF_HEADERS,
  LIVE_PROOF_OPERATION,
  liveProofText,
  type LiveProof,
} from '../protocol/live-proof.js';
import type { Profile } from '../protocol/profile.js';
import { checkProofTiming } from '../protocol/proof-timing.js';
import { normalizeEndpoint } from '../protocol/retrieval-proof.js';
import { authorizedServiceKey } from '../protocol/service-keys.js';

/**
 * `required`: every session proves control of the DID; `open`: a session without a proof is let in (a proof, when
 * sent, is still checked) but a push to it never counts as a delivery of a stored envelope; `off`: no live sessions.
 */
export type LiveAuthMode = 'required' | 'open' | 'off';

export const LIVE_AUTH_MODES: readonly LiveAuthMode[] = Object.freeze(['required', 'open', 'off'] as const);

/** The nonce scope of live-session proofs. */
export const LIVE_NONCE_SCOPE = `proof:${LIVE_PROOF_OPERATION}`;

type HeaderReader = (name: string) => string | undefined;

/** The proof of the upgrade request's headers; undefined when none of them is sent (400 when only some are). */
export function liveProofFromHeaders(header: HeaderReader): LiveProof | undefined {
  const entries = Object.entries(LIVE_PROOF_HEADERS) as [keyof LiveProof, string][];
  if (entries.every(([, name]) => header(name) === undefined)) return undefined;
  const out = {} as LiveProof;
  for (const [k, name] of entries) {
    const v = header(name);
    if (v === undefined || v === '') throw new DdnError('missing_proof_header', `missing proof header ${name}`, { header: name });
    out[k] = v;
  }
  return out;
}

/** The proof of a first frame (`{"type":"auth",…}`); a frame that is not one is `live_proof_required`. */
export function liveProofFromFrame(text: string): LiveProof {
  let frame: unknown;
  try {
    frame = JSON.parse(text);
  } catch {
    frame = undefined;
  }
  if (typeof frame !== 'object' || frame === null || (frame as Record<string, unknown>).type !== LIVE_AUTH_FRAME_TYPE) {
    throw new DdnError('live_proof_required', 'the first frame must be {"type":"auth",…} with a live-session proof');
  }
  const f = frame as Record<string, unknown>;
  const out = {} as LiveProof;
  for (const [k, field] of Object.entries(LIVE_PROOF_FRAME_FIELDS) as [keyof LiveProof, string][]) {
    const v = f[field];
    if (typeof v !== 'string' || v === '') throw new DdnError('missing_proof_header', `missing proof field ${field}`, { field });
    out[k] = v;
  }
  return out;
}

/** Inputs of {@link checkLiveProof}. */
export interface LiveProofCheck {
  profile: Profile;
  did: string;
  device: string;
  proof: LiveProof;
  /** The DID's finalized record (already found active before the upgrade). */
  document: DidDocument | null;
  /** This Relay's `public_urls.relay`. */
  publicRelayUrls: readonly string[];
  nowMs: number;
  skewSeconds: number;
}

/**
 * Every check of a live-session proof but the nonce's single use, in order, each failure with its code: timing and
 * nonce syntax (400 `invalid_proof_header`, 403 `proof_timestamp_out_of_window`), the service (403
 * `live_service_not_found`), the Relay endpoint (403 `relay_endpoint_mismatch`), the key (403 `key_not_authorized`),
 * the signature (400 `invalid_proof_header`, 403 `invalid_signature`). Returns the nonce claim to record.
 */
export function checkLiveProof(c: LiveProofCheck): NonceClaim {
  const p = c.proof;
  const tsMs = checkProofTiming(p, c.nowMs, c.skewSeconds);
  const { relayServiceType, cacheServiceType } = c.profile;
  const service = c.document?.service?.find((s) => s.id === p.serviceId && (s.type === relayServiceType || s.type === cacheServiceType));
  if (c.document === null || service === undefined) {
    throw new DdnError('live_service_not_found', `X-Service-Id is not a ${relayServiceType} or ${cacheServiceType} of the DID`, {
      header: LIVE_PROOF_HEADERS.serviceId,
    });
  }
  const endpoint = normalizeEndpoint(p.relayEndpoint);
  if (!c.publicRelayUrls.some((u) => normalizeEndpoint(u) === endpoint)) {
    throw new DdnError('relay_endpoint_mismatch', 'X-Relay-Endpoint is not a public URL of this Relay', { header: LIVE_PROOF_HEADERS.relayEndpoint });
  }
  const key = authorizedServiceKey(c.did, c.document, service, p.keyId);
  if (key === undefined) {
    throw new DdnError('key_not_authorized', 'X-Key-Id is not an authorised Ed25519 key of the service', { header: LIVE_PROOF_HEADERS.keyId });
  }
  const signature = parseBase64(p.signature);
  if (signature === undefined || signature.length !== 64) {
    throw new DdnError('invalid_proof_header', 'X-Signature must be 64 bytes in Base64', { header: LIVE_PROOF_HEADERS.signature });
  }
  if (!verifyEd25519(key, utf8(liveProofText(c.profile, c.did, c.device, p)), signature)) {
    throw new DdnError('invalid_signature', 'the live-session proof signature does not verify');
  }
  return { scope: LIVE_NONCE_SCOPE, did: c.did, keyId: p.keyId, nonce: p.nonce, expiresAtMs: Math.max(tsMs, c.nowMs) + c.skewSeconds * 1000 };
}
