/**
 * The embedded chain (ledger-rules.md §2): the `Ledger` every user holds, a facade over its parts — where it stands
 * ({@link ChainHead}: head, finality, the commit of a block), what fills its pool ({@link PoolAdmission}), what
 * makes, replicates, imports or follows blocks and empties it ({@link BlockProduction}) — and the reads they serve.
 * The parts share the head, the pool and the executor, handed to each when it is built; none knows the `Ledger`.
 */
import { bytesEqual } from '../base/bytes.js';
import type { Profile } from '../protocol/profile.js';
import type { AdmissionBatch, PoolCoordinator } from './admission-batch.js';
import { PoolAdmission } from './admission.js';
import { blockHash, genesisHeader } from './block.js';
import type { LedgerFailure } from './errors.js';
import { Executor } from './executor.js';
import type { Call } from './extrinsic.js';
import { ChainHead, refOf } from './head.js';
import { TxPool } from './pool.js';
import { BlockProduction } from './production.js';
import { Overlay, type StateReader, type StateValue } from './state.js';
import { StateAt } from './state-at.js';
import type { FeedEntry, FeedSummary, FeedTally, LedgerStore, StoredBlock, SubjectHistoryQuery, TxMeta, TxRecord } from './store.js';
import { entryFromStored } from './stored-entry.js';
import {
  MAX_EXTRINSICS_PER_BLOCK,
  type BlockRef,
  type BuiltBlock,
  type ImportedTx,
  type LedgerOptions,
  type OrderedTx,
  type PoolEntry,
  type TxView,
} from './types.js';

export class Ledger {
  readonly genesisHash: Uint8Array;
  /** True when an outside chain orders the transactions ({@link LedgerOptions.ordering}). */
  readonly chainOrdered: boolean;
  /** The most transactions the pool holds. */
  readonly maxPoolSize: number;
  readonly profile: Profile;
  private readonly head: ChainHead;
  private readonly pool: TxPool;
  private readonly admission: PoolAdmission;
  private readonly production: BlockProduction;

  constructor(
    private readonly store: LedgerStore,
    opts: LedgerOptions,
  ) {
    this.chainOrdered = opts.ordering === 'chain';
    this.maxPoolSize = opts.maxPoolSize ?? 10_000;
    this.profile = opts.profile;
    const maxPerBlock = opts.maxExtrinsicsPerBlock ?? MAX_EXTRINSICS_PER_BLOCK;
    const g = genesisHeader(opts.genesis);
    this.genesisHash = blockHash(g);
    const exec = new Executor(opts.profile, opts.genesis, this.genesisHash, opts.handlers, maxPerBlock);
    const stored = store.genesisHash();
    if (!stored) store.initGenesis({ header: g, hash: this.genesisHash });
    else if (!bytesEqual(stored, this.genesisHash)) {
      throw new Error('the data directory holds a chain with another genesis (profile, chain id or attestor key differ)');
    }
    const head = new ChainHead(store, opts.finalityDepth, opts.clock);
    const pool = new TxPool(new Overlay(head.state), this.chainOrdered);
    const chainOrdered = this.chainOrdered;
    const production = new BlockProduction({ head, pool, exec, store, options: opts, chainOrdered, maxPerBlock });
    const admission = new PoolAdmission({
      head,
      pool,
      exec,
      store,
      clock: opts.clock,
      chainOrdered,
      maxPool: this.maxPoolSize,
      maxPerKey: opts.maxPendingPerKey ?? 16,
      blocks: production,
      atTurnEnd: (run) => setImmediate(run),
    });
    this.head = head;
    this.pool = pool;
    this.production = production;
    this.admission = admission;
    production.restore(
      store
        .pendingTxs()
        .map(entryFromStored)
        .filter((e): e is PoolEntry => !!e),
    );
  }

  /** Hands pool admission to `coordinator` (processes sharing one database); blocks then come from outside. */
  coordinateWith(coordinator: PoolCoordinator): void {
    this.admission.coordinateWith(coordinator);
    this.production.stop();
  }

  /** Head block number of this process's view. */
  get headNumber(): number {
    return this.head.ref.number;
  }

  /** Transactions waiting in this process's pool (metrics). */
  get poolSize(): number {
    return this.pool.size;
  }

  /** {@link ChainHead.touchedKeys}: what a cache of block `after`'s answers drops to serve block `upTo`. */
  touchedKeys(after: number, upTo: number): ReadonlySet<string> | undefined {
    return this.head.touchedKeys(after, upTo);
  }

  /** "now" for pool validation (§1.2): max(head timestamp, wall clock). */
  poolNowMs(): number {
    return this.head.poolNowMs();
  }

