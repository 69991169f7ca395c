/**
 * The thread side of a store's writer thread (`worker-writer.ts` is the owner's side): its own connection runs every
 * operation it is sent through a {@link GroupCommitWriter}, and each batch's answers are posted only after the
 * transactions holding them committed, so the owner's event loop keeps serving requests while a commit and its
 * fsync are in progress. A writer module (`mailbox-writer-worker.ts`, `relay-writer-worker.ts`) opens its
 * database and hands it here with how its operations run.
 */
import { parentPort } from 'node:worker_threads';
import type { SqliteDb } from './database.js';
import { GroupCommitWriter } from './group-commit.js';
import type { OpRunner, WriteOp } from './op-writer.js';
import { toWireError, type WriterAnswer, type WriterReply, type WriterRequest } from './writer-wire.js';

/** The batch bounds the owner passes in its `workerData`. */
export interface WriterThreadData {
  path: string;
  maxBatchOps?: number;
  maxBatchBytes?: number;
}

/** What a writer module hands to {@link serveWriterThread}. */
export interface WriterThreadSpec<Op extends WriteOp> {
  db: SqliteDb;
  data: WriterThreadData;
  runner: OpRunner<Op>;
  /** The bytes an operation holds (its batch's byte bound counts them). */
  bytesOf(op: Op): number;
  /** Before a batch of `bytes` runs. */
  beforeBatch?(bytes: number): void;
  /** After a batch of `bytes` was answered. */
  afterBatch?(bytes: number): void;
  /** What the store reports of its writer beyond commit counts (sent with every answer). */
  info?(): Record<string, number | boolean>;
  /** After the last commit, before the connection closes. */
  beforeClose?(): Promise<void>;
}

/** Serves the owner's batches on this worker thread until it asks to close. */
export function serveWriterThread<Op extends WriteOp>(spec: WriterThreadSpec<Op>): void {
  const port = parentPort;
  if (port === null) throw new Error('a writer module runs as a worker thread');
  const { db, data, runner } = spec;
  const post = (m: WriterReply) => port.postMessage(m);
  // the owner bounds the queue; here every operation it sent is taken
  const writer = new GroupCommitWriter(db, {
    maxQueuedOps: Number.MAX_SAFE_INTEGER,
    maxQueuedBytes: Number.MAX_SAFE_INTEGER,
    ...(data.maxBatchOps === undefined ? {} : { maxBatchOps: data.maxBatchOps }),
    ...(data.maxBatchBytes === undefined ? {} : { maxBatchBytes: data.maxBatchBytes }),
    onBatchError: (err) => post({ type: 'batch_error', error: toWireError(err) }),
  });

  port.on('message', (m: WriterRequest<Op>) => {
    if (m.type === 'close') {
      void writer.close().then(async () => {
        await spec.beforeClose?.();
        db.close();
        post({ type: 'closed' });
        port.close();
      });
      return;
    }
    const sizes = m.ops.map(({ op }) => spec.bytesOf(op));
    const bytes = sizes.reduce((a, b) => a + b, 0);
    spec.beforeBatch?.(bytes);
    const answers = m.ops.map(({ id, op }, i) =>
      writer
        .submit(() => runner.run(op), sizes[i]!, runner.sync?.(op) ?? true)
        .then(
          (value): WriterAnswer => ({ id, ok: true, value }),
          (err: unknown): WriterAnswer => ({ id, ok: false, error: toWireError(err) }),
        ),
    );
    void Promise.all(answers).then((a) => {
      post({ type: 'done', answers: a, stats: { ...writer.stats, info: spec.info?.() ?? {} } });
      spec.afterBatch?.(bytes);
    });
  });
}
