/**
 * Where a store's writes run: on a writer thread with its own connection (the default for a database file,
 * `worker-writer.ts`), or on the calling thread's connection (an in-memory database, or a test that injects
 * storage faults into that connection). Either way an operation is plain data, and its promise settles only after
 * the transaction that carried it committed.
 */
import type { SqliteDb } from './database.js';
import { GroupCommitWriter, type GroupCommitOptions } from './group-commit.js';

/** Runs a store's write operations in group-committed transactions. */
export interface OpWriter<Op> {
  /** Queues `op`; resolves with its result once committed. `bytes` counts toward the queue's byte bound. */
  submit(op: Op, bytes: number): Promise<unknown>;
  /** Resolves once everything submitted so far is committed (or failed). */
  settle(): Promise<void>;
  /** Commits what is queued, then refuses further writes. */
  close(): Promise<void>;
  /** Committed transactions and the operations they carried. */
  readonly stats: { readonly commits: number; readonly operations: number };
  /** Operations submitted and not yet answered (metrics: the writer's queue depth). */
  readonly queued: number;
}

/** How a store's operations run inside the writer's transaction, on whichever thread. */
export interface OpRunner<Op> {
  run(op: Op): unknown;
  /** Whether `op` must be on stable storage when answered (bookkeeping may commit without an fsync); default true. */
  sync?(op: Op): boolean;
}

/** Writes on the calling thread's own connection. */
export class InThreadOpWriter<Op> implements OpWriter<Op> {
  private readonly writer: GroupCommitWriter;

  constructor(
    db: SqliteDb,
    private readonly runner: OpRunner<Op>,
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

  submit(op: Op, bytes: number): Promise<unknown> {
    return this.writer.submit(() => this.runner.run(op), bytes, this.runner.sync?.(op) ?? true);
  }

  settle(): Promise<void> {
    return this.writer.settle();
  }

  close(): Promise<void> {
    return this.writer.close();
  }
}
