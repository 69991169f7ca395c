/**
 * Checkpoints of the mailbox's WAL, off the writer's critical path. With SQLite's automatic checkpoint, the commit
 * that crosses 1 000 WAL pages also copies them into the database file and syncs it; on a large mailbox those are
 * random index pages, and every write waits behind that commit (the growth benchmark: commit p99 20 ms at 1M
 * envelopes against 2–4 ms with the checkpoints elsewhere). The writer connection turns automatic checkpoints off
 * ({@link detachCheckpoints}) and a {@link WalCheckpointer} thread runs them on its own connection.
 *
 * Durability is unchanged: a commit is synced to the WAL before it is answered, whoever copies it later. The WAL
 * stays bounded: past {@link CheckpointerOptions.rewindFrames} the writer copies the short tail the thread left
 * ({@link WalCheckpointer.afterCommit}) so that its next transaction rewinds the WAL, and should the thread fall
 * behind or fail, the writer checkpoints itself past {@link WAL_WRITER_LIMIT_BYTES} ({@link boundWal}).
 */
import { statSync } from 'node:fs';
import type { Worker } from 'node:worker_threads';
import type { SqliteDb } from './database.js';
import { startModuleWorker } from '../../base/module-worker.js';

/** Tuning of a {@link WalCheckpointer}. */
export interface CheckpointerOptions {
  /** Time between passes (default {@link CHECKPOINT_INTERVAL_MS}): a page written many times between passes is copied once. */
  intervalMs?: number;
  /** WAL frames past which the WAL is rewound (default 16 384, 64 MiB of 4 KiB pages). */
  rewindFrames?: number;
  /** WAL bytes past which the writer checkpoints itself (default {@link WAL_WRITER_LIMIT_BYTES}). */
  writerLimitBytes?: number;
  /**
   * New data (the bytes of the writes committed, as the writer counts them) after which the writer asks the thread
   * for a pass at once instead of at its next interval; default none. Bounds what the file has yet to take in.
   */
  passAfterBytes?: number;
  /** Time before a thread that ended on an error starts again, doubling each time (default 1 s; tests lower it). */
  restartFirstMs?: number;
}

/** What a {@link WalCheckpointer} did since it started (metrics: `ddn_sqlite_checkpoints_total`). */
export interface CheckpointerStats {
  /** The thread's passes that copied frames. */
  passes: number;
  /** The WAL rewound by the writer after a pass found it past its bound. */
  rewinds: number;
  /** The thread's passes that failed (disk full, I/O error): retried at the next; and the thread's end on an error. */
  failures: number;
  /** The writer's own checkpoints past {@link CheckpointerOptions.writerLimitBytes}: the thread fell behind or failed. */
  writerCheckpoints: number;
}

/** What the checkpointer thread is started with. */
export interface CheckpointerData {
  path: string;
  intervalMs: number;
  rewindFrames: number;
}

/** Parent → its checkpointer thread: a pass now (the writer's bytes, {@link CheckpointerOptions.passAfterBytes}), or stop. */
export type CheckpointerCommand = 'pass' | 'stop';

/** Checkpointer thread → its parent. */
export type CheckpointerReport = { type: 'pass'; log: number; checkpointed: number; rewindDue: boolean } | { type: 'failed'; message: string };

/**
 * Below this size SQLite's own checkpoints, inside a commit every 1,000 WAL pages, are short (the pages written
 * are few and hot) and no thread is spent on them; past it — a million envelopes is about 1.1 GB, a million DIDs' ledger about 2.1 GB — each one
 * copies many scattered index pages and stalls every write behind it, so they move to a thread of their own.
 */
export const CHECKPOINTER_FROM_BYTES = 256 * 1024 * 1024;

/**
 * Time between a checkpointer's passes. A pass copies each page the WAL holds once and syncs the database file: a
 * mailbox's hot pages (its table's and indexes' last leaves) are rewritten by every commit, so fewer passes copy and
 * sync less for the same writes. Against 100 ms, the thread's CPU per 1 KiB store fell from 8.3 to 3.3–4.0 µs
 * (`bench:ab --job store1k`, both orders, the rates within the VM's noise), and at a million DIDs a registration's
 * from 94 to 67 µs (bench/HISTORY.md, session 47). The WAL stays bounded by frames, not time
 * ({@link CheckpointerOptions.rewindFrames}). A mailbox's checkpointer passes more often ({@link mailboxCheckpoints}).
 */
export const CHECKPOINT_INTERVAL_MS = 1000;

/** Time between a mailbox checkpointer's passes ({@link mailboxCheckpoints}). */
export const MAILBOX_INTERVAL_MS = 100;

