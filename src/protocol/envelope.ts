/**
 * The DDN envelope (http-api.md §10.1): one validator shared by the Relay and the Cache. Pure: `now` and the
 * node's options are parameters. Every failure is a DdnError with the code the spec names.
 */
import { parseStdBase64, utf8Length } from '../base/bytes.js';
import { DdnError } from '../base/errors.js';
import { parseDurationSeconds } from '../codec/duration.js';
import { parseTimestampMs } from '../codec/timestamp.js';
import { normalizeAlias } from './alias.js';
import { isDid } from './did.js';
import { isStdBase64, stdBase64DecodedLength } from './envelope-base64.js';
import { canonicalJsonSha256Hex } from './envelope-hash.js';
import { canonicalPersona } from './persona-name.js';

export const CLIENT_FIELDS = [
  'message_id',
  'to',
  'recipient',
  'tag',
  'application_id',
  'timestamp',
  'created_at',
  'ttl',
  'delivery_hint',
  'payload',
  'encrypted_header',
  'header_nonce',
  'header_key_id',
  'schema_version',
  'context',
  'message_group_id',
  'sequence_number',
  'total_chunks',
  'sender',
  'sender_key_id',
  'sender_signature',
] as const;

export const PROVENANCE_FIELDS = ['policy_context', 'policy_id', 'policy_revision', 'policy_rule_id', 'policy_block_hash', 'policy_block_number'] as const;

export const DEFAULT_TTL_SECONDS = 86_400;
export const MAX_METADATA_BYTES = 65_536;
const CLIENT_SET = new Set<string>(CLIENT_FIELDS);
const PROVENANCE_SET = new Set<string>(PROVENANCE_FIELDS);
const UUID_RE = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const APP_ID_RE = /^[a-z0-9._-]{1,64}$/;
const CC_RE = /[\u0000-\u001f\u007f-\u009f]/;

export interface ChunkInfo {
  groupId: string;
  sequence: number;
  total: number;
}

export interface SenderProof {
  did: string;
  keyId: string;
  signature: Uint8Array;
}

export interface Provenance {
  policyId: string;
  policyRevision: number;
  ruleId: string;
  blockHash: string;
  blockNumber: number;
  context: Record<string, unknown>;
}

export interface Envelope {
  /** The client fields exactly as received (provenance fields excluded). */
  fields: Record<string, unknown>;
  messageId: string;
  /** `to` (or `recipient`) exactly as sent. */
  to: string;
  /** The part before `@`: a DID or a normalised alias. */
  target: string;
  targetIsDid: boolean;
  persona: string | null;
  tag: string | null;
  applicationId: string | null;
  timestampMs: number;
  /** The timestamp exactly as sent, as text (numbers as their decimal digits). */
  timestampText: string;
  ttlSeconds: number;
  /** Requested expiry: timestamp + ttl. */
  requestedExpiryMs: number;
  plaintext: boolean;
  /** Decoded ciphertext length, or the compact JSON length of a plaintext payload. */
  payloadBytes: number;
  /** Compact JSON length of the envelope without `payload`. */
  metadataBytes: number;
  chunk: ChunkInfo | null;
  sender: SenderProof | null;
  provenance: Provenance | null;
  /** sha256 of the canonical JSON of the client fields (idempotency and conflict checks). */
  contentHash: string;
}

export interface EnvelopeOptions {
  nowMs: number;
  clockSkewSeconds: number;
  allowPlaintext: boolean;
  /** Node-signed requests may carry provenance (§10.6). */
  allowProvenance: boolean;
  /**
   * A `sender_signature` that is not Base64 of 64 bytes is left to the signature check (§10.2), which refuses it
   * with 403 `invalid_sender_signature` as service-spec.md says of every sender-signature failure; otherwise (profile
   * `openpayload`, the deployed behaviour) it is 400 `invalid_envelope` here.
   */
  malformedSenderSignatureIs403?: boolean;
}

