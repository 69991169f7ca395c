/**
 * Pool admission (ledger-rules.md §2.5): a call checked against the pool state and, when it passes, stored as a
 * pending transaction and added to the pool — one by one, a turn's group at once (a ledger alone on its store), in
 * a batch serialised by a {@link PoolCoordinator} (processes sharing one database), or adopted from another
 * process's rows. The part of the `Ledger` that fills its pool; block production empties it.
 */
import { to0x } from '../base/bytes.js';
import type { Clock } from '../base/clock.js';
import { AdmissionBatch, poolLimitKey, poolTxKey, type Admission, type PoolCoordinator } from './admission-batch.js';
import { AdmissionGroup, type AdmissionResult, type QueuedAdmission } from './admission-group.js';
import { LedgerFailure } from './errors.js';
import type { Executor } from './executor.js';
import { canonicalCall, encodeExtrinsic, txHashOf, type Call } from './extrinsic.js';
import type { ChainHead } from './head.js';
import { ValueRecorder } from './pool-effects.js';
import type { TxPool } from './pool.js';
import { VerifiedSignatures } from './runtime/verified-signatures.js';
import { Overlay } from './state.js';
import type { LedgerStore, TxMeta, TxRecord } from './store.js';
import { entryFromStored } from './stored-entry.js';
import { droppedRecord } from './tx-outcome.js';
import type { PoolEntry } from './types.js';

/** Told when the pool grew, so that a block is made of it (block production's timer). */
export interface BlockScheduler {
  schedule(): void;
}

/** What admission works on, shared with the ledger's other parts. */
export interface AdmissionParts {
  readonly head: Pick<ChainHead, 'ref' | 'poolNowMs'>;
  readonly pool: TxPool;
  readonly exec: Executor;
  readonly store: Pick<LedgerStore, 'putPendingTx' | 'putPendingTxs'>;
  readonly clock: Clock;
  /** An outside chain orders the transactions (`LedgerOptions.ordering`). */
  readonly chainOrdered: boolean;
  readonly maxPool: number;
  readonly maxPerKey: number;
  readonly blocks: BlockScheduler;
  /** Runs its argument at the end of the event-loop turn (the ledger's machinery passes `setImmediate`). */
  readonly atTurnEnd: (run: () => void) => void;
}

export class PoolAdmission {
  private readonly head: AdmissionParts['head'];
  private readonly pool: TxPool;
  private readonly exec: Executor;
  private readonly store: AdmissionParts['store'];
  private readonly clock: Clock;
  private readonly chainOrdered: boolean;
  private readonly maxPool: number;
  private readonly maxPerKey: number;
  private readonly blocks: BlockScheduler;
  private coordinator: PoolCoordinator | null = null;
  /** Why admissions are held (the order source cannot take them now), else null. */
  private heldBecause: string | null = null;
  /** Extrinsic bytes of calls asked about ({@link encoded}), while the call object lives. */
  private readonly encodings = new WeakMap<Call, Uint8Array>();
  /** Admissions of a ledger alone on its store, stored one group per event-loop turn. */
  private readonly ownAdmissions: AdmissionGroup;

  constructor(parts: AdmissionParts) {
    // fields of their own, not read through `parts`: the hot path reaches each in one step
    this.head = parts.head;
    this.pool = parts.pool;
    this.exec = parts.exec;
    this.store = parts.store;
    this.clock = parts.clock;
    this.chainOrdered = parts.chainOrdered;
    this.maxPool = parts.maxPool;
    this.maxPerKey = parts.maxPerKey;
    this.blocks = parts.blocks;
    this.ownAdmissions = new AdmissionGroup((group) => this.admitGroup(group), parts.atTurnEnd);
  }

  /** Hands admission to `coordinator` (processes sharing one database). */
  coordinateWith(coordinator: PoolCoordinator): void {
    this.coordinator = coordinator;
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
    return this.exec.apply(probe, this.exec.ctx(this.head.poolNowMs(), this.head.ref.number + 1, '0x', opts.skipSignatures), canon.call);
  }

