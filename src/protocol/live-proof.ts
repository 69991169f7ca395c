/**
 * The live-session proof (ddn-defined, beside http-api.md §10.8): what a receiver signs to open
 * `GET /ws/{did}/{device}` at a Relay that requires it (`--relay-live-auth required`). Shared by the Relay, which
 * checks it, and the SDK, which signs it. Signed text = these nine lines joined by LF, no trailing newline, UTF-8:
 *
 * ```
 * <p>:relay:live-session-proof:v1
 * operation=live_subscribe
 * did=<the path DID>
 * device_id=<the path device>
 * service_id=<a <P>RelayService or <P>CacheService of the DID whose authorization lists the key>
 * relay_endpoint=<X-Relay-Endpoint exactly as sent>
 * key_id=<verification-method id>
 * timestamp=<X-Timestamp exactly as sent>
 * nonce=<X-Nonce exactly as sent>
 * ```
 *
 * The proof travels in the upgrade request's headers ({@link LIVE_PROOF_HEADERS}) or, for clients that cannot set
 * headers, as the first frame after an upgrade to `…?auth=first-frame` ({@link liveProofFrame}).
 */
import { toBase64, utf8 } from '../base/bytes.js';
import type { Ed25519KeyPair } from '../crypto/ed25519.js';
import type { Profile } from './profile.js';

/** The operation line of the proof text (and the nonce scope `proof:live_subscribe`). */
export const LIVE_PROOF_OPERATION = 'live_subscribe';

/** The query that asks for first-frame authentication (`/ws/{did}/{device}?auth=first-frame`). */
export const LIVE_FIRST_FRAME_QUERY = 'auth=first-frame';

/** The `type` of the first frame carrying a proof. */
export const LIVE_AUTH_FRAME_TYPE = 'auth';

/** A live-session proof as sent (the DID and device are the path's). */
export interface LiveProof {
  serviceId: string;
  /** The Relay's public base URL as the client signed it (one trailing `/` ignored when compared). */
  relayEndpoint: string;
  keyId: string;
  timestamp: string;
  nonce: string;
  /** Base64 (standard or URL-safe) Ed25519 signature over {@link liveProofText}. */
  signature: string;
}

/** The proof headers of the upgrade request, in the order their absence is reported. */
export const LIVE_PROOF_HEADERS: Readonly<Record<keyof LiveProof, string>> = Object.freeze({
  serviceId: 'X-Service-Id',
  relayEndpoint: 'X-Relay-Endpoint',
  keyId: 'X-Key-Id',
  timestamp: 'X-Timestamp',
  nonce: 'X-Nonce',
  signature: 'X-Signature',
});

/** The first-frame field of each proof value. */
export const LIVE_PROOF_FRAME_FIELDS: Readonly<Record<keyof LiveProof, string>> = Object.freeze({
  serviceId: 'service_id',
  relayEndpoint: 'relay_endpoint',
  keyId: 'key_id',
  timestamp: 'timestamp',
  nonce: 'nonce',
  signature: 'signature_b64',
});

/** The signed text. */
export function liveProofText(profile: Profile, did: string, deviceId: string, p: Omit<LiveProof, 'signature'>): string {
  return [
    `${profile.p}:relay:live-session-proof:v1`,
    `operation=${LIVE_PROOF_OPERATION}`,
    `did=${did}`,
    `device_id=${deviceId}`,
    `service_id=${p.serviceId}`,
    `relay_endpoint=${p.relayEndpoint}`,
    `key_id=${p.keyId}`,
    `timestamp=${p.timestamp}`,
    `nonce=${p.nonce}`,
  ].join('\n');
}

/** Signs a live-session proof for `did`/`deviceId` with `signer` (the key never leaves the caller). */
export function signLiveProof(
  profile: Profile,
  signer: Pick<Ed25519KeyPair, 'sign'>,
  did: string,
  deviceId: string,
  p: Omit<LiveProof, 'signature'>,
): LiveProof {
  return { ...p, signature: toBase64(signer.sign(utf8(liveProofText(profile, did, deviceId, p)))) };
}

/** The upgrade request headers carrying `p`. */
export function liveProofHeaders(p: LiveProof): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, name] of Object.entries(LIVE_PROOF_HEADERS) as [keyof LiveProof, string][]) out[name] = p[k];
  return out;
}

/** The first frame carrying `p` (`{"type":"auth","service_id":…,"signature_b64":…}`). */
export function liveProofFrame(p: LiveProof): string {
  const out: Record<string, string> = { type: LIVE_AUTH_FRAME_TYPE };
  for (const [k, name] of Object.entries(LIVE_PROOF_FRAME_FIELDS) as [keyof LiveProof, string][]) out[name] = p[k];
  return JSON.stringify(out);
}
