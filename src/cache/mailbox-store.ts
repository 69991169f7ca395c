/**
 * The Cache's storage port (DESIGN.md: ports are named for what they do). Implementations keep every rule
 * that must be atomic with the write — deduplication (http-api.md §11.1 step 10), chunk-set rules (§11.3),
 * nonce single-use (§11.4 step 9, §10.6) — inside one transaction, using the pure rules of `admission.ts`.
 */
import type { NonceClaim, NonceRegistry } from '../ports/nonce-registry.js';

/** Chunk metadata of an entry (§10.1). `groupId` is lower-case. */
export interface ChunkRef {
  groupId: string;
  sequence: number;
  total: number;
}

/** The provenance echoed in store responses (§11.1 response table). */
export interface StoredProvenance {
  policyId: string;
  policyRevision: number;
  ruleId: string;
  blockHash: string;
}

/** Everything about a stored envelope but its bytes. */
export interface EntryMeta {
  /** As sent by the first store. */
  messageId: string;
  recipientDid: string;
  /** sha256 hex of the canonical JSON of the client fields (identical-content test). */
  contentHash: string;
  storedAtMs: number;
  expiresAtMs: number;
  maxTtlSeconds: number;
  appliedTtlSeconds: number;
  tag: string | null;
  applicationId: string | null;
  chunk: ChunkRef | null;
  /** Bytes of the stored envelope text. */
  sizeBytes: number;
  provenance: StoredProvenance | null;
}

/** What a summary item shows of an entry (§11.5). */
export type SummaryEntry = Pick<EntryMeta, 'messageId' | 'storedAtMs' | 'expiresAtMs' | 'tag' | 'applicationId' | 'chunk' | 'sizeBytes'>;

/** A new entry: its metadata and the envelope JSON text as received (a JSON object, no surrounding space). */
export interface NewEntry extends EntryMeta {
  envelope: Uint8Array;
}

/**
 * An envelope's bytes: one buffer, consecutive parts (a large envelope as stored) that make it in order, or its
 * text — a string whose UTF-8 encoding is exactly the stored bytes (a store may read a small envelope so, since
 * a string costs less to make than a buffer; the bytes are UTF-8 as the body parser admits no other).
 */
export type EnvelopeBytes = string | Uint8Array | readonly Uint8Array[];

/** What a retrieved item (§11.5) shows of an entry besides its envelope. */
export type RetrievedMeta = Pick<EntryMeta, 'messageId' | 'recipientDid' | 'expiresAtMs' | 'chunk'>;

/**
 * A stored entry as a page or chunk set returns it: its envelope and what the item shows (a store may return full
 * {@link EntryMeta}, a supertype; SQLite reads no more, since each value read costs).
 */
export interface RetrievedEntry {
  meta: RetrievedMeta;
  envelope: EnvelopeBytes;
}

/** A stored entry with all its metadata and its envelope. */
export interface EntryWithEnvelope extends RetrievedEntry {
  meta: EntryMeta;
}

/** The state of a chunk set after a store (§11.3). */
export interface ChunkSetState {
  groupId: string;
  total: number;
  /** Sequences currently held. */
  received: number;
  /** Sticky once every sequence was present. */
  complete: boolean;
  /** While incomplete: min(first chunk time + staging window, earliest `expires_at` of the set). */
  retryUntilMs: number | null;
}

/** One store (§11.1 steps 10–12). */
export interface PutRequest {
  entry: NewEntry;
  nowMs: number;
  /** `cache.chunk_staging_window_seconds` in ms. */
  chunkWindowMs: number;
  /** A node request's nonce, recorded atomically with the entry. */
  claim: NonceClaim | null;
  /** Unexpired bytes the recipient may hold, this entry included; null: no quota. */
  quotaBytes: number | null;
  /** The storage budget of the whole mailbox (`--cache-storage-budget-bytes`); null: none (507 beyond it). */
  budgetBytes?: number | null;
}

/** The outcome of a store. */
export interface PutResult {
  /** True when an entry with this `message_id` was already held and counts as this one (`checkDuplicate`); `entry` is that one. */
  deduped: boolean;
  entry: EntryMeta;
  chunkSet: ChunkSetState | null;
}

