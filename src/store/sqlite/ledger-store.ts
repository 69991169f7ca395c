/** SQLite implementation of the ledger store: blocks, transactions and versioned state in one WAL database. */
import { asBuffer } from '../../base/bytes.js';
import type { BlockHeader } from '../../ledger/block.js';
import { deserializeStateValue, serializeStateValue, type StateValue } from '../../ledger/state.js';
import type { BlockExtras, FeedEntry, FeedSummary, FeedTally, LedgerStore, StoredBlock, SubjectHistoryQuery, TxRecord } from '../../ledger/store.js';
import { migrate, type Migration, type SqliteDb } from './database.js';
import type { StorageGuard } from '../storage-guard.js';
import { SqliteLedgerFeed } from './ledger-feed.js';
import { didOfKey, historySql, LEDGER_HISTORY_MIGRATIONS, LEDGER_HISTORY_NAMESPACE, registrationsOfWrite } from './ledger-history.js';

/** Moves pending rows still in ledger_txs (written before migration 3, or by an older version beside it) into ledger_pending, in their order. */
const MOVE_PENDING_SQL = `
  INSERT INTO ledger_pending (tx_hash, extrinsic, subject, submitted_at_ms, meta, bytes)
    SELECT tx_hash, extrinsic, subject, submitted_at_ms, meta, bytes FROM ledger_txs WHERE status = 'pending' ORDER BY seq;
  DELETE FROM ledger_txs WHERE status = 'pending';`;

/**
 * The key of ledger_txs's hash index (migration 6) for the SQL text `hash`: its first 8 bytes after `0x` as a blob
 * (every stored hash is `0x` and 64 lowercase hex digits); a string that is not hex there keys by itself, so that
 * the index answers exactly as one on the whole hash would, whatever the string. SQLite uses an index on an
 * expression only for a query that writes the same expression: migration 6 writes it for `tx_hash`, and
 * FINISHED_TX_SQL builds it with this function (a test checks that its plan searches that index).
 */
function txHashKey(hash: string): string {
  return `coalesce(unhex(substr(${hash}, 3, 16)), ${hash})`;
}

