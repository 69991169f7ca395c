/**
 * A store's writer under a {@link StorageGuard}: while the disk is full, operations that add data are refused with
 * 507 before they touch the file, and an operation that adds none (a nonce, an acknowledgement, a purge) whose write
 * failed on the full disk is tried once more after the guard gave back its reserve.
 */
import type { StorageGuard } from '../storage-guard.js';
import type { OpResults, OpWriter, WriteOp } from './op-writer.js';

/** Which of a store's operations add data (refused while the disk is full). */
export interface GuardSpec<Op> {
  guard: StorageGuard;
  addsData(op: Op): boolean;
}

export class GuardedOpWriter<Op extends WriteOp, R extends OpResults<Op>> implements OpWriter<Op, R> {
  constructor(
    private readonly inner: OpWriter<Op, R>,
    private readonly spec: GuardSpec<Op>,
  ) {}

  get stats(): { readonly commits: number; readonly operations: number } {
    return this.inner.stats;
  }

  get queued(): number {
    return this.inner.queued;
  }

  submit<O extends Op>(op: O, bytes: number): Promise<R[O['kind']]> {
    return this.spec.guard.writeAsync(this.spec.addsData(op), () => this.inner.submit(op, bytes));
  }

  settle(): Promise<void> {
    return this.inner.settle();
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
