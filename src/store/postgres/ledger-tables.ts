/**
 * The ledger's tables on PostgreSQL (shared by every Directory process of one deployment): blocks, versioned
 * state, and transactions — pending ones are the shared pool. A finished transaction (included, failed, or
 * dropped from the pool) carries `finished_block`, the block whose commit finished it, so a process copying
 * block N into its replica also learns every transaction that left the pool with it.
 */
import type pg from 'pg';
import type { BlockHeader } from '../../ledger/block.js';
import { serializeStateValue, type StateValue } from '../../ledger/state.js';
import type { StoredBlock, TxRecord } from '../../ledger/store.js';
import type { PgMigration } from './pool.js';

/** Advisory-lock keys, scoped to the schema (locks are database-wide; schemas are separate deployments). */
export const ADMISSION_LOCK = "hashtext('ddn-ledger-admission:' || current_schema())";
export const LEADER_LOCK = "hashtext('ddn-ledger-leader:' || current_schema())";
/**
 * Held in shared mode by the notification session of every Directory process of the schema for as long as it
 * listens (released with the session): how a process learns whether any other one would hear its announcements.
 */
export const LISTENER_LOCK = "hashtext('ddn-ledger-listener:' || current_schema())";

/**
 * True when a session other than `session` (this one by default; else a backend pid) holds the listener lock or the
 * leader lock of the schema (the leader's counts too: a process of an older version listens without the listener
 * lock). Reads `pg_locks`: for a poll, not for every write.
 */
export function othersListening(session: number | 'this' = 'this'): string {
  const except = session === 'this' ? 'pg_backend_pid()' : String(Math.trunc(session));
  return `SELECT EXISTS (
    SELECT 1 FROM pg_locks l
    WHERE l.locktype = 'advisory' AND l.granted AND l.pid <> ${except} AND l.objsubid = 1
      AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND ((l.classid::int8 << 32) | l.objid::int8) IN ((${LISTENER_LOCK})::int8, (${LEADER_LOCK})::int8)) AS others`;
}

/** The schema's advisory lock `key` held by the session of backend `pid` (an SQL condition; `pid` an SQL expression). */
function holdsLock(pid: string, key: string): string {
  return `EXISTS (
    SELECT 1 FROM pg_locks l
    WHERE l.locktype = 'advisory' AND l.granted AND l.pid = ${pid} AND l.objsubid = 1
      AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND ((l.classid::int8 << 32) | l.objid::int8) = (${key})::int8)`;
}

/**
 * The deployment's hand-over token (src/http/hand-over.ts), made by the first process that asks ($1: a new random
 * one, kept only when there is none yet): one row, `token`.
 */
export const HAND_OVER_TOKEN = `WITH made AS (
    INSERT INTO ledger_meta (k, v) VALUES ('hand_over_token', convert_to($1::text, 'UTF8')) ON CONFLICT (k) DO NOTHING RETURNING v)
  SELECT convert_from(v, 'UTF8') AS token FROM made
  UNION ALL SELECT convert_from(v, 'UTF8') FROM ledger_meta WHERE k = 'hand_over_token'`;

/** Publishes the address ($1) of the process that produces the blocks, run on its leader session. */
export const PUBLISH_PRODUCER = `INSERT INTO ledger_meta (k, v)
  VALUES ('producer', convert_to(json_build_object('url', $1::text, 'pid', pg_backend_pid())::text, 'UTF8'))
  ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v`;

/** The published address of the producer (`url`), when the session that published it still holds the leader lock. */
export const LIVE_PRODUCER = `SELECT p.url FROM (
    SELECT convert_from(v, 'UTF8')::json->>'url' AS url, (convert_from(v, 'UTF8')::json->>'pid')::int AS pid FROM ledger_meta WHERE k = 'producer'
  ) p WHERE ${holdsLock('p.pid', LEADER_LOCK)}`;

/**
 * The stored function of an admission checked on a process's view (ledger-admission.ts): `create` is `CREATE` or
 * `CREATE OR REPLACE`, `notify` the statement that announces the stored rows.
 */