export const LEDGER_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    sql: `
      CREATE TABLE ledger_meta (k TEXT PRIMARY KEY, v BLOB NOT NULL);
      CREATE TABLE ledger_blocks (
        number INTEGER PRIMARY KEY, hash BLOB NOT NULL, parent_hash BLOB NOT NULL, timestamp_ms INTEGER NOT NULL,
        extrinsics_root BLOB NOT NULL, results_root BLOB NOT NULL);
      CREATE TABLE ledger_txs (
        seq INTEGER PRIMARY KEY AUTOINCREMENT, tx_hash TEXT NOT NULL, extrinsic TEXT NOT NULL, status TEXT NOT NULL,
        subject TEXT NOT NULL, submitted_at_ms INTEGER NOT NULL, meta TEXT NOT NULL, bytes BLOB,
        block_number INTEGER, block_index INTEGER, error_name TEXT, error_module TEXT, error_reason TEXT,
        finished_at_ms INTEGER);
      CREATE INDEX ledger_txs_hash ON ledger_txs (tx_hash, seq);
      CREATE INDEX ledger_txs_subject ON ledger_txs (subject, extrinsic, seq);
      CREATE INDEX ledger_txs_block ON ledger_txs (block_number, block_index);
      CREATE INDEX ledger_txs_pending ON ledger_txs (status) WHERE status = 'pending';
      CREATE TABLE ledger_state (key TEXT NOT NULL, block INTEGER NOT NULL, value TEXT, PRIMARY KEY (key, block)) WITHOUT ROWID;
    `,
  },
  {
    // Each state key's newest value and the block that wrote it: a read at or after that block is one lookup, not
    // ledger_state's descent (whose index B-tree carries whole ~850-byte rows in its interior pages too: ~4 per
    // page, ten levels at a million keys). A rowid table, so that its key index stays dense. The trigger keeps it
    // in step with every write of ledger_state, whichever process or version makes it; the backfill takes each
    // key's row of the highest block (SQLite's bare columns of a MAX() aggregate come from that row). Since then
    // the store writes a key's new value into ledger_current itself and ledger_state keeps only the values a later
    // block replaced (SqliteLedgerStore.writeKey): a key written once — a registration's — is one row, not two.
    version: 2,
    sql: `
      CREATE TABLE ledger_current (key TEXT PRIMARY KEY, block INTEGER NOT NULL, value TEXT);
      INSERT INTO ledger_current (key, block, value) SELECT key, MAX(block), value FROM ledger_state GROUP BY key;
      CREATE TRIGGER ledger_current_follow AFTER INSERT ON ledger_state BEGIN
        INSERT INTO ledger_current (key, block, value) VALUES (NEW.key, NEW.block, NEW.value)
          ON CONFLICT (key) DO UPDATE SET block = excluded.block, value = excluded.value WHERE excluded.block >= ledger_current.block;
      END;
    `,
  },
  {
    // Pending admissions in a table of their own, without a secondary index: an admission's row (written, and
    // committed, before its 202) costs one append instead of an entry in each of ledger_txs's indexes. The block
    // that finishes a transaction writes its finished row into ledger_txs and deletes the pending one, in the
    // block's own transaction. A ledger's pending rows move over, in their order. ledger_txs_pending stays: no row
    // enters it any more, and it finds at once the rows an older version still running wrote after a `ddn migrate`
    // (the store moves them when it opens the file: MOVE_PENDING_SQL).
    version: 3,
    sql: `
      CREATE TABLE ledger_pending (
        seq INTEGER PRIMARY KEY, tx_hash TEXT NOT NULL, extrinsic TEXT NOT NULL, subject TEXT NOT NULL,
        submitted_at_ms INTEGER NOT NULL, meta TEXT NOT NULL, bytes BLOB);
    `,
    then: (db) => void db.exec(MOVE_PENDING_SQL),
  },
  {
    // The subject index served one query, a subject's last failure (lastFailure): kept for failed rows only, so
    // that a block's included rows — nearly all of them — are not entered into it (each entry one more page
    // written per block: the subjects are spread over the whole index).
    version: 4,
    sql: `
      DROP INDEX ledger_txs_subject;
      CREATE INDEX ledger_txs_failed ON ledger_txs (subject, extrinsic, seq) WHERE status = 'failed';
    `,
  },
  {
    // The values later blocks replaced, appended to a rowid table (each block's at its end) with a small (key, block)
    // index, instead of inserted into ledger_state: that WITHOUT ROWID tree carries the ~850-byte rows in its
    // interior pages too (~4 to a page), so each insert split pages of big cells — a third of a block's SQLite work
    // and ~22 of a 10-write block's ~52 WAL frames (bench/HISTORY.md, sessions 28 and 29). ledger_state's rows stay
    // where they are (no copy: a large ledger opens at once): a read at an older block looks in both tables
    // (READ_REPLACED_SQL). An older version writing the file beside `ddn migrate` keeps writing ledger_state, which
    // migration 2's trigger still follows.
    version: 5,
    sql: `
      CREATE TABLE ledger_replaced (id INTEGER PRIMARY KEY, key TEXT NOT NULL, block INTEGER NOT NULL, value TEXT);
      CREATE UNIQUE INDEX ledger_replaced_key ON ledger_replaced (key, block);
    `,
  },
  {
    // The hash index keyed by the hash's first 8 bytes ({@link txHashKey}), not its 66 characters: an entry of
    // ~17 bytes instead of ~80, so the index a block inserts into at random (a hash per transaction) is a fifth of
    // the pages — fewer pages to read and cache, fewer splits, one level less at a million transactions. A lookup
    // checks the whole hash on the row it reads anyway (FINISHED_TX_SQL).
    version: 6,
    sql: `
      CREATE INDEX ledger_txs_hash_key ON ledger_txs (coalesce(unhex(substr(tx_hash, 3, 16)), tx_hash));
      DROP INDEX ledger_txs_hash;
    `,
  },
];

/**
 * A key's value at block ? from the values later blocks replaced: the newest at or before it in ledger_replaced
 * (migration 5) or in ledger_state (written before it, or by an older version); ledger_replaced's on a tie (the
 * same block's value, written by both: the same value). Parameters: key, block, key, block.
 */
