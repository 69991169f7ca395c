/**
 * The embedded chain (ledger-rules.md §2): transaction pool validated against head + pending, block production
 * with atomic per-extrinsic execution, finality, persistence through a LedgerStore.
 */
import { to0x } from '../base/bytes.js';
import type { Profile } from '../protocol/profile.js';
import { blockHash, genesisHeader } from './block.js';
import { LedgerFailure } from './errors.js';
import { canonicalCall, encodeExtrinsic, decodeExtrinsic, txHashOf, type Call } from './extrinsic.js';
import { BlockTouches } from './block-touches.js';
import { ReadRecorder, touchedBy } from './pool-effects.js';
import { VerifiedSignatures } from './runtime/verified-signatures.js';
import { Overlay, type StateReader, type StateValue } from './state.js';
import type { FeedEntry, LedgerStore, StoredBlock, SubjectHistoryQuery, TxMeta, TxRecord } from './store.js';
import { bytesEqual } from '../base/bytes.js';
import { AdmissionGroup, type AdmissionResult, type QueuedAdmission } from './admission-group.js';
import { AdmissionBatch, poolLimitKey, poolTxKey, type Admission, type PoolCoordinator } from './admission-batch.js';
import { StateAt } from './state-at.js';
import { TxPool } from './pool.js';
import { Executor, type PoolRun } from './executor.js';
import { executeBlock, verifyBlock } from './block-execution.js';
import { droppedRecord } from './tx-outcome.js';
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
  private head!: BlockRef;
  private headState!: StateAt;
  /** The block {@link commitToStore} stored last and what it wrote, until {@link loadHead} makes it the head. */
  private lastCommitted: { number: number; writes: ReadonlyMap<string, StateValue | undefined> } | undefined;
  /** Extrinsic bytes of calls asked about ({@link encoded}), while the call object lives. */
  private readonly encodings = new WeakMap<Call, Uint8Array>();
  private finalizedState!: StateAt;
  private finalizedRef!: BlockRef;
  private readonly pool: TxPool;
  private readonly exec: Executor;
  /** Pool entries run again by the last carry onto a new head (metrics, tests). */
  private lastRerun = 0;
  private timer: NodeJS.Timeout | null = null;
  private lastBlockWallMs = 0;
  private stopped = false;
  private readonly listeners = new Set<(b: BlockRef) => void>();
  /** When the block being built was started (`performance.now()`), for {@link onProduced}. */
  private buildStartedAt = 0;
  private readonly producedListeners = new Set<(seconds: number) => void>();
  /** The state keys of recent blocks, recorded by {@link commitToStore} for every path that commits one. */
  private readonly touches = new BlockTouches();
  private readonly maxPerBlock: number;
  private readonly maxPerKey: number;
  private readonly maxPool: number;
  private coordinator: PoolCoordinator | null = null;
  /** Why admissions are held (the order source cannot take them now), else null. */
  private heldBecause: string | null = null;
  /** Admissions of a ledger alone on its store, stored one group per event-loop turn. */
  private readonly ownAdmissions = new AdmissionGroup(
    (group) => this.admitGroup(group),
    (run) => setImmediate(run),
  );

  constructor(
    private readonly store: LedgerStore,
    private readonly opts: LedgerOptions,
  ) {
    this.maxPerBlock = opts.maxExtrinsicsPerBlock ?? MAX_EXTRINSICS_PER_BLOCK;
    this.maxPerKey = opts.maxPendingPerKey ?? 16;
    this.maxPool = opts.maxPoolSize ?? 10_000;
    const g = genesisHeader(opts.genesis);
    this.genesisHash = blockHash(g);
    this.exec = new Executor(opts.profile, opts.genesis, this.genesisHash, opts.handlers, this.maxPerBlock);
    const stored = store.genesisHash();
    if (!stored) store.initGenesis({ header: g, hash: this.genesisHash });
    else if (!bytesEqual(stored, this.genesisHash)) {
      throw new Error('the data directory holds a chain with another genesis (profile, chain id or attestor key differ)');
    }
    this.loadHead();
    this.pool = new TxPool(new Overlay(this.headState), this.chainOrdered);
    const pending = store
      .pendingTxs()
      .map((tx) => this.entryFromStored(tx))
      .filter((e): e is PoolEntry => !!e);
    if (this.chainOrdered) this.reorderPool(pending);
    else this.rebuildPool(pending);
    if (this.pool.size > 0) this.schedule();
  }

  /** True when an outside chain orders the transactions ({@link LedgerOptions.ordering}). */
  get chainOrdered(): boolean {
    return this.opts.ordering === 'chain';
  }

  /** Hands pool admission to `coordinator` (processes sharing one database); blocks then come from outside. */
  coordinateWith(coordinator: PoolCoordinator): void {
    this.coordinator = coordinator;
    this.stop();
  }

  /** Head block number of this process's view. */
  get headNumber(): number {
    return this.head.number;
  }

  /** The most transactions the pool holds. */
  get maxPoolSize(): number {
    return this.maxPool;
  }

  /** Transactions waiting in this process's pool (metrics). */
  get poolSize(): number {
    return this.pool.size;
  }

  get profile(): Profile {
    return this.opts.profile;
  }

  private entryFromStored(tx: TxRecord): PoolEntry | undefined {
    const call = tx.bytes ? decodeExtrinsic(tx.bytes) : undefined;
    if (!call || !tx.bytes) return undefined;
    // a shared pool's row carries what its admitting process verified (see VerifiedSignatures for why it is safe)
    const verified = tx.signatures === undefined ? new VerifiedSignatures() : VerifiedSignatures.vouchedFor(tx.signatures);
    const { signatures: _, ...kept } = tx;
    return { tx: kept, call, bytes: tx.bytes, verified };
  }

  private loadHead(): void {
    const n = this.store.headNumber();
    this.head = this.refOf(this.store.getBlock(n)!);
    const last = this.lastCommitted;
    this.lastCommitted = undefined;
    // the block just committed on the old head: its state carries what the old head's read
    const carried = last !== undefined && last.number === n && this.headState?.block === n - 1;
    this.headState = carried ? this.headState.successor(last.writes) : new StateAt(this.store, n);
    const fin = Math.max(0, n - this.opts.finalityDepth);
    this.finalizedRef = fin === n ? this.head : this.refOf(this.store.getBlock(fin)!);
    this.finalizedState = fin === n ? this.headState : new StateAt(this.store, fin);
  }

  /** Every block this ledger commits goes through here: stored, and the keys it wrote recorded ({@link touchedKeys}). */
  private commitToStore(block: StoredBlock, writes: Map<string, StateValue | undefined>, txs: TxRecord[], meta?: ReadonlyMap<string, Uint8Array>): void {
    this.store.commitBlock(block, writes, txs, meta);
    this.touches.record(block.header.number, writes.keys());
    this.lastCommitted = { number: block.header.number, writes };
  }

  /**
   * The state keys written by blocks `after + 1` … `upTo` (what a cache of block `after`'s answers must drop to
   * serve block `upTo`); undefined when this process does not know them all (committed before it started).
   */
  touchedKeys(after: number, upTo: number): ReadonlySet<string> | undefined {
    return this.touches.between(after, upTo);
  }

  private refOf(b: StoredBlock): BlockRef {
    return { number: b.header.number, hash: to0x(b.hash), timestampMs: b.header.timestampMs };
  }

  /** "now" for pool validation (§1.2): max(head timestamp, wall clock). */
  poolNowMs(): number {
    return Math.max(this.head.timestampMs, this.opts.clock.nowMs());
  }

  /** Runs the call against the pool state without keeping anything (prepare routes, pre-checks). */
  check(call: Call, opts: { skipSignatures?: boolean } = {}): LedgerFailure | null {
    let canon: { bytes: Uint8Array; call: Call };
    try {
      canon = this.canonical(call);
    } catch (e) {
      if (e instanceof LedgerFailure) return e;
      throw e;
    }
    const probe = this.pool.state.child();
    return this.exec.apply(probe, this.exec.ctx(this.poolNowMs(), this.head.number + 1, '0x', opts.skipSignatures), canon.call);
  }

  /**
   * Pool admission (§2.5): identical pending extrinsic → same hash, `duplicate`; otherwise limits, then a dry run
   * against the pool state. Rejects with LedgerFailure. With a {@link PoolCoordinator} (several processes on one
   * database) the admission runs serialised with every other process's, on a pool brought up to date first.
   */
  async admit(submitted: Call, meta: TxMeta): Promise<{ txHash: string; duplicate: boolean }> {
    if (this.heldBecause !== null) throw new LedgerFailure('OrderUnavailable', 'Ledger', this.heldBecause);
    // under a chain the order comes from outside: its admissions stay one by one, answered at once
    if (!this.coordinator && this.chainOrdered) return this.submit(submitted, meta);
    const canon = this.canonical(submitted);
    if (!this.coordinator) return this.ownAdmissions.admit(canon, meta);
    const txHash = to0x(txHashOf(canon.bytes));
    // The signature checks, on this process's view and before the coordinator serialises the admission: the
    // checks it runs then (on the up-to-date pool, the verdict that counts) find them done.
    const verified = new VerifiedSignatures();
    if (!this.pool.has(txHash)) {
      const ctx = this.exec.ctx(this.poolNowMs(), this.head.number + 1, txHash, false, verified);
      this.exec.apply(this.pool.state.child(), ctx, canon.call);
    }
    return this.coordinator.admit((batch) => this.prepareAdmission(canon, meta, txHash, verified, batch));
  }

  /**
   * Holds admissions while the source of order cannot take them (a chain that does not answer): {@link admit}
   * then fails with `OrderUnavailable` and `reason`; null admits again. Reads are not affected.
   */
  holdAdmissions(reason: string | null): void {
    this.heldBecause = reason;
  }

  /** A batch of admissions on the current pool (see {@link AdmissionBatch}). */
  openBatch(): AdmissionBatch {
    return new AdmissionBatch(this.pool.state, this.head.number);
  }

  /**
   * A batch stored after transactions that joined the pool since it was opened, none of which wrote a key the
   * batch read (a shared pool confirms it): its entries join the pool after them with the writes they were checked
   * with — executing them again would read the same values and write the same. False, changing nothing, when the
   * head moved since the batch was opened: its entries must then be checked again.
   */
  adoptBatch(batch: AdmissionBatch): boolean {
    if (batch.headNumber !== this.head.number) return false;
    batch.state.commitInto(this.pool.state);
    for (const e of batch.entries) this.addToPool(e);
    return true;
  }

  /**
   * Adds a batch's accepted admissions to the pool, when the pool has not changed since the batch was opened;
   * false, changing nothing, when it has.
   */
  joinBatch(batch: AdmissionBatch): boolean {
    return batch.base === this.pool.state && this.adoptBatch(batch);
  }

  /**
   * One turn's admissions of a ledger alone on its store ({@link AdmissionGroup}): checked in order on one batch,
   * their rows stored in one transaction, then added to the pool; each answered after the commit.
   */
  private admitGroup(group: readonly QueuedAdmission[]): void {
    const batch = this.openBatch();
    const outcomes: ({ ok: AdmissionResult } | { err: unknown })[] = [];
    const rows: TxRecord[] = [];
    for (const q of group) {
      try {
        const a = this.prepareAdmission(q.canon, q.meta, undefined, undefined, batch);
        if (a.tx) {
          a.accept();
          rows.push(a.tx);
        }
        outcomes.push({ ok: a.result });
      } catch (e) {
        outcomes.push({ err: e });
      }
    }
    try {
      if (rows.length > 0) this.store.putPendingTxs(rows);
    } catch (e) {
      // nothing joined the pool: every admission of the group fails as its own row's write would have
      for (const q of group) q.reject(e);
      return;
    }
    if (!this.joinBatch(batch)) throw new Error('the pool changed while a group of admissions was checked');
    group.forEach((q, i) => {
      const o = outcomes[i]!;
      if ('ok' in o) q.resolve(o.ok);
      else q.reject(o.err);
    });
  }

  /** {@link admit} of a ledger alone on its store (embedded, tests): synchronous, throws LedgerFailure. */
  submit(submitted: Call, meta: TxMeta): { txHash: string; duplicate: boolean } {
    if (this.coordinator) throw new Error('a coordinated ledger admits through admit()');
    const admission = this.prepareAdmission(this.canonical(submitted), meta);
    if (admission.tx) {
      this.store.putPendingTx(admission.tx);
      admission.accept();
    }
    return admission.result;
  }

  /**
   * Checks an admission without changing anything; `accept()` adds it to the pool once `tx` is persisted — or,
   * with a `batch`, to the batch, checked on the batch's state.
   */
  private prepareAdmission(
    canon: { bytes: Uint8Array; call: Call },
    meta: TxMeta,
    txHash = to0x(txHashOf(canon.bytes)),
    verified = new VerifiedSignatures(),
    batch?: AdmissionBatch,
  ): Admission {
    const { bytes, call } = canon;
    batch?.read(poolTxKey(txHash));
    if (this.pool.holds(txHash) || batch?.index.has(txHash)) {
      return { result: { txHash, duplicate: true }, writes: [], accept: () => {} };
    }
    const batched = batch?.entries ?? [];
    if (this.pool.waiting + batched.length >= this.maxPool) throw new LedgerFailure('PoolFull', 'Ledger');
    batch?.read(poolLimitKey(meta.limitKey));
    const sameKey = (e: PoolEntry) => e.tx.meta.limitKey === meta.limitKey;
    if (this.pool.pendingFor(meta.limitKey) + batched.filter(sameKey).length >= this.maxPerKey) throw new LedgerFailure('PoolFull', 'Ledger');
    const state = batch?.state ?? this.pool.state;
    const reads = new ReadRecorder(state);
    const probe = new Overlay(reads);
    const failure = this.exec.apply(probe, this.exec.ctx(this.poolNowMs(), this.head.number + 1, txHash, false, verified), call);
    if (failure) throw failure;
    const tx: TxRecord = { txHash, extrinsic: call.name, status: 'pending', submittedAtMs: this.opts.clock.nowMs(), meta, bytes };
    // a shared pool's row carries the signatures found valid, so the producer does not verify them again
    const stored: TxRecord = this.coordinator ? { ...tx, signatures: verified.digests() } : tx;
    const entry: PoolEntry = { tx, call, bytes, verified, effects: { reads: reads.keys, writes: probe.changes() } };
    return {
      result: { txHash, duplicate: false },
      tx: stored,
      writes: batch ? [...probe.writtenKeys(), poolTxKey(txHash), poolLimitKey(meta.limitKey)] : [],
      accept: () => {
        if (batch) {
          probe.commitInto(batch.state);
          batch.entries.push(entry);
          batch.index.set(txHash, entry);
          return;
        }
        if (this.pool.state !== state) throw new Error('the pool changed between admission check and acceptance');
        probe.commitInto(state);
        this.addToPool(entry);
      },
    };
  }

  private addToPool(entry: PoolEntry): void {
    this.pool.add(entry);
    this.schedule();
  }

  /**
   * Pending transactions another process admitted (shared pool): each joins the pool if it passes against the
   * pool state. Returns those that do not (undecodable, or no longer valid), as failed records for the block
   * producer to drop.
   */
  adoptPending(txs: readonly TxRecord[]): TxRecord[] {
    const rejected: TxRecord[] = [];
    const now = this.poolNowMs();
    for (const tx of txs) {
      if (this.pool.has(tx.txHash)) continue;
      const entry = this.entryFromStored(tx);
      // The admitting process verified the signatures (the entry keeps their digests for the block's execution):
      // adoption only keeps this pool's state in step, so it spends no verification.
      const ran = entry
        ? this.exec.runPooled(this.pool.state, entry, this.exec.ctx(now, this.head.number + 1, tx.txHash, true))
        : new LedgerFailure('MalformedExtrinsic', 'Ledger');
      if (ran instanceof LedgerFailure) rejected.push(droppedRecord(tx, ran, now));
      else if (ran) this.addToPool(ran);
    }
    return rejected;
  }

  /**
   * Verifies the signatures of the pool's entries this process has not verified and no admitting process vouched
   * for (a shared pool's rows stored without their digests), on the head state, so that building the next block
   * under the pool lock finds them done
   * (an entry that needs an earlier one of the pool may stop before its signature; the block verifies it then).
   * Changes no state and no verdict.
   */
  verifyPoolSignatures(): void {
    const unverified = this.pool.entries.filter((e) => e.verified.size === 0);
    if (unverified.length > 0) this.exec.validate(new Overlay(this.headState), unverified, this.poolNowMs(), this.head.number + 1);
  }

  /** True when an identical extrinsic is waiting in the pool (or, under a chain, waits for the chain's order). */
  isPending(call: Call): boolean {
    const txHash = to0x(txHashOf(this.encoded(call)));
    return this.pool.holds(txHash);
  }

  /**
   * The extrinsic bytes of `call`, encoded once per call object: a submission asks {@link isPending} and then
   * {@link admit} about the same call (calls are not changed once built).
   */
  private encoded(call: Call): Uint8Array {
    let bytes = this.encodings.get(call);
    if (bytes === undefined) {
      bytes = encodeExtrinsic(call);
      this.encodings.set(call, bytes);
    }
    return bytes;
  }

  /** {@link canonicalCall} of a call, reusing its {@link encoded} bytes. */
  private canonical(call: Call): { bytes: Uint8Array; call: Call } {
    return canonicalCall(call, this.encodings.get(call));
  }

  /**
   * Under a chain: every admitted transaction the chain has not ordered yet, in admission order — what the
   * Directory submits to the chain (those that no longer pass on the head too: the chain decides them).
   */
  awaitingOrder(): readonly PoolEntry[] {
    return this.pool.awaitingOrder;
  }

  /**
   * The ddn blocks of one finalized block of an outside chain (`ordering: 'chain'`): its ddn extrinsics in chain
   * order, executed under the ledger's rules at the chain block's time, so that every Directory following the
   * chain computes the same blocks, hashes and failures. Deterministic from the head and `items` alone: an item
   * whose bytes do not decode exactly is skipped, and so is a transaction already in a block (a batch submitted
   * twice), or already earlier in `items`; what remains is cut into blocks of at most `maxExtrinsicsPerBlock`
   * (none when nothing remains). `cursor` — where the caller stands on the chain — is stored with the last of
   * them, or alone. Returns the new head, or null when no block was made.
   */
  applyOrdered(chainTimestampMs: number, items: readonly OrderedTx[], cursor: Uint8Array): BlockRef | null {
    if (!this.chainOrdered) throw new Error('applyOrdered needs a ledger ordered by a chain');
    const seen = new Set<string>();
    const txs: PoolEntry[] = [];
    for (const it of items) {
      const call = decodeExtrinsic(it.bytes);
      if (!call) continue;
      // canonical: the call encodes back to exactly its bytes (an argument out of bounds does not encode)
      let encoded: Uint8Array;
      try {
        encoded = encodeExtrinsic(call);
      } catch {
        continue;
      }
      if (!bytesEqual(encoded, it.bytes)) continue;
      const txHash = to0x(txHashOf(it.bytes));
      if (seen.has(txHash) || this.store.getTx(txHash)?.blockNumber !== undefined) continue;
      seen.add(txHash);
      const own = this.pool.awaiting(txHash);
      const tx: TxRecord = { txHash, extrinsic: call.name, status: 'pending', submittedAtMs: it.submittedAtMs, meta: it.meta };
      txs.push({ tx, call, bytes: it.bytes, verified: own?.verified ?? new VerifiedSignatures() });
    }
    if (txs.length === 0) {
      this.store.writeMeta(CHAIN_CURSOR_KEY, cursor);
      return null;
    }
    const finished = new Set<string>();
    for (let start = 0; start < txs.length; start += this.maxPerBlock) {
      const part = txs.slice(start, start + this.maxPerBlock);
      const last = start + this.maxPerBlock >= txs.length;
      const timestampMs = Math.max(chainTimestampMs, this.head.timestampMs + 1);
      const built = executeBlock(this.exec, this.head, this.headState, part, timestampMs);
      this.commitToStore(built.block, built.writes, built.records, last ? new Map([[CHAIN_CURSOR_KEY, cursor]]) : undefined);
      for (const r of built.records) finished.add(r.txHash);
      this.loadHead();
      this.reorderPool(this.pool.awaitingOrder.filter((e) => !finished.has(e.tx.txHash)));
      this.announce();
    }
    return this.head;
  }

  /** Under a chain: the cursor stored by the last {@link applyOrdered}; undefined before the first. */
  orderCursor(): Uint8Array | undefined {
    return this.store.readMeta(CHAIN_CURSOR_KEY);
  }

  /**
   * Under a chain: `entries` (waiting for the chain's order) checked again on the head; those that pass form the
   * pool, all of them stay waiting — none is dropped.
   */
  private reorderPool(entries: PoolEntry[]): void {
    // signatures were verified on admission; the block that orders an entry verifies them again
    const next = this.exec.validate(new Overlay(this.headState), entries, this.poolNowMs(), this.head.number + 1, true);
    this.pool.set(next.state, next.pool);
    this.pool.awaitOrder(entries);
  }

  /** Executes up to `maxExtrinsicsPerBlock` pooled extrinsics into a new block. Null when the pool is empty. */
  produceBlock(): BlockRef | null {
    const built = this.buildBlock();
    return built ? this.commitBuilt(built) : null;
  }

  /**
   * The next block out of the pool, not yet stored: its header, state writes, the outcome of each extrinsic, and
   * the pooled transactions the new head invalidates (dropped as failed). Null when the pool is empty, unless
   * `allowEmpty` (a shared pool's producer recording drops).
   */
  buildBlock(opts: { allowEmpty?: boolean } = {}): BuiltBlock | null {
    if (this.pool.size === 0 && opts.allowEmpty !== true) return null;
    this.buildStartedAt = performance.now();
    const timestampMs = Math.max(this.opts.clock.nowMs(), this.head.timestampMs + 1);
    const taken = this.pool.entries.slice(0, this.maxPerBlock);
    const { block, writes, records, overlay } = executeBlock(this.exec, this.head, this.headState, taken, timestampMs);
    const next = this.carry(
      new Overlay(overlay),
      touchedBy(writes.keys(), taken),
      this.pool.entries.slice(taken.length),
      Math.max(timestampMs, this.opts.clock.nowMs()),
      block.header.number + 1,
    );
    return { block, writes, records, dropped: next.dropped, pool: next.pool, poolWrites: next.state };
  }

  /**
   * `built` (from {@link buildBlock} on the current head) with `entries`, pool entries added after every entry
   * the pool held then: checked after its pool on the new head, as {@link buildBlock} checks the pool's last
   * entries — those that pass join its pool, the others its drops.
   */
  extendBuilt(built: BuiltBlock, entries: readonly PoolEntry[]): BuiltBlock {
    if (entries.length === 0) return built;
    const h = built.block.header;
    const next = this.exec.validate(built.poolWrites, entries, Math.max(h.timestampMs, this.opts.clock.nowMs()), h.number + 1, false, true);
    return { ...built, pool: [...built.pool, ...next.pool], dropped: [...built.dropped, ...next.dropped] };
  }

  /** Stores a {@link BuiltBlock} (built on the current head) and makes it the head; the pool keeps what still passes. */
  commitBuilt(built: BuiltBlock): BlockRef {
    if (built.block.header.number !== this.head.number + 1) throw new Error('the head moved since the block was built');
    this.commitToStore(built.block, built.writes, [...built.records, ...built.dropped]);
    this.lastBlockWallMs = this.opts.clock.nowMs();
    this.loadHead();
    const state = new Overlay(this.headState);
    built.poolWrites.commitInto(state);
    this.pool.set(state, built.pool);
    this.schedule();
    const seconds = (performance.now() - this.buildStartedAt) / 1000;
    for (const l of this.producedListeners) l(seconds);
    return this.announce();
  }

  /**
   * A block another process produced, with its state writes and the transactions it finished (included, failed
   * or dropped): stored in this process's replica, then the pool is rebuilt on the new head without them.
   */
  applyReplicatedBlock(block: StoredBlock, writes: Map<string, StateValue | undefined>, txs: TxRecord[]): BlockRef {
    if (block.header.number !== this.head.number + 1 || to0x(block.header.parentHash) !== this.head.hash) {
      throw new Error(`replicated block ${block.header.number} does not extend the local head ${this.head.number}`);
    }
    this.commitToStore(block, writes, txs);
    const finished = new Set(txs.map((t) => t.txHash));
    const [done, remaining] = [this.pool.entries.filter((e) => finished.has(e.tx.txHash)), this.pool.entries.filter((e) => !finished.has(e.tx.txHash))];
    this.loadHead();
    // the drops are the producer's to record: this pool only leaves them out
    const next = this.carry(new Overlay(this.headState), touchedBy(writes.keys(), done), remaining, this.poolNowMs(), this.head.number + 1, true);
    this.pool.set(next.state, next.pool);
    return this.announce();
  }

  /**
   * A finalized block of another ledger (a mirror following a Directory's export feed), verified by executing its
   * extrinsics here: the extrinsics root, every outcome (results root, signatures checked by the runtime) and the
   * block hash must come out as `block` says, on a parent that is this ledger's head. Stored and made the head;
   * throws {@link BlockImportError} when anything differs, changing nothing.
   */
  importBlock(block: StoredBlock, txs: readonly ImportedTx[]): BlockRef {
    const { writes, records } = verifyBlock(this.exec, this.head, this.headState, block, txs);
    this.commitToStore(block, writes, records);
    this.loadHead();
    this.rebuildPool([], false);
    return this.announce();
  }

  /** Export feed entries after `afterSeq` of finalized blocks, at most `limit` (docs/mirrors.md). */
  finalizedFeed(afterSeq: number, limit: number): FeedEntry[] {
    return this.store.feedAfter(afterSeq, this.finalizedRef.number, limit);
  }

  /** The seq of the last export feed entry of a finalized block (0: none yet). */
  finalizedFeedSeq(): number {
    return this.store.feedLastSeq(this.finalizedRef.number);
  }

  private announce(): BlockRef {
    const ref = this.head;
    for (const l of this.listeners) l(ref);
    return ref;
  }

  /** Rebuilds the pool state from the head; a remaining extrinsic that no longer passes is dropped as failed. */
  private rebuildPool(entries: PoolEntry[], persistDrops = true): void {
    // a rebuild without persisting (a shared pool) re-checks entries whose signatures were verified on admission
    const next = this.exec.validate(new Overlay(this.headState), entries, this.poolNowMs(), this.head.number + 1, !persistDrops, true);
    this.pool.set(next.state, next.pool);
    if (!persistDrops) return;
    for (const d of next.dropped) {
      try {
        this.store.markDropped(d);
      } catch (e) {
        // a start on a full disk: the drop is recorded at a later start (the transaction stays out of the pool)
        this.opts.onError?.(e);
      }
    }
  }

  /** {@link Executor.carry}, counting what ran again ({@link lastPoolRerun}). */
  private carry(...args: Parameters<Executor['carry']>): PoolRun {
    const next = this.exec.carry(...args);
    this.lastRerun = next.rerun;
    return next;
  }

  /** How many pool entries the last carry onto a new head ran again (the rest kept their effects). */
  get lastPoolRerun(): number {
    return this.lastRerun;
  }

  private schedule(): void {
    if (!this.opts.autoProduce || this.stopped || this.timer || this.pool.size === 0) return;
    const delay = Math.max(0, this.lastBlockWallMs + this.opts.blockIntervalMs - this.opts.clock.nowMs());
    this.timer = setTimeout(() => {
      this.timer = null;
      try {
        this.produceBlock();
      } catch (e) {
        // a block that could not be stored (a full disk) is tried again one interval later, not at once
        this.lastBlockWallMs = this.opts.clock.nowMs();
        this.opts.onError?.(e);
      }
      this.schedule();
    }, delay);
  }

  /** Stops block production at a block boundary (production is synchronous, so no block is half-written). */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** Told of every block this process produced: the seconds from the start of its build to its commit (metrics). */
  onProduced(listener: (seconds: number) => void): () => void {
    this.producedListeners.add(listener);
    return () => this.producedListeners.delete(listener);
  }

  onBlock(listener: (b: BlockRef) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  headRef(): BlockRef {
    return this.head;
  }
  finalizedRefNow(): BlockRef {
    return this.finalizedRef;
  }
  /** Finalized state: what public reads serve. */
  finalizedView(): StateReader {
    return this.finalizedState;
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

  txView(txHash: string): TxView | undefined {
    const pending = this.pool.get(txHash);
    if (pending) return { status: 'pending', tx: pending.tx };
    const tx = this.store.getTx(txHash);
    if (!tx) return undefined;
    if (tx.status === 'pending') return { status: 'pending', tx };
    const block = tx.blockNumber !== undefined ? this.blockRef(tx.blockNumber) : undefined;
    if (tx.status === 'failed') return block ? { status: 'failed', tx, block } : { status: 'failed', tx };
    const status = tx.blockNumber! <= this.finalizedRef.number ? 'finalized' : 'in_block';
    return block ? { status, tx, block } : { status, tx };
  }

  blockRef(number: number): BlockRef | undefined {
    const b = this.store.getBlock(number);
    return b ? this.refOf(b) : undefined;
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

/** The ledger meta key of the chain cursor ({@link Ledger.applyOrdered}). */
const CHAIN_CURSOR_KEY = 'chain_cursor';
