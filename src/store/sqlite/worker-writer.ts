/**
 * The main thread's side of the mailbox writer thread (`mailbox-writer-worker.ts`): operations submitted during
 * one event-loop turn go to the thread as one message, and each promise settles when the thread reports the
 * operation's transaction committed — never before (DESIGN.md principle 8: a 202 means durably written). The
 * queue is bounded here, by operations and bytes in flight (429 `rate_limited`, as the in-thread writer).
 */
import type { Worker } from 'node:worker_threads';
import { DdnError } from '../../base/errors.js';
import type { GroupCommitOptions } from './group-commit.js';
import type { MailboxWriter } from './mailbox-writer.js';
import type { MailboxWriterData } from './mailbox-writer-worker.js';
import { fromWireError, type MailboxWriteOp, type WriterReply, type WriterRequest } from './mailbox-write-ops.js';
import { startSiblingWorker } from './sibling-worker.js';

interface InFlight {
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
  bytes: number;
}

/** Mailbox writes on a writer thread with its own connection to `path`. */
export class WorkerMailboxWriter implements MailboxWriter {
  private readonly worker: Worker;
  private readonly inFlight = new Map<number, InFlight>();
  private outbox: { id: number; op: MailboxWriteOp }[] = [];
  private nextId = 0;
  private queuedBytes = 0;
  private scheduled = false;
  private closed = false;
  private failure: unknown;
  private idle: (() => void)[] = [];
  private readonly exited: Promise<void>;
  private readonly maxQueuedOps: number;
  private readonly maxQueuedBytes: number;
  private statsNow = { commits: 0, operations: 0, checkpointerThread: false };

  constructor(
    path: string,
    private readonly options: GroupCommitOptions = {},
    checkpointerFromBytes?: number,
  ) {
    this.maxQueuedOps = options.maxQueuedOps ?? 10_000;
    this.maxQueuedBytes = options.maxQueuedBytes ?? 512 * 1024 * 1024;
    const workerData: MailboxWriterData = {
      path,
      ...(options.maxBatchOps === undefined ? {} : { maxBatchOps: options.maxBatchOps }),
      ...(options.maxBatchBytes === undefined ? {} : { maxBatchBytes: options.maxBatchBytes }),
      ...(checkpointerFromBytes === undefined ? {} : { checkpointerFromBytes }),
    };
    this.worker = startSiblingWorker('mailbox-writer-worker', workerData);
    // an idle writer never keeps the process alive; pending writes do
    this.worker.unref();
    this.worker.on('message', (m: WriterReply) => this.onReply(m));
    this.worker.on('error', (err) => this.fail(err));
    this.exited = new Promise((resolve) => this.worker.once('exit', () => {
      this.fail(new Error('the mailbox writer thread exited'));
      resolve();
    }));
  }

  get stats(): { readonly commits: number; readonly operations: number } {
    return this.statsNow;
  }

  /** Whether the thread's checkpoints run on a checkpointer thread (as of its last answer). */
  get checkpointerThread(): boolean {
    return this.statsNow.checkpointerThread;
  }

  submit(op: MailboxWriteOp, bytes: number): Promise<unknown> {
    if (this.closed || this.failure !== undefined) return Promise.reject(new DdnError('service_unavailable', 'the store is closing'));
    const n = this.inFlight.size;
    if (n >= this.maxQueuedOps || (n > 0 && this.queuedBytes + bytes > this.maxQueuedBytes)) {
      return Promise.reject(new DdnError('rate_limited', 'the write queue is full', { retry_after_seconds: 1 }));
    }
    return new Promise((resolve, reject) => {
      const id = this.nextId++;
      this.inFlight.set(id, { resolve, reject, bytes });
      this.queuedBytes += bytes;
      this.outbox.push({ id, op });
      if (this.inFlight.size === 1) this.worker.ref();
      this.schedule();
    });
  }

  settle(): Promise<void> {
    if (this.inFlight.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  async close(): Promise<void> {
    if (this.closed) return this.exited;
    this.closed = true;
    await this.settle();
    this.worker.ref();
    if (this.failure === undefined) this.post({ type: 'close' });
    await this.exited;
  }

  private post(m: WriterRequest): void {
    this.worker.postMessage(m);
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      const ops = this.outbox;
      this.outbox = [];
      if (ops.length > 0 && this.failure === undefined) this.post({ type: 'batch', ops });
    });
  }

  private onReply(m: WriterReply): void {
    if (m.type === 'batch_error') {
      this.options.onBatchError?.(fromWireError(m.error));
      return;
    }
    if (m.type === 'closed') return;
    this.statsNow = m.stats;
    for (const a of m.answers) {
      const p = this.inFlight.get(a.id);
      if (p === undefined) continue;
      this.inFlight.delete(a.id);
      this.queuedBytes -= p.bytes;
      if (a.ok) p.resolve(a.value);
      else p.reject(fromWireError(a.error));
    }
    this.afterAnswers();
  }

  /** The thread failed or exited: every operation still waiting fails, as a failed commit would. */
  private fail(err: unknown): void {
    if (this.failure !== undefined) return;
    this.failure = err;
    if (this.inFlight.size > 0) this.options.onBatchError?.(err);
    const failed = new DdnError('insufficient_storage', 'the write could not be persisted');
    for (const p of this.inFlight.values()) p.reject(failed);
    this.inFlight.clear();
    this.queuedBytes = 0;
    this.outbox = [];
    this.afterAnswers();
  }

  private afterAnswers(): void {
    if (this.inFlight.size > 0) return;
    if (!this.closed) this.worker.unref();
    for (const f of this.idle.splice(0)) f();
  }
}
