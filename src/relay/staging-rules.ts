/**
 * The pure rules of assured chunk staging (http-api.md §10.4.3). Store implementations call them inside their
 * write transaction so check and insert are atomic.
 */
import { DdnError } from '../base/errors.js';
import type { ChunkSetKeyValues } from './staging-store.js';

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

/** Capacity (bytes on the node, sets per recipient) → 429 `staging_capacity_full` with a Retry-After. */
export function checkCapacity(o: {
  newSet: boolean;
  setsOfRecipient: number;
  maxSetsPerRecipient: number;
  stagedBytes: number;
  addBytes: number;
  maxBytes: number;
}): void {
  if (o.newSet && o.setsOfRecipient >= o.maxSetsPerRecipient) {
    throw new DdnError('staging_capacity_full', 'too many chunk sets are staged for this recipient', {
      limit: 'sets_per_recipient',
      max_sets_per_recipient: o.maxSetsPerRecipient,
      retry_after_seconds: STAGING_RETRY_AFTER_SECONDS,
    });
  }
  if (o.stagedBytes + o.addBytes > o.maxBytes) {
    throw new DdnError('staging_capacity_full', "the Relay's chunk staging is full", {
      limit: 'bytes',
      retry_after_seconds: STAGING_RETRY_AFTER_SECONDS,
    });
  }
}
