/**
 * The Cache mailbox's writer thread (`writer-thread.ts` serves it): its own connection to the mailbox file (WAL,
 * `synchronous = FULL`). Checkpoints of a large mailbox run on a thread of their own (`wal-checkpointer.ts`).
 */
import { nameThisThread } from '../../base/module-worker.js';
import { workerData } from 'node:worker_threads';
import { openSqlite } from './database.js';
import { MAILBOX_MIGRATIONS } from './mailbox-schema.js';
import { mailboxOpBytes, mailboxOpRunner, type MailboxWriteOp } from './mailbox-write-ops.js';
import { MailboxWrites } from './mailbox-writes.js';
import { boundWal, CHECKPOINTER_FROM_BYTES, detachCheckpoints, WalCheckpointer } from './wal-checkpointer.js';
import { serveWriterThread, type WriterThreadData } from './writer-thread.js';

/** What the main thread passes at start. */
export interface MailboxWriterData extends WriterThreadData {
  /** Database size from which checkpoints move to their own thread (default {@link CHECKPOINTER_FROM_BYTES}). */
  checkpointerFromBytes?: number;
}

/**
 * The writer's page cache once the mailbox is large (SQLite's default in this build is 16 MB): every store looks up and inserts
 * into four indexes, and with a million envelopes held their pages no longer fit a smaller one.
 */
const LARGE_MAILBOX_CACHE_KIB = 32 * 1024;
/**
 * The cache below {@link CHECKPOINTER_FROM_BYTES}. Every commit that follows a B-tree page split walks the whole
 * hash table of the cache (SQLite renumbers the split's pages through a key past the end of the database, and the
 * commit then drops keys past the end), and a store into a random-key index splits often. The table grows with
 * the pages held, so a cache larger than a small mailbox needs only costs CPU: through this thread, a store into a
 * fresh mailbox took 55–57 µs of process CPU with 32 MiB against 48–51 µs with 8 MiB (2 MiB cost as much as 8).
 */
const SMALL_MAILBOX_CACHE_KIB = 8 * 1024;
/** A batch writing this much runs with SQLite's default cache of {@link LARGE_WRITE_CACHE_KIB}. */
const LARGE_WRITE_BYTES = 1024 * 1024;
const LARGE_WRITE_CACHE_KIB = 2 * 1024;

nameThisThread('ddn-mailbox-w');
const data = workerData as MailboxWriterData;
const db = openSqlite(data.path, MAILBOX_MIGRATIONS, 'cache', { synchronous: 'FULL' });
const pageBytes = db.pragma('page_size', { simple: true }) as number;
let checkpointer: WalCheckpointer | null = null;
let cacheKib = 0;
function setCache(kib: number): void {
  if (kib === cacheKib) return;
  db.pragma(`cache_size = -${kib}`);
  cacheKib = kib;
}
/** The cache between batches: a large mailbox is one with its checkpointer thread. */
const steadyCacheKib = () => (checkpointer === null ? SMALL_MAILBOX_CACHE_KIB : LARGE_MAILBOX_CACHE_KIB);
/**
 * Once the database is large enough (checked after every batch), starts the checkpointer thread and gives the
 * writer the larger cache.
 */
function checkpointsForSize(): void {
  if (checkpointer !== null) return;
  const bytes = (db.pragma('page_count', { simple: true }) as number) * pageBytes;
  if (bytes < (data.checkpointerFromBytes ?? CHECKPOINTER_FROM_BYTES)) return;
  detachCheckpoints(db);
  checkpointer = new WalCheckpointer(data.path);
  setCache(steadyCacheKib());
}
checkpointsForSize();
setCache(steadyCacheKib());
const writes = new MailboxWrites(db);

serveWriterThread<MailboxWriteOp>({
  db,
  data,
  runner: mailboxOpRunner(writes),
  bytesOf: mailboxOpBytes,
  // a large envelope's pages must not fill the page cache (and the process's memory): a small cache spills them
  // to the WAL as they are written; the index pages are read back on demand afterwards
  beforeBatch: (bytes) => {
    if (bytes >= LARGE_WRITE_BYTES) setCache(LARGE_WRITE_CACHE_KIB);
  },
  afterBatch: (bytes) => {
    if (bytes >= LARGE_WRITE_BYTES) setCache(steadyCacheKib());
    checkpointsForSize();
    if (checkpointer !== null) {
      checkpointer.afterCommit(db);
      boundWal(db, data.path);
    }
  },
  info: () => ({ checkpointerThread: checkpointer !== null, cacheKib }),
  beforeClose: async () => {
    await checkpointer?.stop();
  },
});