function admitOnViewFunction(create: string, notify: string): string {
  return `${create} FUNCTION ddn_admit_on_view(
        p_head BIGINT, p_after BIGINT, p_reads INT4[], p_max_pool BIGINT, p_channel TEXT,
        p_hash TEXT[], p_extrinsic TEXT[], p_subject TEXT[], p_submitted BIGINT[], p_meta TEXT[], p_bytes BYTEA[],
        p_signatures BYTEA[], p_keys TEXT[])
      RETURNS TABLE (outcome TEXT, last_seq BIGINT, contiguous BOOLEAN, lock_wait_s FLOAT8, lock_at FLOAT8, ended_at FLOAT8)
      LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $fn$
      DECLARE
        n BIGINT := coalesce(cardinality(p_hash), 0);
        seqscan TEXT := current_setting('enable_seqscan');
        pooled BIGINT;
      BEGIN
        -- a batch that stores nothing (only refusals and duplicates) needs no lock: rows committed after its reads
        -- come after its verdicts
        IF n > 0 THEN
          PERFORM pg_advisory_xact_lock(${ADMISSION_LOCK});
          lock_wait_s := extract(epoch FROM clock_timestamp() - statement_timestamp());
          lock_at := extract(epoch FROM clock_timestamp());
        END IF;
        -- each statement below sees what was committed before the lock was held (a new snapshot per statement); the
        -- rows after the view are few and read through the primary key: without statistics (a young table) the
        -- planner may take a scan of the whole table for cheaper
        SELECT pending INTO pooled FROM ledger_pool;
        PERFORM set_config('enable_seqscan', 'off', true);
        IF (SELECT max(number) FROM ledger_blocks) > p_head THEN
          outcome := 'stale';
        -- (a row finished by a block up to the view's head is in the view's state; a later block made it stale)
        ELSIF EXISTS (SELECT 1 FROM ledger_txs WHERE status = 'pending' AND seq > p_after AND (keys IS NULL OR keys && p_reads)) THEN
          outcome := 'conflict';
        ELSIF n > 0 AND pooled + n > p_max_pool THEN
          outcome := 'full';
        ELSE
          outcome := 'stored';
          contiguous := NOT EXISTS (SELECT 1 FROM ledger_txs WHERE status = 'pending' AND seq > p_after);
        END IF;
        PERFORM set_config('enable_seqscan', seqscan, true);
        IF outcome = 'stored' AND n > 0 THEN
          WITH ins AS (
            INSERT INTO ledger_txs (tx_hash, extrinsic, status, subject, submitted_at_ms, meta, bytes, signatures, keys)
            SELECT h, x, 'pending', s, t, m, b, g, k::INT4[]
              FROM unnest(p_hash, p_extrinsic, p_subject, p_submitted, p_meta, p_bytes, p_signatures, p_keys)
                WITH ORDINALITY AS u(h, x, s, t, m, b, g, k, i)
              ORDER BY i
            RETURNING seq)
          SELECT max(seq) INTO last_seq FROM ins;
${notify}        END IF;
        ended_at := extract(epoch FROM clock_timestamp());
        RETURN NEXT;
      END
      $fn$`;
}

/**
 * `sql` run with every `%1$I` replaced by the schema the migration runs in (an identifier; `%1$L`, a literal): a function whose tables are
 * named with their schema finds them whatever the caller's search path, without a `SET search_path` clause (which
 * PostgreSQL applies and undoes at every call).
 */
function inCurrentSchema(sql: string): string {
  if (/%(?!1\$[IL])/.test(sql)) throw new Error('a literal % in a schema-pinned migration');
  return `DO $do$ BEGIN EXECUTE format($sql$${sql}$sql$, current_schema()); END $do$;`;
}

/**
 * Version 5 of the admission statement (ledger-admission.ts), for its CPU per call: its tables named with their
 * schema instead of `SET search_path FROM CURRENT`, and the four reads of the verdict in one statement (one
 * snapshot, taken after the lock, as each of the four took theirs). The index-only plans are kept by the clause
 * `SET enable_seqscan = off` (one setting applied per call, not two `set_config` statements around the reads). Under
 * it every statement the function runs, the pool-size trigger's included, must have a plan without a sequential
 * scan (`ledger_pool` is read `WHERE one`, through its key): a plan that has only a disabled scan costs above
 * `jit_above_cost`, and PostgreSQL would compile it with JIT at every call (~100 ms).
 */
