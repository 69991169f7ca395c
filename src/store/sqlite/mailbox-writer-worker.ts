/**
 * The Cache mailbox's writer thread (`writer-thread.ts` serves it): its own connection to the mailbox file (WAL,
 * `synchronous = FULL`). Checkpoints of a large mailbox run on a thread of their own (`wal-checkpointer.ts`).
 */
import { nameThisThread } from '../../base/module-worker.js';
import { workerData } from 'node:worker_threads';
import { openSqlite } from './database.js';
import { MAILBOX_MIGRATIONS } from './mailbox-schema.js';
import { mailboxOpBytes, mailboxOpRunner, type MailboxWriteOp } from './mailbox-write-ops.js';
import { MailboxPageCache } from './mailbox-page-cache.js';
import { MailboxWrites } from './mailbox-writes.js';
import { type CheckpointerOptions, CHECKPOINTER_FROM_BYTES, detachCheckpoints, mailboxCheckpoints, WalCheckpointer } from './wal-checkpointer.js';
import { serveWriterThread, type WriterThreadData } from './writer-thread.js';

/** What the main thread passes at start. */
export interface MailboxWriterData extends WriterThreadData {
  /** Database size from which checkpoints move to their own thread (default {@link CHECKPOINTER_FROM_BYTES}). */
  checkpointerFromBytes?: number;
  /** Its checkpointer's tuning (default {@link mailboxCheckpoints}: no storage reserve). */
  checkpoints?: CheckpointerOptions;
}

nameThisThread('ddn-mailbox-w');
const data = workerData as MailboxWriterData;
const db = openSqlite(data.path, MAILBOX_MIGRATIONS, 'cache', { synchronous: 'FULL' });
const cache = new MailboxPageCache(db);
let checkpointer: WalCheckpointer | null = null;
/**
 * Once the database is large enough (checked after every batch), starts the checkpointer thread and gives the
 * writer the larger cache.
 */
function checkpointsForSize(): void {
  if (checkpointer !== null) return;
  if (cache.databaseBytes() < (data.checkpointerFromBytes ?? CHECKPOINTER_FROM_BYTES)) return;
  detachCheckpoints(db);
  checkpointer = new WalCheckpointer(data.path, data.checkpoints ?? mailboxCheckpoints());
  cache.markLarge();
}
checkpointsForSize();
const writes = new MailboxWrites(db);

serveWriterThread<MailboxWriteOp>({
  db,
  data,
  runner: mailboxOpRunner(writes),
  bytesOf: mailboxOpBytes,
  // a large envelope's pages must not fill the page cache (and the process's memory): a small cache spills them
  // to the WAL as they are written; the index pages are read back on demand afterwards
  beforeBatch: (bytes) => cache.beforeBatch(bytes),
  afterBatch: (bytes) => {
    cache.afterBatch(bytes);
    checkpointsForSize();
    checkpointer?.afterCommit(db, bytes);
  },
  info: () => ({ checkpointerThread: checkpointer !== null, cacheKib: cache.sizeKib }),
  beforeClose: async () => {
    await checkpointer?.stop();
  },
});
