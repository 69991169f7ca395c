/**
 * The ledger's tables on PostgreSQL (shared by every Directory process of one deployment): blocks, versioned
 * state, and transactions — pending ones are the shared pool. A finished transaction (included, failed, or
 * dropped from the pool) carries `finished_block`, the block whose commit finished it, so a process copying
 * block N into its replica also learns every transaction that left the pool with it.
 */
import type pg from 'pg';
import type { BlockHeader } from '../../ledger/block.js';
import { deserializeStateValue, serializeStateValue, type StateValue } from '../../ledger/state.js';
import type { StoredBlock, TxRecord } from '../../ledger/store.js';
import type { PgMigration } from './pool.js';

export const LEDGER_PG_MIGRATIONS: readonly PgMigration[] = [
  {
    version: 1,
    sql: `
      CREATE TABLE ledger_meta (k TEXT PRIMARY KEY, v BYTEA NOT NULL);
      CREATE TABLE ledger_blocks (
        number BIGINT PRIMARY KEY, hash BYTEA NOT NULL, parent_hash BYTEA NOT NULL, timestamp_ms BIGINT NOT NULL,
        extrinsics_root BYTEA NOT NULL, results_root BYTEA NOT NULL);
      CREATE TABLE ledger_state (key TEXT NOT NULL, block BIGINT NOT NULL, value TEXT, PRIMARY KEY (key, block));
      CREATE INDEX ledger_state_block ON ledger_state (block);
      CREATE TABLE ledger_txs (
        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, tx_hash TEXT NOT NULL, extrinsic TEXT NOT NULL,
        status TEXT NOT NULL, subject TEXT NOT NULL, submitted_at_ms BIGINT NOT NULL, meta TEXT NOT NULL, bytes BYTEA,
        block_number BIGINT, block_index INTEGER, error_name TEXT, error_module TEXT, error_reason TEXT,
        finished_at_ms BIGINT, finished_block BIGINT);
      CREATE UNIQUE INDEX ledger_txs_one_pending ON ledger_txs (tx_hash) WHERE status = 'pending';
      CREATE INDEX ledger_txs_pending ON ledger_txs (seq) WHERE status = 'pending';
      CREATE INDEX ledger_txs_finished ON ledger_txs (finished_block);
    `,
  },
];

export const LEDGER_MIGRATION_NAMESPACE = 'ledger';

/** A pool or one of its clients. */
export type Queryable = pg.Pool | pg.ClientBase;

/** BIGINT columns arrive as strings. */
type Num = string | number;

interface BlockRow {
  number: Num;
  hash: Buffer;
  parent_hash: Buffer;
  timestamp_ms: Num;
  extrinsics_root: Buffer;
  results_root: Buffer;
}

export interface TxRow {
  seq: Num;
  tx_hash: string;
  extrinsic: string;
  status: string;
  submitted_at_ms: Num;
  meta: string;
  bytes: Buffer | null;
  block_number: Num | null;
  block_index: number | null;
  error_name: string | null;
  error_module: string | null;
  error_reason: string | null;
  finished_at_ms: Num | null;
  finished_block: Num | null;
}

const u8 = (b: Buffer): Uint8Array => new Uint8Array(b);

export function blockFromRow(r: BlockRow): StoredBlock {
  const header: BlockHeader = {
    parentHash: u8(r.parent_hash),
    number: Number(r.number),
    timestampMs: Number(r.timestamp_ms),
    extrinsicsRoot: u8(r.extrinsics_root),
    resultsRoot: u8(r.results_root),
  };
  return { header, hash: u8(r.hash) };
}