/** Pass-after bytes when no storage reserve sets them (half of what the default reserve gives back). */
export const DEFAULT_PASS_AFTER_BYTES = 3 * 1024 * 1024;
/** Nor fewer than this: a pass per few stores would cost more than it bounds. */
const MIN_PASS_AFTER_BYTES = 64 * 1024;

/**
 * A mailbox's checkpointer: a pass every 100 ms, and one as soon as the stores committed since the writer last asked
 * reach half of what a full disk's storage reserve gives back (`givenBackBytes`, src/store/storage-guard.ts; 6 of
 * the default 8 MiB).
 *
 * The bytes: copying the WAL into the file grows the file by the stores the WAL holds (new rows, not rewritten
 * pages); were that more than the reserve gives back, the pass after the disk fills would take the space, and the
 * acknowledgements and nonces a degraded node still takes would fail with 507 (test/app/storage-full.test.ts did so
 * in CI at one pass a second, sessions 47 and 49). A pass every 100 ms alone held that only below 60 MiB of stores a
 * second; bounded by bytes it holds at any rate and envelope size (1 MiB stores: the same rate, a lower p99;
 * bench/HISTORY.md, session 50).
 *
 * The time: with the byte bound, a pass once a second saved the thread about 2 µs a 1 KiB store, and in two of four
 * A/B runs the event loop spent 15–16 µs more a store (session 50; session 47 had read only the thread's CPU): a
 * read looks each page up among the WAL's frames beyond the last pass, so fewer passes can make every read dearer.
 * A large ledger's checkpointer passes once a second ({@link CHECKPOINT_INTERVAL_MS}) with the same byte bound, its
 * bytes the pages the file grows by (src/store/sqlite/ledger-file.ts).
 */
export function mailboxCheckpoints(givenBackBytes?: number): CheckpointerOptions {
  return { intervalMs: MAILBOX_INTERVAL_MS, passAfterBytes: passAfterBytesOf(givenBackBytes) };
}

/**
 * The new data after which a checkpointer passes at once ({@link CheckpointerOptions.passAfterBytes}): half of what a
 * full disk's storage reserve gives back, or {@link DEFAULT_PASS_AFTER_BYTES} without a reserve.
 */
export function passAfterBytesOf(givenBackBytes?: number): number {
  const bytes = givenBackBytes === undefined || givenBackBytes <= 0 ? DEFAULT_PASS_AFTER_BYTES : Math.floor(givenBackBytes / 2);
  return Math.max(MIN_PASS_AFTER_BYTES, bytes);
}

/** The WAL is truncated back to this size when it rewinds, so one burst does not keep a large file. */
const WAL_KEEP_BYTES = 64 * 1024 * 1024;
/** Past this WAL size the writer checkpoints on its own: the checkpointer is not keeping up. */
export const WAL_WRITER_LIMIT_BYTES = 256 * 1024 * 1024;

/** Turns off `db`'s automatic checkpoints (a {@link WalCheckpointer} runs them) and caps the WAL file it keeps. */
export function detachCheckpoints(db: SqliteDb): void {
  db.pragma('wal_autocheckpoint = 0');
  db.pragma(`journal_size_limit = ${WAL_KEEP_BYTES}`);
}

/** The writer's bound on the WAL, after each of its batches: past the limit it checkpoints itself, as SQLite would. */
export function boundWal(db: SqliteDb, path: string, limitBytes = WAL_WRITER_LIMIT_BYTES): boolean {
  const walBytes = statSync(`${path}-wal`, { throwIfNoEntry: false })?.size ?? 0;
  if (walBytes <= limitBytes) return false;
  db.pragma('wal_checkpoint(PASSIVE)');
  return true;
}

/** Time before a thread that ended on an error is started again; it doubles up to {@link RESTART_MAX_MS}. */
const RESTART_FIRST_MS = 1000;
const RESTART_MAX_MS = 60_000;

/**
 * Runs passive checkpoints of the WAL of `path` on a thread of its own. A thread that ended on an error (it could not
 * open the file: too many open files, say) is counted as a failure and started again after a second, then after
 * twice as long each time it fails again, up to a minute, and a second again once a pass succeeds; meanwhile the
 * writer's own bound keeps the WAL in check ({@link boundWal}).
 */
