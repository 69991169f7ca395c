/**
 * Node-to-node request signatures (http-api.md §10.6): the signed text, the signing side (a Relay calling a
 * Cache or another Relay) and the receiver's checks. Pure: the node DID's record, the candidate request URLs
 * and `now` are parameters; nonce single-use is the caller's job (it gets the claim to record).
 */
import { parseBase64, toBase64, toHex, utf8 } from '../base/bytes.js';
import { DdnError } from '../base/errors.js';
import { parseTimestampMs } from '../codec/timestamp.js';
import type { Ed25519KeyPair } from '../crypto/ed25519.js';
import { verifyAnyEd25519 } from '../crypto/ed25519.js';
import { sha256 } from '../crypto/hash.js';
import type { DidDocument } from './document.js';
import type { Profile } from './profile.js';
import { authorizedServiceKey, findService } from './service-keys.js';

/** The six request headers, in the order they are checked for presence. */
export const NODE_HEADERS = Object.freeze({
  did: 'X-DDN-Node-DID',
  serviceId: 'X-DDN-Node-Service-Id',
  keyId: 'X-DDN-Node-Key-Id',
  timestamp: 'X-DDN-Node-Timestamp',
  nonce: 'X-DDN-Node-Nonce',
  signature: 'X-DDN-Node-Signature',
} as const);

/** The node headers' names, in {@link NODE_HEADERS}' order, and lower-cased (how Node keys request headers). */
const NODE_HEADER_NAMES: readonly string[] = Object.values(NODE_HEADERS);
const NODE_HEADER_KEYS: readonly string[] = NODE_HEADER_NAMES.map((n) => n.toLowerCase());

/** The nonce scope node requests are recorded under (one nonce per node DID and key id). */
export const NODE_NONCE_SCOPE = 'node-request';

