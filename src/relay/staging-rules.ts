/**
 * The pure rules of assured chunk staging (http-api.md §10.4.3). Store implementations call them inside their
 * write transaction so check and insert are atomic.
 */
import { DdnError } from '../base/errors.js';
import type { ChunkSetKeyValues, StageRequest } from './staging-store.js';

/** How long a client should wait before retrying when staging is full. */
export const STAGING_RETRY_AFTER_SECONDS = 30;

const FIXED: readonly (keyof ChunkSetKeyValues)[] = ['total', 'to', 'tag', 'applicationId', 'sender'];
const FIELD_NAMES: Record<keyof ChunkSetKeyValues, string> = {
  total: 'total_chunks',
  to: 'to',
  tag: 'tag',
  applicationId: 'application_id',
  sender: 'sender',
};

/** A later chunk must repeat the values the first fixed → else 409 `chunk_set_conflict` (`details.field`). */
export function checkSetValues(groupId: string, fixed: ChunkSetKeyValues, sent: ChunkSetKeyValues): void {
  const differs = FIXED.find((k) => fixed[k] !== sent[k]);
  if (differs === undefined) return;
  throw new DdnError('chunk_set_conflict', `${FIELD_NAMES[differs]} differs from the staged set`, {
    message_group_id: groupId,
    field: FIELD_NAMES[differs],
    ...(differs === 'total' ? { expected: fixed.total, received: sent.total } : {}),
  });
}

/**
 * A sequence already staged: identical content → `'replay'`; different content → 409 `chunk_conflict`.
 * Not staged → `'new'`.
 */
export function checkSequence(groupId: string, sequence: number, heldHash: string | null, contentHash: string): 'new' | 'replay' {
  if (heldHash === null) return 'new';
  if (heldHash === contentHash) return 'replay';
  throw new DdnError('chunk_conflict', 'this sequence of the set is already staged with different content', {
    message_group_id: groupId,
    sequence_number: sequence,
  });
}

/** A `message_id` staged under another sequence or set → 409 `message_id_conflict`. */
export function messageIdConflict(messageId: string): DdnError {
  return new DdnError('message_id_conflict', 'this message_id is already used by another chunk', { message_id: messageId });
}

/** What a stage is checked against: the set, its recipient's and its owner's staged bytes, the node's. */
export interface CapacityCheck {
  newSet: boolean;
  /** `total_chunks` of the set. */
  total: number;
  /** Envelope bytes of the chunk being staged. */
  addBytes: number;
  /** Bytes the set holds already. */
  setBytes: number;
  maxSetBytes?: number;
  setsOfRecipient: number;
  maxSetsPerRecipient: number;
  recipientBytes: number;
  maxBytesPerRecipient?: number;
  /** Bytes staged by the set's owner (its sender DID, else the client address); absent: no owner cap. */
  ownerBytes?: number;
  maxBytesPerOwner?: number;
  stagedBytes: number;
  maxBytes: number;
}

/** What a store counted for a stage: the set's, the recipient's, the owner's (when it has one) and the node's bytes. */
export interface StagedCounts {
  newSet: boolean;
  setBytes: number;
  setsOfRecipient: number;
  recipientBytes: number;
  /** Undefined without an owner, or when no owner bound applies. */
  ownerBytes: number | undefined;
  stagedBytes: number;
}

/** The check of a stage of `req` against the store's counts. */
export function capacityCheck(req: StageRequest, c: StagedCounts): CapacityCheck {
  return {
    newSet: c.newSet,
    total: req.set.total,
    addBytes: req.envelope.byteLength,
    setBytes: c.setBytes,
    ...(req.maxSetBytes === undefined ? {} : { maxSetBytes: req.maxSetBytes }),
    setsOfRecipient: c.setsOfRecipient,
    maxSetsPerRecipient: req.maxSetsPerRecipient,
    recipientBytes: c.recipientBytes,
    ...(req.maxBytesPerRecipient === undefined ? {} : { maxBytesPerRecipient: req.maxBytesPerRecipient }),
    ...(c.ownerBytes === undefined || req.maxBytesPerOwner === undefined ? {} : { ownerBytes: c.ownerBytes, maxBytesPerOwner: req.maxBytesPerOwner }),
    stagedBytes: c.stagedBytes,
    maxBytes: req.maxBytes,
  };
}

