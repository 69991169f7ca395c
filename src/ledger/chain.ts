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
import { applyAtomically, type ModuleHandlers } from './runtime/dispatch.js';
import { Overlay, type StateReader, type StateValue } from './state.js';
import type { LedgerStore, StoredBlock, TxMeta, TxRecord } from './store.js';
import { bytesEqual } from '../base/bytes.js';

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
}

export interface PoolEntry {
  readonly tx: TxRecord;
  readonly call: Call;
  readonly bytes: Uint8Array;
}

export interface BlockRef {
  number: number;
  hash: string;
  timestampMs: number;
}

export type TxView =
  | { status: 'pending'; tx: TxRecord }
  | { status: 'in_block' | 'finalized' | 'failed'; tx: TxRecord; block?: BlockRef };

/** Reads state as of one block, memoising what it read (blocks are immutable once committed). */
class StateAt implements StateReader {
  private readonly cache = new Map<string, StateValue | undefined>();
  constructor(
    private readonly store: LedgerStore,
    readonly block: number,
  ) {}
  get(key: string): StateValue | undefined {
    if (this.cache.has(key)) return this.cache.get(key);
    const v = this.store.readState(key, this.block);
    if (this.cache.size > 100_000) this.cache.clear();
    this.cache.set(key, v);
    return v;
  }
}

export class Ledger {
  readonly genesisHash: Uint8Array;
  private head!: BlockRef;
  private headState!: StateAt;
  private finalizedState!: StateAt;
  private finalizedRef!: BlockRef;
  private pool: PoolEntry[] = [];
  private poolIndex = new Map<string, PoolEntry>();
  private poolState!: Overlay;
  private timer: NodeJS.Timeout | null = null;
  private lastBlockWallMs = 0;
  private stopped = false;
  private readonly listeners = new Set<(b: BlockRef) => void>();
  private readonly maxPerBlock: number;
  private readonly maxPerKey: number;
  private readonly maxPool: number;

  constructor(
    private readonly store: LedgerStore,
    private readonly opts: LedgerOptions,
  ) {
    this.maxPerBlock = opts.maxExtrinsicsPerBlock ?? 1000;
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
    this.rebuildPool(store.pendingTxs().map((tx) => this.entryFromStored(tx)).filter((e): e is PoolEntry => !!e));
    if (this.pool.length > 0) this.schedule();
  }

  get profile(): Profile {
    return this.opts.profile;
  }

  private entryFromStored(tx: TxRecord): PoolEntry | undefined {
    const call = tx.bytes ? decodeExtrinsic(tx.bytes) : undefined;
    if (!call || !tx.bytes) return undefined;
    return { tx, call, bytes: tx.bytes };
  }

  private loadHead(): void {
    const n = this.store.headNumber();
    this.head = this.refOf(this.store.getBlock(n)!);
    this.headState = new StateAt(this.store, n);
    const fin = Math.max(0, n - this.opts.finalityDepth);
    this.finalizedRef = fin === n ? this.head : this.refOf(this.store.getBlock(fin)!);
    this.finalizedState = fin === n ? this.headState : new StateAt(this.store, fin);
  }

  private refOf(b: StoredBlock): BlockRef {
    return { number: b.header.number, hash: to0x(b.hash), timestampMs: b.header.timestampMs };
  }

  /** "now" for pool validation (§1.2): max(head timestamp, wall clock). */
  poolNowMs(): number {
    return Math.max(this.head.timestampMs, this.opts.clock.nowMs());
  }

  private ctx(nowMs: number, blockNumber: number, txHash: string, skipSignatures = false): ExecContext {
    return {
      nowMs,
      blockNumber,
      txHash,
      profile: this.opts.profile,
      genesisHash: this.genesisHash,
      attestors: this.opts.genesis.personaAttestors,
      skipSignatures,
    };
  }

  /** Runs the call against the pool state without keeping anything (prepare routes, pre-checks). */
  check(call: Call, opts: { skipSignatures?: boolean } = {}): LedgerFailure | null {
    let canon: { bytes: Uint8Array; call: Call };
    try {
      canon = canonicalCall(call);
    } catch (e) {
      if (e instanceof LedgerFailure) return e;
      throw e;
    }
    const probe = this.poolState.child();
    return applyAtomically(probe, this.ctx(this.poolNowMs(), this.head.number + 1, '0x', opts.skipSignatures), canon.call,
      this.opts.handlers);
  }

