/**
 * The Cache's mailbox in its own SQLite file (`<data-dir>/cache.sqlite`, WAL, `synchronous = FULL`): envelopes
 * as received (BLOB, last column so metadata reads never touch it; large ones in 1 MiB parts), chunk sets, and
 * proof/node nonces. Reads run on this connection; every write goes through one {@link OpWriter} — for a mailbox
 * file, on this connection with the WAL's fsync on libuv's pool (`mailbox-loop-writer.ts`), or on a writer thread
 * with its own connection (`writerThread`) — so concurrent stores share a transaction and an fsync, and the event
 * loop keeps serving while that fsync is in progress.
 */
import { sweepInBatches } from '../../base/periodic-sweeper.js';
import type {
  ChunkSetView,
  EnvelopeBytes,
  EntryWithEnvelope,
  MailboxStore,
  MailboxUsage,
  MessagePage,
  PutRequest,
  RetrievedEntry,
  PutResult,
  SummaryEntry,
  SweepResult,
} from '../../cache/mailbox-store.js';
import { DEFAULT_READ_CACHE_LIMITS, RecipientReadCache, type MailboxVersion, type ReadCacheLimits, type ReadCacheStats } from '../../cache/read-cache.js';
import type { NonceClaim } from '../../ports/nonce-registry.js';
import { openSqlite, type SqliteDb } from './database.js';
import { nonceKey } from './nonce-key.js';
import {
  asBytes,
  COL,
  ENVELOPE_TEXT,
  MAILBOX_MIGRATIONS,
  META_COLUMNS,
  RETRIEVED_COL,
  RETRIEVED_COLUMNS,
  STORE_ORDER,
  SUMMARY_COLUMNS,
  toMeta,
  toRetrieved,
  toSummary,
  VISIBLE,
  type MetaEnvelopeRow,
  type RetrievedRow,
  type SetRow,
  type SummaryRow,
} from './mailbox-schema.js';
import { mailboxOpRunner, type MailboxWriteOp, type MailboxWriteResults } from './mailbox-write-ops.js';
import { MailboxWrites } from './mailbox-writes.js';
import type { OpWriter } from './op-writer.js';
import type { StorageGuard } from '../storage-guard.js';
import { storeWriter, type WorkerWriterOptions } from './worker-writer.js';
import { GuardedOpWriter } from './guarded-writer.js';
import { type CheckpointerStats, mailboxCheckpoints } from './wal-checkpointer.js';
import { MailboxLoopWriter } from './mailbox-loop-writer.js';

export { ENVELOPE_PART_BYTES, MAILBOX_MIGRATIONS } from './mailbox-schema.js';

/** Options of {@link SqliteMailboxStore.open}. */
export interface SqliteMailboxOptions {
  writer?: WorkerWriterOptions;
  /**
   * Run writes on the calling thread's connection under `synchronous = FULL`, with SQLite's own checkpoints (always so
   * for `:memory:`; tests that inject storage faults into that connection).
   */
  inThreadWriter?: boolean;
  /**
   * Run writes on a writer thread with its own connection (`ddn-mailbox-w`), the default before session 39; else a
   * file's writes run on the calling thread's connection, their fsyncs on libuv's pool (`mailbox-loop-writer.ts`).
   */
  writerThread?: boolean;
  /**
   * Database size from which the mailbox counts as large (tests lower it): its writer keeps the larger page cache,
   * and a writer thread's checkpoints move to a thread of their own.
   */
  checkpointerFromBytes?: number;
  /** Bounds of the per-recipient read cache (`maxBytes` 0: none); default {@link DEFAULT_READ_CACHE_LIMITS}. */
  readCache?: ReadCacheLimits;
  /** The data directory's storage guard: stores are refused while the disk is full, nonces and acks go on. */
  guard?: StorageGuard;
}