/** One `GET /cache/messages` page. */
export interface MessagePage {
  entries: RetrievedEntry[];
  /** More visible entries remain beyond the byte budget. */
  truncated: boolean;
  /**
   * Set on a page a read cache keeps (`read-cache.ts`): the store may hand this very object out again, so what is
   * made of it once (its answer's bytes, `views.ts`) is worth keeping with it.
   */
  readonly kept?: true;
}

/** A complete chunk set's visible entries, in sequence order. */
export interface ChunkSetView {
  total: number;
  entries: RetrievedEntry[];
}

/** What one purge removed (§11.7). */
export interface SweepResult {
  expiredEntries: number;
  purgedChunkSets: number;
  purgedChunks: number;
  expiredNonces: number;
}

/** What the mailbox holds now (metrics, read at scrape time with a few cheap queries). */
export interface MailboxUsage {
  /** Entries held, expired ones not yet purged included. */
  entries: number;
  /** Their envelope bytes. */
  bytes: number;
  /** Chunk sets that are not complete yet. */
  incompleteChunkSets: number;
  /** What the storage budget (`--cache-storage-budget-bytes`) counts: the file's pages in use on SQLite, envelope bytes on PostgreSQL. */
  budgetUsedBytes: number;
}

/**
 * The Cache's mailbox. Every write is durable when its promise resolves. Reads see only *visible* entries:
 * unexpired at `nowMs`, and unchunked or in a complete set (§11.5).
 */
export interface MailboxStore extends NonceRegistry {
  /**
   * Stores an entry: a live entry with the same `message_id` (case-insensitive) and the same content hash, or
   * both unchunked for the same recipient (`checkDuplicate`) → `deduped`, the held entry kept; otherwise a
   * different hash → `message_id_conflict`; chunk rules (§11.3) → `chunk_set_conflict`,
   * `chunk_conflict`. A live `claim` → `proof_nonce_replayed` (nothing is written). Storage failure →
   * `insufficient_storage`; a full write queue → `rate_limited`.
   */
  put(req: PutRequest): Promise<PutResult>;
  /** Records a nonce durably; false when it is already recorded and live. */
  claimNonce(claim: NonceClaim, nowMs: number): Promise<boolean>;
  /**
   * Forgets a nonce this caller recorded with {@link claimNonce} (true answer), for a request refused after all:
   * the row of exactly that claim (same expiry) is deleted, durably.
   */
  releaseNonce(claim: NonceClaim): Promise<void>;
  /**
   * Visible entries of `did` in store order (sets together, by sequence) up to `maxEnvelopeBytes`. The page may be
   * one answered before (a read cache, `read-cache.ts`): callers read it and never change it.
   */
  listMessages(did: string, nowMs: number, maxEnvelopeBytes: number): Promise<MessagePage>;
  /** What the summary shows of every visible entry of `did`, in the same order (shared as {@link listMessages}). */
  listSummary(did: string, nowMs: number): Promise<SummaryEntry[]>;
  /** The visible entries of a complete set; null when absent, incomplete or empty. */
  getChunkSet(did: string, groupId: string, nowMs: number): Promise<ChunkSetView | null>;
  /** One visible entry by `message_id` (case-insensitive). */
  getMessage(did: string, messageId: string, nowMs: number): Promise<EntryWithEnvelope | null>;
  /**
   * Records `claim` (a live one → `proof_nonce_replayed`) and deletes the listed live entries of `did`, in one
   * durable write. Returns the ids deleted, as requested, without duplicates.
   */
  ack(did: string, messageIds: readonly string[], nowMs: number, claim: NonceClaim): Promise<string[]>;
  /** Deletes expired entries, incomplete sets past `retry_until`, emptied sets and expired nonces. */
  sweep(nowMs: number): Promise<SweepResult>;
  /** What the mailbox holds now, read without a scan of the entries (counts kept by triggers, an indexed count). */
  usage(): Promise<MailboxUsage>;
  /** Resolves once every write queued so far is committed. */
  settle(): Promise<void>;
  /** Commits what is queued, then refuses further writes. */
  close(): Promise<void>;
}
