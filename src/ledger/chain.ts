/**
 * The embedded chain (ledger-rules.md §2): transaction pool validated against head + pending, block production
 * with atomic per-extrinsic execution, finality, persistence through a LedgerStore.
 */
import { to0x } from '../base/bytes.js';
import type { Clock } from '../base/clock.js';
import type { Profile } from '../protocol/profile.js';
import { blockHash, extrinsicsRoot, genesisHeader, resultsRoot, type BlockHeader, type GenesisConfig } from './block.js';
import { LedgerFailure } from './errors.js';
import { encodeExtrinsic, decodeExtrinsic, txHashOf, type Call } from './extrinsic.js';
import type { ExecContext } from './runtime/context.js';
import { BlockTouches } from './block-touches.js';
import { applyAtomically, executeCall, type ModuleHandlers } from './runtime/dispatch.js';
import { carryPool, ReadRecorder, runRecorded, touchedBy, type PoolEffects } from './pool-effects.js';
import { VerifiedSignatures } from './runtime/verified-signatures.js';
import { Overlay, type StateReader, type StateValue } from './state.js';
import type { FeedEntry, LedgerStore, StoredBlock, SubjectHistoryQuery, TxMeta, TxRecord } from './store.js';
import { bytesEqual } from '../base/bytes.js';
import { AdmissionGroup, type AdmissionResult, type QueuedAdmission } from './admission-group.js';

/** The most extrinsics a block holds (the default of {@link LedgerOptions.maxExtrinsicsPerBlock}). */
export const MAX_EXTRINSICS_PER_BLOCK = 1000;

export interface LedgerOptions {
  profile: Profile;
  genesis: GenesisConfig;
  blockIntervalMs: number;
  finalityDepth: number;
  clock: Clock;
  /** Produce blocks on a timer (false: only `produceBlock()` makes blocks — tests). */
  autoProduce: boolean;
  maxExtrinsicsPerBlock?: number;
  maxPendingPerKey?: number;
  maxPoolSize?: number;
  handlers?: ModuleHandlers;
  onError?: (err: unknown) => void;
  /**
   * Where the order of transactions comes from: this ledger's own blocks (`producer`: the embedded ledger, and the
   * PostgreSQL one's elected producer), or an outside chain's finalized blocks (`chain`, see {@link
   * Ledger.applyOrdered}). Under a chain an admitted transaction stays pending until the chain orders it: the pool
   * never drops one (the chain decides, the same on every Directory), and nothing here makes blocks.
   */
  ordering?: 'producer' | 'chain';
}

/** One extrinsic ordered by an outside chain, with what its admitting Directory knew of it (src/ledger/anchor-batch.ts). */
export interface OrderedTx {
  readonly bytes: Uint8Array;
  readonly meta: TxMeta;
  readonly submittedAtMs: number;
}

export interface PoolEntry {
  readonly tx: TxRecord;
  readonly call: Call;
  readonly bytes: Uint8Array;
  /** Its signatures this process found valid (at admission, or {@link Ledger.verifyPoolSignatures}). */
  readonly verified: VerifiedSignatures;
  /** What it read and wrote the last time it ran on the pool state (src/ledger/pool-effects.ts). */
  readonly effects?: PoolEffects;
}

/** A pool admission checked and not yet applied (see {@link Ledger.submit}). */
export interface Admission {
  readonly result: { txHash: string; duplicate: boolean };
  /** The pending transaction to persist; absent for a duplicate. */
  readonly tx?: TxRecord;
  /**
   * What the transaction writes, for a shared pool's conflict checks (in a batch; else empty): its state keys,
   * its hash and its limit key (see {@link AdmissionBatch.reads}); empty for a duplicate.
   */
  readonly writes: readonly string[];
  /** Adds the transaction to this process's pool (after `tx` is persisted), or to its batch. */
  accept(): void;
}

/** Serialises pool admissions of several processes sharing one database (src/store/postgres/ledger-sync.ts). */
export interface PoolCoordinator {
  /**
   * Runs `prepare` on a batch of this ledger ({@link Ledger.openBatch}) serialised with the admissions of every
   * other process and block production, on a view it proves current for what the admission read; persists the
   * admission's `tx` and accepts it; rejects with what `prepare` throws.
   */
  admit(prepare: (batch: AdmissionBatch) => Admission): Promise<{ txHash: string; duplicate: boolean }>;
}