export function txFromRow(r: TxRow): TxRecord {
  const tx: TxRecord = {
    txHash: r.tx_hash,
    extrinsic: r.extrinsic,
    status: r.status as TxRecord['status'],
    submittedAtMs: Number(r.submitted_at_ms),
    meta: JSON.parse(r.meta) as TxRecord['meta'],
  };
  if (r.bytes) tx.bytes = u8(r.bytes);
  if (r.block_number !== null) tx.blockNumber = Number(r.block_number);
  if (r.block_index !== null) tx.blockIndex = r.block_index;
  if (r.error_name !== null) {
    tx.error = { name: r.error_name, module: r.error_module ?? '' };
    if (r.error_reason) tx.error.reason = r.error_reason;
  }
  if (r.finished_at_ms !== null) tx.finishedAtMs = Number(r.finished_at_ms);
  return tx;
}

export async function insertBlock(c: Queryable, b: StoredBlock): Promise<void> {
  const h = b.header;
  await c.query(
    `INSERT INTO ledger_blocks (number, hash, parent_hash, timestamp_ms, extrinsics_root, results_root)
     VALUES ($1, $2, $3, $4, $5, $6)`,
    [h.number, Buffer.from(b.hash), Buffer.from(h.parentHash), h.timestampMs, Buffer.from(h.extrinsicsRoot), Buffer.from(h.resultsRoot)],
  );
}

export async function genesisHashOf(c: Queryable): Promise<Uint8Array | undefined> {
  const r = await c.query<{ v: Buffer }>("SELECT v FROM ledger_meta WHERE k = 'genesis_hash'");
  return r.rows[0] ? u8(r.rows[0].v) : undefined;
}

export async function initGenesis(c: Queryable, genesis: StoredBlock): Promise<void> {
  await insertBlock(c, genesis);
  await c.query("INSERT INTO ledger_meta (k, v) VALUES ('genesis_hash', $1)", [Buffer.from(genesis.hash)]);
}

export async function blockHashAt(c: Queryable, number: number): Promise<Uint8Array | undefined> {
  const r = await c.query<{ hash: Buffer }>('SELECT hash FROM ledger_blocks WHERE number = $1', [number]);
  return r.rows[0] ? u8(r.rows[0].hash) : undefined;
}

/** One stored block with everything a replica needs to apply it. */
export interface BlockWithEffects {
  block: StoredBlock;
  writes: Map<string, StateValue | undefined>;
  /** The transactions the block finished: its own, then the pool entries it dropped. */
  txs: TxRecord[];
}

/** Blocks `from`…`from + limit - 1` that exist, with their state writes and finished transactions. */
export async function blocksFrom(c: Queryable, from: number, limit: number): Promise<BlockWithEffects[]> {
  const blocks = (await c.query<BlockRow>('SELECT * FROM ledger_blocks WHERE number >= $1 ORDER BY number LIMIT $2', [from, limit])).rows;
  if (blocks.length === 0) return [];
  const to = Number(blocks[blocks.length - 1]!.number);
  const out = new Map<number, BlockWithEffects>();
  for (const r of blocks) out.set(Number(r.number), { block: blockFromRow(r), writes: new Map(), txs: [] });
  const writes = await c.query<{ key: string; block: Num; value: string | null }>(
    'SELECT key, block, value FROM ledger_state WHERE block BETWEEN $1 AND $2',
    [from, to],
  );
  for (const w of writes.rows) out.get(Number(w.block))?.writes.set(w.key, w.value === null ? undefined : deserializeStateValue(w.value));
  const txs = await c.query<TxRow>(
    `SELECT * FROM ledger_txs WHERE finished_block BETWEEN $1 AND $2
     ORDER BY finished_block, block_index NULLS LAST, seq`,
    [from, to],
  );
  for (const t of txs.rows) out.get(Number(t.finished_block))?.txs.push(txFromRow(t));
  return [...out.values()];
}

/** Pending transactions admitted after `afterSeq`, in admission order, with the highest seq seen. */
export async function pendingAfter(c: Queryable, afterSeq: number): Promise<{ txs: TxRecord[]; lastSeq: number }> {
  const r = await c.query<TxRow>("SELECT * FROM ledger_txs WHERE status = 'pending' AND seq > $1 ORDER BY seq", [afterSeq]);
  const lastSeq = r.rows.length === 0 ? afterSeq : Number(r.rows[r.rows.length - 1]!.seq);
  return { txs: r.rows.map(txFromRow), lastSeq };
}

