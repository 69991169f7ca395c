/**
 * The owner's side of a store's writer thread (`writer-thread.ts` is the thread's): operations submitted during
 * one event-loop turn go to the thread as one message, and each promise settles when the thread reports the
 * operation's transaction committed — never before (DESIGN.md principle 8: a 202 means durably written). The
 * queue is bounded here, by operations and bytes in flight (429 `rate_limited`, as the in-thread writer).
 * The Cache's mailbox (`mailbox-writer-worker.ts`) and the Relay's staging store (`relay-writer-worker.ts`) each
 * have one.
 *
 * A thread that dies is replaced after a short pause: the operations it had been sent fail with 507
 * `insufficient_storage` (whether their transaction committed is unknown; a client's identical retry is
 * deduplicated), the ones not yet sent wait for the new thread. More than {@link MAX_RESTARTS} deaths within {@link RESTART_WINDOW_MS} leave the writer failed
 * (503 `service_unavailable` until the process restarts), so a thread that cannot start is not restarted forever.
 */
import type { Worker } from 'node:worker_threads';
import { DdnError } from '../../base/errors.js';
import { startModuleWorker } from '../../base/module-worker.js';
import { ThreadDeaths } from '../../base/thread-deaths.js';
import type { GroupCommitOptions } from './group-commit.js';
import { GuardedOpWriter, type GuardSpec } from './guarded-writer.js';
import type { SqliteDb } from './database.js';
import { InThreadOpWriter, type OpResults, type OpRunner, type OpWriter, type WriteOp } from './op-writer.js';
import type { WriterThreadData } from './writer-thread.js';
import { fromWireError, type WriterReply, type WriterRequest, type WriterThreadStats } from './writer-wire.js';

/** Thread deaths tolerated within {@link RESTART_WINDOW_MS}; one more leaves the writer failed. */
export const MAX_RESTARTS = 5;
export const RESTART_WINDOW_MS = 60_000;
/** Pause before the first restart in a window; it doubles with each further death (50, 100, … 800 ms). */
export const RESTART_DELAY_MS = 50;

/** What the writer thread's owner may want to hear of its restarts. */
export interface WorkerWriterOptions extends GroupCommitOptions {
  /** A writer thread died: `restarted` tells whether a new one took over (else writes fail from now on). */
  onThreadExit?: (err: unknown, restarted: boolean) => void;
}

interface InFlight {
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
  bytes: number;
}

/** Which writer module a {@link WorkerWriter} runs, and for what. */
export interface WriterModule {
  /** The module beside this one (`mailbox-writer-worker`, `relay-writer-worker`). */
  name: string;
  /** What it writes, for messages: `mailbox`, `relay staging store`. */
  label: string;
}

const NO_STATS: WriterThreadStats = { commits: 0, operations: 0, info: {} };

/** A store's writes on a writer thread with its own connection to the store's file. */
export class WorkerWriter<Op extends WriteOp, R extends OpResults<Op>> implements OpWriter<Op, R> {
  private worker: Worker;
  private readonly workerData: WriterThreadData;
  private readonly inFlight = new Map<number, InFlight>();
  /** Operations posted to the current thread (the rest of {@link inFlight} waits in {@link outbox}). */
  private readonly posted = new Set<number>();
  private outbox: { id: number; op: Op }[] = [];
  private nextId = 0;
  private queuedBytes = 0;
  private scheduled = false;
  private closed = false;
  private failure: unknown;
  private idle: (() => void)[] = [];
  private exited!: Promise<void>;
  private readonly deaths = new ThreadDeaths(MAX_RESTARTS, RESTART_WINDOW_MS);
  private readonly maxQueuedOps: number;
  private readonly maxQueuedBytes: number;
  private statsNow = NO_STATS;
  /** Counts of the threads before the current one, so {@link stats} keep growing across restarts. */
  private statsBase = { commits: 0, operations: 0 };
  private restartsNow = 0;
  /** Between a thread's death and its replacement's start: operations wait in {@link outbox}. */
  private down = false;
  /** When each batch posted to the current thread and not yet answered was posted (`performance.now()`), oldest first. */
  private postedAt: number[] = [];

  constructor(
    private readonly module: WriterModule,
    data: WriterThreadData,
    private readonly options: WorkerWriterOptions = {},
  ) {
    this.maxQueuedOps = options.maxQueuedOps ?? 10_000;
    this.maxQueuedBytes = options.maxQueuedBytes ?? 512 * 1024 * 1024;
    this.workerData = {
      ...data,
      ...(options.maxBatchOps === undefined ? {} : { maxBatchOps: options.maxBatchOps }),
      ...(options.maxBatchBytes === undefined ? {} : { maxBatchBytes: options.maxBatchBytes }),
    };
    this.worker = this.start();
  }

  get stats(): { readonly commits: number; readonly operations: number } {
    return { commits: this.statsBase.commits + this.statsNow.commits, operations: this.statsBase.operations + this.statsNow.operations };
  }

  /** What the thread's store reported of itself with its last answer (empty before the first). */
  get info(): Readonly<Record<string, number | boolean>> {
    return this.statsNow.info;
  }

  get queued(): number {
    return this.inFlight.size;
  }

  /** Writer threads started to replace one that died. */
  get restarts(): number {
    return this.restartsNow;
  }