/** Conflict keys of what the pool itself knows: a pending transaction's hash, and its limit key's count. */
const poolTxKey = (txHash: string) => `pool/tx/${txHash}`;
const poolLimitKey = (limitKey: string) => `pool/limit/${limitKey}`;

/**
 * Admissions checked together on the pool (a shared pool's batch), each seeing the ones accepted before it, kept
 * out of the pool until {@link Ledger.joinBatch}: dropped, they leave nothing behind. It records what its checks
 * read from the pool, so a database can tell whether transactions it has not seen could change a verdict.
 */
export class AdmissionBatch {
  private readonly recorder: ReadRecorder;
  /** The batch's writes over the pool state. */
  readonly state: Overlay;
  readonly entries: PoolEntry[] = [];
  readonly index = new Map<string, PoolEntry>();

  constructor(
    /** The pool state it was opened on. */
    readonly base: Overlay,
    /** The head it was opened on. */
    readonly headNumber: number,
  ) {
    this.recorder = new ReadRecorder(base);
    this.state = new Overlay(this.recorder);
  }

  /**
   * Every key the batch's checks read from the pool: state keys, and the pool's facts (`pool/tx/<hash>`: is it
   * pending; `pool/limit/<limit key>`: how many are). A transaction that wrote none of them could not change any
   * verdict of the batch, except through the pool's size (checked apart).
   */
  get reads(): ReadonlySet<string> {
    return this.recorder.keys;
  }

  /** Records a read of a pool fact. */
  read(key: string): void {
    this.recorder.keys.add(key);
  }
}

/** A block built from the pool and not yet stored (see {@link Ledger.buildBlock}). */
export interface BuiltBlock {
  readonly block: StoredBlock;
  readonly writes: Map<string, StateValue | undefined>;
  /** The block's transactions with their outcome. */
  readonly records: TxRecord[];
  /** Pooled transactions that no longer pass on the new head. */
  readonly dropped: TxRecord[];
  /** The pool on the new head, and its state writes. */
  readonly pool: PoolEntry[];
  readonly poolWrites: Overlay;
}

/** One extrinsic of a block imported with {@link Ledger.importBlock}, with what its producer knew of it. */
export interface ImportedTx {
  bytes: Uint8Array;
  meta: TxMeta;
  submittedAtMs: number;
}

/** A block that does not verify against this ledger (see {@link Ledger.importBlock}). */
export class BlockImportError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BlockImportError';
  }
}

export interface BlockRef {
  number: number;
  hash: string;
  timestampMs: number;
}

export type TxView = { status: 'pending'; tx: TxRecord } | { status: 'in_block' | 'finalized' | 'failed'; tx: TxRecord; block?: BlockRef };

/**
 * Decoded values a {@link StateAt} keeps at most (then it starts over): enough for a block's writes and the pool
 * run again on a new head; a resolve at scale reads through it uniformly, and a memo of whole decoded records that
 * size of a million DIDs cost ~300 MiB for few hits (the rendered answers have their own, byte-bounded cache).
 */
const MAX_STATE_MEMO = 10_000;

/** Reads state as of one block, memoising what it read (blocks are immutable once committed). */
class StateAt implements StateReader {
  constructor(
    private readonly store: LedgerStore,
    readonly block: number,
    private cache = new Map<string, StateValue | undefined>(),
  ) {}

  /**
   * The state of the next block, which wrote `writes`: it takes over what this one read (decoded values of keys
   * the block did not write are the same there) and the values the block wrote (what reading them back from the
   * store would decode: state values are immutable, and the pool's state serves the same values before the block),
   * so a head change reads and decodes nothing again — a write's DID record and nonce, the pool's entries run again
   * on the new head, a resolve re-rendering what the block changed. This one starts over with nothing read.
   */
  successor(writes: ReadonlyMap<string, StateValue | undefined>): StateAt {
    const cache = this.cache;
    this.cache = new Map();
    if (cache.size + writes.size > MAX_STATE_MEMO) cache.clear();
    for (const [k, v] of writes) cache.set(k, v);
    return new StateAt(this.store, this.block + 1, cache);
  }

  get(key: string): StateValue | undefined {
    if (this.cache.has(key)) return this.cache.get(key);
    const v = this.store.readState(key, this.block);
    if (this.cache.size >= MAX_STATE_MEMO) this.cache.clear();
    this.cache.set(key, v);
    return v;
  }
}