export const READ_REPLACED_SQL = `SELECT value FROM (
    SELECT block, value, 1 AS newer FROM (SELECT block, value FROM ledger_replaced WHERE key = ? AND block <= ? ORDER BY block DESC LIMIT 1)
    UNION ALL
    SELECT block, value, 0 AS newer FROM (SELECT block, value FROM ledger_state WHERE key = ? AND block <= ? ORDER BY block DESC LIMIT 1)
  ) ORDER BY block DESC, newer DESC LIMIT 1`;

/**
 * Deletes the pending rows of a JSON array of transaction hashes (the transactions a block finishes): one pass over
 * the pending rows, however many the block finishes — ledger_pending has no index on the hash, since it holds only
 * the pool and is written at every admission, read by hash only when a transaction is not in the pool.
 */
export const DELETE_PENDING_SQL = 'DELETE FROM ledger_pending WHERE tx_hash IN (SELECT value FROM json_each(?))';

/**
 * Deletes the pending rows of a JSON array of `[seq, tx hash]` pairs (the rows this store wrote or read, a block's
 * transactions): one search of the rowid per pair, the hash checked on the row, so that a block's work does not
 * grow with the rows still pending behind it ({@link DELETE_PENDING_SQL} reads every one, and its pages push the
 * state's out of SQLite's cache).
 */
export const DELETE_PENDING_AT_SQL = 'DELETE FROM ledger_pending WHERE (seq, tx_hash) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?))';

/**
 * A tx hash's newest finished row (`{ hash }`): one search of ledger_txs's hash index by the hash's key, the whole
 * hash checked on the rows it finds (ledger_pending is not read by hash).
 */
export const FINISHED_TX_SQL = `SELECT * FROM ledger_txs WHERE ${txHashKey('tx_hash')} = ${txHashKey('@hash')} AND tx_hash = @hash ORDER BY seq DESC LIMIT 1`;

/** One page of a subject's history (ledger-history.ts): the history index's rows and the registration its record names. */
export const HISTORY_SQL = historySql(txHashKey);

/** A subject's last failure of one call since a time: through the index of failed rows (migration 4). */
export const LAST_FAILURE_SQL = `SELECT * FROM ledger_txs WHERE subject = ? AND extrinsic = ? AND status = 'failed' AND finished_at_ms >= ?
  ORDER BY seq DESC LIMIT 1`;

/** A pending row read as a {@link TxRow} (ledger_pending keeps only what a pending transaction has). */
const PENDING_ROW = `seq, tx_hash, extrinsic, 'pending' AS status, subject, submitted_at_ms, meta, bytes, NULL AS block_number,
  NULL AS block_index, NULL AS error_name, NULL AS error_module, NULL AS error_reason, NULL AS finished_at_ms`;

/** {@link SqliteLedgerStore.writeKey}'s answer for a write older than the key's newest value (which it left as it was). */
const OLDER = Symbol('older');

/** Past any block index (u32 block numbers, indexes bounded by the block size). */
const AFTER_ANY_INDEX = 2 ** 31;

interface TxRow {
  seq: number;
  tx_hash: string;
  extrinsic: string;
  /** Only this store writes it, from a TxRecord's status. */
  status: TxRecord['status'];
  subject: string;
  submitted_at_ms: number;
  meta: string;
  bytes: Buffer | null;
  block_number: number | null;
  block_index: number | null;
  error_name: string | null;
  error_module: string | null;
  error_reason: string | null;
  finished_at_ms: number | null;
}

interface BlockRow {
  number: number;
  hash: Buffer;
  parent_hash: Buffer;
  timestamp_ms: number;
  extrinsics_root: Buffer;
  results_root: Buffer;
}

const u8 = (b: Buffer): Uint8Array => new Uint8Array(b);

/** ledger_pending's columns, in order. */
type PendingRow = [tx_hash: string, extrinsic: string, subject: string, submitted_at_ms: number, meta: string, bytes: Buffer | null];
/** ledger_txs's columns after seq, in order. */
type FinishedRow = [
  tx_hash: string,
  extrinsic: string,
  status: TxRecord['status'],
  subject: string,
  submitted_at_ms: number,
  meta: string,
  bytes: Buffer | null,
  block_number: number | null,
  block_index: number | null,
  error_name: string | null,
  error_module: string | null,
  error_reason: string | null,
  finished_at_ms: number | null,
  history_via_record: 1 | null,
];

