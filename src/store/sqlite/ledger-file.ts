/**
 * The ledger's SQLite connection as a node runs it (embedded ledger, replica of a shared one, a chain's ledger, a mirror):
 * a page cache sized for a large ledger, SQLite's own checkpoints every LEDGER_WAL_AUTOCHECKPOINT frames, and
 * checkpoints on a thread of their own once the file is large, or once it has more to take in from the WAL than a
 * full disk's storage reserve allows.
 *
 * A registration inserts at random places of two indexes (a state key's, a transaction hash's; not the history
 * index, src/store/sqlite/ledger-history.ts): at a million DIDs each is tens of MiB, so with a small cache every
 * insert first reads its leaf through the OS, and every commit that crosses SQLite's 1,000-page automatic checkpoint copies the scattered pages it wrote
 * into the file and syncs it, on the event loop (bench/HISTORY.md, session 25). The cache is SQLite's own and grows
 * only with the pages read: a small ledger never fills it.
 */
import { statSync } from 'node:fs';
import { openSqlite, type SqliteDb } from './database.js';
import { LEDGER_MIGRATIONS } from './ledger-store.js';
import {
  CHECKPOINTER_FROM_BYTES,
  type CheckpointerOptions,
  type CheckpointerStats,
  detachCheckpoints,
  passAfterBytesOf,
  WalCheckpointer,
} from './wal-checkpointer.js';

/**
 * WAL frames after which a commit copies the WAL into the database file (SQLite's default: 1,000). The copy runs
 * inside whichever commit crosses the mark — on the event loop, a block's or an admission's — and writes each page
 * the frames hold once, then syncs the file. A block rewrites much the same pages (its index and tree interior
 * pages, the current rows of the DIDs written often): at 100 writes/s the default mark is crossed about once a
 * second and copied the same pages again each time. Ten times the frames copy each such page once per ten, with a
 * tenth of the syncs; the WAL file grows to about 40 MiB (4 KiB pages) before it is rewound.
 */
export const LEDGER_WAL_AUTOCHECKPOINT = 10_000;

/**
 * The checkpointer thread's passes over a large ledger (from {@link CHECKPOINTER_FROM_BYTES}): one a second, every
 * checkpointer's default (`CHECKPOINT_INTERVAL_MS`), and the WAL rewound past 49,152 frames (192 MiB; below the writer's own bound of 256 MiB).
 * A pass copies each page the WAL holds once, however many commits wrote it since the last pass; at a million DIDs a
 * registration writes leaves of two indexes at random (three before session 49), so the copies, their reads of the
 * WAL and the file's fsync are most of what a registration costs beside the event loop. Against passes every 100 ms and 16,384 frames, the
 * CPU off the event loop per registration at a million DIDs fell from 94 to 67 µs and the event loop's stayed at
 * 277–279 µs (medians of 5 rounds, `bench/registration-scale-cpu.ts`; 71 µs with 16,384 frames), and what the last
 * pass left to copy stayed under 6 µs a registration (bench/HISTORY.md, session 47).
 */
export const LEDGER_CHECKPOINTS = { rewindFrames: 49_152 } satisfies CheckpointerOptions;

/**
 * A ledger's checkpoints under a storage reserve that gives back `givenBackBytes` when the disk fills: one as soon as
 * the file has half of that to take in from the WAL ({@link LedgerFile.afterCommit}), so that the blocks a degraded
 * node still writes find the space (as the mailbox's, `mailboxCheckpoints`). The thread makes that pass; a small
 * ledger starts its thread then ({@link LedgerFile.afterCommit}).
 */
export function ledgerCheckpoints(givenBackBytes?: number): CheckpointerOptions {
  return { ...LEDGER_CHECKPOINTS, passAfterBytes: passAfterBytesOf(givenBackBytes) };
}

/** A ledger file's connection and its checkpoints. */
export class LedgerFile {
  private checkpointer: WalCheckpointer | null = null;
  private commits = 0;
  /** The database's pages (those in the WAL too) after the last commit the checkpointer was told of. */
  private pages = 0;
  private readonly pageBytes: number;
  private readonly pageCountQuery: { get(): unknown };
  /** A small ledger's growth since it last looked at what the file holds (bytes; {@link boundGrowth}). */
  private grown = 0;