export class WalCheckpointer {
  private worker: Worker;
  /** Settles when the current thread has exited. */
  private exited: Promise<void>;
  /** Whether the current thread has not exited yet. */
  private running = false;
  private stopping = false;
  private restartTimer: NodeJS.Timeout | null = null;
  private restartDelayMs: number;
  private readonly listeners: ((r: CheckpointerReport) => void)[] = [];
  private rewindDue = false;
  /** Bytes committed since the writer last asked for a pass ({@link CheckpointerOptions.passAfterBytes}). */
  private unasked = 0;
  readonly stats: CheckpointerStats = { passes: 0, rewinds: 0, failures: 0, writerCheckpoints: 0 };
  private readonly writerLimitBytes: number;
  private readonly passAfterBytes: number;
  private readonly data: CheckpointerData;
  private readonly restartFirstMs: number;

  constructor(
    private readonly path: string,
    options: CheckpointerOptions = {},
  ) {
    this.writerLimitBytes = options.writerLimitBytes ?? WAL_WRITER_LIMIT_BYTES;
    this.passAfterBytes = options.passAfterBytes ?? Infinity;
    this.restartFirstMs = options.restartFirstMs ?? RESTART_FIRST_MS;
    this.restartDelayMs = this.restartFirstMs;
    this.data = { path, intervalMs: options.intervalMs ?? CHECKPOINT_INTERVAL_MS, rewindFrames: options.rewindFrames ?? 16_384 };
    [this.worker, this.exited] = this.start();
  }

  private start(): [Worker, Promise<void>] {
    const worker = startModuleWorker(import.meta.url, 'wal-checkpointer-worker', this.data);
    // a checkpointer never keeps its process alive
    worker.unref();
    worker.on('message', (r: CheckpointerReport) => {
      if (r.type === 'failed') this.stats.failures++;
      else {
        this.stats.passes++;
        this.restartDelayMs = this.restartFirstMs;
        if (r.rewindDue) this.rewindDue = true;
      }
      this.tell(r);
    });
    // a thread that ended on an error (failed to open the file, say) leaves the writer's bound in charge: counted and
    // told as a failed pass, so that it shows in the metrics, and started again after its delay
    worker.on('error', (err) => {
      this.stats.failures++;
      this.tell({ type: 'failed', message: err.message });
    });
    const exited = new Promise<void>((resolve) =>
      worker.once('exit', () => {
        this.running = false;
        resolve();
        if (!this.stopping) this.restartLater();
      }),
    );
    this.running = true;
    return [worker, exited];
  }

  private restartLater(): void {
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null;
      if (this.stopping) return;
      [this.worker, this.exited] = this.start();
    }, this.restartDelayMs);
    this.restartTimer.unref();
    this.restartDelayMs = Math.min(RESTART_MAX_MS, this.restartDelayMs * 2);
  }

  private tell(r: CheckpointerReport): void {
    for (const f of this.listeners) f(r);
  }

  /** Calls `f` with every report of the thread. */
  onReport(f: (r: CheckpointerReport) => void): void {
    this.listeners.push(f);
  }

  /**
   * Called by the writer between its transactions. A passive checkpoint never rewinds the WAL while the writer keeps
   * committing (the writer rewinds it only when every frame was copied as its transaction starts), so once the WAL
   * is large the writer copies the few frames committed since the thread's last pass itself: unlike a RESTART
   * checkpoint from the thread, this neither holds the writer's lock nor leaves it sleeping in its busy handler.
   * Should the thread fall behind or fail, the writer then bounds the WAL itself ({@link boundWal}). `bytes`, the
   * batch's, count towards {@link CheckpointerOptions.passAfterBytes}.
   */
  afterCommit(db: SqliteDb, bytes = 0): void {
    this.unasked += bytes;
    if (this.unasked >= this.passAfterBytes) {
      this.unasked = 0;
      if (this.running) this.worker.postMessage('pass' satisfies CheckpointerCommand);
    }
    if (this.rewindDue) {
      const row = (db.pragma('wal_checkpoint(PASSIVE)') as { busy: number }[])[0];
      // busy: the thread's pass is in progress; the next batch tries again
      if (row.busy === 0) {
        this.rewindDue = false;
        this.stats.rewinds++;
      }
    }
    if (boundWal(db, this.path, this.writerLimitBytes)) this.stats.writerCheckpoints++;
  }

  /** Stops the thread after its pass in progress and closes its connection (or the restart it was waiting for). */
  stop(): Promise<void> {
    this.stopping = true;
    if (this.restartTimer !== null) clearTimeout(this.restartTimer);
    this.restartTimer = null;
    if (this.running) {
      // the caller waits for the thread: it must keep the process alive until then
      this.worker.ref();
      this.worker.postMessage('stop' satisfies CheckpointerCommand);
    }
    return this.exited;
  }
}