/**
 * A transaction's meta as stored (JSON), made once per meta object: its pending row and its finished row (the block's
 * record keeps the pending record's meta) store the same text. A meta is not changed once its transaction is built.
 */
const metaTexts = new WeakMap<TxRecord['meta'], string>();
function metaJson(meta: TxRecord['meta']): string {
  let text = metaTexts.get(meta);
  if (text === undefined) {
    text = JSON.stringify(meta);
    metaTexts.set(meta, text);
  }
  return text;
}

function toTx(r: TxRow): TxRecord {
  const tx: TxRecord = {
    txHash: r.tx_hash,
    extrinsic: r.extrinsic,
    status: r.status,
    submittedAtMs: r.submitted_at_ms,
    meta: JSON.parse(r.meta) as TxRecord['meta'],
  };
  if (r.bytes) tx.bytes = u8(r.bytes);
  if (r.block_number !== null) tx.blockNumber = r.block_number;
  if (r.block_index !== null) tx.blockIndex = r.block_index;
  if (r.error_name !== null) {
    tx.error = { name: r.error_name, module: r.error_module ?? '' };
    if (r.error_reason) tx.error.reason = r.error_reason;
  }
  if (r.finished_at_ms !== null) tx.finishedAtMs = r.finished_at_ms;
  return tx;
}

/** The named parameters of the subject-history query. */
interface HistoryParams {
  subject: string;
  block: number;
  index: number;
  all: 0 | 1;
  extrinsics: string;
  limit: number;
}

/**
 * A block's state keys in key order, the order of ledger_current's key index: each write descends the index next to
 * the one before (its interior pages just read), not at a random place of it. The order is not seen: the block's
 * writes commit together, each key's independent of the others'.
 */
