/**
 * Checkpoints of the mailbox's WAL, off the writer's critical path. With SQLite's automatic checkpoint, the commit
 * that crosses 1 000 WAL pages also copies them into the database file and syncs it; on a large mailbox those are
 * random index pages, and every write waits behind that commit (the growth benchmark: commit p99 20 ms at 1M
 * envelopes against 2–4 ms with the checkpoints elsewhere). The writer connection turns automatic checkpoints off
 * ({@link detachCheckpoints}) and a {@link WalCheckpointer} thread runs them on its own connection.
 *
 * Durability is unchanged: a commit is synced to the WAL before it is answered, whoever copies it later. The WAL
 * stays bounded: the checkpointer rewinds it past {@link CheckpointerOptions.restartFrames}, and should the thread
 * fall behind or fail, the writer checkpoints itself past {@link WAL_WRITER_LIMIT_BYTES} ({@link boundWal}).
 */
import { statSync } from 'node:fs';
import type { Worker } from 'node:worker_threads';
import type { SqliteDb } from './database.js';
import { startSiblingWorker } from './sibling-worker.js';

/** Tuning of a {@link WalCheckpointer}. */
export interface CheckpointerOptions {
  /** Time between passes (default 100 ms): longer passes copy a page written many times once. */
  intervalMs?: number;
  /** WAL frames past which a pass rewinds the WAL (default 16 384, 64 MiB of 4 KiB pages). */
  restartFrames?: number;
}

/** What the checkpointer thread is started with. */
export interface CheckpointerData {
  path: string;
  intervalMs: number;
  restartFrames: number;
}

/** Checkpointer thread → its parent. */
export type CheckpointerReport =
  | { type: 'pass'; log: number; checkpointed: number; restarted: boolean }
  | { type: 'failed'; message: string };

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

/** Runs passive checkpoints of the WAL of `path` on a thread of its own. */
export class WalCheckpointer {
  private readonly worker: Worker;
  private readonly exited: Promise<void>;
  private readonly listeners: ((r: CheckpointerReport) => void)[] = [];
  /** Passes that copied frames, rewinds of the WAL, failed passes (observability; tests wait on them). */
  readonly stats = { passes: 0, restarts: 0, failures: 0 };

  constructor(path: string, options: CheckpointerOptions = {}) {
    const data: CheckpointerData = { path, intervalMs: options.intervalMs ?? 100, restartFrames: options.restartFrames ?? 16_384 };
    this.worker = startSiblingWorker('wal-checkpointer-worker', data);
    // a checkpointer never keeps its process alive
    this.worker.unref();
    this.worker.on('message', (r: CheckpointerReport) => {
      if (r.type === 'failed') this.stats.failures++;
      else {
        this.stats.passes++;
        if (r.restarted) this.stats.restarts++;
      }
      for (const f of this.listeners) f(r);
    });
    this.exited = new Promise((resolve) => this.worker.once('exit', () => resolve()));
    // a thread that failed to start leaves the writer's bound in charge; its exit settles stop()
    this.worker.on('error', () => undefined);
  }

  /** Calls `f` with every report of the thread. */
  onReport(f: (r: CheckpointerReport) => void): void {
    this.listeners.push(f);
  }

  /** Stops the thread after its pass in progress and closes its connection. */
  stop(): Promise<void> {
    // the caller waits for the thread: it must keep the process alive until then
    this.worker.ref();
    this.worker.postMessage('stop');
    return this.exited;
  }
}