  /**
   * Pool admission (§2.5): identical pending extrinsic → same hash, `duplicate`; otherwise limits, then a dry run
   * against the pool state. Rejects with LedgerFailure. With a {@link PoolCoordinator} (several processes on one
   * database) the admission runs serialised with every other process's, on a pool brought up to date first.
   */
  async admit(submitted: Call, meta: TxMeta): Promise<AdmissionResult> {
    if (this.heldBecause !== null) throw new LedgerFailure('OrderUnavailable', 'Ledger', this.heldBecause);
    // under a chain the order comes from outside: its admissions stay one by one, answered at once
    if (!this.coordinator && this.chainOrdered) return this.submit(submitted, meta);
    const canon = this.canonical(submitted);
    if (!this.coordinator) return this.ownAdmissions.admit(canon, meta);
    const txHash = to0x(txHashOf(canon.bytes));
    // The signatures are verified by the admission's first check, on this process's view of the pool (outside the
    // database's lock); a check again, on a fresher view or under the lock, finds them done.
    const verified = new VerifiedSignatures();
    return this.coordinator.admit((batch) => this.prepare(canon, meta, txHash, verified, batch));
  }

  /** {@link PoolCoordinator.freshPool}; undefined without a coordinator (the pool is this process's alone). */
  freshPool(): Promise<void> | undefined {
    return this.coordinator?.freshPool?.();
  }

  /**
   * Holds admissions while the source of order cannot take them (a chain that does not answer): {@link admit}
   * then fails with `OrderUnavailable` and `reason`; null admits again. Reads are not affected.
   */
  hold(reason: string | null): void {
    this.heldBecause = reason;
  }

  /** A batch of admissions on the current pool (see {@link AdmissionBatch}). */
  openBatch(): AdmissionBatch {
    return new AdmissionBatch(this.pool.state, this.head.ref.number);
  }

  /**
   * A batch stored after transactions that joined the pool since it was opened, none of which wrote a key the
   * batch read (a shared pool confirms it): its entries join the pool after them with the writes they were checked
   * with — executing them again would read the same values and write the same. False, changing nothing, when the
   * head moved since the batch was opened: its entries must then be checked again.
   */
  adoptBatch(batch: AdmissionBatch): boolean {
    if (batch.headNumber !== this.head.ref.number) return false;
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
        const a = this.prepare(q.canon, q.meta, undefined, undefined, batch);
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
  submit(submitted: Call, meta: TxMeta): AdmissionResult {
    if (this.coordinator) throw new Error('a coordinated ledger admits through admit()');
    const admission = this.prepare(this.canonical(submitted), meta);
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
  private prepare(
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
    const reads = new ValueRecorder(state);
    const probe = new Overlay(reads);
    const failure = this.exec.apply(probe, this.exec.ctx(this.head.poolNowMs(), this.head.ref.number + 1, txHash, false, verified), call);
    if (failure) throw failure;
    const tx: TxRecord = { txHash, extrinsic: call.name, status: 'pending', submittedAtMs: this.clock.nowMs(), meta, bytes };
    // a shared pool's row carries the signatures found valid, so the producer does not verify them again
    const stored: TxRecord = this.coordinator ? { ...tx, signatures: verified.digests() } : tx;
    const entry: PoolEntry = { tx, call, bytes, verified, effects: { reads: reads.values, writes: probe.changes() } };
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
    this.blocks.schedule();
  }

  /**
   * Pending transactions another process admitted (shared pool): each joins the pool if it passes against the
   * pool state. Returns those that do not (undecodable, or no longer valid), as failed records for the block
   * producer to drop.
   */
  adoptPending(txs: readonly TxRecord[]): TxRecord[] {
    const rejected: TxRecord[] = [];
    const now = this.head.poolNowMs();
    for (const tx of txs) {
      if (this.pool.has(tx.txHash)) continue;
      const entry = entryFromStored(tx);
      // The admitting process verified the signatures (the entry keeps their digests for the block's execution):
      // adoption only keeps this pool's state in step, so it spends no verification.
      const ran = entry
        ? this.exec.runPooled(this.pool.state, entry, this.exec.ctx(now, this.head.ref.number + 1, tx.txHash, true))
        : new LedgerFailure('MalformedExtrinsic', 'Ledger');
      if (ran instanceof LedgerFailure) rejected.push(droppedRecord(tx, ran, now));
      else if (ran) this.addToPool(ran);
    }
    return rejected;
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
}
