/**
 * Reading a retrieval proof off a request (http-api.md §11.4 step 1, §11.6): the `X-…` headers of the
 * retrieval routes, or the body fields of `POST /cache/ack` (required there; headers optional and agreeing).
 */
import { utf8Length } from '../base/bytes.js';
import { DdnError } from '../base/errors.js';
import { isDid } from '../protocol/did.js';
import type { Reads } from '../http/json-body.js';

/** The proof fields of one request, as sent. */
export interface ProofInput {
  did: string;
  /** Empty when not sent. */
  deviceId: string;
  serviceId: string;
  cacheEndpoint: string;
  keyId: string;
  timestamp: string;
  nonce: string;
  /** Base64 (standard or URL-safe). */
  signature: string;
}

type RequiredKey = 'serviceId' | 'cacheEndpoint' | 'keyId' | 'timestamp' | 'nonce' | 'signature';

/** The proof headers a retrieval reads (a route reading them declares each: src/cache/routes.ts `PROOF_HEADERS`). */
export type ProofHeader = 'X-Service-Id' | 'X-Cache-Endpoint' | 'X-Key-Id' | 'X-Timestamp' | 'X-Nonce' | 'X-Signature' | 'X-Recipient-DID' | 'X-Device-Id';

/** The fields `POST /cache/ack` reads from its body (its schema declares each: src/wire/cache.ts `CacheAckBodySchema`). */
export type AckField = 'did' | 'device_id' | 'service_id' | 'cache_endpoint' | 'key_id' | 'timestamp' | 'nonce' | 'signature_b64' | 'message_ids';

/** Required proof headers, in the order their absence is reported, with the ack body field of each. */
const REQUIRED: readonly { key: RequiredKey; header: ProofHeader; field: AckField }[] = [
  { key: 'serviceId', header: 'X-Service-Id', field: 'service_id' },
  { key: 'cacheEndpoint', header: 'X-Cache-Endpoint', field: 'cache_endpoint' },
  { key: 'keyId', header: 'X-Key-Id', field: 'key_id' },
  { key: 'timestamp', header: 'X-Timestamp', field: 'timestamp' },
  { key: 'nonce', header: 'X-Nonce', field: 'nonce' },
  { key: 'signature', header: 'X-Signature', field: 'signature_b64' },
];

const RECIPIENT_HEADER = 'X-Recipient-DID';
const DEVICE_HEADER = 'X-Device-Id';

/** Reads the request headers named `H` (a route's context gives only those its `headers` schema declares). */
type HeaderReader<H extends string = ProofHeader> = (name: H) => string | undefined;

function missing(header: string): DdnError {
  return new DdnError('missing_proof_header', `missing proof header ${header}`, { header });
}

function mismatch(header: string, field?: string): DdnError {
  return new DdnError(
    'proof_header_mismatch',
    `${header} does not agree with the ${field === undefined ? 'path' : 'body'}`,
    field === undefined ? { header } : { header, field },
  );
}

/**
 * The proof of a retrieval route from its headers. `route.device` is the path device of
 * `/cache/summary/{did}/{device}`; `X-Recipient-DID` and `X-Device-Id`, when sent, must agree with the path.
 */
export function proofFromHeaders(header: HeaderReader, route: { did: string; device?: string }): ProofInput {
  const values = {} as Record<RequiredKey, string>;
  for (const r of REQUIRED) {
    const v = header(r.header);
    if (v === undefined || v === '') throw missing(r.header);
    values[r.key] = v;
  }
  const recipient = header(RECIPIENT_HEADER);
  if (recipient !== undefined && recipient !== route.did) throw mismatch(RECIPIENT_HEADER);
  const device = header(DEVICE_HEADER);
  if (route.device !== undefined && device !== undefined && device !== route.device) throw mismatch(DEVICE_HEADER);
  return { did: route.did, deviceId: route.device ?? device ?? '', ...values };
}

/** An acknowledgement request (§11.6). */
export interface AckRequest {
  proof: ProofInput;
  /** As sent (duplicates included; the subject and the deletion deduplicate). */
  messageIds: string[];
}

const MAX_ACK_IDS = 1000;
const MAX_ID_BYTES = 128;

function bodyText<F extends AckField>(body: Reads<F>, field: F, allowNumber = false): string | undefined {
  const v = body[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'string') {
    if (/[\r\n]/.test(v)) {
      throw new DdnError('invalid_proof_header', `${field} must not contain line breaks`, { field });
    }
    return v;
  }
  if (allowNumber && typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return String(v);
  throw new DdnError('invalid_request', `${field} must be a string`, { field });
}

/**
 * Body value of `field` (required: non-empty), checked against the header `name` when that is sent too. The proof
 * travels in the body (§11.6): a header never stands in for a missing field (400 `invalid_request`).
 */
function agreed<F extends AckField>(body: Reads<F>, field: F, header: HeaderReader, name: ProofHeader, allowNumber = false): string {
  const b = bodyText(body, field, allowNumber);
  const h = header(name);
  if (b === undefined || b === '') {
    const hint = h === undefined ? '' : ` (the proof travels in the body; ${name} alone is not accepted)`;
    throw new DdnError('invalid_request', `missing field "${field}"${hint}`, { field });
  }
  if (h !== undefined && b !== h) throw mismatch(name, field);
  return b;
}

/** `message_ids`: 1–1000 strings of at most 128 bytes (400 `invalid_request`). */
export function parseAckMessageIds(v: unknown): string[] {
  if (!Array.isArray(v) || v.length < 1 || v.length > MAX_ACK_IDS) {
    throw new DdnError('invalid_request', `message_ids must be an array of 1 to ${MAX_ACK_IDS} strings`, { field: 'message_ids' });
  }
  for (const id of v) {
    if (typeof id !== 'string' || id.length === 0 || utf8Length(id) > MAX_ID_BYTES || /[,\r\n]/.test(id)) {
      throw new DdnError('invalid_request', `each message id must be a string of 1 to ${MAX_ID_BYTES} bytes`, {
        field: 'message_ids',
      });
    }
  }
  return v as string[];
}

/**
 * The proof and ids of `POST /cache/ack` (§11.6): the proof fields from the body, where each is required; the same
 * headers, when sent, must agree (an absent `device_id` is '').
 */
export function ackFromBody(body: Reads<AckField>, header: HeaderReader): AckRequest {
  const messageIds = parseAckMessageIds(body.message_ids);
  const did = agreed(body, 'did', header, RECIPIENT_HEADER);
  if (!isDid(did)) throw new DdnError('invalid_did', 'did is not a valid DID', { field: 'did' });
  const deviceId = bodyText(body, 'device_id') ?? '';
  const deviceHeader = header(DEVICE_HEADER);
  if (deviceHeader !== undefined && deviceHeader !== deviceId) throw mismatch(DEVICE_HEADER, 'device_id');
  const values = {} as Record<RequiredKey, string>;
  for (const r of REQUIRED) values[r.key] = agreed(body, r.field, header, r.header, r.key === 'timestamp');
  return { proof: { did, deviceId, ...values }, messageIds };
}