  /**
   * Opens `path` (migrations applied) with a page cache of `cacheBytes`; checkpoints move to a thread once the file
   * reaches `checkpointerFromBytes`, or once it has `checkpoints.passAfterBytes` to take in from the WAL.
   */
  static open(
    path: string,
    cacheBytes: number,
    checkpointerFromBytes = CHECKPOINTER_FROM_BYTES,
    checkpoints: CheckpointerOptions = LEDGER_CHECKPOINTS,
  ): LedgerFile {
    const db = openSqlite(path, LEDGER_MIGRATIONS, 'ledger');
    db.pragma(`cache_size = -${Math.max(1, Math.floor(cacheBytes / 1024))}`);
    db.pragma(`wal_autocheckpoint = ${LEDGER_WAL_AUTOCHECKPOINT}`);
    return new LedgerFile(db, path, checkpointerFromBytes, checkpoints);
  }

  private constructor(
    readonly db: SqliteDb,
    private readonly path: string,
    private readonly checkpointerFromBytes: number,
    private readonly checkpoints: CheckpointerOptions,
  ) {
    this.pageBytes = Number(db.pragma('page_size', { simple: true }));
    this.pageCountQuery = db.prepare('PRAGMA page_count').pluck();
    this.pages = this.pageCount();
    this.checkpointsForSize();
  }

  /** True once checkpoints run on their own thread (tests, metrics). */
  get checkpointerThread(): boolean {
    return this.checkpointer !== null;
  }

  /** The checkpointer thread's passes, rewinds and failures; null before it starts. */
  get checkpointerStats(): Readonly<CheckpointerStats> | null {
    return this.checkpointer?.stats ?? null;
  }

  /**
   * Called after each of the ledger's commits (outside a transaction): starts the checkpointer once the file is
   * large (looked at every 64 commits), lets it rewind the WAL, and bounds the WAL should the thread fall behind.
   * The pages the commit added are its bytes for {@link CheckpointerOptions.passAfterBytes}: what a pass will grow
   * the file by. A small ledger counts them too ({@link boundGrowth}).
   */
  afterCommit(): void {
    if (this.db.inTransaction) return;
    if (this.checkpointer !== null) return this.checkpointer.afterCommit(this.db, this.pagesAdded() * this.pageBytes);
    const bound = this.checkpoints.passAfterBytes;
    if (bound !== undefined) this.boundGrowth(this.pagesAdded() * this.pageBytes, bound);
    if (++this.commits % 64 === 0) {
      if (bound === undefined) this.pagesAdded();
      this.checkpointsForSize();
    }
  }

  /** The pages the database gained (those in the WAL too) since the last call. */
  private pagesAdded(): number {
    const pages = this.pageCount();
    const added = Math.max(0, pages - this.pages);
    this.pages = pages;
    return added;
  }

  /**
   * A small ledger's bound on what a checkpoint will grow the file by. SQLite's own checkpoints come every
   * {@link LEDGER_WAL_AUTOCHECKPOINT} frames, and at full registration speed a small ledger grows by more between
   * two of them than a storage reserve gives back (14 MiB measured at 2,000 DIDs, bench/HISTORY.md session 51).
   * Once the commits since the last look have added `passAfterBytes`, the file's size says what is left to copy
   * (SQLite's own checkpoints may have copied some); at `passAfterBytes` or more, the checkpoints move to their
   * thread, as a large ledger's, which copies it at once. On the event loop each such checkpoint held it for
   * 18–53 ms and the writes' p99 rose by a third at full speed.
   */
  private boundGrowth(added: number, bound: number): void {
    if (this.path === ':memory:') return;
    this.grown += added;
    if (this.grown < bound) return;
    const uncopied = this.pages * this.pageBytes - (statSync(this.path, { throwIfNoEntry: false })?.size ?? 0);
    this.grown = Math.max(0, uncopied);
    if (uncopied >= bound) this.startThread().afterCommit(this.db, uncopied);
  }

  /** The database's pages, those still in the WAL too. */
  private pageCount(): number {
    return Number(this.pageCountQuery.get());
  }

  /** Starts the checkpointer thread once the file (its pages as of the last commit) is large. */
  private checkpointsForSize(): void {
    if (this.checkpointer !== null || this.path === ':memory:') return;
    if (this.pages * this.pageBytes >= this.checkpointerFromBytes) this.startThread();
  }

  /** The checkpoints on their thread from now on: SQLite's own, on this connection, are turned off. */
  private startThread(): WalCheckpointer {
    detachCheckpoints(this.db);
    return (this.checkpointer = new WalCheckpointer(this.path, this.checkpoints));
  }

  /** Stops the checkpointer thread (after its pass in progress) and closes the connection. */
  async close(): Promise<void> {
    await this.checkpointer?.stop();
    this.checkpointer = null;
    this.db.close();
  }
}
