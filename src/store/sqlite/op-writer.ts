/**
 * Where a store's writes run: on a writer thread with its own connection (the default for a database file,
 * `worker-writer.ts`), or on the calling thread's connection (an in-memory database, or a test that injects
 * storage faults into that connection). Either way an operation is plain data, and its promise settles only after
 * the transaction that carried it committed.
 */
import type { SqliteDb } from './database.js';
import { GroupCommitWriter, type GroupCommitOptions } from './group-commit.js';

/** A store's write operation: plain data (it may cross to a writer thread), told apart by `kind`. */
export interface WriteOp {
  kind: string;
}

/** What each kind of a store's operations answers: the op → result map the store declares beside its operations. */
export type OpResults<Op extends WriteOp> = { [K in Op['kind']]: unknown };

/**
 * How each kind of operation runs, typed by its result in `R`: the one place that ties a kind to what it answers,
 * so the writer's `submit` answers `R[kind]` and no caller casts.
 */
export type OpHandlers<Op extends WriteOp, R extends OpResults<Op>> = { [K in Op['kind']]: (op: Extract<Op, { kind: K }>) => R[K] };

/** Runs a store's write operations in group-committed transactions. */
export interface OpWriter<Op extends WriteOp, R extends OpResults<Op>> {
  /** Queues `op`; resolves with its result once committed. `bytes` counts toward the queue's byte bound. */
  submit<O extends Op>(op: O, bytes: number): Promise<R[O['kind']]>;
  /** Resolves once everything submitted so far is committed (or failed). */
  settle(): Promise<void>;
  /** Commits what is queued, then refuses further writes. */
  close(): Promise<void>;
  /** Committed transactions and the operations they carried. */
  readonly stats: { readonly commits: number; readonly operations: number };
  /** Operations submitted and not yet answered (metrics: the writer's queue depth). */
  readonly queued: number;
}

/**
 * How a store's operations run inside the writer's transaction, on whichever thread. Untyped, as its answers cross
 * the thread boundary; made from {@link OpHandlers} by {@link opRunner}.
 */
export interface OpRunner<Op extends WriteOp, R extends OpResults<Op> = OpResults<Op>> {
  run(op: Op): unknown;
  /** Whether `op` must be on stable storage when answered (bookkeeping may commit without an fsync); default true. */
  sync?(op: Op): boolean;
  /** Never set: carries the result map the runner was made with, so a writer is typed by the same one. */
  readonly results?: R;
}

/** The runner of `handlers`: each operation runs by the handler of its kind. */
export function opRunner<Op extends WriteOp, R extends OpResults<Op>>(handlers: OpHandlers<Op, R>, sync?: (op: Op) => boolean): OpRunner<Op, R> {
  // `handlers` has one handler per kind, each taking the operations of that kind
  const byKind = handlers as unknown as Record<string, (op: Op) => unknown>;
  return { run: (op) => byKind[op.kind]!(op), ...(sync === undefined ? {} : { sync }) };
}

/** Writes on the calling thread's own connection. */
export class InThreadOpWriter<Op extends WriteOp, R extends OpResults<Op>> implements OpWriter<Op, R> {
  private readonly writer: GroupCommitWriter;

  constructor(
    db: SqliteDb,
    private readonly runner: OpRunner<Op, R>,
    options: GroupCommitOptions = {},
  ) {
    this.writer = new GroupCommitWriter(db, options);
  }

  get stats(): { readonly commits: number; readonly operations: number } {
    return this.writer.stats;
  }

  get queued(): number {
    return this.writer.pending;
  }

  submit<O extends Op>(op: O, bytes: number): Promise<R[O['kind']]> {
    // the runner was made from OpHandlers<Op, R>: `op` answers R[O['kind']]
    return this.writer.submit(() => this.runner.run(op) as R[O['kind']], bytes, this.runner.sync?.(op) ?? true);
  }

  settle(): Promise<void> {
    return this.writer.settle();
  }

  close(): Promise<void> {
    return this.writer.close();
  }
}