  // ---- admission (PoolAdmission) ----

  /** Runs the call against the pool state without keeping anything (prepare routes, pre-checks). */
  check(call: Call, opts: { skipSignatures?: boolean } = {}): LedgerFailure | null {
    return this.admission.check(call, opts);
  }

  /** Pool admission (§2.5), serialised with other processes' under a coordinator ({@link PoolAdmission.admit}). */
  admit(submitted: Call, meta: TxMeta): Promise<{ txHash: string; duplicate: boolean }> {
    return this.admission.admit(submitted, meta);
  }

  /** {@link admit} of a ledger alone on its store (embedded, tests): synchronous, throws LedgerFailure. */
  submit(submitted: Call, meta: TxMeta): { txHash: string; duplicate: boolean } {
    return this.admission.submit(submitted, meta);
  }

  /**
   * Undefined when the pool holds every pending change this process knows of (a ledger alone on its store:
   * always); else a promise, never rejected, that settles once the changes other processes announced are copied
   * into it (processes sharing one database copy them when something reads the pool, not as they come).
   */
  freshPool(): Promise<void> | undefined {
    return this.admission.freshPool();
  }

  /** While `reason` is not null, {@link admit} fails with `OrderUnavailable` ({@link PoolAdmission.hold}). */
  holdAdmissions(reason: string | null): void {
    this.admission.hold(reason);
  }

  /** A batch of admissions on the current pool (see {@link AdmissionBatch}). */
  openBatch(): AdmissionBatch {
    return this.admission.openBatch();
  }

  /** A batch's entries join the pool after others it did not conflict with ({@link PoolAdmission.adoptBatch}). */
  adoptBatch(batch: AdmissionBatch): boolean {
    return this.admission.adoptBatch(batch);
  }

  /** A batch's entries join the pool when it has not changed since ({@link PoolAdmission.joinBatch}). */
  joinBatch(batch: AdmissionBatch): boolean {
    return this.admission.joinBatch(batch);
  }

  /** Another process's pending transactions join the pool; those that fail come back ({@link PoolAdmission.adoptPending}). */
  adoptPending(txs: readonly TxRecord[]): TxRecord[] {
    return this.admission.adoptPending(txs);
  }

  /** True when an identical extrinsic is waiting in the pool (or, under a chain, waits for the chain's order). */
  isPending(call: Call): boolean {
    return this.admission.isPending(call);
  }

  // ---- blocks (BlockProduction) ----

  /** The pool's unverified signatures checked before a shared pool's block ({@link BlockProduction.verifyPoolSignatures}). */
  verifyPoolSignatures(): void {
    this.production.verifyPoolSignatures();
  }

  /**
   * Under a chain: every admitted transaction the chain has not ordered yet, in admission order — what the
   * Directory submits to the chain (those that no longer pass on the head too: the chain decides them).
   */
  awaitingOrder(): readonly PoolEntry[] {
    return this.pool.awaitingOrder;
  }

  /** The ddn blocks of one finalized block of an outside chain ({@link BlockProduction.applyOrdered}). */
  applyOrdered(chainTimestampMs: number, items: readonly OrderedTx[], cursor: Uint8Array): BlockRef | null {
    return this.production.applyOrdered(chainTimestampMs, items, cursor);
  }

  /** Under a chain: the cursor stored by the last {@link applyOrdered}; undefined before the first. */
  orderCursor(): Uint8Array | undefined {
    return this.production.orderCursor();
  }

  /** Executes up to `maxExtrinsicsPerBlock` pooled extrinsics into a new block. Null when the pool is empty. */
  produceBlock(): BlockRef | null {
    return this.production.produceBlock();
  }

  /** The next block out of the pool, not yet stored ({@link BlockProduction.buildBlock}). */
  buildBlock(opts: { allowEmpty?: boolean } = {}): BuiltBlock | null {
    return this.production.buildBlock(opts);
  }

  /** `built` with pool entries added since ({@link BlockProduction.extendBuilt}). */
  extendBuilt(built: BuiltBlock, entries: readonly PoolEntry[]): BuiltBlock {
    return this.production.extendBuilt(built, entries);
  }

  /** Stores a {@link BuiltBlock} (built on the current head) and makes it the head; the pool keeps what still passes. */
  commitBuilt(built: BuiltBlock): BlockRef {
    return this.production.commitBuilt(built);
  }

  /** A block another process produced, stored in this replica ({@link BlockProduction.applyReplicatedBlock}). */
  applyReplicatedBlock(block: StoredBlock, writes: Map<string, StateValue | undefined>, txs: TxRecord[], serialized?: ReadonlyMap<string, string>): BlockRef {
    return this.production.applyReplicatedBlock(block, writes, txs, serialized);
  }

