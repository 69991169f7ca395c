/**
 * The page cache of the mailbox's writing connection, sized by what it writes: small while the mailbox is small,
 * larger once it is large, and small again for a batch of large envelopes, whose pages must not fill the cache
 * (and the process's memory) — a small cache spills them to the WAL as they are written, and the index pages are
 * read back on demand afterwards. Used by both writers: the event loop's (`mailbox-loop-writer.ts`) and the writer
 * thread's (`mailbox-writer-worker.ts`).
 */
import type { SqliteDb } from './database.js';

/**
 * The cache once the mailbox is large (SQLite's default in this build is 16 MB): every store looks up and inserts
 * into four indexes, and with a million envelopes held their pages no longer fit a smaller one.
 */
const LARGE_MAILBOX_CACHE_KIB = 32 * 1024;
/**
 * The cache of a small mailbox. Every commit that follows a B-tree page split walks the whole hash table of the
 * cache (SQLite renumbers the split's pages through a key past the end of the database, and the commit then drops
 * keys past the end), and a store into a random-key index splits often. The table grows with the pages held, so a
 * cache larger than a small mailbox needs only costs CPU: through the writer thread, a store into a fresh mailbox
 * took 55–57 µs of process CPU with 32 MiB against 48–51 µs with 8 MiB (2 MiB cost as much as 8).
 */
const SMALL_MAILBOX_CACHE_KIB = 8 * 1024;
/** A batch writing this much runs with a cache of {@link LARGE_WRITE_CACHE_KIB}. */
const LARGE_WRITE_BYTES = 1024 * 1024;
const LARGE_WRITE_CACHE_KIB = 2 * 1024;

/** The page cache of one writing connection. */
export class MailboxPageCache {
  private kib = 0;
  private large = false;
  private readonly pageBytes: number;
  private readonly pageCount;

  constructor(private readonly db: SqliteDb) {
    this.pageBytes = db.pragma('page_size', { simple: true }) as number;
    this.pageCount = db.prepare<[], number>('PRAGMA page_count').pluck();
    this.set(SMALL_MAILBOX_CACHE_KIB);
  }

  /** The cache's size now, KiB. */
  get sizeKib(): number {
    return this.kib;
  }

  /** The database file's size now. */
  databaseBytes(): number {
    return (this.pageCount.get() ?? 0) * this.pageBytes;
  }

  /** The mailbox is large from now on: the larger cache between batches. */
  markLarge(): void {
    this.large = true;
    this.set(this.steadyKib());
  }

  beforeBatch(bytes: number): void {
    if (bytes >= LARGE_WRITE_BYTES) this.set(LARGE_WRITE_CACHE_KIB);
  }

  afterBatch(bytes: number): void {
    if (bytes >= LARGE_WRITE_BYTES) this.set(this.steadyKib());
  }

  private steadyKib(): number {
    return this.large ? LARGE_MAILBOX_CACHE_KIB : SMALL_MAILBOX_CACHE_KIB;
  }

  private set(kib: number): void {
    if (kib === this.kib) return;
    this.db.pragma(`cache_size = -${kib}`);
    this.kib = kib;
  }
}