const ADMIT_ON_VIEW_V5 = `CREATE OR REPLACE FUNCTION ddn_admit_on_view(
        p_head BIGINT, p_after BIGINT, p_reads INT4[], p_max_pool BIGINT, p_channel TEXT,
        p_hash TEXT[], p_extrinsic TEXT[], p_subject TEXT[], p_submitted BIGINT[], p_meta TEXT[], p_bytes BYTEA[],
        p_signatures BYTEA[], p_keys TEXT[])
      RETURNS TABLE (outcome TEXT, last_seq BIGINT, contiguous BOOLEAN, lock_wait_s FLOAT8, lock_at FLOAT8, ended_at FLOAT8)
      LANGUAGE plpgsql VOLATILE SET enable_seqscan = off AS $fn$
      DECLARE
        n BIGINT := coalesce(cardinality(p_hash), 0);
        pooled BIGINT;
        stale BOOLEAN;
        conflicting BOOLEAN;
        later BOOLEAN;
      BEGIN
        IF n > 0 THEN
          -- ADMISSION_LOCK, of the schema the function is in
          PERFORM pg_advisory_xact_lock(hashtext('ddn-ledger-admission:' || %1$L));
          lock_wait_s := extract(epoch FROM clock_timestamp() - statement_timestamp());
          lock_at := extract(epoch FROM clock_timestamp());
        END IF;
        -- what was committed before the lock was held; a row finished by a block up to the view's head is in the
        -- view's state, a later block made the view stale
        SELECT (SELECT pending FROM %1$I.ledger_pool WHERE one),
            coalesce((SELECT max(number) FROM %1$I.ledger_blocks) > p_head, false),
            EXISTS (SELECT 1 FROM %1$I.ledger_txs WHERE status = 'pending' AND seq > p_after AND (keys IS NULL OR keys && p_reads)),
            EXISTS (SELECT 1 FROM %1$I.ledger_txs WHERE status = 'pending' AND seq > p_after)
          INTO pooled, stale, conflicting, later;
        IF stale THEN
          outcome := 'stale';
        ELSIF conflicting THEN
          outcome := 'conflict';
        ELSIF n > 0 AND pooled + n > p_max_pool THEN
          outcome := 'full';
        ELSE
          outcome := 'stored';
          contiguous := NOT later;
        END IF;
        IF outcome = 'stored' AND n > 0 THEN
          WITH ins AS (
            INSERT INTO %1$I.ledger_txs (tx_hash, extrinsic, status, subject, submitted_at_ms, meta, bytes, signatures, keys)
            SELECT h, x, 'pending', s, t, m, b, g, k::INT4[]
              FROM unnest(p_hash, p_extrinsic, p_subject, p_submitted, p_meta, p_bytes, p_signatures, p_keys)
                WITH ORDINALITY AS u(h, x, s, t, m, b, g, k, i)
              ORDER BY i
            RETURNING seq)
          SELECT max(seq) INTO last_seq FROM ins;
          IF p_channel IS NOT NULL THEN
            PERFORM pg_notify(p_channel, 'pending:' || last_seq);
          END IF;
        END IF;
        ended_at := extract(epoch FROM clock_timestamp());
        RETURN NEXT;
      END
      $fn$;`;

/**
 * Version 2 of the pool-size trigger's function: its table named with its schema, no `SET search_path` clause, and
 * its row found through the key (the trigger runs under the admission statement's `enable_seqscan = off`).
 */
