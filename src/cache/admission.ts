/**
 * The pure rules a store applies against what the Cache already holds (http-api.md §11.1 steps 10–11,
 * §11.3). Store implementations call them inside their write transaction so check and insert are atomic.
 */
import { DdnError } from '../base/errors.js';
import { messageIdReuse } from '../protocol/envelope.js';
import type { ChunkRef, ChunkSetState, EntryMeta } from './mailbox-store.js';

type Held = Pick<EntryMeta, 'contentHash' | 'messageId' | 'recipientDid' | 'chunk'>;

const holder = (e: Pick<EntryMeta, 'contentHash' | 'recipientDid' | 'chunk'>) => ({
  contentHash: e.contentHash,
  recipientDid: e.recipientDid,
  chunked: e.chunk !== null,
});

/**
 * Step 10: `'new'` when nothing live holds the id; `'dedupe'` for identical content and for an unchunked envelope
 * to the same recipient with other content (a re-encrypted retry: the first copy stands, `messageIdReuse`); else
 * `message_id_conflict` (the chunk cases, an id reused for another recipient).
 */
export function checkDuplicate(existing: Held | null, incoming: Pick<EntryMeta, 'contentHash' | 'recipientDid' | 'chunk'>): 'new' | 'dedupe' {
  if (existing === null) return 'new';
  if (messageIdReuse(holder(existing), holder(incoming)) !== 'conflict') return 'dedupe';
  throw new DdnError('message_id_conflict', 'this message_id is already held with different content', {
    message_id: existing.messageId,
  });
}

/**
 * Step 11 for a new chunk: the set (if any) must declare the same `total_chunks` (`chunk_set_conflict`) and
 * the sequence must not be held by another entry (`chunk_conflict`; an identical retry was deduplicated at
 * step 10 already, so any holder here has different content).
 */
export function checkChunk(set: { total: number } | null, sequenceHeldBy: string | null, chunk: ChunkRef): void {
  if (set !== null && set.total !== chunk.total) {
    throw new DdnError('chunk_set_conflict', 'total_chunks differs from the set', {
      message_group_id: chunk.groupId,
      expected: set.total,
      received: chunk.total,
    });
  }
  if (sequenceHeldBy !== null) {
    throw new DdnError('chunk_conflict', 'this sequence of the set is already held with different content', {
      message_group_id: chunk.groupId,
      sequence_number: chunk.sequence,
    });
  }
}

/** `retry_until` of an incomplete set (§11.3): min(first chunk time + window, earliest `expires_at`). */
export function chunkRetryUntil(firstAtMs: number, windowMs: number, minExpiresAtMs: number): number {
  return Math.min(firstAtMs + windowMs, minExpiresAtMs);
}

/** The set's state once `received` sequences are held; completeness is sticky. */
export function chunkSetState(groupId: string, total: number, received: number, wasComplete: boolean, retryUntilMs: number): ChunkSetState {
  const complete = wasComplete || received >= total;
  return { groupId, total, received, complete, retryUntilMs: complete ? null : retryUntilMs };
}

/** True when `addBytes` more keep the recipient within `quotaBytes` (null: no quota). */
export function withinQuota(usedBytes: number, addBytes: number, quotaBytes: number | null): boolean {
  return quotaBytes === null || usedBytes + addBytes <= quotaBytes;
}

/**
 * Step 12's quota: a new entry may not take the recipient's unexpired envelope bytes above `quotaBytes`
 * (`storage_quota_exceeded`, 429). Deduplicated stores never reach it.
 */
export function checkQuota(usedBytes: number, addBytes: number, quotaBytes: number | null): void {
  if (withinQuota(usedBytes, addBytes, quotaBytes)) return;
  throw new DdnError('storage_quota_exceeded', "the recipient's Cache storage quota is full", {
    limit_bytes: quotaBytes,
    used_bytes: usedBytes,
    received: addBytes,
  });
}

/**
 * The Cache's storage budget (`--cache-storage-budget-bytes`): a new entry may not take the mailbox's storage above
 * `budgetBytes` (507 `insufficient_storage`, as a full disk). Deduplicated stores never reach it.
 */
export function checkBudget(usedBytes: number, addBytes: number, budgetBytes: number | null): void {
  if (budgetBytes === null || usedBytes + addBytes <= budgetBytes) return;
  throw new DdnError('insufficient_storage', "the Cache's storage budget is used up; retry later", {
    limit_bytes: budgetBytes,
    used_bytes: usedBytes,
  });
}
