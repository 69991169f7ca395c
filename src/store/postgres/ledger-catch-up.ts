/**
 * A Directory process's catch-up with the shared ledger in one round trip: the blocks after its head (with their
 * state writes, finished transactions and extrinsic bytes) and the pending rows after the last one it saw, as one
 * multi-statement query. Its only inputs are integers, written into the text; the admission path puts `BEGIN` and
 * the admission lock in front, so taking the lock and catching up under it costs one round trip, and when nothing
 * changed every statement is an index probe that finds no row.
 *
 * The reads see one snapshot: outside a transaction they run in a read-only REPEATABLE READ transaction of their
 * own, since under READ COMMITTED each statement sees its own, and a block committed between the read of the blocks
 * and that of the pending rows would hide its transactions from both (neither in a block read nor pending). Under
 * the admission lock no block can commit meanwhile (a block's commit takes the lock).
 */
import type pg from 'pg';
import { deserializeStateValue } from '../../ledger/state.js';
import type { TxRecord } from '../../ledger/store.js';
import { ADMISSION_LOCK, blockFromRow, type BlockRow, type BlockWithEffects, txFromRow, type TxRow } from './ledger-tables.js';

export interface CatchUpRows {
  /** Up to `limit` blocks from `from` on, in order. */
  blocks: BlockWithEffects[];
  /** Pending rows after `afterSeq`, in admission order (read after the blocks). */
  pending: TxRecord[];
  /** The highest seq among them, else `afterSeq`. */
  lastSeq: number;
  /** With {@link BEGIN_ADMISSION} in front: when the admission lock was taken, and how long taking it waited. */
  lock?: LockTaken;
}

/** The admission lock taken, on the server's clock (seconds). */
export interface LockTaken {
  /** From the arrival of the query to the lock held. */
  waitS: number;
  /** When it was held (epoch seconds). */
  atS: number;
}

/**
 * The lock every admission batch and every block commit takes (transaction-scoped), when it was held and how long
 * taking it waited: from the arrival of the query (`statement_timestamp()`) to the lock held, on the server's
 * clock (the select list is evaluated in order, so `clock_timestamp()` is read once the lock is held).
 */
export const TAKE_ADMISSION_LOCK = `SELECT pg_advisory_xact_lock(${ADMISSION_LOCK}), extract(epoch FROM clock_timestamp() - statement_timestamp())::float8 AS lock_wait_s, extract(epoch FROM clock_timestamp())::float8 AS lock_at;`;

/** `BEGIN` and {@link TAKE_ADMISSION_LOCK}. */
export const BEGIN_ADMISSION = `BEGIN; ${TAKE_ADMISSION_LOCK}`;

/**
 * Ends the transaction (`COMMIT` or `ROLLBACK`, releasing the admission lock) and reads the server's clock right
 * after, in the same round trip: epoch seconds, on the clock of {@link LockTaken.atS}.
 */
export async function endTransaction(c: pg.ClientBase, end: 'COMMIT' | 'ROLLBACK'): Promise<number | undefined> {
  const results = (await c.query(`${end}; SELECT extract(epoch FROM clock_timestamp())::float8 AS ended_at;`)) as unknown as pg.QueryResult[];
  const v: unknown = (results[results.length - 1]?.rows[0] as { ended_at?: unknown } | undefined)?.ended_at;
  return typeof v === 'number' ? v : undefined;
}

function int(n: number): string {
  if (!Number.isSafeInteger(n)) throw new Error(`not an integer: ${n}`);
  return String(n);
}

/** What a catch-up reads of a transaction's row (not its conflict keys: only the database compares them). */
const TX_COLUMNS = [
  'seq',
  'tx_hash',
  'extrinsic',
  'status',
  'submitted_at_ms',
  'meta',
  'bytes',
  'block_number',
  'block_index',
  'error_name',
  'error_module',
  'error_reason',
  'finished_at_ms',
  'finished_block',
  'signatures',
];
/**
 * A finished transaction's bytes come once: a block's own from the feed's table (`ledger_txs` keeps them too, and
 * alone for blocks written before that table existed); a dropped one has none.
 */
const FINISHED_TX_COLUMNS = TX_COLUMNS.map((c) => (c === 'bytes' ? 'coalesce(e.bytes, t.bytes) AS bytes' : `t.${c}`)).join(', ');

/** The pending rows' read of a catch-up (an integer only). */
function pendingText(afterSeq: number): string {
  return `
    SELECT ${TX_COLUMNS.join(', ')} FROM ledger_txs WHERE status = 'pending' AND seq > ${int(afterSeq)} ORDER BY seq;`;
}

/** What begins a catch-up's own transaction: its reads see one snapshot. */
const SNAPSHOT_BEGIN = 'BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY;';

