/**
 * The Cache mailbox's writer thread: its own connection to the mailbox file (WAL, `synchronous = FULL`) runs
 * every write through a {@link GroupCommitWriter}, so the main thread keeps reading requests while a commit and
 * its fsync are in progress. Operations arrive in batches from `worker-writer.ts`; each answer is posted only
 * after the transaction holding it committed. Checkpoints of a large mailbox run on a thread of their own
 * (`wal-checkpointer.ts`).
 */
import { nameThisThread } from '../../base/module-worker.js';
import { parentPort, workerData } from 'node:worker_threads';
import { openSqlite } from './database.js';
import { GroupCommitWriter } from './group-commit.js';
import { MAILBOX_MIGRATIONS } from './mailbox-schema.js';
import { runMailboxWriteOp, toWireError, type WriterAnswer, type WriterReply, type WriterRequest } from './mailbox-write-ops.js';
import { MailboxWrites } from './mailbox-writes.js';
import { boundWal, detachCheckpoints, WalCheckpointer } from './wal-checkpointer.js';

/** What the main thread passes at start. */
export interface MailboxWriterData {
  path: string;
  maxBatchOps?: number;
  maxBatchBytes?: number;
  /** Database size from which checkpoints move to their own thread (default {@link CHECKPOINTER_FROM_BYTES}). */
  checkpointerFromBytes?: number;
}

/**
 * Below this size SQLite's own checkpoints, inside a commit every 1,000 WAL pages, are short (the pages written
 * are few and hot) and no thread is spent on them; past it — a million envelopes is about 1.1 GB — each one
 * copies many scattered index pages and stalls every write behind it, so they move to a thread of their own.
 */
export const CHECKPOINTER_FROM_BYTES = 256 * 1024 * 1024;

/**
 * The writer's page cache once the mailbox is large (SQLite's default is 2 MiB): every store looks up and inserts
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

const port = parentPort;
if (port === null) throw new Error('mailbox-writer-worker runs as a worker thread');
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
const post = (m: WriterReply) => port.postMessage(m);
// the main thread bounds the queue; here every operation it sent is taken
const writer = new GroupCommitWriter(db, {
  maxQueuedOps: Number.MAX_SAFE_INTEGER,
  maxQueuedBytes: Number.MAX_SAFE_INTEGER,
  ...(data.maxBatchOps === undefined ? {} : { maxBatchOps: data.maxBatchOps }),
  ...(data.maxBatchBytes === undefined ? {} : { maxBatchBytes: data.maxBatchBytes }),
  onBatchError: (err) => post({ type: 'batch_error', error: toWireError(err) }),
});

port.on('message', (m: WriterRequest) => {
  if (m.type === 'close') {
    void writer.close().then(async () => {
      await checkpointer?.stop();
      db.close();
      post({ type: 'closed' });
      port.close();
    });
    return;
  }
  let bytes = 0;
  for (const { op } of m.ops) if (op.kind === 'put') bytes += op.req.entry.envelope.byteLength;
  // a large envelope's pages must not fill the page cache (and the process's memory): a small cache spills them
  // to the WAL as they are written; the index pages are read back on demand afterwards
  const large = bytes >= LARGE_WRITE_BYTES;
  if (large) setCache(LARGE_WRITE_CACHE_KIB);
  const answers = m.ops.map(({ id, op }) => {
    const opBytes = op.kind === 'put' ? op.req.entry.envelope.byteLength : 0;
    return writer.submit(() => runMailboxWriteOp(writes, op), opBytes).then(
      (value): WriterAnswer => ({ id, ok: true, value }),
      (err: unknown): WriterAnswer => ({ id, ok: false, error: toWireError(err) }),
    );
  });
  void Promise.all(answers).then((a) => {
    post({ type: 'done', answers: a, stats: { ...writer.stats, checkpointerThread: checkpointer !== null, cacheKib } });
    if (large) setCache(steadyCacheKib());
    checkpointsForSize();
    if (checkpointer !== null) {
      checkpointer.afterCommit(db);
      boundWal(db, data.path);
    }
  });
});