/** Whose bytes `req`'s set counts as, when an owner bound applies to it; null: none. */
export function boundOwner(req: StageRequest): string | null {
  return req.owner === undefined || req.owner === null || req.maxBytesPerOwner === undefined ? null : req.owner;
}

function full(message: string, details: Record<string, unknown>): DdnError {
  return new DdnError('staging_capacity_full', message, { ...details, retry_after_seconds: STAGING_RETRY_AFTER_SECONDS });
}

/**
 * The bytes a set will need at least, judged from one of its chunks: every chunk but the last of a file has the same
 * size, so `total − 1` chunks of this one's size (the last may be smaller).
 */
export function announcedSetBytes(total: number, chunkBytes: number): number {
  return Math.max(0, total - 1) * chunkBytes;
}

/**
 * A set that can never fit this Relay's per-set cap (its announced total of chunks this size exceeds it, or it
 * has outgrown it) → 413 `payload_too_large` (`details.limit` `set_bytes`): retrying cannot help. Capacity that
 * frees up (bytes per recipient, per owner, on the node; sets per recipient) → 429 `staging_capacity_full` with a
 * Retry-After and `details.limit` naming the bound.
 */
export function checkCapacity(o: CapacityCheck): void {
  checkOwnBounds(o);
  if (o.newSet && o.setsOfRecipient >= o.maxSetsPerRecipient) {
    throw full('too many chunk sets are staged for this recipient', { limit: 'sets_per_recipient', max_sets_per_recipient: o.maxSetsPerRecipient });
  }
  if (o.maxBytesPerRecipient !== undefined && o.recipientBytes + o.addBytes > o.maxBytesPerRecipient) {
    throw full('too many chunk bytes are staged for this recipient', { limit: 'recipient_bytes', max_bytes_per_recipient: o.maxBytesPerRecipient });
  }
  if (o.stagedBytes + o.addBytes > o.maxBytes) {
    throw full("the Relay's chunk staging is full", { limit: 'bytes' });
  }
}

/**
 * The bounds of the chunk's own set and owner, which no dropped idle set can make room for: checked before a stage
 * drops anything (a chunk refused anyway drops nothing).
 */
export function checkOwnBounds(o: CapacityCheck): void {
  const maxSet = o.maxSetBytes;
  if (maxSet !== undefined && (o.setBytes + o.addBytes > maxSet || (o.newSet && announcedSetBytes(o.total, o.addBytes) > maxSet))) {
    throw new DdnError('payload_too_large', `a chunk set of ${o.total} chunks this size exceeds this Relay's ${maxSet} bytes per set`, {
      limit: 'set_bytes',
      max_set_bytes: maxSet,
    });
  }
  if (o.maxBytesPerOwner !== undefined && o.ownerBytes !== undefined && o.ownerBytes + o.addBytes > o.maxBytesPerOwner) {
    throw full('too many chunk bytes are staged from this sender', { limit: 'sender_bytes', max_bytes_per_sender: o.maxBytesPerOwner });
  }
}

/** Which idle sets a stage may drop to make room (the bounds it would otherwise break); none: no pressure. */
export function idlePressure(o: CapacityCheck): { recipient: boolean; node: boolean } {
  const recipient =
    (o.newSet && o.setsOfRecipient >= o.maxSetsPerRecipient) ||
    (o.maxBytesPerRecipient !== undefined && o.recipientBytes + o.addBytes > o.maxBytesPerRecipient);
  return { recipient, node: o.stagedBytes + o.addBytes > o.maxBytes };
}