export async function insertPending(c: Queryable, tx: TxRecord): Promise<number> {
  return insertPendingRows(c, [tx]);
}

/** Several pending transactions in one statement, in this order; the highest seq they got. */
export async function insertPendingRows(c: Queryable, txs: readonly TxRecord[]): Promise<number> {
  const col = <T>(f: (t: TxRecord) => T) => txs.map(f);
  const r = await c.query<{ seq: Num }>(
    `INSERT INTO ledger_txs (tx_hash, extrinsic, status, subject, submitted_at_ms, meta, bytes)
     SELECT h, x, 'pending', s, t, m, b
       FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::bytea[]) WITH ORDINALITY AS u(h, x, s, t, m, b, i)
       ORDER BY i
     RETURNING seq`,
    [
      col((t) => t.txHash),
      col((t) => t.extrinsic),
      col((t) => t.meta.subject),
      col((t) => t.submittedAtMs),
      col((t) => JSON.stringify(t.meta)),
      col((t) => (t.bytes ? Buffer.from(t.bytes) : null)),
    ],
  );
  return Math.max(...r.rows.map((x) => Number(x.seq)));
}

/** Stores a produced block: header, state writes, and the outcome of every transaction it finished. */
export async function commitBlockRows(
  c: Queryable,
  block: StoredBlock,
  writes: Map<string, StateValue | undefined>,
  finished: readonly TxRecord[],
): Promise<void> {
  const n = block.header.number;
  await insertBlock(c, block);
  if (writes.size > 0) {
    const keys = [...writes.keys()];
    const values = keys.map((k) => {
      const v = writes.get(k);
      return v === undefined ? null : serializeStateValue(v);
    });
    await c.query('INSERT INTO ledger_state (key, block, value) SELECT k, $2, v FROM unnest($1::text[], $3::text[]) AS u(k, v)', [keys, n, values]);
  }
  if (finished.length === 0) return;
  const col = <T>(f: (t: TxRecord) => T) => finished.map(f);
  const r = await c.query(
    // An included transaction keeps its bytes (replicas' history decodes them); failed and dropped ones do not.
    `UPDATE ledger_txs t SET status = u.status, bytes = CASE WHEN u.status = 'included' THEN t.bytes END, block_number = u.block_number, block_index = u.block_index,
       error_name = u.error_name, error_module = u.error_module, error_reason = u.error_reason,
       finished_at_ms = u.finished_at_ms, finished_block = $9
     FROM unnest($1::text[], $2::text[], $3::bigint[], $4::int[], $5::text[], $6::text[], $7::text[], $8::bigint[])
       AS u(tx_hash, status, block_number, block_index, error_name, error_module, error_reason, finished_at_ms)
     WHERE t.tx_hash = u.tx_hash AND t.status = 'pending'`,
    [
      col((t) => t.txHash),
      col((t) => t.status),
      col((t) => t.blockNumber ?? null),
      col((t) => t.blockIndex ?? null),
      col((t) => t.error?.name ?? null),
      col((t) => t.error?.module ?? null),
      col((t) => t.error?.reason ?? null),
      col((t) => t.finishedAtMs ?? null),
      n,
    ],
  );
  if (r.rowCount !== finished.length) {
    throw new Error(`block ${n} finishes ${finished.length} pooled transactions but ${r.rowCount ?? 0} were pending`);
  }
}

/** Advisory-lock keys, scoped to the schema (locks are database-wide; schemas are separate deployments). */
export const ADMISSION_LOCK = "hashtext('ddn-ledger-admission:' || current_schema())";
export const LEADER_LOCK = "hashtext('ddn-ledger-leader:' || current_schema())";