/** {@link MailboxStore} on SQLite with group commit. */
export class SqliteMailboxStore implements MailboxStore {
  /** Pages and summaries of unchanged mailboxes, checked against the recipient's version on every read; null: off. */
  private readonly reads: RecipientReadCache | null;
  private readonly q;
  /** Runs its argument in a read transaction; made once, as making one per read cost more than a pull's query. */
  private readonly inTransaction: (read: () => unknown) => unknown;
  private readonly pageBytes: number;

  /** Opens (creating and migrating) `path` with WAL and `synchronous = FULL`. */
  static open(path: string, options: SqliteMailboxOptions = {}): SqliteMailboxStore {
    const db = openSqlite(path, MAILBOX_MIGRATIONS, 'cache', { synchronous: 'FULL' });
    const { checkpointerFromBytes } = options;
    // what the mailbox's WAL holds that the file has not taken in stays below what a full disk's reserve gives back
    const checkpoints = mailboxCheckpoints(options.guard?.givenBackBytes);
    if (path !== ':memory:' && options.inThreadWriter !== true && options.writerThread !== true) {
      const onLoop = new MailboxLoopWriter(db, path, {
        ...options.writer,
        checkpoints,
        ...(checkpointerFromBytes === undefined ? {} : { largeFromBytes: checkpointerFromBytes }),
      });
      const guard = options.guard;
      const writer =
        guard === undefined ? onLoop : new GuardedOpWriter<MailboxWriteOp, MailboxWriteResults>(onLoop, { guard, addsData: (op) => op.kind === 'put' });
      return new SqliteMailboxStore(db, writer, options, onLoop.checkpointerStats);
    }
    const writer = storeWriter<MailboxWriteOp, MailboxWriteResults>(db, path, {
      ...(options.inThreadWriter === undefined ? {} : { inThread: options.inThreadWriter }),
      runner: (d) => mailboxOpRunner(new MailboxWrites(d)),
      module: { name: 'mailbox-writer-worker', label: 'mailbox' },
      data: { checkpoints, ...(checkpointerFromBytes === undefined ? {} : { checkpointerFromBytes }) },
      ...(options.writer === undefined ? {} : { options: options.writer }),
      ...(options.guard === undefined ? {} : { guard: { guard: options.guard, addsData: (op) => op.kind === 'put' } }),
    });
    return new SqliteMailboxStore(db, writer, options, null);
  }

  private constructor(
    private readonly db: SqliteDb,
    private readonly writer: OpWriter<MailboxWriteOp, MailboxWriteResults>,
    options: SqliteMailboxOptions,
    /** What the checkpointer of the writer on the event loop did; null with a writer thread (its own) or in memory. */
    readonly checkpoints: Readonly<CheckpointerStats> | null,
  ) {
    const limits = options.readCache ?? DEFAULT_READ_CACHE_LIMITS;
    this.reads = limits.maxBytes > 0 ? new RecipientReadCache(limits) : null;
    this.inTransaction = db.transaction((read: () => unknown) => read());
    // each statement declares its row once (better-sqlite3 cannot check it): the reads below need no casts
    const p = <R = unknown>(sql: string) => db.prepare<unknown[], R>(sql);
    this.q = {
      set: p<SetRow>('SELECT total_chunks, first_at_ms, first_seq, retry_until_ms, complete FROM cache_chunk_sets WHERE recipient = ? AND group_id = ?'),
      nonceLive: p('SELECT 1 FROM cache_nonce_keys WHERE key = ? AND expires_at_ms > ?'),
      version: p('SELECT version FROM cache_recipient_bytes WHERE recipient = ?').pluck(),
      visibleSummary: p<SummaryRow>(`SELECT ${SUMMARY_COLUMNS} FROM cache_entries e WHERE e.recipient = @did AND ${VISIBLE} ${STORE_ORDER}`).raw(),
      visibleWithEnvelope: p<RetrievedRow>(`SELECT ${RETRIEVED_COLUMNS} FROM cache_entries e WHERE e.recipient = @did AND ${VISIBLE} ${STORE_ORDER}`).raw(),
      firstPart: p<Buffer>('SELECT envelope FROM cache_entries WHERE seq = ?').pluck(),
      partsOf: p<Buffer>('SELECT bytes FROM cache_envelope_parts WHERE seq = ? ORDER BY part').pluck(),
      visibleByKey: p<MetaEnvelopeRow>(`SELECT ${META_COLUMNS}, ${ENVELOPE_TEXT} FROM cache_entries e
        WHERE e.message_key = @key AND e.recipient = @did AND ${VISIBLE}`).raw(),
      setEntries: p<RetrievedRow>(`SELECT ${RETRIEVED_COLUMNS} FROM cache_entries e
        WHERE e.recipient = ? AND e.group_id = ? AND e.expires_at_ms > ? ORDER BY e.sequence_number`).raw(),
      totals: p<{ entries: number; bytes: number }>('SELECT entries, bytes FROM cache_totals WHERE id = 1'),
      incompleteSets: p('SELECT COUNT(*) FROM cache_chunk_sets WHERE complete = 0').pluck(),
      pageCount: p('PRAGMA page_count').pluck(),
      freePages: p('PRAGMA freelist_count').pluck(),
    };
    this.pageBytes = db.pragma('page_size', { simple: true }) as number;
  }

