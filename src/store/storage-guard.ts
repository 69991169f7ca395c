/**
 * What a node does when its data directory's disk fills up: degrade, never break.
 *
 * The guard keeps a **reserve file** (`storage.reserve`, `--storage-reserve-bytes`) in the data directory, written
 * while there is room. When a write fails for lack of space and the disk is indeed nearly full, the node goes
 * **degraded**: the reserve is shrunk to a quarter, which gives back the rest to the file system, and from then on
 * every write that adds data (a Cache store, a staged chunk, a Directory submission) is refused up front with 507,
 * so the space freed serves only what keeps the node useful — retrieval-proof nonces, acknowledgements, purges and
 * blocks of transactions already accepted. A node that *starts* on a nearly full disk deletes the rest of the
 * reserve before it opens its databases (SQLite needs a few pages for its WAL and shared-memory files).
 * The guard also looks at the disk every {@link CHECK_INTERVAL_MS}: a nearly full disk makes the node degraded before a
 * write fails, and once there is room for the reserve and as much again, it writes the reserve again and the node
 * takes new data again.
 */
import { closeSync, existsSync, mkdirSync, openSync, rmSync, statfsSync, statSync, truncateSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { DdnError } from '../base/errors.js';
import { insufficientStorage, isStorageFailure } from '../base/storage-errors.js';

/** The reserve file inside the data directory. */
export const RESERVE_FILE = 'storage.reserve';
/** Default size of the reserve. */
export const DEFAULT_RESERVE_BYTES = 8 * 1024 * 1024;
/** Time between the guard's looks at the disk. */
export const CHECK_INTERVAL_MS = 1_000;
/** The reserve file is written in pieces of this size. */
const WRITE_PIECE = 1024 * 1024;

/** How much the file system holding a directory has free (bytes an unprivileged writer may use). */
export type FreeSpace = (dir: string) => number;

export const statfsFree: FreeSpace = (dir) => {
  const s = statfsSync(dir);
  return Number(s.bavail) * Number(s.bsize);
};

/** Options of {@link StorageGuard.open}. */
export interface StorageGuardOptions {
  /** Bytes kept in reserve (0: no reserve file; the node still goes degraded on a full disk). */
  reserveBytes: number;
  logger?: Logger;
  /** How free space is measured (tests inject a disk of their own). */
  freeSpace?: FreeSpace;
  /** Time between looks at the disk (default {@link CHECK_INTERVAL_MS}; 0: only when {@link StorageGuard.check} is called). */
  checkIntervalMs?: number;
}

/** A storage failure: raw (SQLite, file system, PostgreSQL) or already coded 507. */
const isWriteFailure = (err: unknown): boolean => isStorageFailure(err) || (err instanceof DdnError && err.code === 'insufficient_storage');

/** What a failed write throws: a storage failure as 507, anything else as it was. */
const failureOf = (err: unknown): unknown => (isStorageFailure(err) ? insufficientStorage() : err);

/** Tracks whether the disk of one data directory is full, and holds the space kept for that moment. */
export class StorageGuard {
  private degraded = false;
  private timer: NodeJS.Timeout | null = null;
  private readonly path: string;
  private readonly freeSpace: FreeSpace;
  private readonly intervalMs: number;

  private constructor(
    private readonly dir: string,
    private readonly reserveBytes: number,
    private readonly logger: Logger | undefined,
    freeSpace: FreeSpace | undefined,
    intervalMs: number | undefined,
  ) {
    this.path = join(dir, RESERVE_FILE);
    this.freeSpace = freeSpace ?? statfsFree;
    this.intervalMs = intervalMs ?? CHECK_INTERVAL_MS;
  }

  /**
   * The guard of `dir`, looked at before any database opens: on a nearly full disk the whole reserve is given back
   * (so the databases can open) and the node starts degraded; otherwise a missing reserve is written.
   */
  static open(dir: string, options: StorageGuardOptions): StorageGuard {
    mkdirSync(dir, { recursive: true });
    const guard = new StorageGuard(dir, options.reserveBytes, options.logger, options.freeSpace, options.checkIntervalMs);
    if (guard.nearlyFull()) {
      rmSync(guard.path, { force: true });
      guard.enter('the disk is full at start');
    } else {
      guard.topUp();
    }
    if (guard.intervalMs > 0) {
      guard.timer = setInterval(() => guard.check(), guard.intervalMs);
      guard.timer.unref();
    }
    return guard;
  }

  /** What the reserve gives back to the file system when the disk fills (0 without a reserve). */
  get givenBackBytes(): number {
    return this.reserveBytes - this.keptBytes();
  }

  /** What is left of the reserve while the node is degraded: a quarter. */
  private keptBytes(): number {
    return Math.floor(this.reserveBytes / 4);
  }

  /** True while writes that add data are refused. */
  get isDegraded(): boolean {
    return this.degraded;
  }

  /**
   * A write failed with a storage error. If the disk is nearly full the node goes degraded (the reserve gives back
   * most of its space); returns whether it is degraded now — then a write that adds no data may be tried once more.
   */
  noteFailure(): boolean {
    if (!this.degraded && this.nearlyFull()) this.enter('a write failed on a full disk');
    return this.degraded;
  }

  /**
   * Looks at the disk now (the guard does so every {@link CHECK_INTERVAL_MS} by itself): a nearly full disk makes the
   * node degraded; a degraded node whose disk has room for the missing part of the reserve and a whole reserve
   * besides writes its reserve and takes data again. Returns whether the node is degraded.
   */
  check(): boolean {
    if (!this.degraded) {
      if (this.nearlyFull()) this.enter('the disk is nearly full');
      else this.topUp();
      return this.degraded;
    }
    if (this.topUp()) this.leave();
    return this.degraded;
  }

  /** Writes the missing part of the reserve when there is room for it and a whole reserve besides; true when whole. */
  private topUp(): boolean {
    const missing = this.reserveBytes - this.reserveHeld();
    if (this.freeSpace(this.dir) < missing + this.margin()) return false;
    try {
      if (missing > 0) this.writeReserve(this.reserveBytes - missing);
      return true;
    } catch (err) {
      this.logger?.warn({ err }, 'the storage reserve could not be written');
      return false;
    }
  }

  /**
   * Runs a write under the guard: refused with 507 while degraded if it `addsData`; a storage failure is 507 (and may
   * make the node degraded, see {@link noteFailure}), after one more try for a write adding no data that failed
   * just before the reserve was given back.
   */
  write<T>(addsData: boolean, write: () => T): T {
    const before = this.admit(addsData);
    try {
      return write();
    } catch (err) {
      if (!this.retries(err, addsData, before)) throw failureOf(err);
    }
    try {
      return write();
    } catch (err) {
      throw failureOf(err);
    }
  }

  /** {@link write} of an asynchronous write. */
  async writeAsync<T>(addsData: boolean, write: () => Promise<T>): Promise<T> {
    const before = this.admit(addsData);
    try {
      return await write();
    } catch (err) {
      if (!this.retries(err, addsData, before)) throw failureOf(err);
    }
    try {
      return await write();
    } catch (err) {
      throw failureOf(err);
    }
  }

  close(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  /** Refuses a write adding data while degraded; returns whether the node was degraded before the write. */
  private admit(addsData: boolean): boolean {
    if (addsData && this.degraded) throw insufficientStorage();
    return this.degraded;
  }

  /** Whether a failed write is tried once more: it adds no data and its failure just made the node degraded. */
  private retries(err: unknown, addsData: boolean, degradedBefore: boolean): boolean {
    if (!isWriteFailure(err)) return false;
    return this.noteFailure() && !addsData && !degradedBefore;
  }

  /** The free space below which the disk counts as full: the reserve's size, at least 1 MiB. */
  private margin(): number {
    return Math.max(this.reserveBytes, WRITE_PIECE);
  }

  /** True when less than {@link margin} is free (the reserve, if any, counted as used). */
  private nearlyFull(): boolean {
    return this.freeSpace(this.dir) < this.margin();
  }

  private reserveHeld(): number {
    return existsSync(this.path) ? statSync(this.path).size : 0;
  }

  /** Extends the reserve file from `from` to its full size, with real blocks (zeros written). */
  private writeReserve(from: number): void {
    if (this.reserveBytes === 0) return;
    const fd = openSync(this.path, 'a');
    try {
      const piece = Buffer.alloc(Math.min(WRITE_PIECE, this.reserveBytes));
      for (let at = from; at < this.reserveBytes; at += piece.length) {
        writeSync(fd, piece, 0, Math.min(piece.length, this.reserveBytes - at));
      }
    } catch (err) {
      closeSync(fd);
      truncateSync(this.path, from);
      throw err;
    }
    closeSync(fd);
  }

  private enter(why: string): void {
    this.degraded = true;
    if (existsSync(this.path)) truncateSync(this.path, Math.min(this.reserveHeld(), this.keptBytes()));
    this.logger?.warn({ reason: why, data_dir: this.dir }, 'storage is full: new data is refused (507) until space returns');
  }

  private leave(): void {
    this.degraded = false;
    this.logger?.info({ data_dir: this.dir }, 'storage has room again: new data is accepted');
  }
}
