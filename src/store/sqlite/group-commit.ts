/**
 * Group commit for one SQLite connection: write operations queued during one event-loop turn run in a single
 * transaction (each inside its own savepoint, so one failing operation does not undo the others) and are
 * answered once that transaction committed — one fsync per batch instead of one per request. The queue is
 * bounded by operation count and by bytes (request bodies are held until their batch commits).
 */
import { DdnError } from '../../base/errors.js';
import type { SqliteDb } from './database.js';
import { WalSync } from './wal-sync.js';

/** `PRAGMA synchronous` as SQLite reports it: 2 is FULL. */
const FULL = 2;

/** Limits of a {@link GroupCommitWriter}. */
export interface GroupCommitOptions {
  /** Queued operations beyond which new ones are refused with 429 `rate_limited` (default 10 000). */
  maxQueuedOps?: number;
  /** Queued bytes beyond which new ones are refused (default 512 MiB). */
  maxQueuedBytes?: number;
  /** Operations per transaction (default 2 000). */
  maxBatchOps?: number;
  /** Bytes per transaction; a single larger operation still runs alone (default 64 MiB). */
  maxBatchBytes?: number;
  /** Called with a failure of the transaction as a whole (a COMMIT that failed). */
  onBatchError?: (err: unknown) => void;
  /**
   * Called after each committed batch with its commit latency in seconds (metrics): here the transaction with its
   * fsync; on a writer thread (`worker-writer.ts`) from the batch's hand-off to the thread to its answers.
   */
  onCommit?: (seconds: number) => void;
  /**
   * The connection's WAL file (`<database>-wal`), for a connection opened with `synchronous = FULL`: commits then run
   * under NORMAL (no fsync inside COMMIT), and a batch with a synced operation is answered only after an fsync of this
   * file that began after its commit returned ({@link WalSync}, off this thread): the next batch's statements and
   * commit run while the last ones' fsync is in progress. Durability is FULL's: a checkpoint syncs the WAL before it
   * copies it (and the database after), so no frame is overwritten before it is on stable storage. After a failed
   * fsync the batches it covered fail (507) and COMMIT syncs itself again. Unset: COMMIT syncs itself.
   */
  walSyncPath?: string;
  /** Before each batch's transaction begins, with the bytes it carries (e.g. to size the page cache for it). */
  beforeBatch?: (bytes: number) => void;
  /**
   * After each batch's COMMIT returned (or failed), outside any transaction, before its fsync when the WAL is synced
   * after commits: checkpoint bookkeeping. What it throws goes to {@link onBatchError}.
   */
  afterBatch?: (bytes: number) => void;
}

interface Pending {
  run: () => unknown;
  bytes: number;
  /** The operation must be on stable storage when answered (else a commit without fsync will do). */
  sync: boolean;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/** True for errors better-sqlite3 raises from SQLite itself (disk full, I/O error, …). */
function isSqliteError(err: unknown): boolean {
  const code = err instanceof Error ? (err as { code?: unknown }).code : undefined;
  return typeof code === 'string' && code.startsWith('SQLITE_');
}

/** A storage failure becomes 507 `insufficient_storage`; coded errors pass through. */
export function toStorageError(err: unknown): unknown {
  if (err instanceof DdnError || !isSqliteError(err)) return err;
  return new DdnError('insufficient_storage', 'the write could not be persisted');
}

/** Serialises and batches the writes of one connection. */
export class GroupCommitWriter {
  private queue: Pending[] = [];
  private queuedBytes = 0;
  private scheduled = false;
  private closed = false;
  private idle: (() => void)[] = [];
  private readonly begin;
  private readonly commit;
  private readonly rollback;
  private readonly savepoint;
  private readonly release;
  private readonly rollbackTo;
  private readonly maxQueuedOps: number;
  private readonly maxQueuedBytes: number;
  private readonly maxBatchOps: number;
  private readonly maxBatchBytes: number;
  /** Whether the connection is relaxed to NORMAL now; undefined when it does not run under FULL. */
  private relaxed: boolean | undefined;
  /** Syncs the WAL after commits ({@link GroupCommitOptions.walSyncPath}); kept after a failure, to wind down. */
  private readonly walSync: WalSync | undefined;
  /** Whether commits are synced by {@link walSync} (false again after an fsync failed). */
  private syncAfterCommit = false;

  constructor(
    private readonly db: SqliteDb,
    private readonly options: GroupCommitOptions = {},
  ) {
    this.begin = db.prepare('BEGIN IMMEDIATE');
    this.commit = db.prepare('COMMIT');
    this.rollback = db.prepare('ROLLBACK');
    this.savepoint = db.prepare('SAVEPOINT op');
    this.release = db.prepare('RELEASE op');
    this.rollbackTo = db.prepare('ROLLBACK TO op');
    this.maxQueuedOps = options.maxQueuedOps ?? 10_000;
    this.maxQueuedBytes = options.maxQueuedBytes ?? 512 * 1024 * 1024;
    this.maxBatchOps = options.maxBatchOps ?? 2_000;
    this.maxBatchBytes = options.maxBatchBytes ?? 64 * 1024 * 1024;
    this.relaxed = db.pragma('synchronous', { simple: true }) === FULL ? false : undefined;
    if (options.walSyncPath !== undefined && this.relaxed !== undefined) {
      this.walSync = new WalSync(options.walSyncPath, () => this.notifyIdle());
      this.syncAfterCommit = true;
    }
  }

  /** Committed transactions and the operations they carried (observability; tests check batching with it). */
  readonly stats = { commits: 0, operations: 0 };

  /** fsyncs of the WAL made after commits ({@link GroupCommitOptions.walSyncPath}; else 0). */
  get walSyncs(): number {
    return this.walSync?.syncs ?? 0;
  }