  /** Committed write transactions and the operations they carried. */
  get writeStats(): { readonly commits: number; readonly operations: number } {
    return this.writer.stats;
  }

  /** Operations waiting for the writer. */
  get writeQueue(): number {
    return this.writer.queued;
  }

  /** What the read cache has served and holds. */
  get readCacheStats(): ReadCacheStats {
    return this.reads?.stats ?? { hits: 0, misses: 0, recipients: 0, bytes: 0 };
  }

  // ------------------------------------------------------------------ writes

  put(req: PutRequest): Promise<PutResult> {
    return this.writer.submit({ kind: 'put', req }, req.entry.envelope.byteLength);
  }

  claimNonce(claim: NonceClaim, nowMs: number): Promise<boolean> {
    return this.writer.submit({ kind: 'claim', claim, nowMs }, 0);
  }

  async releaseNonce(claim: NonceClaim): Promise<void> {
    await this.writer.submit({ kind: 'release', claim }, 0);
  }

  ack(did: string, messageIds: readonly string[], nowMs: number, claim: NonceClaim): Promise<string[]> {
    return this.writer.submit({ kind: 'ack', did, messageIds, nowMs, claim }, 0);
  }

  sweep(nowMs: number): Promise<SweepResult> {
    return sweepInBatches(() => this.writer.submit({ kind: 'sweep', nowMs }, 0), {
      expiredEntries: 0,
      purgedChunkSets: 0,
      purgedChunks: 0,
      expiredNonces: 0,
    });
  }

  settle(): Promise<void> {
    return this.writer.settle();
  }

  async close(): Promise<void> {
    await this.writer.close();
    if (this.db.open) this.db.close();
  }

  // ------------------------------------------------------------------ reads

  async usage(): Promise<MailboxUsage> {
    // one row kept by triggers, an indexed count of the incomplete sets, two header reads (as the budget's check)
    return this.snapshot(() => {
      const t = this.q.totals.get();
      return {
        entries: t?.entries ?? 0,
        bytes: t?.bytes ?? 0,
        incompleteChunkSets: this.q.incompleteSets.get() as number,
        budgetUsedBytes: ((this.q.pageCount.get() as number) - (this.q.freePages.get() as number)) * this.pageBytes,
      };
    });
  }

  isNonceClaimed(claim: NonceClaim, nowMs: number): boolean {
    return this.q.nonceLive.get(nonceKey(claim), nowMs) !== undefined;
  }

  async listMessages(did: string, nowMs: number, maxEnvelopeBytes: number): Promise<MessagePage> {
    const read = () => this.snapshot(() => this.listMessagesNow(did, nowMs, maxEnvelopeBytes));
    return this.reads === null ? read() : this.reads.page(did, this.versionOf(did), nowMs, maxEnvelopeBytes, read);
  }

