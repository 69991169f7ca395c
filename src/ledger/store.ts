/** The ledger's persistence port (blocks, transactions, versioned state). Implementations live in src/store/. */
import type { BlockHeader } from './block.js';
import type { StateValue } from './state.js';

export type TxStatus = 'pending' | 'included' | 'failed';

export interface TxError {
  name: string;
  module: string;
  reason?: string;
}

/** What the Directory wants to know about a pooled change besides its bytes. */
export interface TxMeta {
  /** The DID (or persona, application) the change is about. */
  subject: string;
  action: string;
  nonceDomain?: string;
  nonce?: string;
  /** Pool limit key: (subject, nonce domain). */
  limitKey: string;
}

export interface TxRecord {
  txHash: string;
  extrinsic: string;
  status: TxStatus;
  submittedAtMs: number;
  meta: TxMeta;
  bytes?: Uint8Array;
  blockNumber?: number;
  blockIndex?: number;
  error?: TxError;
  finishedAtMs?: number;
  /**
   * A shared pool's pending row: digests of the signatures its admitting process found valid (see
   * src/ledger/runtime/verified-signatures.ts). Stores that keep no shared pool ignore it.
   */
  signatures?: Uint8Array;
}

export interface StoredBlock {
  header: BlockHeader;
  hash: Uint8Array;
}

/** Where a transaction sits in the chain: its block and its index in that block. */
export interface TxPosition {
  blockNumber: number;
  blockIndex: number;
}

/** One page of a subject's history ({@link LedgerStore.subjectHistory}). */
export interface SubjectHistoryQuery {
  /** `meta.subject`: a DID, a persona, an application id. */
  subject: string;
  /** Only these ledger calls (`extrinsic`); all when absent. */
  extrinsics?: readonly string[];
  /** Only blocks at or below this number (the finalized head). */
  maxBlock: number;
  /** Only transactions strictly older than this position (the previous page's last one). */
  before?: TxPosition;
  limit: number;
}

/**
 * One row of the export feed (docs/mirrors.md): an extrinsic of a committed block, or a block without any
 * (`tx` absent), numbered by `seq` in block order as blocks are committed.
 */
export interface FeedEntry {
  seq: number;
  blockNumber: number;
  /** The block's transaction at this position, with its extrinsic `bytes` when they were kept. */
  tx?: TxRecord;
}

/**
 * A feed entry as a tally reads it: where it is and what its transaction did, without the transaction's bytes
 * (`GET /overview` folds every entry of the feed).
 */
export interface FeedSummary {
  seq: number;
  blockNumber: number;
  /** Absent for the entry of a block without transactions. */
  tx?: FeedSummaryTx;
}

/** A feed summary's transaction: where it stands in its block, and what it did. */
export interface FeedSummaryTx {
  blockIndex: number;
  txHash: string;
  extrinsic: string;
  status: TxStatus;
  action: string;
  subject: string;
}

/** What a block's commit may carry besides its writes and outcomes ({@link LedgerStore.commitBlock}). */
export interface BlockExtras {
  /** Values the ledger keeps beside its blocks ({@link LedgerStore.readMeta}), written with the block. */
  meta?: ReadonlyMap<string, Uint8Array>;
  /**
   * Values of the writes as `serializeStateValue` writes them, where the caller holds that text already (a replica
   * copying a block another process produced: the database's text, which it was decoded from), so they are not
   * serialized again.
   */
  serialized?: ReadonlyMap<string, string>;
}

/**
 * What the feed holds through a block (`GET /overview`'s counts): DIDs registered less those deleted, deletions,
 * personas and applications registered (included transactions; a persona once), and every transaction.
 */
export interface FeedTally {
  dids: number;
  deletedDids: number;
  personas: number;
  applications: number;
  operations: number;
}

export interface LedgerStore {
  /** Stored genesis hash, if the chain was initialised before. */
  genesisHash(): Uint8Array | undefined;
  /** Writes block 0 (empty state). */
  initGenesis(block: StoredBlock): void;
  headNumber(): number;
  getBlock(number: number): StoredBlock | undefined;
  blockTxs(number: number): TxRecord[];
  /** The value of `key` as of block `atBlock` (latest version at or below it). */
  readState(key: string, atBlock: number): StateValue | undefined;
  /** Atomically: the block, its state writes, its transactions' outcomes (and what `extras` carries). */
  commitBlock(block: StoredBlock, writes: Map<string, StateValue | undefined>, txs: TxRecord[], extras?: BlockExtras): void;
  /** A value the ledger keeps beside its blocks (the chain cursor of a ledger ordered by a chain). */
  readMeta(key: string): Uint8Array | undefined;
  writeMeta(key: string, value: Uint8Array): void;
  putPendingTx(tx: TxRecord): void;
  /** Several pending transactions in one transaction (a group of admissions): all stored, or none. */
  putPendingTxs(txs: readonly TxRecord[]): void;
  /** Pool rebuild dropped a pending transaction. */
  markDropped(tx: TxRecord): void;
  pendingTxs(): TxRecord[];
  /** A tx hash's most recent finished (included or failed) transaction; pending ones are the pool's. */
  finishedTx(txHash: string): TxRecord | undefined;
  /** Most recent failed transaction of `extrinsic` about `subject` finished at or after `sinceMs`. */
  lastFailure(subject: string, extrinsic: string, sinceMs: number): TxRecord | undefined;
  /**
   * Included (successful) transactions about a subject, newest first: block number, then index in the block,
   * descending. Rows stay after the subject is deleted; an included transaction keeps its extrinsic bytes.
   */
  subjectHistory(q: SubjectHistoryQuery): TxRecord[];
  /** Feed entries after `afterSeq` of blocks at or below `maxBlock`, at most `limit`, in order. */
  feedAfter(afterSeq: number, maxBlock: number, limit: number): FeedEntry[];
  /** {@link feedAfter}'s entries as summaries: one statement, no extrinsic bytes read. */
  feedSummaryAfter(afterSeq: number, maxBlock: number, limit: number): FeedSummary[];
  /** The seq of the last feed entry of blocks at or below `maxBlock` (0: none). */
  feedLastSeq(maxBlock: number): number;
  /** The tally of the feed's entries of blocks at or below `maxBlock`, kept as blocks commit (one read). */
  feedTally(maxBlock: number): FeedTally;
  /** The newest `limit` feed entries with a transaction of blocks at or below `maxBlock`, newest first. */
  feedLatestSummaries(maxBlock: number, limit: number): FeedSummary[];
  /** How many transactions block `number` holds (its feed entries with a transaction). */
  blockTxCount(number: number): number;
  close(): void;
}
