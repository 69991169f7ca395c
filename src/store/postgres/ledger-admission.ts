/**
 * An admission batch stored without holding the admission lock across a client round trip.
 *
 * A Directory process checks a batch on its own view of the pool (the blocks up to its head, the pending rows up
 * to the last seq it copied), recording every key the checks read ({@link AdmissionBatch.reads}). One statement
 * then takes the admission lock, confirms the view was good enough, stores the rows and commits: the lock is held
 * only while PostgreSQL works. The view is good enough when no block came after its head and no row pending after
 * its last seq wrote a key the batch read (each row keeps hashes of what it wrote, `ledger_txs.keys`): then every
 * check reads the same values it would read on the up-to-date pool, and every verdict is the one a check under the
 * lock would give. Otherwise nothing is stored and the batch takes the usual turn under the lock (ledger-sync.ts).
 * The pool's size limit, which every admission reads, is checked by the statement itself, under the lock.
 *
 * The statement is the stored function `ddn_admit_on_view` (migration 3, ledger-tables.ts).
 *
 * Keys are hashed to 32 bits: two keys with one hash only make a batch take the usual turn.
 */
import type { TxRecord } from '../../ledger/store.js';
import { pendingColumns, type Queryable } from './ledger-tables.js';
import type { LockTaken } from './ledger-catch-up.js';

/** What {@link admitOnView} did. */
export type ViewAdmission =
  /** The rows are stored (none, when the batch had none): every verdict stands. */
  | {
      outcome: 'stored';
      /** The highest seq of the stored rows. */
      lastSeq?: number;
      /** No other row came after the view: the stored rows follow it directly. */
      contiguous: boolean;
      lock?: LockTaken;
      endedAtS?: number;
    }
  /** A block after the view's head, a row after it that wrote a key the batch read, or a full pool: nothing stored. */
  | { outcome: 'stale' | 'conflict' | 'full'; lock?: LockTaken; endedAtS?: number };

/** A key's 32-bit hash (FNV-1a over its UTF-16 code units), as PostgreSQL's INT4. */
export function conflictKey(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return h | 0;
}

/** An INT4[] literal of the keys' hashes (`{1,-2}`). */
export function conflictKeysLiteral(keys: Iterable<string>): string {
  const out: number[] = [];
  for (const k of keys) out.push(conflictKey(k));
  return `{${out.join(',')}}`;
}

export interface ViewBatch {
  /** The view: its head block and the last pending row it holds. */
  head: number;
  afterSeq: number;
  /** Every key the batch's checks read. */
  reads: ReadonlySet<string>;
  maxPool: number;
  /** The rows to store, in order, with the keys each writes. */
  rows: readonly { tx: TxRecord; writes: readonly string[] }[];
  /** Where the stored rows are announced (`pending:<highest seq>`); none without. */
  notifyChannel: string | undefined;
}

type Num = string | number;

interface ResultRow {
  outcome: string;
  last_seq: Num | null;
  contiguous: boolean | null;
  lock_wait_s: number | null;
  lock_at: number | null;
  ended_at: number | null;
}

/** Stores `b.rows` in one statement if the view holds for them (see the file's comment). */
export async function admitOnView(c: Queryable, b: ViewBatch): Promise<ViewAdmission> {
  // a named statement: each connection parses and plans it once, not at every admission
  const r = await c.query<ResultRow>({
    name: 'ddn_admit_on_view',
    text: 'SELECT * FROM ddn_admit_on_view($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)',
    values: [
      b.head,
      b.afterSeq,
      conflictKeysLiteral(b.reads),
      b.maxPool,
      b.notifyChannel ?? null,
      ...pendingColumns(b.rows.map((row) => row.tx)),
      b.rows.map((row) => conflictKeysLiteral(row.writes)),
    ],
  });
  const row = r.rows[0]!;
  const lock = row.lock_wait_s === null || row.lock_at === null ? {} : { lock: { waitS: Math.max(0, row.lock_wait_s), atS: row.lock_at } };
  const ended = row.ended_at === null ? {} : { endedAtS: row.ended_at };
  if (row.outcome === 'stored') {
    return { outcome: 'stored', contiguous: row.contiguous ?? true, ...(row.last_seq === null ? {} : { lastSeq: Number(row.last_seq) }), ...lock, ...ended };
  }
  if (row.outcome === 'stale' || row.outcome === 'conflict' || row.outcome === 'full') return { outcome: row.outcome, ...lock, ...ended };
  throw new Error(`unknown admission outcome: ${row.outcome}`);
}