  private listMessagesNow(did: string, nowMs: number, maxEnvelopeBytes: number): MessagePage {
    // one statement, stepped row by row: it stops at the first entry past the byte budget (whose text, at most
    // ENVELOPE_PART_BYTES, is the only envelope read beyond it); large envelopes are read after it, as the
    // connection runs one statement at a time
    const rows: RetrievedRow[] = [];
    let bytes = 0;
    let truncated = false;
    for (const r of this.q.visibleWithEnvelope.iterate({ did, now: nowMs })) {
      const size = r[RETRIEVED_COL.sizeBytes];
      if (rows.length > 0 && bytes + size > maxEnvelopeBytes) {
        truncated = true;
        break;
      }
      bytes += size;
      rows.push(r);
    }
    return { entries: rows.map((r) => this.retrieved(r)), truncated };
  }

  async listSummary(did: string, nowMs: number): Promise<SummaryEntry[]> {
    const read = () => this.q.visibleSummary.all({ did, now: nowMs }).map(toSummary);
    return this.reads === null ? read() : this.reads.summary(did, this.versionOf(did), nowMs, read);
  }

  /** `did`'s mailbox version (migration 5), read before the answer it validates (see `RecipientReadCache`). */
  private versionOf(did: string): MailboxVersion {
    return (this.q.version.get(did) as number | undefined) ?? null;
  }

  async getChunkSet(did: string, groupId: string, nowMs: number): Promise<ChunkSetView | null> {
    return this.snapshot(() => this.getChunkSetNow(did, groupId, nowMs));
  }

  private getChunkSetNow(did: string, groupId: string, nowMs: number): ChunkSetView | null {
    const key = groupId.toLowerCase();
    const set = this.q.set.get(did, key);
    if (set === undefined || set.complete !== 1) return null;
    const rows = this.q.setEntries.all(did, key, nowMs);
    if (rows.length === 0) return null;
    return { total: set.total_chunks, entries: rows.map((r) => this.retrieved(r)) };
  }

  async getMessage(did: string, messageId: string, nowMs: number): Promise<EntryWithEnvelope | null> {
    return this.snapshot(() => {
      const r = this.q.visibleByKey.get({ key: messageId.toLowerCase(), did, now: nowMs });
      return r === undefined ? null : { meta: toMeta(r), envelope: this.envelopeOf(r[COL.seq], r[COL.sizeBytes], r[COL.envelope]) };
    });
  }

  /**
   * Runs reads of several statements on one snapshot: the writer thread commits at any moment, and WAL gives
   * each statement outside a transaction its own.
   */
  private snapshot<T>(read: () => T): T {
    return this.inTransaction(read) as T;
  }

  /** A row's item with its whole envelope. */
  private retrieved(r: RetrievedRow): RetrievedEntry {
    return { meta: toRetrieved(r), envelope: this.envelopeOf(r[RETRIEVED_COL.seq], r[RETRIEVED_COL.sizeBytes], r[RETRIEVED_COL.envelope]) };
  }

  /** An entry's whole envelope: its text (`text`, when read so), or its stored bytes (a large one's parts, uncopied). */
  private envelopeOf(seq: number, size: number, text: string | null): EnvelopeBytes {
    // bytes that are not UTF-8 come back as text with U+FFFD in their place: the body parser admits none, but
    // the answer stays byte-exact whatever the file holds, as such an envelope (or one with a real U+FFFD, which
    // costs nothing but the bytes' read) is read as bytes (the search is immediate in a one-byte string)
    if (text !== null && !text.includes('\uFFFD')) return text;
    const first = this.q.firstPart.get(seq) as Buffer;
    if (size <= first.length) return asBytes(first);
    const parts = [first, ...this.q.partsOf.all(seq)];
    let at = 0;
    for (const p of parts) at += p.length;
    if (at !== size) throw new Error(`stored envelope ${seq} is ${at} bytes, expected ${size}`);
    return parts;
  }
}