const POOL_SIZE_V2 = `CREATE OR REPLACE FUNCTION ddn_pool_size() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        IF TG_OP = 'INSERT' THEN
          UPDATE %1$I.ledger_pool SET pending = pending + (SELECT count(*) FROM new_rows WHERE status = 'pending') WHERE one;
        ELSIF TG_OP = 'UPDATE' THEN
          UPDATE %1$I.ledger_pool SET pending = pending + (SELECT count(*) FROM new_rows WHERE status = 'pending')
            - (SELECT count(*) FROM old_rows WHERE status = 'pending') WHERE one;
        ELSE
          UPDATE %1$I.ledger_pool SET pending = pending - (SELECT count(*) FROM old_rows WHERE status = 'pending') WHERE one;
        END IF;
        RETURN NULL;
      END
      $fn$;`;

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
  {
    // a pending row's signature digests (TxRecord.signatures): NULL once finished, and in rows of older processes
    version: 2,
    sql: `ALTER TABLE ledger_txs ADD COLUMN signatures BYTEA;`,
  },
  {
    // what a pending row wrote, as hashed conflict keys (NULL once finished, and in rows of older processes), and
    // the admission of a batch checked on a process's own view (ledger-admission.ts)
    version: 3,
    sql: `
      ALTER TABLE ledger_txs ADD COLUMN keys INT4[];
      -- the shared pool's size, kept by triggers, so that a full pool is found without counting it
      CREATE TABLE ledger_pool (one BOOLEAN PRIMARY KEY DEFAULT true CHECK (one), pending BIGINT NOT NULL);
      INSERT INTO ledger_pool (pending) SELECT count(*) FROM ledger_txs WHERE status = 'pending';
      CREATE FUNCTION ddn_pool_size() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $fn$
      BEGIN
        IF TG_OP = 'INSERT' THEN
          UPDATE ledger_pool SET pending = pending + (SELECT count(*) FROM new_rows WHERE status = 'pending');
        ELSIF TG_OP = 'UPDATE' THEN
          UPDATE ledger_pool SET pending = pending + (SELECT count(*) FROM new_rows WHERE status = 'pending')
            - (SELECT count(*) FROM old_rows WHERE status = 'pending');
        ELSE
          UPDATE ledger_pool SET pending = pending - (SELECT count(*) FROM old_rows WHERE status = 'pending');
        END IF;
        RETURN NULL;
      END
      $fn$;
      -- a block's transactions were all pending: else the statement fails, and the COMMIT queued behind it rolls back
      CREATE FUNCTION ddn_finished_all(block BIGINT, finished BIGINT, expected BIGINT) RETURNS BIGINT LANGUAGE plpgsql AS $fn$
      BEGIN
        IF finished <> expected THEN
          RAISE EXCEPTION 'block % finishes % pooled transactions but % were pending', block, expected, finished;
        END IF;
        RETURN finished;
      END
      $fn$;
      CREATE TRIGGER ledger_pool_insert AFTER INSERT ON ledger_txs REFERENCING NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION ddn_pool_size();
      CREATE TRIGGER ledger_pool_update AFTER UPDATE ON ledger_txs REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION ddn_pool_size();
      CREATE TRIGGER ledger_pool_delete AFTER DELETE ON ledger_txs REFERENCING OLD TABLE AS old_rows
        FOR EACH STATEMENT EXECUTE FUNCTION ddn_pool_size();
      ${admitOnViewFunction('CREATE', "          PERFORM pg_notify(p_channel, 'pending:' || last_seq);\n")}`,
  },
  {
    // the stored rows announced only with a channel: a process that no other process listens to passes none
    // (PgLedgerSync: its own announcement would only come back to itself)
    version: 4,
    sql: admitOnViewFunction(
      'CREATE OR REPLACE',
      "          IF p_channel IS NOT NULL THEN\n            PERFORM pg_notify(p_channel, 'pending:' || last_seq);\n          END IF;\n",
    ),
  },
  {
    // the admission statement's and the pool-size trigger's CPU per call (ADMIT_ON_VIEW_V5, POOL_SIZE_V2)
    version: 5,
    sql: inCurrentSchema(ADMIT_ON_VIEW_V5 + '\n' + POOL_SIZE_V2),
  },
];

export const LEDGER_MIGRATION_NAMESPACE = 'ledger';

/** A pool or one of its clients. */
export type Queryable = pg.Pool | pg.ClientBase;

/** BIGINT columns arrive as strings. */
type Num = string | number;

export interface BlockRow {
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
  signatures: Buffer | null;
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
  if (r.signatures) tx.signatures = u8(r.signatures);
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
  /** The values of `writes` as the database holds them (serializeStateValue's text), which they were decoded from. */
  serialized: Map<string, string>;
  /** The transactions the block finished: its own, then the pool entries it dropped. */
  txs: TxRecord[];
}

export async function insertPending(c: Queryable, tx: TxRecord): Promise<number> {
  return insertPendingRows(c, [tx]);
}

/**
 * The columns of pending rows as parameter arrays, in this order: hash, extrinsic, subject, submitted at, meta,
 * bytes, signature digests.
 */
export function pendingColumns(txs: readonly TxRecord[]): unknown[][] {
  const col = <T>(f: (t: TxRecord) => T) => txs.map(f);
  return [
    col((t) => t.txHash),
    col((t) => t.extrinsic),
    col((t) => t.meta.subject),
    col((t) => t.submittedAtMs),
    col((t) => JSON.stringify(t.meta)),
    col((t) => (t.bytes ? Buffer.from(t.bytes) : null)),
    col((t) => (t.signatures ? Buffer.from(t.signatures) : null)),
  ];
}

/**
 * Several pending transactions in one statement, in this order; the highest seq they got. With `notifyChannel`,
 * the same statement sends `pending:<highest seq>` on it (delivered when the transaction commits). `keys`: the
 * INT4[] literal of each one's conflict keys (ledger-admission.ts); without, a row conflicts with every view.
 */