export function inKeyOrder<V>(writes: ReadonlyMap<string, V>): [string, V][] {
  return [...writes].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

export class SqliteLedgerStore implements LedgerStore {
  private readonly q;
  private readonly feed: SqliteLedgerFeed;
  /**
   * The seq of each pending row this store wrote, or the last {@link pendingTxs} read (a start): a block, or a drop
   * of a start's pool rebuild, finds its rows in one lookup each, not in a pass over the pending rows.
   */
  private pendingSeq = new Map<string, number>();

  /**
   * `guard`: the data directory's storage guard — a full disk answers 507, submissions are refused while it is full,
   * and block production (which only records what was accepted) may use the reserve it gives back. `afterCommit`
   * runs after each of the store's writes has committed (the node's {@link LedgerFile}: its checkpoints).
   */
  constructor(
    private readonly db: SqliteDb,
    private readonly guard?: StorageGuard,
    private readonly afterCommit?: () => void,
  ) {
    migrate(db, LEDGER_HISTORY_MIGRATIONS, LEDGER_HISTORY_NAMESPACE);
    if (db.prepare("SELECT 1 FROM ledger_txs WHERE status = 'pending' LIMIT 1").get() !== undefined) db.transaction(() => db.exec(MOVE_PENDING_SQL))();
    this.q = {
      meta: db.prepare<[string], { v: Buffer }>('SELECT v FROM ledger_meta WHERE k = ?'),
      setMeta: db.prepare('INSERT OR REPLACE INTO ledger_meta (k, v) VALUES (?, ?)'),
      head: db.prepare<[], { n: number | null }>('SELECT MAX(number) AS n FROM ledger_blocks'),
      block: db.prepare<[number], BlockRow>('SELECT * FROM ledger_blocks WHERE number = ?'),
      insertBlock: db.prepare('INSERT INTO ledger_blocks (number, hash, parent_hash, timestamp_ms, extrinsics_root, results_root) VALUES (?, ?, ?, ?, ?, ?)'),
      blockTxs: db.prepare<[number], TxRow>('SELECT * FROM ledger_txs WHERE block_number = ? ORDER BY block_index'),
      readReplaced: db.prepare<[string, number, string, number], { value: string | null }>(READ_REPLACED_SQL),
      readCurrent: db.prepare<[string], { block: number; value: string | null }>('SELECT block, value FROM ledger_current WHERE key = ?'),
      writeOlder: db.prepare('INSERT OR REPLACE INTO ledger_replaced (key, block, value) VALUES (?, ?, ?)'),
      keepReplaced: db.prepare('INSERT OR IGNORE INTO ledger_replaced (key, block, value) VALUES (?, ?, ?)'),
      insertCurrent: db.prepare('INSERT INTO ledger_current (key, block, value) VALUES (?, ?, ?)'),
      updateCurrent: db.prepare('UPDATE ledger_current SET block = ?, value = ? WHERE key = ?'),
      // positional parameters: a named one costs better-sqlite3 a property lookup on the row object each
      insertTx: db.prepare<[FinishedRow]>(
        `INSERT INTO ledger_txs (tx_hash, extrinsic, status, subject, submitted_at_ms, meta, bytes, block_number,
           block_index, error_name, error_module, error_reason, finished_at_ms, history_via_record) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      insertPending: db.prepare<[PendingRow]>(
        'INSERT INTO ledger_pending (tx_hash, extrinsic, subject, submitted_at_ms, meta, bytes) VALUES (?, ?, ?, ?, ?, ?)',
      ),
      deletePending: db.prepare<[string]>(DELETE_PENDING_SQL),
      deletePendingAtSeqs: db.prepare<[string]>(DELETE_PENDING_AT_SQL),
      pending: db.prepare<[], TxRow>(`SELECT ${PENDING_ROW} FROM ledger_pending ORDER BY seq`),
      finishedTx: db.prepare<{ hash: string }, TxRow>(FINISHED_TX_SQL),
      lastFailure: db.prepare<[string, string, number], TxRow>(LAST_FAILURE_SQL),
      history: db.prepare<HistoryParams, TxRow>(HISTORY_SQL),
      indexHistory: db.prepare<{ hash: string }>(
        `UPDATE ledger_txs SET history_via_record = NULL WHERE ${txHashKey('tx_hash')} = ${txHashKey('@hash')} AND tx_hash = @hash AND history_via_record = 1`,
      ),
      txAt: db.prepare<[number, number], TxRow>('SELECT * FROM ledger_txs WHERE block_number = ? AND block_index = ? ORDER BY seq DESC LIMIT 1'),
    };
    const txAt = this.q.txAt;
    this.feed = new SqliteLedgerFeed(db, (n, i) => {
      const r = txAt.get(n, i);
      return r ? toTx(r) : undefined;
    });
  }

  genesisHash(): Uint8Array | undefined {
    return this.readMeta('genesis_hash');
  }

  initGenesis(block: StoredBlock): void {
    this.db.transaction(() => {
      this.insertBlock(block);
      this.q.setMeta.run('genesis_hash', Buffer.from(block.hash));
    })();
  }

  private insertBlock(b: StoredBlock): void {
    const h = b.header;
    this.q.insertBlock.run(h.number, Buffer.from(b.hash), Buffer.from(h.parentHash), h.timestampMs, Buffer.from(h.extrinsicsRoot), Buffer.from(h.resultsRoot));
  }

  headNumber(): number {
    return this.q.head.get()?.n ?? -1;
  }

  getBlock(number: number): StoredBlock | undefined {
    const r = this.q.block.get(number);
    if (!r) return undefined;
    const header: BlockHeader = {
      parentHash: u8(r.parent_hash),
      number: r.number,
      timestampMs: r.timestamp_ms,
      extrinsicsRoot: u8(r.extrinsics_root),
      resultsRoot: u8(r.results_root),
    };
    return { header, hash: u8(r.hash) };
  }

  blockTxs(number: number): TxRecord[] {
    return this.q.blockTxs.all(number).map(toTx);
  }

  /**
   * The key's newest row answers a read at or after its block (finalized and head reads, nearly always); an older
   * block (finality behind the head, historical reads) reads the values later blocks replaced, in ledger_replaced
   * (and ledger_state, for those written before migration 5: READ_REPLACED_SQL). A key no block wrote has no row.
   */
  readState(key: string, atBlock: number): StateValue | undefined {
    const c = this.q.readCurrent.get(key);
    if (c === undefined) return undefined;
    const value = c.block <= atBlock ? c.value : (this.q.readReplaced.get(key, atBlock, key, atBlock)?.value ?? null);
    return value !== null ? deserializeStateValue(value) : undefined;
  }

  /** Runs a write under the storage guard, if any (see the constructor). */
  private write(addsData: boolean, write: () => void): void {
    if (this.guard === undefined) write();
    else this.guard.write(addsData, write);
    this.afterCommit?.();
  }

  commitBlock(block: StoredBlock, writes: Map<string, StateValue | undefined>, txs: TxRecord[], extras: BlockExtras = {}): void {
    const { meta, serialized } = extras;
    this.write(
      false,
      this.db.transaction(() => {
        this.insertBlock(block);
        const n = block.header.number;
        /** Registration tx → its DID, for the DID records this block leaves naming it (ledger-history.ts). */
        const named = new Map<string, string>();
        for (const [k, v] of inKeyOrder(writes)) {
          const replaced = this.writeKey(k, n, v === undefined ? null : (serialized?.get(k) ?? serializeStateValue(v)));
          if (replaced === OLDER) continue;
          const r = registrationsOfWrite(k, v, replaced);
          if (r.named !== undefined) named.set(r.named, didOfKey(k));
          if (r.left !== undefined) this.q.indexHistory.run({ hash: r.left });
        }
        // the finished rows replace the pending ones (a replica's block finds none: it has no pending rows)
        if (txs.length > 0) this.deletePendingOf(txs);
        for (const tx of txs) {
          this.q.insertTx.run(this.insertRow(tx, tx.status === 'included' && named.get(tx.txHash) === tx.meta.subject));
          this.pendingSeq.delete(tx.txHash);
        }
        this.feed.recordBlock(n, txs);
        for (const [k, v] of meta ?? []) this.q.setMeta.run(k, Buffer.from(v));
      }),
    );
  }

  /**
   * Deletes the pending rows of `txs`: those whose seq this store knows by their seq (work bounded by the block);
   * when a row is not found so (a row an older version wrote beside this one), or a transaction's seq is not known
   * (a replica's, a chain's transactions: no pending row, as a rule), by a pass over the pending rows. Returns how
   * many rows it deleted.
   */
  private deletePendingOf(txs: readonly TxRecord[]): number {
    const at: [number, string][] = [];
    for (const tx of txs) {
      const seq = this.pendingSeq.get(tx.txHash);
      if (seq !== undefined) at.push([seq, tx.txHash]);
    }
    const deleted = at.length > 0 ? this.q.deletePendingAtSeqs.run(JSON.stringify(at)).changes : 0;
    return deleted < txs.length ? deleted + this.q.deletePending.run(JSON.stringify(txs.map((t) => t.txHash))).changes : deleted;
  }

  /**
   * Block `n`'s value of `key` (null: deleted). The newest value lives in ledger_current only; the value it
   * replaces is appended to ledger_replaced (migration 5), which so holds, with the rows ledger_state kept before,
   * every value but each key's newest (a ledger written by older versions also holds the newest ones in
   * ledger_state: harmless, a read at an older block asks for `block <= n`). Nothing is written to
   * ledger_state any more: migration 2's trigger, kept for older versions writing it alone, does not run. A block
   * older than the key's newest (never made in order, but kept right) goes to ledger_replaced only. Returns the
   * value the write replaced as the key's newest (undefined: none), or {@link OLDER}.
   */
  private writeKey(key: string, n: number, value: string | null): string | null | undefined | typeof OLDER {
    const c = this.q.readCurrent.get(key);
    if (c === undefined) this.q.insertCurrent.run(key, n, value);
    else if (c.block > n) {
      this.q.writeOlder.run(key, n, value);
      return OLDER;
    } else {
      this.q.updateCurrent.run(n, value, key);
      if (c.block < n) this.q.keepReplaced.run(key, c.block, c.value);
    }
    return c?.value;
  }

  readMeta(key: string): Uint8Array | undefined {
    const r = this.q.meta.get(key);
    return r ? u8(r.v) : undefined;
  }

  writeMeta(key: string, value: Uint8Array): void {
    this.write(false, () => void this.q.setMeta.run(key, Buffer.from(value)));
  }

  /** A pending row: what a transaction has before a block finishes it (ledger_pending's columns, in order). */
  private pendingRow(tx: TxRecord): PendingRow {
    return [tx.txHash, tx.extrinsic, tx.meta.subject, tx.submittedAtMs, metaJson(tx.meta), tx.bytes ? asBuffer(tx.bytes) : null];
  }

  /**
   * A finished row (ledger_txs's columns, in order). An included transaction keeps its bytes: history and followers
   * decode (and verify) what it did. `viaRecord`: a registration its DID's record names, left out of the history
   * index (ledger-history.ts).
   */
  private insertRow(tx: TxRecord, viaRecord: boolean): FinishedRow {
    return [
      tx.txHash,
      tx.extrinsic,
      tx.status,
      tx.meta.subject,
      tx.submittedAtMs,
      metaJson(tx.meta),
      tx.status === 'included' && tx.bytes ? asBuffer(tx.bytes) : null,
      tx.blockNumber ?? null,
      tx.blockIndex ?? null,
      tx.error?.name ?? null,
      tx.error?.module ?? null,
      tx.error?.reason ?? null,
      tx.finishedAtMs ?? null,
      viaRecord ? 1 : null,
    ];
  }

  putPendingTx(tx: TxRecord): void {
    let seq = 0;
    this.write(true, () => void (seq = Number(this.q.insertPending.run(this.pendingRow(tx)).lastInsertRowid)));
    this.pendingSeq.set(tx.txHash, seq);
  }

  putPendingTxs(txs: readonly TxRecord[]): void {
    if (txs.length === 1) return this.putPendingTx(txs[0]!);
    const seqs: number[] = [];
    this.write(
      true,
      this.db.transaction(() => {
        for (const tx of txs) seqs.push(Number(this.q.insertPending.run(this.pendingRow(tx)).lastInsertRowid));
      }),
    );
    txs.forEach((tx, i) => this.pendingSeq.set(tx.txHash, seqs[i]!));
  }

  /** The pending row of `tx`, if any, becomes its finished (failed) row. */
  markDropped(tx: TxRecord): void {
    this.write(
      false,
      this.db.transaction(() => {
        if (this.deletePendingOf([tx]) > 0) this.q.insertTx.run(this.insertRow(tx, false));
      }),
    );
    this.pendingSeq.delete(tx.txHash);
  }

  pendingTxs(): TxRecord[] {
    const rows = this.q.pending.all();
    this.pendingSeq = new Map(rows.map((r) => [r.tx_hash, r.seq]));
    return rows.map(toTx);
  }

  /**
   * A transaction's newest finished row, through ledger_txs's hash index. Pending rows are not read by hash: they are
   * the pool's (the ledger asks its pool first), and ledger_pending has no index on the hash — a lookup of a hash
   * not in it would read every pending row.
   */
  finishedTx(txHash: string): TxRecord | undefined {
    const r = this.q.finishedTx.get({ hash: txHash });
    return r ? toTx(r) : undefined;
  }

  lastFailure(subject: string, extrinsic: string, sinceMs: number): TxRecord | undefined {
    const r = this.q.lastFailure.get(subject, extrinsic, sinceMs);
    return r ? toTx(r) : undefined;
  }

  subjectHistory(q: SubjectHistoryQuery): TxRecord[] {
    const b = q.before;
    const bound = b !== undefined && b.blockNumber <= q.maxBlock ? b : { blockNumber: q.maxBlock, blockIndex: AFTER_ANY_INDEX };
    const rows = this.q.history.all({
      subject: q.subject,
      block: bound.blockNumber,
      index: bound.blockIndex,
      all: q.extrinsics === undefined ? 1 : 0,
      extrinsics: JSON.stringify(q.extrinsics ?? []),
      limit: q.limit,
    });
    return rows.map(toTx);
  }

  feedAfter(afterSeq: number, maxBlock: number, limit: number): FeedEntry[] {
    return this.feed.after(afterSeq, maxBlock, limit);
  }

  feedSummaryAfter(afterSeq: number, maxBlock: number, limit: number): FeedSummary[] {
    return this.feed.summaryAfter(afterSeq, maxBlock, limit);
  }

  feedLastSeq(maxBlock: number): number {
    return this.feed.lastSeq(maxBlock);
  }

  feedTally(maxBlock: number): FeedTally {
    return this.feed.tallyAt(maxBlock);
  }

  feedLatestSummaries(maxBlock: number, limit: number): FeedSummary[] {
    return this.feed.latestSummaries(maxBlock, limit);
  }

  blockTxCount(number: number): number {
    return this.feed.countInBlock(number);
  }

  close(): void {
    // the database handle is owned by whoever opened it
  }
}