export class Ledger {
  readonly genesisHash: Uint8Array;
  private head!: BlockRef;
  private headState!: StateAt;
  /** The block {@link commitToStore} stored last and what it wrote, until {@link loadHead} makes it the head. */
  private lastCommitted: { number: number; writes: ReadonlyMap<string, StateValue | undefined> } | undefined;
  private finalizedState!: StateAt;
  private finalizedRef!: BlockRef;
  private pool: PoolEntry[] = [];
  private poolIndex = new Map<string, PoolEntry>();
  /** Pooled transactions by limit key (the `max_pending_per_key` check). */
  private readonly perLimitKey = new Map<string, number>();
  /** Extrinsic bytes of calls asked about ({@link encoded}), while the call object lives. */
  private readonly encodings = new WeakMap<Call, Uint8Array>();
  /** Pool entries run again by the last carry onto a new head (metrics, tests). */
  private lastRerun = 0;
  private poolState!: Overlay;
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
  /**
   * Under a chain ({@link LedgerOptions.ordering}): every admitted transaction not yet in a block, in admission
   * order — the pool's entries and those that no longer pass on the head but are still the chain's to decide.
   */
  private unordered: PoolEntry[] = [];
  private readonly unorderedIndex = new Map<string, PoolEntry>();
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
    const stored = store.genesisHash();
    if (!stored) store.initGenesis({ header: g, hash: this.genesisHash });
    else if (!bytesEqual(stored, this.genesisHash)) {
      throw new Error('the data directory holds a chain with another genesis (profile, chain id or attestor key differ)');
    }
    this.loadHead();
    const pending = store
      .pendingTxs()
      .map((tx) => this.entryFromStored(tx))
      .filter((e): e is PoolEntry => !!e);
    if (this.chainOrdered) this.reorderPool(pending);
    else this.rebuildPool(pending);
    if (this.pool.length > 0) this.schedule();
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
    return this.pool.length;
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
    // the block just committed on the old head: its state carries what the old head's read and what the block wrote
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

