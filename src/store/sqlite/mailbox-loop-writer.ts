/**
 * The mailbox's writes on the event loop's own connection — the default for a mailbox file since session 39 (a
 * writer thread of its own, `worker-writer.ts`, before: `SqliteMailboxOptions.writerThread`). A store is checked,
 * written and committed in the turns it arrived in, with no hand-off to a thread and back (the hand-offs and the
 * turns waited around them were most of a 1 KiB store's latency: bench/HISTORY.md, sessions 32 and 39).
 *
 * Nothing waits for the disk on the loop: COMMIT runs under `synchronous = NORMAL` (it writes the WAL, no fsync) and
 * the WAL is fsynced on a thread of its own (`wal-sync.ts`), one fsync covering every commit made before it began, while
 * the loop goes on. A write is answered only after such an fsync — the same durability as `synchronous = FULL` (a
 * checkpoint syncs the WAL before it copies it); a failed fsync fails what it covered with 507 and puts COMMIT back
 * under FULL. Checkpoints run on a thread of their own from the start (`wal-checkpointer.ts`): SQLite's automatic
 * ones would sync the WAL and the database inside a commit, on the loop. A committed write is visible to the
 * connection's reads before its fsync completes (a pull may list an envelope whose 202 is still waiting for it);
 * only its answer waits.
 */
import type { SqliteDb } from './database.js';
import type { GroupCommitOptions } from './group-commit.js';
import { MailboxPageCache } from './mailbox-page-cache.js';
import { mailboxOpRunner, type MailboxWriteOp, type MailboxWriteResults } from './mailbox-write-ops.js';
import { MailboxWrites } from './mailbox-writes.js';
import { InThreadOpWriter, type OpWriter } from './op-writer.js';
import {
  type CheckpointerOptions,
  type CheckpointerStats,
  CHECKPOINTER_FROM_BYTES,
  detachCheckpoints,
  mailboxCheckpoints,
  WalCheckpointer,
} from './wal-checkpointer.js';

/** Options of a {@link MailboxLoopWriter}: the group commit's, and from which size the mailbox counts as large. */
export interface MailboxLoopWriterOptions extends GroupCommitOptions {
  /** Database size from which the connection keeps the large mailbox's page cache (default {@link CHECKPOINTER_FROM_BYTES}). */
  largeFromBytes?: number;
  /** Its checkpointer's tuning (default {@link mailboxCheckpoints}: no storage reserve). */
  checkpoints?: CheckpointerOptions;
}

/** The mailbox's writes on the connection `db` of the file `path`, on the calling thread. */
export class MailboxLoopWriter implements OpWriter<MailboxWriteOp, MailboxWriteResults> {
  private readonly inner: InThreadOpWriter<MailboxWriteOp, MailboxWriteResults>;
  private readonly checkpointer: WalCheckpointer;
  private readonly cache: MailboxPageCache;
  private large = false;

  constructor(db: SqliteDb, path: string, options: MailboxLoopWriterOptions = {}) {
    const { largeFromBytes = CHECKPOINTER_FROM_BYTES, checkpoints = mailboxCheckpoints(), ...groupCommit } = options;
    detachCheckpoints(db);
    this.cache = new MailboxPageCache(db);
    this.checkpointer = new WalCheckpointer(path, checkpoints);
    const afterBatch = (bytes: number): void => {
      this.cache.afterBatch(bytes);
      if (!this.large && this.cache.databaseBytes() >= largeFromBytes) {
        this.large = true;
        this.cache.markLarge();
      }
      this.checkpointer.afterCommit(db, bytes);
    };
    this.inner = new InThreadOpWriter(db, mailboxOpRunner(new MailboxWrites(db)), {
      ...groupCommit,
      walSyncPath: `${path}-wal`,
      beforeBatch: (bytes) => this.cache.beforeBatch(bytes),
      afterBatch,
    });
    afterBatch(0);
  }

  get stats(): { readonly commits: number; readonly operations: number } {
    return this.inner.stats;
  }

  /** What its checkpointer thread and its own bound on the WAL did. */
  get checkpointerStats(): Readonly<CheckpointerStats> {
    return this.checkpointer.stats;
  }

  get queued(): number {
    return this.inner.queued;
  }

  /** What the writer shows of itself, as the writer thread's answers do: its checkpointer thread, its page cache. */
  get info(): Readonly<Record<string, number | boolean>> {
    return { checkpointerThread: true, cacheKib: this.cache.sizeKib };
  }

  submit<O extends MailboxWriteOp>(op: O, bytes: number): Promise<MailboxWriteResults[O['kind']]> {
    return this.inner.submit(op, bytes);
  }

  settle(): Promise<void> {
    return this.inner.settle();
  }

  async close(): Promise<void> {
    try {
      await this.inner.close();
    } finally {
      await this.checkpointer.stop();
    }
  }
}
