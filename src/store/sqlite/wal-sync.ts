/**
 * The fsyncs of a WAL file made off the calling thread (libuv's pool) for a connection that commits under
 * `synchronous = NORMAL` (`GroupCommitOptions.walSyncPath`): the thread — the Cache mailbox's event loop,
 * `mailbox-loop-writer.ts` — goes on with its requests and next transaction while the last ones' fsync is in progress.
 * (Session 32 wrote it for the mailbox's writer thread, where it did not pay: bench/HISTORY.md, sessions 32 and 39.) One fsync is in flight at a time; each covers every commit made before it began,
 * and the commits made meanwhile wait for the next. After a failed fsync, whether any later write reached the disk is
 * unknown (Linux may report a page's write failure once only), so everything waiting fails and so does every later
 * request: the owner syncs in its commits again.
 */
import { closeSync, fsync, fsyncSync, openSync } from 'node:fs';
import { dirname } from 'node:path';

/** Called once a commit is on stable storage (`err` undefined) or may not be. */
export type SyncedCallback = (err?: unknown) => void;

export class WalSync {
  private fd: number | undefined;
  /** Commits made since the fsync in flight began (or since the last one, when none is). */
  private waiting: SyncedCallback[] = [];
  private inFlight = false;
  private failure: unknown;
  /** Completed fsyncs (observability; tests check that answers follow them). */
  syncs = 0;

  /** `onSettled`: after each fsync's callbacks ran (the owner may be idle now). */
  constructor(
    private readonly walPath: string,
    private readonly onSettled: () => void,
  ) {}

  /** Whether an fsync is in flight or a commit waits for one. */
  get busy(): boolean {
    return this.inFlight || this.waiting.length > 0;
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

  /** Closes the WAL's descriptor (after the last fsync: the owner waits until it is not {@link busy}). */
  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }

  private start(): void {
    if (this.inFlight || this.waiting.length === 0) return;
    const covered = this.waiting;
    this.waiting = [];
    let fd: number;
    try {
      fd = this.open();
    } catch (err) {
      this.fail(covered, err);
      return;
    }
    this.inFlight = true;
    fsync(fd, (err) => {
      this.inFlight = false;
      if (err !== null) this.fail(covered, err);
      else {
        this.syncs++;
        for (const done of covered) done();
        this.start();
      }
      this.onSettled();
    });
  }

  /**
   * The WAL's descriptor, opened at the first fsync (the file exists once the first commit returned). Its directory is
   * synced then, so that the file's entry is as durable as its frames.
   */
  private open(): number {
    if (this.fd !== undefined) return this.fd;
    const dir = openSync(dirname(this.walPath), 'r');
    try {
      fsyncSync(dir);
    } finally {
      closeSync(dir);
    }
    this.fd = openSync(this.walPath, 'r');
    return this.fd;
  }

  private fail(covered: SyncedCallback[], err: unknown): void {
    this.failure = err;
    const all = [...covered, ...this.waiting];
    this.waiting = [];
    for (const done of all) done(err);
  }
}