  private ctx(nowMs: number, blockNumber: number, txHash: string, skipSignatures = false, verified?: VerifiedSignatures): ExecContext {
    return {
      nowMs,
      blockNumber,
      txHash,
      profile: this.opts.profile,
      genesisHash: this.genesisHash,
      attestors: this.opts.genesis.personaAttestors,
      skipSignatures,
      ...(verified ? { verified } : {}),
    };
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
    const probe = this.poolState.child();
    return applyAtomically(probe, this.ctx(this.poolNowMs(), this.head.number + 1, '0x', opts.skipSignatures), canon.call, this.opts.handlers);
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
    if (!this.poolIndex.has(txHash)) {
      const ctx = this.ctx(this.poolNowMs(), this.head.number + 1, txHash, false, verified);
      applyAtomically(this.poolState.child(), ctx, canon.call, this.opts.handlers);
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
    return new AdmissionBatch(this.poolState, this.head.number);
  }

  /**
   * A batch stored after transactions that joined the pool since it was opened, none of which wrote a key the
   * batch read (a shared pool confirms it): its entries join the pool after them with the writes they were checked
   * with — executing them again would read the same values and write the same. False, changing nothing, when the
   * head moved since the batch was opened: its entries must then be checked again.
   */
  adoptBatch(batch: AdmissionBatch): boolean {
    if (batch.headNumber !== this.head.number) return false;
    batch.state.commitInto(this.poolState);
    for (const e of batch.entries) this.addToPool(e);
    return true;
  }

  /**
   * Adds a batch's accepted admissions to the pool, when the pool has not changed since the batch was opened;
   * false, changing nothing, when it has.
   */
  joinBatch(batch: AdmissionBatch): boolean {
    return batch.base === this.poolState && this.adoptBatch(batch);
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
    if (this.poolIndex.has(txHash) || this.unorderedIndex.has(txHash) || batch?.index.has(txHash)) {
      return { result: { txHash, duplicate: true }, writes: [], accept: () => {} };
    }
    const batched = batch?.entries ?? [];
    // under a chain, what waits for its order counts (entries that no longer pass on the head too)
    const waiting = Math.max(this.pool.length, this.unordered.length);
    if (waiting + batched.length >= this.maxPool) throw new LedgerFailure('PoolFull', 'Ledger');
    batch?.read(poolLimitKey(meta.limitKey));
    const sameKey = (e: PoolEntry) => e.tx.meta.limitKey === meta.limitKey;
    if ((this.perLimitKey.get(meta.limitKey) ?? 0) + batched.filter(sameKey).length >= this.maxPerKey) throw new LedgerFailure('PoolFull', 'Ledger');
    const state = batch?.state ?? this.poolState;
    const reads = new ReadRecorder(state);
    const probe = new Overlay(reads);
    const failure = applyAtomically(probe, this.ctx(this.poolNowMs(), this.head.number + 1, txHash, false, verified), call, this.opts.handlers);
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
        if (this.poolState !== state) throw new Error('the pool changed between admission check and acceptance');
        probe.commitInto(state);
        this.addToPool(entry);
      },
    };
  }

  private addToPool(entry: PoolEntry): void {
    this.pool.push(entry);
    this.poolIndex.set(entry.tx.txHash, entry);
    this.perLimitKey.set(entry.tx.meta.limitKey, (this.perLimitKey.get(entry.tx.meta.limitKey) ?? 0) + 1);
    if (this.chainOrdered && !this.unorderedIndex.has(entry.tx.txHash)) {
      this.unordered.push(entry);
      this.unorderedIndex.set(entry.tx.txHash, entry);
    }
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
      if (this.poolIndex.has(tx.txHash)) continue;
      const entry = this.entryFromStored(tx);
      // The admitting process verified the signatures (the entry keeps their digests for the block's execution):
      // adoption only keeps this pool's state in step, so it spends no verification.
      const ran = entry
        ? this.runPooled(this.poolState, entry, this.ctx(now, this.head.number + 1, tx.txHash, true))
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
    const unverified = this.pool.filter((e) => e.verified.size === 0);
    if (unverified.length > 0) this.validatePool(new Overlay(this.headState), unverified, this.poolNowMs(), this.head.number + 1);
  }

  /** True when an identical extrinsic is waiting in the pool (or, under a chain, waits for the chain's order). */
  isPending(call: Call): boolean {
    const txHash = to0x(txHashOf(this.encoded(call)));
    return this.poolIndex.has(txHash) || this.unorderedIndex.has(txHash);
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
    return this.unordered;
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
      const own = this.unorderedIndex.get(txHash);
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
      const built = this.executeBlock(part, timestampMs);
      this.commitToStore(built.block, built.writes, built.records, last ? new Map([[CHAIN_CURSOR_KEY, cursor]]) : undefined);
      for (const r of built.records) finished.add(r.txHash);
      this.loadHead();
      this.reorderPool(this.unordered.filter((e) => !finished.has(e.tx.txHash)));
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
    const next = this.validatePool(new Overlay(this.headState), entries, this.poolNowMs(), this.head.number + 1, true);
    this.setPool(next.state, next.pool);
    this.unordered = entries;
    this.unorderedIndex.clear();
    for (const e of entries) this.unorderedIndex.set(e.tx.txHash, e);
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
    if (this.pool.length === 0 && opts.allowEmpty !== true) return null;
    this.buildStartedAt = performance.now();
    const timestampMs = Math.max(this.opts.clock.nowMs(), this.head.timestampMs + 1);
    const taken = this.pool.slice(0, this.maxPerBlock);
    const { block, writes, records, overlay } = this.executeBlock(taken, timestampMs);
    const next = this.carry(
      new Overlay(overlay),
      touchedBy(writes.keys(), taken),
      this.pool.slice(taken.length),
      Math.max(timestampMs, this.opts.clock.nowMs()),
      block.header.number + 1,
    );
    return { block, writes, records, dropped: next.dropped, pool: next.pool, poolWrites: next.state };
  }

  /** The block after the head holding `entries` in order at `timestampMs`: header, state writes, outcomes. */
  private executeBlock(entries: readonly PoolEntry[], timestampMs: number) {
    const number = this.head.number + 1;
    const overlay = new Overlay(this.headState);
    const results = entries.map((e) => ({
      entry: e,
      failure: applyAtomically(overlay, this.ctx(timestampMs, number, e.tx.txHash, false, e.verified), e.call, this.opts.handlers),
    }));
    const txHashes = entries.map((e) => txHashOf(e.bytes));
    const header: BlockHeader = {
      parentHash: Buffer.from(this.head.hash.slice(2), 'hex'),
      number,
      timestampMs,
      extrinsicsRoot: extrinsicsRoot(txHashes),
      resultsRoot: resultsRoot(results.map((r, i) => ({ txHash: txHashes[i]!, success: !r.failure, error: r.failure?.errorName ?? '' }))),
    };
    const block: StoredBlock = { header, hash: blockHash(header) };
    const records: TxRecord[] = results.map((r, i) => {
      const rec: TxRecord = {
        ...r.entry.tx,
        status: r.failure ? 'failed' : 'included',
        blockNumber: number,
        blockIndex: i,
        finishedAtMs: timestampMs,
        // the extrinsic stays with its block: the export feed serves it (docs/mirrors.md)
        bytes: r.entry.bytes,
      };
      if (r.failure) rec.error = failureToTxError(r.failure);
      return rec;
    });
    return { block, writes: overlay.changes(), records, overlay };
  }

  /**
   * `built` (from {@link buildBlock} on the current head) with `entries`, pool entries added after every entry
   * the pool held then: checked after its pool on the new head, as {@link buildBlock} checks the pool's last
   * entries — those that pass join its pool, the others its drops.
   */
  extendBuilt(built: BuiltBlock, entries: readonly PoolEntry[]): BuiltBlock {
    if (entries.length === 0) return built;
    const h = built.block.header;
    const next = this.validatePool(built.poolWrites, entries, Math.max(h.timestampMs, this.opts.clock.nowMs()), h.number + 1, false, true);
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
    this.setPool(state, built.pool);
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
    const [done, remaining] = [this.pool.filter((e) => finished.has(e.tx.txHash)), this.pool.filter((e) => !finished.has(e.tx.txHash))];
    this.loadHead();
    // the drops are the producer's to record: this pool only leaves them out
    const next = this.carry(new Overlay(this.headState), touchedBy(writes.keys(), done), remaining, this.poolNowMs(), this.head.number + 1, true);
    this.setPool(next.state, next.pool);
    return this.announce();
  }

  /**
   * A finalized block of another ledger (a mirror following a Directory's export feed), verified by executing its
   * extrinsics here: the extrinsics root, every outcome (results root, signatures checked by the runtime) and the
   * block hash must come out as `block` says, on a parent that is this ledger's head. Stored and made the head;
   * throws {@link BlockImportError} when anything differs, changing nothing.
   */
  importBlock(block: StoredBlock, txs: readonly ImportedTx[]): BlockRef {
    const h = block.header;
    if (h.number !== this.head.number + 1 || to0x(h.parentHash) !== this.head.hash) {
      throw new BlockImportError(`block ${h.number} does not extend the local head ${this.head.number} (${this.head.hash})`);
    }
    if (!bytesEqual(blockHash(h), block.hash)) throw new BlockImportError(`block ${h.number}: the header does not hash to its hash`);
    const txHashes = txs.map((t) => txHashOf(t.bytes));
    if (!bytesEqual(extrinsicsRoot(txHashes), h.extrinsicsRoot)) {
      throw new BlockImportError(`block ${h.number}: its extrinsics do not match its extrinsics root`);
    }
    const overlay = new Overlay(this.headState);
    const records = txs.map((t, i): TxRecord => {
      const txHash = to0x(txHashes[i]!);
      const call = decodeExtrinsic(t.bytes);
      const failure = call
        ? applyAtomically(overlay, this.ctx(h.timestampMs, h.number, txHash), call, this.opts.handlers)
        : new LedgerFailure('MalformedExtrinsic', 'Ledger');
      const rec: TxRecord = {
        txHash,
        extrinsic: call?.name ?? 'malformed',
        status: failure ? 'failed' : 'included',
        submittedAtMs: t.submittedAtMs,
        meta: t.meta,
        bytes: t.bytes,
        blockNumber: h.number,
        blockIndex: i,
        finishedAtMs: h.timestampMs,
      };
      if (failure) rec.error = failureToTxError(failure);
      return rec;
    });
    const results = records.map((r, i) => ({ txHash: txHashes[i]!, success: r.status === 'included', error: r.error?.name ?? '' }));
    if (!bytesEqual(resultsRoot(results), h.resultsRoot)) {
      throw new BlockImportError(`block ${h.number}: executing its extrinsics gives other outcomes than its results root`);
    }
    this.commitToStore(block, overlay.changes(), records);
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
    const next = this.validatePool(new Overlay(this.headState), entries, this.poolNowMs(), this.head.number + 1, !persistDrops, true);
    this.setPool(next.state, next.pool);
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

  /**
   * Applies `entries` in order onto `state`; those that fail are returned as dropped records. `record`: the pool is
   * formed of them, and each entry keeps what it read and wrote (else `state` is a scratch state).
   */
  private validatePool(state: Overlay, entries: readonly PoolEntry[], nowMs: number, blockNumber: number, skipSignatures = false, record = false) {
    const pool: PoolEntry[] = [];
    const dropped: TxRecord[] = [];
    for (const e of entries) {
      const ctx = this.ctx(nowMs, blockNumber, e.tx.txHash, skipSignatures, e.verified);
      const ran = record ? this.runPooled(state, e, ctx) : (applyAtomically(state, ctx, e.call, this.opts.handlers) ?? e);
      if (ran instanceof LedgerFailure) dropped.push(droppedRecord(e.tx, ran, nowMs));
      else pool.push(ran);
    }
    return { state, pool, dropped };
  }

  /**
   * The pool's `entries` on a new head, `state` (§2.5 item 4), in work bounded by the block: only the entries
   * `touched` reaches and the next block's worth run again ({@link carryPool}); with `touched` null (an entry
   * the block finished has no recorded effects), every entry runs again.
   */
  private carry(state: Overlay, touched: Set<string> | null, entries: readonly PoolEntry[], nowMs: number, blockNumber: number, skipSignatures = false) {
    if (touched === null) {
      this.lastRerun = entries.length;
      return this.validatePool(state, entries, nowMs, blockNumber, skipSignatures, true);
    }
    const next = carryPool(state, entries, touched, this.maxPerBlock, (s, e) =>
      this.runPooled(s, e, this.ctx(nowMs, blockNumber, e.tx.txHash, skipSignatures, e.verified)),
    );
    this.lastRerun = next.rerun;
    return { state, pool: next.pool, dropped: next.failed.map((f) => droppedRecord(f.entry.tx, f.failure, nowMs)) };
  }

  /**
   * Runs a pooled entry on `state`: the entry with what it read and wrote (a new object: a block built and not
   * committed leaves the pool's entries as they were), or its failure, changing nothing.
   */
  private runPooled(state: Overlay, e: PoolEntry, ctx: ExecContext): PoolEntry | LedgerFailure {
    const r = runRecorded(state, (s) => executeCall(s, ctx, e.call, this.opts.handlers));
    return r instanceof LedgerFailure ? r : { ...e, effects: r };
  }

  /** Makes `entries` the pool, `state` its state. */
  private setPool(state: Overlay, entries: readonly PoolEntry[]): void {
    this.poolState = state;
    this.pool = [];
    this.poolIndex.clear();
    this.perLimitKey.clear();
    for (const e of entries) {
      this.pool.push(e);
      this.poolIndex.set(e.tx.txHash, e);
      this.perLimitKey.set(e.tx.meta.limitKey, (this.perLimitKey.get(e.tx.meta.limitKey) ?? 0) + 1);
    }
  }

  /** How many pool entries the last carry onto a new head ran again (the rest kept their effects). */
  get lastPoolRerun(): number {
    return this.lastRerun;
  }

  private schedule(): void {
    if (!this.opts.autoProduce || this.stopped || this.timer || this.pool.length === 0) return;
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
    return this.poolState;
  }
  pendingEntries(): readonly PoolEntry[] {
    return this.pool;
  }

  txView(txHash: string): TxView | undefined {
    const pending = this.poolIndex.get(txHash);
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

/**
 * The extrinsic bytes of `call` and the call decoded back from them (§2.4): an argument outside its bound, or one
 * that does not encode, is `MalformedExtrinsic` before any other check, and execution sees exactly the arguments
 * `tx_hash` covers (also after a restart, when pending calls are decoded from their stored bytes).
 */
function canonicalCall(call: Call, encoded?: Uint8Array): { bytes: Uint8Array; call: Call } {
  let bytes: Uint8Array;
  try {
    bytes = encoded ?? encodeExtrinsic(call);
  } catch {
    throw new LedgerFailure('MalformedExtrinsic', 'Ledger');
  }
  const decoded = decodeExtrinsic(bytes);
  if (!decoded) throw new LedgerFailure('MalformedExtrinsic', 'Ledger');
  return { bytes, call: decoded };
}

/** A pooled transaction that failed without being included: `failed`, with its error, bytes no longer kept. */
function droppedRecord(tx: TxRecord, failure: LedgerFailure, nowMs: number): TxRecord {
  const rec: TxRecord = { ...tx, status: 'failed', error: failureToTxError(failure), finishedAtMs: nowMs };
  delete rec.bytes;
  return rec;
}

function failureToTxError(f: LedgerFailure): TxRecord['error'] {
  return f.reason ? { name: f.errorName, module: f.module, reason: f.reason } : { name: f.errorName, module: f.module };
}