export async function insertPendingRows(c: Queryable, txs: readonly TxRecord[], notifyChannel?: string, keys?: readonly string[]): Promise<number> {
  const r = await c.query<{ seq: Num }>(
    `WITH ins AS (
       INSERT INTO ledger_txs (tx_hash, extrinsic, status, subject, submitted_at_ms, meta, bytes, signatures, keys)
       SELECT h, x, 'pending', s, t, m, b, g, k::int4[]
         FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::bytea[], $7::bytea[], $8::text[]) WITH ORDINALITY AS u(h, x, s, t, m, b, g, k, i)
         ORDER BY i
       RETURNING seq)
     SELECT max(seq) AS seq, CASE WHEN $9::text IS NOT NULL THEN pg_notify($9, 'pending:' || max(seq)) END FROM ins`,
    [...pendingColumns(txs), txs.map((_, i) => keys?.[i] ?? null), notifyChannel ?? null],
  );
  return Number(r.rows[0]!.seq);
}

/**
 * Stores a produced block in one statement: header, state writes, the extrinsic bytes of its own transactions
 * (the export feed's table, ledger-feed.ts), and a `block:<number>` notification on `notifyChannel` (delivered at
 * commit; none without a channel). The transactions it finished are marked with {@link finishTxRows} in the same transaction.
 */
export async function writeBlockRows(
  c: Queryable,
  block: StoredBlock,
  writes: Map<string, StateValue | undefined>,
  own: readonly TxRecord[],
  notifyChannel: string | undefined,
): Promise<void> {
  const n = block.header.number;
  const h = block.header;
  const keys = [...writes.keys()];
  const values = keys.map((k) => {
    const v = writes.get(k);
    return v === undefined ? null : serializeStateValue(v);
  });
  const withBytes = own.filter((t) => t.blockNumber === n && t.blockIndex !== undefined && t.bytes !== undefined);
  // a named statement: a session parses and plans it once, not at every block (an insert has one plan)
  await c.query({
    name: 'ddn_write_block',
    text: `WITH b AS (
       INSERT INTO ledger_blocks (number, hash, parent_hash, timestamp_ms, extrinsics_root, results_root)
       VALUES ($1, $2, $3, $4, $5, $6)),
     s AS (INSERT INTO ledger_state (key, block, value) SELECT k, $1, v FROM unnest($7::text[], $8::text[]) AS u(k, v)),
     e AS (INSERT INTO ledger_block_extrinsics (block_number, block_index, bytes) SELECT $1, i, x FROM unnest($9::int[], $10::bytea[]) AS u(i, x))
     SELECT CASE WHEN $11::text IS NOT NULL THEN pg_notify($11, $12) END`,
    values: [
      n,
      Buffer.from(block.hash),
      Buffer.from(h.parentHash),
      h.timestampMs,
      Buffer.from(h.extrinsicsRoot),
      Buffer.from(h.resultsRoot),
      keys,
      values,
      withBytes.map((t) => t.blockIndex!),
      withBytes.map((t) => Buffer.from(t.bytes!)),
      notifyChannel ?? null,
      `block:${n}`,
    ],
  });
}

/**
 * Marks pending transactions finished by block `blockNumber` (written by {@link writeBlockRows} in the same
 * transaction): included, failed, or dropped from the pool. An included one keeps its bytes (replicas' history
 * decodes them); failed and dropped ones do not. Fails when one was not pending, so a COMMIT sent behind it
 * rolls the transaction back.
 */
export async function finishTxRows(c: Queryable, blockNumber: number, finished: readonly TxRecord[]): Promise<void> {
  const col = <T>(f: (t: TxRecord) => T) => finished.map(f);
  // not a named statement: a generic plan, not knowing how many rows the arrays hold, could scan the whole table
  await c.query({
    text: `WITH done AS (
       UPDATE ledger_txs t SET status = u.status, bytes = CASE WHEN u.status = 'included' THEN t.bytes END, signatures = NULL, keys = NULL,
         block_number = u.block_number, block_index = u.block_index, error_name = u.error_name,
         error_module = u.error_module, error_reason = u.error_reason, finished_at_ms = u.finished_at_ms, finished_block = $1
       FROM unnest($2::text[], $3::text[], $4::bigint[], $5::int[], $6::text[], $7::text[], $8::text[], $9::bigint[])
         AS u(tx_hash, status, block_number, block_index, error_name, error_module, error_reason, finished_at_ms)
       WHERE t.tx_hash = u.tx_hash AND t.status = 'pending'
       RETURNING 1)
     SELECT ddn_finished_all($1, (SELECT count(*) FROM done), $10)`,
    values: [
      blockNumber,
      col((t) => t.txHash),
      col((t) => t.status),
      col((t) => t.blockNumber ?? null),
      col((t) => t.blockIndex ?? null),
      col((t) => t.error?.name ?? null),
      col((t) => t.error?.module ?? null),
      col((t) => t.error?.reason ?? null),
      col((t) => t.finishedAtMs ?? null),
      finished.length,
    ],
  });
}
