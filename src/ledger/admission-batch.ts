/**
 * A pool admission checked and not yet applied, a batch of them checked together on the pool, and the coordinator
 * that serialises the admissions of several processes sharing one database.
 */
import { ReadRecorder } from './pool-effects.js';
import { Overlay } from './state.js';
import type { TxRecord } from './store.js';
import type { PoolEntry } from './types.js';

/** A pool admission checked and not yet applied (see `Ledger.submit`). */
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
   * Runs `prepare` on a batch of this ledger (`Ledger.openBatch`) serialised with the admissions of every
   * other process and block production, on a view it proves current for what the admission read; persists the
   * admission's `tx` and accepts it; rejects with what `prepare` throws.
   */
  admit(prepare: (batch: AdmissionBatch) => Admission): Promise<{ txHash: string; duplicate: boolean }>;
  /**
   * Undefined when this ledger's pool holds every pending change the coordinator knows of; else a promise (never
   * rejected) that settles once it has copied them — what a read of the pool waits for.
   */
  freshPool?(): Promise<void> | undefined;
}

/** Conflict keys of what the pool itself knows: a pending transaction's hash, and its limit key's count. */
export const poolTxKey = (txHash: string) => `pool/tx/${txHash}`;
export const poolLimitKey = (limitKey: string) => `pool/limit/${limitKey}`;

/**
 * Admissions checked together on the pool (a shared pool's batch), each seeing the ones accepted before it, kept
 * out of the pool until `Ledger.joinBatch`: dropped, they leave nothing behind. It records what its checks
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