  /** A finalized block of another ledger, verified by executing it ({@link BlockProduction.importBlock}). */
  importBlock(block: StoredBlock, txs: readonly ImportedTx[]): BlockRef {
    return this.production.importBlock(block, txs);
  }

  /** How many pool entries the last carry onto a new head ran again (the rest kept their effects). */
  get lastPoolRerun(): number {
    return this.production.lastPoolRerun;
  }

  /** Stops block production at a block boundary (production is synchronous, so no block is half-written). */
  stop(): void {
    this.production.stop();
  }

  /** Told of every block this process produced: the seconds from the start of its build to its commit (metrics). */
  onProduced(listener: (seconds: number) => void): () => void {
    return this.production.onProduced(listener);
  }

  onBlock(listener: (b: BlockRef) => void): () => void {
    return this.production.onBlock(listener);
  }

  // ---- reads ----

  /** Export feed entries after `afterSeq` of finalized blocks, at most `limit` (docs/mirrors.md). */
  finalizedFeed(afterSeq: number, limit: number): FeedEntry[] {
    return this.store.feedAfter(afterSeq, this.head.finalizedRef.number, limit);
  }

  /** {@link finalizedFeed} as summaries, without the transactions' bytes (a tally of the whole feed). */
  finalizedFeedSummary(afterSeq: number, limit: number): FeedSummary[] {
    return this.store.feedSummaryAfter(afterSeq, this.head.finalizedRef.number, limit);
  }

  /** The tally of the finalized feed: what `GET /overview` counts (one read, kept as blocks commit). */
  finalizedFeedTally(): FeedTally {
    return this.store.feedTally(this.head.finalizedRef.number);
  }

  /** The newest `limit` transactions of the finalized feed, newest first, as summaries. */
  finalizedLatestFeed(limit: number): FeedSummary[] {
    return this.store.feedLatestSummaries(this.head.finalizedRef.number, limit);
  }

  /** How many transactions block `number` holds. */
  blockTxCount(number: number): number {
    return this.store.blockTxCount(number);
  }

  /** The seq of the last export feed entry of a finalized block (0: none yet). */
  finalizedFeedSeq(): number {
    return this.store.feedLastSeq(this.head.finalizedRef.number);
  }

  headRef(): BlockRef {
    return this.head.ref;
  }
  finalizedRefNow(): BlockRef {
    return this.head.finalizedRef;
  }
  /** Finalized state: what public reads serve. */
  finalizedView(): StateReader {
    return this.head.finalizedState;
  }
  /** State as of committed block `number` (historical reads: W3C DID resolution's `versionId`/`versionTime`). */
  stateAt(number: number): StateReader {
    return new StateAt(this.store, number);
  }
  /** Head state plus every pending extrinsic: what submissions and nonce routes see. */
  poolView(): StateReader {
    return this.pool.state;
  }
  pendingEntries(): readonly PoolEntry[] {
    return this.pool.entries;
  }
  /** True when a pooled transaction's subject is `did`. */
  hasPendingFor(did: string): boolean {
    return this.pool.pendingForSubject(did) > 0;
  }

  txView(txHash: string): TxView | undefined {
    const pending = this.pool.get(txHash);
    if (pending) return { status: 'pending', tx: pending.tx };
    const tx = this.store.finishedTx(txHash);
    if (!tx) return undefined;
    const block = tx.blockNumber !== undefined ? this.blockRef(tx.blockNumber) : undefined;
    if (tx.status === 'failed') return block ? { status: 'failed', tx, block } : { status: 'failed', tx };
    const status = tx.blockNumber! <= this.head.finalizedRef.number ? 'finalized' : 'in_block';
    return block ? { status, tx, block } : { status, tx };
  }

  blockRef(number: number): BlockRef | undefined {
    const b = this.store.getBlock(number);
    return b ? refOf(b) : undefined;
  }

  block(number: number): { block: StoredBlock; txs: TxRecord[] } | undefined {
    const block = this.store.getBlock(number);
    return block ? { block, txs: this.store.blockTxs(number) } : undefined;
  }

  lastFailure(subject: string, extrinsic: string, sinceMs: number): TxRecord | undefined {
    return this.store.lastFailure(subject, extrinsic, sinceMs);
  }

  /** Included transactions about a subject, newest first (see {@link LedgerStore.subjectHistory}). */
  subjectHistory(q: SubjectHistoryQuery): TxRecord[] {
    return this.store.subjectHistory(q);
  }
}
