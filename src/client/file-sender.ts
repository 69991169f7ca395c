/**
 * Sending a file (http-api.md §6, §10.3, §10.9): resolve the recipient's delivery (key agreement and effective
 * limits), split the file when the limits require it, encrypt each part for the recipient's X25519 key, and post
 * the envelopes in sequence order to a Relay, each retried with its identical bytes when the Relay asks.
 */
import { randomUUID } from 'node:crypto';
import { toHex } from '../base/bytes.js';
import { constraintsToJson, NETWORK_CONSTRAINTS } from '../protocol/constraints.js';
import { assertFileMetadata, buildFileEnvelope, planFileTransfer, type EnvelopeSigner, type TransferLimits } from '../protocol/file-envelopes.js';
import { decodeX25519Multibase } from '../protocol/keys.js';
import type { Profile } from '../protocol/profile.js';
import { TransferError } from '../protocol/transfer-error.js';
import type { DirectoryClient } from './directory-client.js';
import { DirectoryApiError } from './http.js';
import type { RelayClient } from './relay-client.js';
import type { TransferKeys } from './send-keys.js';
import type { DeliveryResolutionResponse, DeliveryResult, EffectiveConstraintsJson } from './transfer-types.js';

/** The file to send: its size and SHA-256 known up front, its bytes read part by part. */
export interface FileSource {
  name: string;
  size: number;
  sha256: Uint8Array;
  read(offset: number, length: number): Promise<Uint8Array>;
}

/** Progress after each posted envelope. */
export interface SendProgress {
  sentBytes: number;
  totalBytes: number;
  sentEnvelopes: number;
  totalEnvelopes: number;
}

/** Options of {@link sendFile}. */
export interface SendFileOptions {
  profile: Profile;
  directory: DirectoryClient;
  relay: RelayClient;
  /** The recipient DID (the envelope `to`, followed by `@persona` when a persona is given). */
  to: string;
  /** Addresses the recipient through this persona (canonical name): `to` = `<did>@<persona>` (§10.1). */
  persona?: string;
  /** Signs every envelope as this sender (§10.2); anonymous when absent. */
  sender?: EnvelopeSigner;
  /**
   * Ids and encryption randomness from a transfer secret (a resumable send): envelopes are then byte-identical
   * each time the same transfer is sent. Random per run when absent.
   */
  keys?: TransferKeys;
  /** Envelope timestamp text (a resumed send repeats the first run's); default now. */
  timestamp?: string;
  /** Envelopes of the set the Relay already confirmed in an earlier run: not sent again unless the set stays incomplete. */
  skip?: number;
  /** After each envelope the Relay accepted: its sequence and the Relay's result. */
  onPosted?(sequence: number, result: DeliveryResult): void;
  source: FileSource;
  mediaType?: string;
  tag?: string;
  ttl?: string;
  /** Send the plaintext profile (readable by every intermediary). */
  plaintext?: boolean;
  /** File bytes per chunk, at most what the limits allow. */
  partBytes?: number;
  now?: () => number;
  newId?: () => string;
  onProgress?(p: SendProgress): void;
}

/** What was sent. */
export interface SendReport {
  to: string;
  name: string;
  media_type: string;
  size_bytes: number;
  sha256: string;
  encrypted: boolean;
  recipient_key_id: string | null;
  chunked: boolean;
  total_chunks: number;
  message_group_id: string | null;
  message_ids: string[];
  /** The sender DID of the signed envelopes; null when anonymous. */
  sender: string | null;
  /** Envelopes confirmed by an earlier run and not sent again. */
  resumed_envelopes: number;
  /** The last envelope's DeliveryResult code (`chunk_set_delivered` for a set), mode and the attempts in all. */
  code: string;
  delivery_mode: string;
  attempts: number;
  policy_id: string | null;
}

type LimitKey = 'max_http_envelope_bytes' | 'max_unchunked_message_bytes' | 'max_chunk_bytes';

function limitsOf(c: Partial<EffectiveConstraintsJson> | undefined, relayCaps: Partial<Record<LimitKey, number>> | undefined): TransferLimits {
  const pick = (k: LimitKey): number => {
    const v = c?.[k];
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v <= 0) throw new TransferError('limits_too_small', `the Directory returned no valid ${k}`);
    const cap = relayCaps?.[k];
    return typeof cap === 'number' && Number.isSafeInteger(cap) && cap > 0 ? Math.min(v, cap) : v;
  };
  return {
    maxHttpEnvelopeBytes: pick('max_http_envelope_bytes'),
    maxUnchunkedMessageBytes: pick('max_unchunked_message_bytes'),
    maxChunkBytes: pick('max_chunk_bytes'),
  };
}

