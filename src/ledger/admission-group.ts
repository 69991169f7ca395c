/**
 * Group commit of a ledger's own pool admissions (a ledger alone on its store, making its own blocks: no
 * {@link PoolCoordinator}, no outside chain — a chain-ordered ledger admits one by one).
 *
 * Admissions that arrive during one turn of the event loop wait for the end of it (`setImmediate`); then, in one
 * synchronous step, the ledger checks them in arrival order on one batch of its pool (each seeing the ones before
 * it), stores every accepted one's pending row in one transaction and adds them to its pool. Each is answered
 * only after that transaction committed: a `202` still means the row is stored (and a kill -9 before the commit
 * loses only admissions that were never answered). One transaction per turn instead of one per admission.
 *
 * Nothing else runs between the check and the pool's update (the step is synchronous), so the batch always joins
 * the pool it was checked on.
 */
import { DdnError } from '../base/errors.js';
import type { Call } from './extrinsic.js';
import type { TxMeta } from './store.js';

export type AdmissionResult = { txHash: string; duplicate: boolean };

/** One admission waiting for its turn's batch. */
export interface QueuedAdmission {
  readonly canon: { bytes: Uint8Array; call: Call };
  readonly meta: TxMeta;
  resolve(r: AdmissionResult): void;
  reject(e: unknown): void;
}

/** Admissions checked and stored together at most (more wait for the next turn). */
export const MAX_GROUP = 500;
/** Admissions waiting at most; beyond, 503 `ledger_unavailable` (a bounded queue; http-api.md §1 names it for the Directory's 503). */
export const MAX_WAITING_ADMISSIONS = 10_000;

/** Queues admissions and hands each turn's to `commit` (which answers every one of them). */
export class AdmissionGroup {
  private waiting: QueuedAdmission[] = [];
  private scheduled = false;

  constructor(
    private readonly commit: (group: readonly QueuedAdmission[]) => void,
    /** Runs its argument at the end of the event-loop turn (the ledger's machinery passes `setImmediate`). */
    private readonly atTurnEnd: (run: () => void) => void,
    private readonly maxWaiting = MAX_WAITING_ADMISSIONS,
  ) {}

  /** Admissions waiting for their turn (metrics, tests). */
  get size(): number {
    return this.waiting.length;
  }

  admit(canon: QueuedAdmission['canon'], meta: TxMeta): Promise<AdmissionResult> {
    if (this.waiting.length >= this.maxWaiting) {
      return Promise.reject(new DdnError('ledger_unavailable', 'too many admissions are waiting for the ledger'));
    }
    return new Promise((resolve, reject) => {
      this.waiting.push({ canon, meta, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    this.atTurnEnd(() => this.flush());
  }

  private flush(): void {
    this.scheduled = false;
    const group = this.waiting.splice(0, MAX_GROUP);
    if (this.waiting.length > 0) this.schedule();
    try {
      this.commit(group);
    } catch (e) {
      // `commit` answers every admission itself; this is a failure outside its own handling
      for (const a of group) a.reject(e);
    }
  }
}
