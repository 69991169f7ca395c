/**
 * The Cache mailbox's writer thread: its own connection to the mailbox file (WAL, `synchronous = FULL`) runs
 * every write through a {@link GroupCommitWriter}, so the main thread keeps reading requests while a commit and
 * its fsync are in progress. Operations arrive in batches from `worker-writer.ts`; each answer is posted only
 * after the transaction holding it committed.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openSqlite } from './database.js';
import { GroupCommitWriter } from './group-commit.js';
import { MAILBOX_MIGRATIONS } from './mailbox-schema.js';
import { runMailboxWriteOp, toWireError, type WriterAnswer, type WriterReply, type WriterRequest } from './mailbox-write-ops.js';
import { MailboxWrites } from './mailbox-writes.js';

/** What the main thread passes at start. */
export interface MailboxWriterData {
  path: string;
  maxBatchOps?: number;
  maxBatchBytes?: number;
}

const port = parentPort;
if (port === null) throw new Error('mailbox-writer-worker runs as a worker thread');
const data = workerData as MailboxWriterData;
const db = openSqlite(data.path, MAILBOX_MIGRATIONS, 'cache', { synchronous: 'FULL' });
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
    void writer.close().then(() => {
      db.close();
      post({ type: 'closed' });
      port.close();
    });
    return;
  }
  const answers = m.ops.map(({ id, op }) =>
    writer.submit(() => runMailboxWriteOp(writes, op), op.kind === 'put' ? op.req.entry.envelope.byteLength : 0).then(
      (value): WriterAnswer => ({ id, ok: true, value }),
      (err: unknown): WriterAnswer => ({ id, ok: false, error: toWireError(err) }),
    ),
  );
  void Promise.all(answers).then((a) => post({ type: 'done', answers: a, stats: { ...writer.stats } }));
});
