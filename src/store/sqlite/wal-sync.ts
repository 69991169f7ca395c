/**
 * The fsyncs of a WAL file made off the calling thread for a connection that commits under `synchronous = NORMAL`
 * (`GroupCommitOptions.walSyncPath`): the thread — the Cache mailbox's event loop, `mailbox-loop-writer.ts` — goes on
 * with its requests and next transaction while the last ones' fsync is in progress. One fsync is in flight at a
 * time; each covers every commit made before it began, and the commits made meanwhile wait for the next. After a
 * failed fsync, whether any later write reached the disk is unknown (Linux may report a page's write failure once
 * only), so everything waiting fails and so does every later request: the owner syncs in its commits again.
 *
 * The fsyncs run on a thread of their own (`ddn-wal-sync`, `wal-sync-worker.ts`), not on libuv's pool: that pool
 * (4 threads) also runs the process's DNS lookups, and a Relay in the same process resolving endpoints whose names
 * a slow DNS server answers late would hold every thread of it, with each store's `202` waiting behind them.
 * (Session 32 wrote a WAL sync for the mailbox's writer thread, where it did not pay; session 39 put it on libuv's
 * pool: bench/HISTORY.md, sessions 32, 39 and 42.)
 */
import { getSystemErrorName } from 'node:util';
import type { Worker } from 'node:worker_threads';
import { startModuleWorker } from '../../base/module-worker.js';

/** Called once a commit is on stable storage (`err` undefined) or may not be. */
export type SyncedCallback = (err?: unknown) => void;

/**
 * The Int32 slots the thread and its parent share: the parent's latest request number (negative: end), the last one
 * the thread completed, and that fsync's errno (0 when it succeeded). The parent wakes the thread with
 * `Atomics.notify` and waits for it with `Atomics.waitAsync`: no message is built, sent or parsed either way.
 */
export const SLOT = { request: 0, done: 1, errno: 2 } as const;

/** What the fsync thread is started with. */
export interface WalSyncData {
  walPath: string;
  /** Three Int32 {@link SLOT}s. */
  shared: SharedArrayBuffer;
}

export class WalSync {
  private readonly worker: Worker;
  private readonly slots: Int32Array;
  private readonly exited: Promise<void>;
  /** The number of the latest request to the thread. */
  private requested = 0;
  /** Commits made since the fsync in flight began (or since the last one, when none is). */
  private waiting: SyncedCallback[] = [];
  /** The commits the fsync in flight covers; undefined when none is in flight. */
  private covered: SyncedCallback[] | undefined;
  private failure: unknown;
  /** Completed fsyncs (observability; tests check that answers follow them). */
  syncs = 0;

  /** `onSettled`: after each fsync's callbacks ran (the owner may be idle now). */
  constructor(
    private readonly walPath: string,
    private readonly onSettled: () => void,
  ) {
    const shared = new SharedArrayBuffer(4 * 3);
    this.slots = new Int32Array(shared);
    const data: WalSyncData = { walPath, shared };
    this.worker = startModuleWorker(import.meta.url, 'wal-sync-worker', data);
    // an idle thread never keeps its process alive; one with an fsync in flight does (start())
    this.worker.unref();
    this.exited = new Promise((resolve) => this.worker.once('exit', () => resolve()));
    // a thread that fails or ends on its own fails what waits and what comes after: the owner syncs in its commits
    this.worker.on('error', (err) => this.lost(err));
    this.worker.once('exit', () => this.lost(new Error('the WAL fsync thread ended')));
  }

  /** Whether an fsync is in flight or a commit waits for one. */
  get busy(): boolean {
    return this.covered !== undefined || this.waiting.length > 0;
  }

  /** Calls `done` once an fsync that began after this call completed (with the error, should it fail). */
  afterCommit(done: SyncedCallback): void {
    if (this.failure !== undefined) {
      done(this.failure);
      return;
    }
    this.waiting.push(done);
    this.start();
  }

  /** Ends the thread, which closes the WAL's descriptor (after the last fsync: the owner waits until it is not {@link busy}). */
  close(): Promise<void> {
    if (this.failure === undefined) this.failure = new Error('the WAL fsync thread is closed');
    this.worker.ref();
    Atomics.store(this.slots, SLOT.request, -1);
    Atomics.notify(this.slots, SLOT.request);
    return this.exited;
  }

  private start(): void {
    if (this.covered !== undefined || this.waiting.length === 0) return;
    this.covered = this.waiting;
    this.waiting = [];
    const before = this.requested;
    const request = ++this.requested;
    this.worker.ref();
    Atomics.store(this.slots, SLOT.request, request);
    Atomics.notify(this.slots, SLOT.request);
    const wait = Atomics.waitAsync(this.slots, SLOT.done, before);
    if (wait.async) void wait.value.then(() => this.settled(request));
    else queueMicrotask(() => this.settled(request));
  }

  private settled(request: number): void {
    // the thread ended meanwhile: lost() failed what it covered
    if (this.covered === undefined || request !== this.requested) return;
    const covered = this.covered;
    this.covered = undefined;
    this.worker.unref();
    const errno = Atomics.load(this.slots, SLOT.errno);
    if (errno !== 0) this.fail(covered, this.syncError(errno));
    else {
      this.syncs++;
      for (const done of covered) done();
      this.start();
    }
    this.onSettled();
  }

  private syncError(errno: number): Error {
    let code: string | undefined;
    try {
      code = getSystemErrorName(errno);
    } catch {
      // not an errno (-1: the thread had none to give)
    }
    return Object.assign(new Error(`fsync of ${this.walPath} failed${code === undefined ? '' : `: ${code}`}`), code === undefined ? {} : { code, errno });
  }

  private lost(err: unknown): void {
    if (this.failure !== undefined && this.covered === undefined && this.waiting.length === 0) return;
    this.fail(this.covered ?? [], err);
    this.covered = undefined;
    this.onSettled();
  }

  private fail(covered: SyncedCallback[], err: unknown): void {
    if (this.failure === undefined) this.failure = err;
    const all = [...covered, ...this.waiting];
    this.waiting = [];
    for (const done of all) done(err);
  }
}