const UUID_V4_RE = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-4[0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$/;

/** The fields of the signed text. */
export interface NodeRequestFields {
  method: string;
  /** Absolute request URL as sent. */
  url: string;
  nodeDid: string;
  serviceId: string;
  keyId: string;
  timestamp: string;
  nonce: string;
  /** Lowercase hex SHA-256 of the exact body bytes. */
  bodySha256Hex: string;
}

/** The signed text: nine LF-joined lines, no trailing newline (§10.6). */
export function nodeRequestText(profile: Profile, f: NodeRequestFields): string {
  return [
    profile.nodeRequestHeader,
    `method=${f.method}`,
    `url=${f.url}`,
    `node_did=${f.nodeDid}`,
    `service_id=${f.serviceId}`,
    `key_id=${f.keyId}`,
    `timestamp=${f.timestamp}`,
    `nonce=${f.nonce}`,
    `body_sha256=${f.bodySha256Hex}`,
  ].join('\n');
}

/** The lowercase hex SHA-256 of a request body (empty when there is none). */
export function bodySha256Hex(body: Uint8Array | string | undefined): string {
  return toHex(sha256(body ?? new Uint8Array(0)));
}

/** Who a node acts as when it signs. */
export interface NodeIdentity {
  did: string;
  /** The `<P>RelayService` id the node acts under. */
  serviceId: string;
  keyId: string;
  key: Ed25519KeyPair;
}

/** A request to sign. */
export interface NodeRequestToSign {
  method: string;
  url: string;
  body: Uint8Array | string | undefined;
  /** ISO-8601, seconds precision, `Z`. */
  timestamp: string;
  /** UUID v4. */
  nonce: string;
}

/** The bytes `identity` signs for `req`. */
function textToSign(profile: Profile, identity: NodeIdentity, req: NodeRequestToSign): Uint8Array {
  return utf8(
    nodeRequestText(profile, {
      method: req.method.toUpperCase(),
      url: req.url,
      nodeDid: identity.did,
      serviceId: identity.serviceId,
      keyId: identity.keyId,
      timestamp: req.timestamp,
      nonce: req.nonce,
      bodySha256Hex: bodySha256Hex(req.body),
    }),
  );
}

/**
 * The {@link NODE_HEADERS} as literal keys: an object literal with computed keys defines each of them through a
 * runtime call, and every spread of such an object again (bench/HISTORY.md, session 33: ~2 % of a two-hop Relay's
 * event loop). A test checks the names against {@link NODE_HEADERS}.
 */
function signedHeaders(identity: NodeIdentity, req: NodeRequestToSign, signature: Uint8Array): Record<string, string> {
  return {
    'X-DDN-Node-DID': identity.did,
    'X-DDN-Node-Service-Id': identity.serviceId,
    'X-DDN-Node-Key-Id': identity.keyId,
    'X-DDN-Node-Timestamp': req.timestamp,
    'X-DDN-Node-Nonce': req.nonce,
    'X-DDN-Node-Signature': toBase64(signature),
  };
}

/** The six `X-DDN-Node-*` headers for `req` signed by `identity`. */
export function signNodeRequest(profile: Profile, identity: NodeIdentity, req: NodeRequestToSign): Record<string, string> {
  return signedHeaders(identity, req, identity.key.sign(textToSign(profile, identity, req)));
}

/** The header values of a node-signed request. */
export interface NodeRequestHeaders {
  nodeDid: string;
  serviceId: string;
  keyId: string;
  timestamp: string;
  nonce: string;
  signature: string;
}

/** Why a node signature was refused: `details.reason` of 403 `invalid_node_signature`. */
export type NodeSignatureFailure =
  | 'missing_header'
  | 'invalid_timestamp'
  | 'timestamp_out_of_window'
  | 'invalid_nonce'
  | 'node_not_found'
  | 'node_deactivated'
  | 'service_not_found'
  | 'key_not_authorized'
  | 'invalid_signature_encoding'
  | 'bad_signature'
  | 'nonce_replayed';

/** The 403 `invalid_node_signature` error with `details.reason`. */
export function nodeSignatureError(reason: NodeSignatureFailure, extra: Record<string, unknown> = {}): DdnError {
  return new DdnError('invalid_node_signature', `node request signature refused: ${reason.replace(/_/g, ' ')}`, {
    reason,
    ...extra,
  });
}

/**
 * Reads the `X-DDN-Node-*` headers. `null` when none is present (not a node request); any present but not
 * all → `invalid_node_signature` (`missing_header`).
 */
export function readNodeHeaders(header: (name: string) => string | undefined): NodeRequestHeaders | null {
  const names = NODE_HEADER_NAMES;
  // asked by their lower-case names, as Node keeps them (the lookup is case-insensitive)
  const values = NODE_HEADER_KEYS.map((n) => header(n));
  if (values.every((v) => v === undefined)) return null;
  const missing = names.find((_, i) => values[i] === undefined || values[i] === '');
  if (missing !== undefined) throw nodeSignatureError('missing_header', { header: missing });
  const [nodeDid, serviceId, keyId, timestamp, nonce, signature] = values as string[];
  return { nodeDid, serviceId, keyId, timestamp, nonce, signature };
}

/** The parts of a DID record the receiver needs (a `DidView` fits). */
export interface NodeDidRecord {
  deactivated: boolean;
  document: DidDocument | null;
}

/** Everything {@link verifyNodeRequest} checks against. */
export interface NodeRequestCheck {
  profile: Profile;
  headers: NodeRequestHeaders;
  /** The node DID's finalized record; null when it has none. */
  nodeRecord: NodeDidRecord | null;
  method: string;
  /** The absolute URLs under which this request may have been sent: this node's own public URLs + the path. */
  candidateUrls: readonly string[];
  body: Uint8Array | undefined;
  nowMs: number;
  skewSeconds: number;
  /** The service type the node must act under (`<P>RelayService` for `/relay` and `/cache/store`). */
  serviceType: string;
  /**
   * What {@link checkNodeRequestTiming} returned for these headers, when the caller ran it already: the timestamp
   * is then not parsed again, nor the nonce's form checked again; only the window is checked at `nowMs`.
   */
  timestampMs?: number;
}

/** A node request that passed every check but nonce single-use. */
export interface VerifiedNodeRequest {
  nodeDid: string;
  serviceId: string;
  keyId: string;
  nonce: string;
  /** The nonce must be refused until this instant: max(timestamp, now) + skew. */
  nonceExpiresAtMs: number;
}

/**
 * The checks that need no lookup: the timestamp parses (§10.1.2) and lies within ± `skewSeconds` of `nowMs`,
 * the nonce is a UUID v4. Returns the timestamp in ms; throws `invalid_node_signature`.
 */
export function checkNodeRequestTiming(h: NodeRequestHeaders, nowMs: number, skewSeconds: number): number {
  const tsMs = parseTimestampMs(h.timestamp);
  if (tsMs === undefined) throw nodeSignatureError('invalid_timestamp');
  if (Math.abs(tsMs - nowMs) > skewSeconds * 1000) throw nodeSignatureError('timestamp_out_of_window');
  if (!UUID_V4_RE.test(h.nonce)) throw nodeSignatureError('invalid_nonce');
  return tsMs;
}

/** A node request that passed every check before the signature's: what the signature must verify against. */
interface CheckedNodeRequest {
  verified: VerifiedNodeRequest;
  key: Uint8Array;
  signature: Uint8Array;
  /** The signed text rebuilt for each candidate URL, in order. */
  texts: Uint8Array[];
}

/** Every check of {@link verifyNodeRequest} before the signature's, in order. */
function checkNodeRequest(c: NodeRequestCheck): CheckedNodeRequest {
  const h = c.headers;
  let tsMs = c.timestampMs;
  if (tsMs === undefined) tsMs = checkNodeRequestTiming(h, c.nowMs, c.skewSeconds);
  else if (Math.abs(tsMs - c.nowMs) > c.skewSeconds * 1000) throw nodeSignatureError('timestamp_out_of_window');
  if (c.nodeRecord === null) throw nodeSignatureError('node_not_found');
  if (c.nodeRecord.deactivated) throw nodeSignatureError('node_deactivated');
  const document = c.nodeRecord.document;
  const service = findService(document, h.serviceId, c.serviceType);
  if (document === null || service === undefined) throw nodeSignatureError('service_not_found');
  const key = authorizedServiceKey(h.nodeDid, document, service, h.keyId);
  if (key === undefined) throw nodeSignatureError('key_not_authorized');
  const signature = parseBase64(h.signature);
  if (signature === undefined || signature.length !== 64) throw nodeSignatureError('invalid_signature_encoding');
  const bodyHash = bodySha256Hex(c.body);
  const method = c.method.toUpperCase();
  const texts = c.candidateUrls.map((url) =>
    utf8(
      nodeRequestText(c.profile, {
        method,
        url,
        nodeDid: h.nodeDid,
        serviceId: h.serviceId,
        keyId: h.keyId,
        timestamp: h.timestamp,
        nonce: h.nonce,
        bodySha256Hex: bodyHash,
      }),
    ),
  );
  const verified = {
    nodeDid: h.nodeDid,
    serviceId: h.serviceId,
    keyId: h.keyId,
    nonce: h.nonce,
    nonceExpiresAtMs: Math.max(tsMs, c.nowMs) + c.skewSeconds * 1000,
  };
  return { verified, key, signature, texts };
}

/**
 * The receiver's checks of §10.6, in order: timestamp (parses; within ± skew), nonce (UUID v4), node DID
 * active, service of type `serviceType`, key listed in that service's `authorization` and a decodable Ed25519
 * VM of the DID, signature over the text rebuilt for one of `candidateUrls` with the hash of the exact body.
 * Throws 403 `invalid_node_signature` with `details.reason`.
 */
export function verifyNodeRequest(c: NodeRequestCheck): VerifiedNodeRequest {
  const p = checkNodeRequest(c);
  if (!verifyAnyEd25519(p.key, p.texts, p.signature)) throw nodeSignatureError('bad_signature');
  return p.verified;
}

/**
 * The absolute URLs a request with raw target `rawUrl` (as received, path + query) may have been sent to, given
 * this node's public base URLs: each base's origin + the raw target, and each base (with its path) + the target
 * relative to the server's own base path.
 */
export function candidateRequestUrls(publicBaseUrls: readonly string[], rawUrl: string, serverBasePath = ''): string[] {
  const base = serverBasePath.replace(/\/+$/, '');
  const relative = base !== '' && rawUrl.startsWith(base) ? rawUrl.slice(base.length) : rawUrl;
  const out = new Set<string>();
  const origins = originsOf(publicBaseUrls);
  publicBaseUrls.forEach((p, i) => {
    const origin = origins[i];
    if (origin === null) return;
    out.add(`${origin}${rawUrl}`);
    out.add(`${p.replace(/\/+$/, '')}${relative}`);
  });
  return [...out];
}

/** The origin of each base URL (null: not a URL), parsed once per list — a node's own list is fixed at start. */
const originsByList = new WeakMap<readonly string[], readonly (string | null)[]>();
function originsOf(urls: readonly string[]): readonly (string | null)[] {
  let origins = originsByList.get(urls);
  if (origins === undefined) {
    origins = urls.map((u) => {
      try {
        return new URL(u).origin;
      } catch {
        return null;
      }
    });
    originsByList.set(urls, origins);
  }
  return origins;
}