/** The recipient key of a resolution, after the checks deployed senders make (§12 item 13). */
function recipientKey(to: string, r: DeliveryResolutionResponse): { keyId: string; publicKey: Uint8Array } {
  if (r.encryption_profile !== 'direct') {
    throw new TransferError(
      'unsupported_payload_profile',
      `the recipient requires encryption profile ${r.encryption_profile}, which this client does not support`,
    );
  }
  if (r.target !== to) throw new TransferError('invalid_recipient_key', 'the Directory resolved a different delivery target');
  const publicKey = typeof r.recipient_public_key_multibase === 'string' ? decodeX25519Multibase(r.recipient_public_key_multibase) : undefined;
  if (typeof r.recipient_key_id !== 'string' || r.recipient_key_id === '' || publicKey === undefined) {
    throw new TransferError('invalid_recipient_key', 'the Directory returned no usable recipient key agreement');
  }
  return { keyId: r.recipient_key_id, publicKey };
}

async function resolve(opts: SendFileOptions): Promise<DeliveryResolutionResponse | null> {
  try {
    return await opts.directory.deliveryResolution(opts.to, {
      ...(opts.tag === undefined ? {} : { tag: opts.tag }),
      ...(opts.persona === undefined ? {} : { persona: opts.persona }),
    });
  } catch (e) {
    // Plaintext needs no key agreement: fall back to the Relay's advertised limits.
    if (opts.plaintext && e instanceof DirectoryApiError && e.code === 'key_agreement_not_found') return null;
    throw e;
  }
}

/** Resolves, encrypts, chunks and posts a file; see the module comment. */
export async function sendFile(opts: SendFileOptions): Promise<SendReport> {
  const { profile, source } = opts;
  const mediaType = opts.mediaType ?? 'application/octet-stream';
  assertFileMetadata(source.name, mediaType);
  const newId = opts.newId ?? randomUUID;
  const resolution = await resolve(opts);
  const recipient = opts.plaintext || resolution === null ? null : recipientKey(opts.to, resolution);
  const relayLimits = await opts.relay.limits();
  const limits = limitsOf(resolution?.effective_constraints ?? relayLimits ?? constraintsToJson(NETWORK_CONSTRAINTS), relayLimits);
  const plan = planFileTransfer(source.size, limits, { plaintext: opts.plaintext === true, partBytes: opts.partBytes });
  const groupId = plan.chunked ? (opts.keys?.groupId ?? newId()) : '';
  const timestamp = opts.timestamp ?? new Date((opts.now ?? Date.now)()).toISOString();
  const to = opts.persona === undefined ? opts.to : `${opts.to}@${opts.persona}`;
  const ids: string[] = [];
  let last: DeliveryResult | undefined;
  let attempts = 0;
  let sentBytes = 0;
  const skip = plan.chunked ? Math.min(opts.skip ?? 0, plan.total - 1) : 0;
  const post = async (seq: number): Promise<number> => {
    const data = await source.read(seq * plan.partBytes, Math.min(plan.partBytes, source.size - seq * plan.partBytes));
    const messageId = ids[seq]!;
    const record = { name: source.name, mediaType, sizeBytes: source.size, sha256: source.sha256, groupId, sequence: seq, total: plan.total, data };
    const built = buildFileEnvelope(
      profile,
      {
        to,
        messageId,
        timestamp,
        ttl: opts.ttl,
        tag: opts.tag,
        recipient,
        record,
        ...(opts.keys === undefined || recipient === null ? {} : { seal: opts.keys.seal(seq, data) }),
        ...(opts.sender === undefined ? {} : { sender: opts.sender }),
      },
      limits,
    );
    const outcome = await opts.relay.post(built.body);
    last = outcome.result;
    attempts += outcome.attempts;
    opts.onPosted?.(seq, outcome.result);
    return data.length;
  };
  for (let seq = 0; seq < plan.total; seq++) ids.push(opts.keys?.messageId(seq) ?? newId());
  for (let seq = 0; seq < plan.total; seq++) {
    sentBytes += seq < skip ? Math.min(plan.partBytes, source.size - seq * plan.partBytes) : await post(seq);
    // a resumed send reports progress from where it resumed, not once per envelope staged before
    if (seq >= skip - 1) opts.onProgress?.({ sentBytes, totalBytes: source.size, sentEnvelopes: seq + 1, totalEnvelopes: plan.total });
  }
  // The Relay no longer holds what an earlier run staged (purged, or another Relay): send those envelopes again.
  if (skip > 0 && last?.code === 'chunk_staged') {
    for (let seq = 0; seq < skip; seq++) await post(seq);
  }
  return {
    to: opts.to,
    name: source.name,
    media_type: mediaType,
    size_bytes: source.size,
    sha256: toHex(source.sha256),
    encrypted: recipient !== null,
    recipient_key_id: recipient?.keyId ?? null,
    chunked: plan.chunked,
    total_chunks: plan.total,
    message_group_id: plan.chunked ? groupId : null,
    message_ids: ids,
    sender: opts.sender?.did ?? null,
    resumed_envelopes: skip,
    code: last!.code,
    delivery_mode: last!.delivery_mode,
    attempts,
    policy_id: typeof last!.details?.policy_id === 'string' ? last!.details.policy_id : (resolution?.policy?.policy_id ?? null),
  };
}