function bad(
  code:
    | 'invalid_envelope'
    | 'invalid_message_id'
    | 'invalid_recipient'
    | 'invalid_tag'
    | 'invalid_application_id'
    | 'invalid_timestamp'
    | 'invalid_ttl'
    | 'invalid_payload'
    | 'invalid_header'
    | 'invalid_chunk_metadata',
  field: string,
  message?: string,
): never {
  throw new DdnError(code, message ?? `invalid ${field}`, { field });
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Splits a `to` value into target and persona (§10.3 step 5). */
export function parseRecipient(to: string): { target: string; isDid: boolean; persona: string | null } {
  const at = to.indexOf('@');
  const targetRaw = at < 0 ? to : to.slice(0, at);
  let persona: string | null = null;
  if (at >= 0) {
    persona = canonicalPersona(to.slice(at + 1)) ?? bad('invalid_recipient', 'to', 'invalid persona in recipient');
  }
  if (targetRaw.startsWith('did:')) {
    if (!isDid(targetRaw)) bad('invalid_recipient', 'to', 'recipient is not a valid DID');
    return { target: targetRaw, isDid: true, persona };
  }
  const a = normalizeAlias(targetRaw);
  if (!a.ok) bad('invalid_recipient', 'to', 'recipient is neither a DID nor an alias');
  return { target: a.alias, isDid: false, persona };
}

function alternate(body: Record<string, unknown>, a: string, b: string, code: 'invalid_recipient' | 'invalid_timestamp'): unknown {
  const va = body[a];
  const vb = body[b];
  if (va !== undefined && vb !== undefined) {
    if (va !== vb) bad(code, a, `${a} and ${b} differ`);
    return va;
  }
  return va ?? vb;
}

function parseProvenance(body: Record<string, unknown>): Provenance | null {
  const present = PROVENANCE_FIELDS.filter((f) => body[f] !== undefined);
  if (present.length === 0) return null;
  const { policy_id, policy_revision, policy_rule_id, policy_block_hash, policy_block_number, policy_context } = body;
  if (
    typeof policy_id !== 'string' ||
    !/^0x[0-9a-f]{64}$/.test(policy_id) ||
    typeof policy_revision !== 'number' ||
    !Number.isSafeInteger(policy_revision) ||
    typeof policy_rule_id !== 'string' ||
    typeof policy_block_hash !== 'string' ||
    !/^0x[0-9a-f]{64}$/.test(policy_block_hash) ||
    typeof policy_block_number !== 'number' ||
    !Number.isSafeInteger(policy_block_number) ||
    !isObject(policy_context)
  ) {
    bad('invalid_envelope', 'policy_context', 'malformed policy provenance');
  }
  return {
    policyId: policy_id,
    policyRevision: policy_revision,
    ruleId: policy_rule_id,
    blockHash: policy_block_hash,
    blockNumber: policy_block_number,
    context: policy_context,
  };
}

/** The envelope's `payload` (§10.1): ciphertext, or plaintext CBOR where allowed; the bytes it counts for. */
function parsePayload(payload: unknown, allowPlaintext: boolean): { payloadBytes: number; plaintext: boolean } {
  if (!isObject(payload)) bad('invalid_payload', 'payload');
  if (payload.ciphertext_b64 !== undefined) {
    const n = typeof payload.ciphertext_b64 === 'string' ? stdBase64DecodedLength(payload.ciphertext_b64) : undefined;
    if (n === undefined) bad('invalid_payload', 'payload.ciphertext_b64');
    return { payloadBytes: n, plaintext: false };
  }
  if (payload.cbor_b64 !== undefined) {
    if (typeof payload.cbor_b64 !== 'string' || !isStdBase64(payload.cbor_b64)) bad('invalid_payload', 'payload.cbor_b64');
    if (!allowPlaintext) throw new DdnError('plaintext_not_allowed', 'plaintext payloads are refused by this node');
    return { payloadBytes: Buffer.byteLength(JSON.stringify(payload), 'utf8'), plaintext: true };
  }
  return bad('invalid_payload', 'payload', 'payload must contain ciphertext_b64');
}

/** Validates an envelope body (§10.1) and extracts what the Relay and the Cache need. */
export function parseEnvelope(body: Record<string, unknown>, opts: EnvelopeOptions): Envelope {
  const keys = Object.keys(body);
  if (!opts.allowProvenance) {
    const reserved = keys.find((k) => PROVENANCE_SET.has(k));
    if (reserved) throw new DdnError('client_policy_context_forbidden', 'policy provenance fields are network-managed', { field: reserved });
  }
  const unknown = keys.find((k) => !CLIENT_SET.has(k) && !(opts.allowProvenance && PROVENANCE_SET.has(k)));
  if (unknown) throw new DdnError('unknown_field', `unknown field ${unknown}`, { field: unknown });

  // the client fields, and the same without `payload` (the metadata, whose compact JSON is bounded)
  const fields: Record<string, unknown> = {};
  const meta: Record<string, unknown> = {};
  for (const k of keys) {
    if (!CLIENT_SET.has(k)) continue;
    fields[k] = body[k];
    if (k !== 'payload') meta[k] = body[k];
  }

  const messageId = body.message_id;
  if (typeof messageId !== 'string' || !UUID_RE.test(messageId)) bad('invalid_message_id', 'message_id');

  const to = alternate(body, 'to', 'recipient', 'invalid_recipient');
  if (typeof to !== 'string' || to.length === 0) bad('invalid_recipient', 'to');
  const recipient = parseRecipient(to);

  let tag: string | null = null;
  if (body.tag !== undefined) {
    const t = body.tag;
    if (typeof t !== 'string' || t.length === 0 || utf8Length(t) > 96 || CC_RE.test(t)) bad('invalid_tag', 'tag');
    tag = t;
  }
  let applicationId: string | null = null;
  if (body.application_id !== undefined) {
    const a = body.application_id;
    if (typeof a !== 'string' || !APP_ID_RE.test(a)) bad('invalid_application_id', 'application_id');
    applicationId = a;
  }

  const ts = alternate(body, 'timestamp', 'created_at', 'invalid_timestamp');
  const timestampMs = parseTimestampMs(ts);
  if (timestampMs === undefined) bad('invalid_timestamp', 'timestamp');
  if (timestampMs > opts.nowMs + opts.clockSkewSeconds * 1000) bad('invalid_timestamp', 'timestamp', 'timestamp is in the future');

  let ttlSeconds = DEFAULT_TTL_SECONDS;
  if (body.ttl !== undefined) {
    const t = typeof body.ttl === 'string' ? parseDurationSeconds(body.ttl) : undefined;
    if (t === undefined) bad('invalid_ttl', 'ttl');
    ttlSeconds = t;
  }

  if (body.delivery_hint !== undefined) {
    const h = body.delivery_hint;
    if (typeof h !== 'string' || h.length === 0 || utf8Length(h) > 64) bad('invalid_envelope', 'delivery_hint');
  }
  if (body.context !== undefined && body.context !== null && !isObject(body.context)) bad('invalid_envelope', 'context');

  const { payloadBytes, plaintext } = parsePayload(body.payload, opts.allowPlaintext);

  parseHeader(body);
  const chunk = parseChunk(body);
  const sender = parseSender(body, opts.malformedSenderSignatureIs403 === true);
  const provenance = opts.allowProvenance ? parseProvenance(body) : null;

  const metadataBytes = Buffer.byteLength(JSON.stringify(meta), 'utf8');

  return {
    fields,
    messageId,
    to,
    target: recipient.target,
    targetIsDid: recipient.isDid,
    persona: recipient.persona,
    tag,
    applicationId,
    timestampMs,
    timestampText: typeof ts === 'number' ? String(ts) : (ts as string),
    ttlSeconds,
    requestedExpiryMs: timestampMs + ttlSeconds * 1000,
    plaintext,
    payloadBytes,
    metadataBytes,
    chunk,
    sender,
    provenance,
    contentHash: canonicalJsonSha256Hex(fields),
  };
}

function parseHeader(body: Record<string, unknown>): void {
  const { encrypted_header: eh, header_nonce: hn, header_key_id: hk, schema_version: sv } = body;
  if (sv !== undefined && (typeof sv !== 'string' || utf8Length(sv) > 32)) bad('invalid_header', 'schema_version');
  if (eh === undefined) {
    if (hn !== undefined || hk !== undefined) bad('invalid_header', hn !== undefined ? 'header_nonce' : 'header_key_id', 'header fields need encrypted_header');
    return;
  }
  if (typeof eh !== 'string' || !isStdBase64(eh)) bad('invalid_header', 'encrypted_header');
  if (typeof hn !== 'string' || !isStdBase64(hn)) bad('invalid_header', 'header_nonce');
  if (typeof hk !== 'string' || hk.length === 0 || utf8Length(hk) > 128) bad('invalid_header', 'header_key_id');
  if (sv === undefined) bad('invalid_header', 'schema_version');
}

function parseChunk(body: Record<string, unknown>): ChunkInfo | null {
  const { message_group_id: g, sequence_number: s, total_chunks: t } = body;
  if (g === undefined) {
    if (s !== undefined || t !== undefined) bad('invalid_chunk_metadata', 'message_group_id', 'chunk fields need message_group_id');
    return null;
  }
  if (typeof g !== 'string' || !UUID_RE.test(g)) bad('invalid_chunk_metadata', 'message_group_id');
  if (typeof t !== 'number' || !Number.isInteger(t) || t < 1 || t > 65_535) bad('invalid_chunk_metadata', 'total_chunks');
  if (typeof s !== 'number' || !Number.isInteger(s) || s < 0 || s >= t) bad('invalid_chunk_metadata', 'sequence_number');
  return { groupId: g.toLowerCase(), sequence: s, total: t };
}

function parseSender(body: Record<string, unknown>, malformedIs403: boolean): SenderProof | null {
  const { sender, sender_key_id: keyId, sender_signature: sig } = body;
  const n = [sender, keyId, sig].filter((x) => x !== undefined).length;
  if (n === 0) return null;
  if (n !== 3) bad('invalid_envelope', 'sender', 'sender, sender_key_id and sender_signature go together');
  if (typeof sender !== 'string' || !isDid(sender)) bad('invalid_envelope', 'sender');
  if (typeof keyId !== 'string' || keyId.length === 0 || utf8Length(keyId) > 64) bad('invalid_envelope', 'sender_key_id');
  const bytes = typeof sig === 'string' ? parseStdBase64(sig) : undefined;
  // no 64 bytes never verify (verifyEd25519): the signature check refuses them
  if (malformedIs403) return { did: sender, keyId, signature: bytes !== undefined && bytes.length === 64 ? bytes : new Uint8Array(0) };
  if (!bytes || bytes.length !== 64) bad('invalid_envelope', 'sender_signature');
  return { did: sender, keyId, signature: bytes };
}

/** A `message_id` as a node already holds it (a Cache entry, a Relay's remembered delivery) or receives it again. */
export interface MessageIdHolder {
  /** sha256 of the canonical JSON of the whole envelope. */
  contentHash: string;
  /** The canonical recipient DID; null when not known (a Relay's record of a chunk of a delivered set). */
  recipientDid: string | null;
  chunked: boolean;
}

/**
 * What a `message_id` seen again means (service-spec: "an identical message_id gives `deduped: true`"):
 * `identical` — the same content; `duplicate` — an unchunked envelope for the same recipient with other content
 * (a client that re-encrypted on retry: the first copy stands); `conflict` — anything else, the chunk cases of
 * http-api.md §10.4.3 and §11.3 and an id reused for another recipient (409 `message_id_conflict`).
 */
export function messageIdReuse(held: MessageIdHolder, incoming: MessageIdHolder): 'identical' | 'duplicate' | 'conflict' {
  if (held.contentHash === incoming.contentHash) return 'identical';
  const unchunked = !held.chunked && !incoming.chunked;
  return unchunked && held.recipientDid !== null && held.recipientDid === incoming.recipientDid ? 'duplicate' : 'conflict';
}