  /**
   * Pool admission (§2.5): identical pending extrinsic → same hash, `duplicate`; otherwise limits, then a dry run
   * against the pool state. Throws LedgerFailure on rejection.
   */
  submit(submitted: Call, meta: TxMeta): { txHash: string; duplicate: boolean } {
    const { bytes, call } = canonicalCall(submitted);
    const txHash = to0x(txHashOf(bytes));
    if (this.poolIndex.has(txHash)) return { txHash, duplicate: true };
    if (this.pool.length >= this.maxPool) throw new LedgerFailure('PoolFull', 'Ledger');
    if (this.pool.filter((e) => e.tx.meta.limitKey === meta.limitKey).length >= this.maxPerKey) {
      throw new LedgerFailure('PoolFull', 'Ledger');
    }
    const now = this.poolNowMs();
    const failure = applyAtomically(this.poolState, this.ctx(now, this.head.number + 1, txHash), call, this.opts.handlers);
    if (failure) throw failure;
    const tx: TxRecord = { txHash, extrinsic: call.name, status: 'pending', submittedAtMs: this.opts.clock.nowMs(), meta, bytes };
    this.store.putPendingTx(tx);
    const entry: PoolEntry = { tx, call, bytes };
    this.pool.push(entry);
    this.poolIndex.set(txHash, entry);
    this.schedule();
    return { txHash, duplicate: false };
  }

  /** True when an identical extrinsic is waiting in the pool. */
  isPending(call: Call): boolean {
    return this.poolIndex.has(to0x(txHashOf(encodeExtrinsic(call))));
  }

  /** Executes up to `maxExtrinsicsPerBlock` pooled extrinsics into a new block. Null when the pool is empty. */
  produceBlock(): BlockRef | null {
    if (this.pool.length === 0) return null;
    const number = this.head.number + 1;
    const timestampMs = Math.max(this.opts.clock.nowMs(), this.head.timestampMs + 1);
    const taken = this.pool.slice(0, this.maxPerBlock);
    const overlay = new Overlay(this.headState);
    const results = taken.map((e) => ({
      entry: e,
      failure: applyAtomically(overlay, this.ctx(timestampMs, number, e.tx.txHash), e.call, this.opts.handlers),
    }));
    const txHashes = taken.map((e) => txHashOf(e.bytes));
    const header: BlockHeader = {
      parentHash: Buffer.from(this.head.hash.slice(2), 'hex'),
      number,
      timestampMs,
      extrinsicsRoot: extrinsicsRoot(txHashes),
      resultsRoot: resultsRoot(
        results.map((r, i) => ({ txHash: txHashes[i]!, success: !r.failure, error: r.failure?.errorName ?? '' })),
      ),
    };
    const block: StoredBlock = { header, hash: blockHash(header) };
    const records: TxRecord[] = results.map((r, i) => {
      const rec: TxRecord = {
        ...r.entry.tx,
        status: r.failure ? 'failed' : 'included',
        blockNumber: number,
        blockIndex: i,
        finishedAtMs: timestampMs,
      };
      delete rec.bytes;
      if (r.failure) rec.error = failureToTxError(r.failure);
      return rec;
    });
    this.store.commitBlock(block, overlay.changes(), records);
    this.lastBlockWallMs = this.opts.clock.nowMs();
    for (const e of taken) this.poolIndex.delete(e.tx.txHash);
    this.loadHead();
    this.rebuildPool(this.pool.slice(taken.length));
    const ref = this.head;
    for (const l of this.listeners) l(ref);
    return ref;
  }

  /** Rebuilds the pool state from the head; a remaining extrinsic that no longer passes is dropped as failed. */
  private rebuildPool(entries: PoolEntry[]): void {
    this.poolState = new Overlay(this.headState);
    this.pool = [];
    this.poolIndex.clear();
    const now = this.poolNowMs();
    for (const e of entries) {
      const failure = applyAtomically(this.poolState, this.ctx(now, this.head.number + 1, e.tx.txHash), e.call,
        this.opts.handlers);
      if (failure) {
        this.store.markDropped({ ...e.tx, status: 'failed', error: failureToTxError(failure), finishedAtMs: now });
        continue;
      }
      this.pool.push(e);
      this.poolIndex.set(e.tx.txHash, e);
    }
  }

  private schedule(): void {
    if (!this.opts.autoProduce || this.stopped || this.timer || this.pool.length === 0) return;
    const delay = Math.max(0, this.lastBlockWallMs + this.opts.blockIntervalMs - this.opts.clock.nowMs());
    this.timer = setTimeout(() => {
      this.timer = null;
      try {
        this.produceBlock();
      } catch (e) {
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
}

/**
 * The extrinsic bytes of `call` and the call decoded back from them (§2.4): an argument outside its bound, or one
 * that does not encode, is `MalformedExtrinsic` before any other check, and execution sees exactly the arguments
 * `tx_hash` covers (also after a restart, when pending calls are decoded from their stored bytes).
 */
function canonicalCall(call: Call): { bytes: Uint8Array; call: Call } {
  let bytes: Uint8Array;
  try {
    bytes = encodeExtrinsic(call);
  } catch {
    throw new LedgerFailure('MalformedExtrinsic', 'Ledger');
  }
  const decoded = decodeExtrinsic(bytes);
  if (!decoded) throw new LedgerFailure('MalformedExtrinsic', 'Ledger');
  return { bytes, call: decoded };
}

function failureToTxError(f: LedgerFailure): TxRecord['error'] {
  return f.reason ? { name: f.errorName, module: f.module, reason: f.reason } : { name: f.errorName, module: f.module };
}