  /** Operations waiting for their batch. */
  get pending(): number {
    return this.queue.length;
  }

  /**
   * Queues `run` (synchronous, executed inside the batch transaction) and resolves with its result once the
   * batch committed. `bytes` counts toward the queue and batch byte limits. With `sync: false` (bookkeeping whose
   * loss on power failure is harmless) a batch of only such operations commits without an fsync; it is still
   * atomic, and durable once any later synced commit is.
   */
  submit<T>(run: () => T, bytes = 0, sync = true): Promise<T> {
    if (this.closed) return Promise.reject(new DdnError('service_unavailable', 'the store is closing'));
    if (this.queue.length >= this.maxQueuedOps || (this.queue.length > 0 && this.queuedBytes + bytes > this.maxQueuedBytes)) {
      return Promise.reject(new DdnError('rate_limited', 'the write queue is full', { retry_after_seconds: 1 }));
    }
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ run, bytes, sync, resolve: resolve as (v: unknown) => void, reject });
      this.queuedBytes += bytes;
      this.schedule();
    });
  }

  /** Resolves once everything queued so far is committed (or failed). */
  settle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  /** Commits what is queued now and refuses later submissions; resolves once it is answered. */
  async close(): Promise<void> {
    this.closed = true;
    while (this.queue.length > 0) this.flush();
    this.scheduled = false;
    this.notifyIdle();
    await this.settle();
    await this.walSync?.close();
  }

  private isIdle(): boolean {
    return this.queue.length === 0 && !this.scheduled && this.walSync?.busy !== true;
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.flush();
      if (this.queue.length > 0) this.schedule();
      else this.notifyIdle();
    });
  }

  private notifyIdle(): void {
    if (!this.isIdle()) return;
    for (const f of this.idle.splice(0)) f();
  }

  private takeBatch(): Pending[] {
    let n = 0;
    let bytes = 0;
    while (n < this.queue.length && n < this.maxBatchOps) {
      const next = this.queue[n].bytes;
      if (n > 0 && bytes + next > this.maxBatchBytes) break;
      bytes += next;
      n++;
    }
    this.queuedBytes -= bytes;
    return this.queue.splice(0, n);
  }

  /** Before a batch (outside any transaction): NORMAL for a batch of unsynced operations only, else FULL. */
  private setMode(relaxed: boolean): void {
    if (this.relaxed === undefined || this.relaxed === relaxed) return;
    // executed anew each time: SQLite applies this pragma when the statement is compiled, not when it runs
    this.db.pragma(`synchronous = ${relaxed ? 'NORMAL' : 'FULL'}`);
    this.relaxed = relaxed;
  }

  /** Runs one batch in one transaction, between the owner's hooks. */
  private flush(): void {
    const batch = this.takeBatch();
    if (batch.length === 0) return;
    const { beforeBatch, afterBatch } = this.options;
    if (beforeBatch === undefined && afterBatch === undefined) return this.runBatch(batch);
    let bytes = 0;
    for (const p of batch) bytes += p.bytes;
    // a hook's failure (a cache resize, a checkpoint on a full disk) is reported; the batch runs and is answered by its own outcome
    this.hook(beforeBatch, bytes);
    this.runBatch(batch);
    this.hook(afterBatch, bytes);
  }

  private hook(f: ((bytes: number) => void) | undefined, bytes: number): void {
    try {
      f?.(bytes);
    } catch (err) {
      this.options.onBatchError?.(err);
    }
  }

  /** Runs one batch in one transaction. */
  private runBatch(batch: Pending[]): void {
    const outcomes: Outcome[] = [];
    const started = this.options.onCommit === undefined ? 0 : performance.now();
    try {
      this.setMode(this.syncAfterCommit || batch.every((p) => !p.sync));
      this.begin.run();
    } catch (err) {
      for (const p of batch) p.reject(toStorageError(err));
      this.options.onBatchError?.(err);
      return;
    }
    for (const p of batch) {
      try {
        this.savepoint.run();
        const value = p.run();
        this.release.run();
        outcomes.push({ ok: true, value });
      } catch (error) {
        try {
          this.rollbackTo.run();
          this.release.run();
        } catch {
          // the savepoint is gone only if the transaction itself failed; COMMIT below reports that
        }
        outcomes.push({ ok: false, error: toStorageError(error) });
      }
    }
    try {
      this.commit.run();
    } catch (err) {
      try {
        if (this.db.inTransaction) this.rollback.run();
      } catch {
        // nothing more to undo
      }
      this.options.onBatchError?.(err);
      const failure = toStorageError(err);
      const coded = failure instanceof DdnError ? failure : new DdnError('insufficient_storage', 'the write could not be persisted');
      for (const p of batch) p.reject(coded);
      return;
    }
    this.stats.commits++;
    this.stats.operations += batch.length;
    const answer = () => {
      this.options.onCommit?.((performance.now() - started) / 1000);
      batch.forEach((p, i) => {
        const o = outcomes[i];
        if (o.ok) p.resolve(o.value);
        else p.reject(o.error);
      });
    };
    if (this.syncAfterCommit && batch.some((p) => p.sync)) this.walSync!.afterCommit((err) => (err === undefined ? answer() : this.syncFailed(batch, err)));
    else answer();
  }

  /** The WAL's fsync failed: `batch` may not be on stable storage (507, as a failed commit), and COMMIT syncs from now on. */
  private syncFailed(batch: Pending[], err: unknown): void {
    if (this.syncAfterCommit) this.options.onBatchError?.(err);
    this.syncAfterCommit = false;
    const failed = new DdnError('insufficient_storage', 'the write could not be persisted');
    for (const p of batch) p.reject(failed);
  }
}
