/**
 * The Relay's storage port (DESIGN.md: ports are named for what they do): assured chunk staging
 * (http-api.md §10.4.3), the idempotency record of delivered message ids (§10.3 step 6) and node-request
 * nonces (§10.6). Implementations keep every rule that must be atomic with the write inside one transaction;
 * a resolved promise means the write is durable.
 */
import type { NonceClaim, NonceRegistry } from '../ports/nonce-registry.js';
import type { DeliveryResult } from './delivery-result.js';

/** How long a delivered message id is remembered (§10.3 step 6). */
export const RESULT_RETENTION_MS = 86_400_000;

/** A remembered delivery: the content it was for and the result answered. */
export interface StoredResult {
  contentHash: string;
  /** The recipient DID of an unchunked delivery; null for a chunk of a delivered set. */
  recipientDid: string | null;
  result: DeliveryResult;
}

/** The values the first chunk of a set fixes (§10.4.3). */
export interface ChunkSetKeyValues {
  total: number;
  /** `to` (or `recipient`) exactly as sent. */
  to: string;
  tag: string | null;
  applicationId: string | null;
  /** Sender DID, when the envelope is sender-signed. */
  sender: string | null;
}

/** One chunk to stage. */
export interface StageRequest {
  recipientDid: string;
  /** Lower-case `message_group_id`. */
  groupId: string;
  sequence: number;
  /** Lower-case `message_id`. */
  messageKey: string;
  contentHash: string;
  set: ChunkSetKeyValues;
  /** The client envelope text (a JSON object) to deliver later. */
  envelope: Uint8Array;
  nowMs: number;
  /** `retry_until` of a set this chunk creates: now + `relay.staging_window_seconds`. */
  retryUntilMs: number;
  /** Capacity: envelope bytes staged on this node, and sets staged per recipient. */
  maxBytes: number;
  maxSetsPerRecipient: number;
  /**
   * Whose staged bytes the set counts against (`maxBytesPerOwner`), fixed by its first chunk: the sender DID of a
   * sender-signed envelope, else the client's address; null: none.
   */
  owner?: string | null;
  /** Envelope bytes of one set (also judged from its announced total at its first chunk); absent: no cap. */
  maxSetBytes?: number;
  /** Envelope bytes staged for one recipient; absent: no cap. */
  maxBytesPerRecipient?: number;
  /** Envelope bytes staged by one owner; absent: no cap. */
  maxBytesPerOwner?: number;
  /**
   * A set that got no new chunk for this long is dropped when a stage needs its room (the node's bytes, or its
   * recipient's bytes or sets); absent: sets are kept until `retry_until`.
   */
  idleDropMs?: number;
}

/** What the staging store holds now. */
export interface StagingUsage {
  sets: number;
  bytes: number;
}

/** The set after a stage. */
export interface StageOutcome {
  /** The sequence was already staged with identical content (nothing written). */
  replayed: boolean;
  received: number;
  total: number;
  retryUntilMs: number;
  /** Every sequence `0 … total − 1` is staged. */
  complete: boolean;
}

/** A staged chunk, as delivered. */
export interface StagedChunk {
  sequence: number;
  messageKey: string;
  contentHash: string;
  envelope: Uint8Array;
}

/** Where a staged message id lives. */
export interface StagedMessageRef {
  recipientDid: string;
  groupId: string;
  sequence: number;
  contentHash: string;
}

/** Sets dropped to make room, at most per stage (the oldest idle first). */
export const MAX_IDLE_DROPS_PER_STAGE = 64;

/** What one sweep removed. */
export interface RelaySweepResult {
  purgedSets: number;
  purgedChunks: number;
  expiredResults: number;
  expiredNonces: number;
}

/** What {@link RelayStagingStore.findPrior} found of a message id's earlier use. */
export interface PriorUse {
  result: StoredResult | null;
  /** Only looked for when asked and there is no result. */
  staged: StagedMessageRef | null;
}

/** The Relay's durable state. */
export interface RelayStagingStore extends NonceRegistry {
  /** The result remembered for `messageKey` at `nowMs` (younger than {@link RESULT_RETENTION_MS}), or null. */
  findResult(messageKey: string, nowMs: number): Promise<StoredResult | null>;
  /** Remembers a delivered unchunked message's result and its recipient DID. */
  saveResult(messageKey: string, contentHash: string, recipientDid: string, result: DeliveryResult, nowMs: number): Promise<void>;
  /**
   * {@link findResult} and, when there is none and `staged` is asked, the live staged chunk holding `messageKey`, in
   * one read (one round trip on PostgreSQL: every unchunked send asks both).
   */
  findPrior(messageKey: string, nowMs: number, staged: boolean): Promise<PriorUse>;
  /**
   * Stages one chunk (§10.4.3): a set past `retry_until` is dropped first; the set's fixed values must match
   * (`chunk_set_conflict`); an already staged sequence is replayed when identical, else `chunk_conflict`; a
   * `message_id` staged under another sequence or set → `message_id_conflict`; capacity → 429
   * `staging_capacity_full`; a failed durable write → 507 `staging_persist_failed`.
   */
  stage(req: StageRequest): Promise<StageOutcome>;
  /** The staged chunks of a set in sequence order (empty when none). */
  loadSet(recipientDid: string, groupId: string): Promise<StagedChunk[]>;
  /**
   * After a set was delivered: removes it and remembers `result` for each of its chunks' message ids, in one
   * durable write.
   */
  finishSet(recipientDid: string, groupId: string, chunks: readonly StagedChunk[], result: DeliveryResult, nowMs: number): Promise<void>;
  /** Records a node-request nonce durably; false when it is already recorded and live. */
  claimNonce(claim: NonceClaim, nowMs: number): Promise<boolean>;
  /** Drops sets past `retry_until`, results older than the retention, expired nonces. */
  sweep(nowMs: number): Promise<RelaySweepResult>;
  /** Chunk sets staged now and their envelope bytes (metrics; the sets are bounded by the staging capacity). */
  usage(): Promise<StagingUsage>;
  /** Resolves once every queued write is committed. */
  settle(): Promise<void>;
  close(): Promise<void>;
}