  submit<O extends Op>(op: O, bytes: number): Promise<R[O['kind']]> {
    if (this.closed) return Promise.reject(new DdnError('service_unavailable', 'the store is closing'));
    if (this.failure !== undefined)
      return Promise.reject(new DdnError('service_unavailable', `the ${this.module.label} writer failed; writes are refused until restart`));
    const n = this.inFlight.size;
    if (n >= this.maxQueuedOps || (n > 0 && this.queuedBytes + bytes > this.maxQueuedBytes)) {
      return Promise.reject(new DdnError('rate_limited', 'the write queue is full', { retry_after_seconds: 1 }));
    }
    return new Promise<R[O['kind']]>((resolve, reject) => {
      const id = this.nextId++;
      // the thread runs `op` by the OpHandlers<Op, R> of its module: its answer is R[O['kind']]
      this.inFlight.set(id, { resolve: resolve as (v: unknown) => void, reject, bytes });
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
    // no thread to close when the last one failed, or died and (with nothing left to write) is not replaced
    if (this.failure !== undefined || this.down) return this.exited;
    this.worker.ref();
    this.post({ type: 'close' });
    await this.exited;
  }

  /** A writer thread, answering to this object while it is the current one. */
  private start(): Worker {
    const worker = startModuleWorker(import.meta.url, this.module.name, this.workerData);
    // an idle writer never keeps the process alive; pending writes do
    if (this.inFlight.size === 0) worker.unref();
    let cause: unknown;
    worker.on('message', (m: WriterReply) => {
      if (worker === this.worker) this.onReply(m);
    });
    worker.on('error', (err) => {
      cause = err;
    });
    this.exited = new Promise((resolve) =>
      worker.once('exit', () => {
        if (worker === this.worker) this.onExit(cause ?? new Error(`the ${this.module.label} writer thread exited`));
        resolve();
      }),
    );
    return worker;
  }

  private post(m: WriterRequest<Op>): void {
    this.worker.postMessage(m);
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      if (this.down) return;
      const ops = this.outbox;
      this.outbox = [];
      if (ops.length === 0 || this.failure !== undefined) return;
      for (const { id } of ops) this.posted.add(id);
      this.post({ type: 'batch', ops });
      if (this.options.onCommit !== undefined) this.postedAt.push(performance.now());
    });
  }

  private onReply(m: WriterReply): void {
    if (m.type === 'batch_error') {
      this.options.onBatchError?.(fromWireError(m.error));
      return;
    }
    if (m.type === 'closed') return;
    // the thread answers each batch once, in the order they were posted
    const postedAt = this.postedAt.shift();
    if (postedAt !== undefined) this.options.onCommit?.((performance.now() - postedAt) / 1000);
    this.statsNow = m.stats;
    for (const a of m.answers) {
      const p = this.inFlight.get(a.id);
      if (p === undefined) continue;
      this.inFlight.delete(a.id);
      this.posted.delete(a.id);
      this.queuedBytes -= p.bytes;
      if (a.ok) p.resolve(a.value);
      else p.reject(fromWireError(a.error));
    }
    this.afterAnswers();
  }

  /**
   * The current thread is gone. After `close()` that is the end; otherwise what it had been sent fails as a failed
   * commit would, and a new thread takes the rest — unless threads keep dying.
   */
  private onExit(cause: unknown): void {
    if (this.closed && this.inFlight.size === 0) return;
    const restart = this.deaths.record(Date.now()) && !this.closed;
    this.options.onThreadExit?.(cause, restart);
    this.postedAt = [];
    this.failPosted(restart ? this.posted : new Set(this.inFlight.keys()));
    if (!restart) {
      this.failure = cause;
      this.outbox = [];
      this.afterAnswers();
      return;
    }
    this.statsBase = this.stats;
    this.statsNow = NO_STATS;
    this.down = true;
    this.afterAnswers();
    setTimeout(() => {
      this.down = false;
      if (this.closed && this.inFlight.size === 0) return;
      this.restartsNow++;
      this.worker = this.start();
      if (this.outbox.length > 0) this.schedule();
    }, this.deaths.backoffMs(RESTART_DELAY_MS));
  }

  /** Rejects `ids` with 507: whether their transaction committed is unknown. */
  private failPosted(ids: ReadonlySet<number>): void {
    const failed = new DdnError('insufficient_storage', 'the write could not be persisted');
    for (const id of [...ids]) {
      const p = this.inFlight.get(id);
      if (p === undefined) continue;
      this.inFlight.delete(id);
      this.queuedBytes -= p.bytes;
      p.reject(failed);
    }
    this.posted.clear();
  }

  private afterAnswers(): void {
    if (this.inFlight.size > 0) return;
    if (!this.closed) this.worker.unref();
    for (const f of this.idle.splice(0)) f();
  }
}

/** How {@link storeWriter} builds a store's writer. */
export interface StoreWriterSpec<Op extends WriteOp, R extends OpResults<Op>> {
  /** Write on the calling thread's connection instead of a thread of its own (always so for `:memory:`). */
  inThread?: boolean;
  /** How the operations run on a connection (this one, or the thread's). */
  runner(db: SqliteDb): OpRunner<Op, R>;
  module: WriterModule;
  /** More of the thread's start data than the path. */
  data?: Omit<WriterThreadData, 'path'> & Record<string, unknown>;
  options?: WorkerWriterOptions;
  /** The data directory's storage guard, and which operations add data. */
  guard?: GuardSpec<Op>;
}

/** The writer of the store file `path` opened as `db`: a thread of its own with its own connection, unless asked otherwise. */
export function storeWriter<Op extends WriteOp, R extends OpResults<Op>>(db: SqliteDb, path: string, spec: StoreWriterSpec<Op, R>): OpWriter<Op, R> {
  const writer: OpWriter<Op, R> =
    spec.inThread === true || path === ':memory:'
      ? new InThreadOpWriter<Op, R>(db, spec.runner(db), spec.options)
      : new WorkerWriter<Op, R>(spec.module, { ...spec.data, path }, spec.options);
  return spec.guard === undefined ? writer : new GuardedOpWriter(writer, spec.guard);
}