/**
 * The four reads of a catch-up, as one text (integers only); with `limit` 0 only the last, the pending rows' (no
 * block to read: three statements fewer to parse, plan and run). `ownSnapshot`: the four in a transaction of their
 * own, which sees one snapshot (for a catch-up outside any transaction).
 */
export function catchUpText(from: number, afterSeq: number, limit: number, ownSnapshot = false): string {
  if (limit <= 0) return pendingText(afterSeq);
  const lo = int(from);
  const hi = int(from + limit);
  const [begin, end] = ownSnapshot ? [SNAPSHOT_BEGIN, ' COMMIT;'] : ['', ''];
  return `${begin}
    SELECT * FROM ledger_blocks WHERE number >= ${lo} AND number < ${hi} ORDER BY number;
    SELECT key, block, value FROM ledger_state WHERE block >= ${lo} AND block < ${hi};
    SELECT ${FINISHED_TX_COLUMNS} FROM ledger_txs t
      LEFT JOIN ledger_block_extrinsics e ON e.block_number = t.block_number AND e.block_index = t.block_index
      WHERE t.finished_block >= ${lo} AND t.finished_block < ${hi} ORDER BY t.finished_block, t.block_index NULLS LAST, t.seq;${pendingText(afterSeq)}${end}`;
}

type Num = string | number;

/**
 * Runs `prefix` (e.g. {@link BEGIN_ADMISSION}) and the catch-up in one round trip. `limit` blocks at most: when
 * as many come back, more may follow (`prefix` is then empty for the next reads). `inTransaction`: `c` is in a
 * transaction (or `prefix` begins one), whose snapshots the reads take; else they run in one of their own.
 */
export async function readCatchUp(
  c: pg.ClientBase,
  from: number,
  afterSeq: number,
  limit: number,
  prefix: string,
  inTransaction: boolean,
): Promise<CatchUpRows> {
  const ownSnapshot = !inTransaction && limit > 0;
  let answer: pg.QueryResult | pg.QueryResult[];
  try {
    // a multi-statement query answers one result per statement (one statement alone: its result)
    answer = (await c.query(prefix + catchUpText(from, afterSeq, limit, ownSnapshot))) as unknown as pg.QueryResult | pg.QueryResult[];
  } catch (e) {
    // the transaction begun here is left aborted: ended, unless the connection broke (its owner discards it)
    if (ownSnapshot) await c.query('ROLLBACK').catch(() => undefined);
    throw e;
  }
  const all = Array.isArray(answer) ? answer : [answer];
  // without the COMMIT's result
  const results = ownSnapshot ? all.slice(0, -1) : all;
  const reads = limit > 0 ? 4 : 1;
  const pendingRows = results[results.length - 1] as pg.QueryResult<TxRow>;
  const [blockRows, stateRows, txRows] = (limit > 0 ? results.slice(-4, -1) : [{ rows: [] }, { rows: [] }, { rows: [] }]) as [
    pg.QueryResult<BlockRow>,
    pg.QueryResult<{ key: string; block: Num; value: string | null }>,
    pg.QueryResult<TxRow>,
  ];
  const byNumber = new Map<number, BlockWithEffects>();
  for (const r of blockRows.rows) byNumber.set(Number(r.number), { block: blockFromRow(r), writes: new Map(), serialized: new Map(), txs: [] });
  for (const w of stateRows.rows) {
    const b = byNumber.get(Number(w.block));
    if (b === undefined) continue;
    b.writes.set(w.key, w.value === null ? undefined : deserializeStateValue(w.value));
    // the replica stores the database's text as it is: serializing the decoded value gives it back
    if (w.value !== null) b.serialized.set(w.key, w.value);
  }
  for (const t of txRows.rows) byNumber.get(Number(t.finished_block))?.txs.push(txFromRow(t));
  const pending = pendingRows.rows.map(txFromRow);
  const last = pendingRows.rows[pendingRows.rows.length - 1];
  const lock = lockTakenOf(results.slice(0, -reads));
  return { blocks: [...byNumber.values()], pending, lastSeq: last ? Number(last.seq) : afterSeq, ...(lock === undefined ? {} : { lock }) };
}

/** What {@link BEGIN_ADMISSION} read among the results of a query's prefix, when it ran there. */
function lockTakenOf(results: readonly pg.QueryResult[]): LockTaken | undefined {
  for (const r of results) {
    const row = r.rows[0] as { lock_wait_s?: unknown; lock_at?: unknown } | undefined;
    if (typeof row?.lock_wait_s === 'number' && typeof row.lock_at === 'number') return { waitS: Math.max(0, row.lock_wait_s), atS: row.lock_at };
  }
  return undefined;
}
