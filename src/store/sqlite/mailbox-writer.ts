/**
 * Where the Cache mailbox's writes run: on a writer thread with its own connection (the default for a mailbox
 * file, `worker-writer.ts`), or on the calling thread's connection (an in-memory database). Either way an
 * operation's promise settles only after the transaction that carried it committed.
 */
import type { SqliteDb } from './database.js';
import { GroupCommitWriter, type GroupCommitOptions } from './group-commit.js';
import { runMailboxWriteOp, type MailboxWriteOp } from './mailbox-write-ops.js';
import { MailboxWrites } from './mailbox-writes.js';

/** Runs mailbox writes in group-committed transactions. */
export interface MailboxWriter {
  /** Queues `op`; resolves with its result once committed. `bytes` counts toward the queue's byte bound. */
  submit(op: MailboxWriteOp, bytes: number): Promise<unknown>;
  /** Resolves once everything submitted so far is committed (or failed). */
  settle(): Promise<void>;
  /** Commits what is queued, then refuses further writes. */
  close(): Promise<void>;
  /** Committed transactions and the operations they carried. */
  readonly stats: { readonly commits: number; readonly operations: number };
}

/** Writes on the calling thread's own connection. */
export class InThreadMailboxWriter implements MailboxWriter {
  private readonly writer: GroupCommitWriter;
  private readonly writes: MailboxWrites;

  constructor(db: SqliteDb, options: GroupCommitOptions = {}) {
    this.writer = new GroupCommitWriter(db, options);
    this.writes = new MailboxWrites(db);
  }

  get stats(): { readonly commits: number; readonly operations: number } {
    return this.writer.stats;
  }

  submit(op: MailboxWriteOp, bytes: number): Promise<unknown> {
    return this.writer.submit(() => runMailboxWriteOp(this.writes, op), bytes);
  }

  settle(): Promise<void> {
    return this.writer.settle();
  }

  close(): Promise<void> {
    return this.writer.close();
  }
}
