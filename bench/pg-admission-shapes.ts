/**
 * `npx tsx bench/pg-admission-shapes.ts` (needs `DDN_BENCH_PG_URL`): the database side of ways to admit
 * Directory writes on PostgreSQL (issue 27), each for 5 s on a scratch schema, with the statements an admission
 * makes on the real ledger tables (lock, catch-up reads, insert, NOTIFY, commit):
 *
 * - one transaction per admission, 32 at once, each under an advisory lock of its own subject (what locking per
 *   DID would cost at best: no lock ever waited for, no key set computed, no retry);
 * - the same under one lock shared by all (how admission worked before batching);
 * - batches of 16 admissions per transaction from two processes under one shared lock, with the statements of
 *   session 14 (BEGIN and lock, two catch-up reads when no block is new, insert, NOTIFY, COMMIT: six round trips);
 * - the same with the Directory's statements now (BEGIN, lock and the whole catch-up in one round trip; the
 *   insert carrying its NOTIFY, with the COMMIT queued behind it: two round trips).
 *
 * Prints rows admitted per second for each, twice, interleaved. Node's own work per admission (the checks) is
 * the same in every shape and left out.
 */
import { randomBytes, randomInt } from 'node:crypto';
import pg from 'pg';
import { blockHash, genesisHeader } from '../src/ledger/block.js';
import type { TxRecord } from '../src/ledger/store.js';
import { preparePgLedger } from '../src/store/postgres/ledger-sync.js';
import { catchUpText, readCatchUp } from '../src/store/postgres/ledger-catch-up.js';
import { insertPendingRows } from '../src/store/postgres/ledger-tables.js';
import { openPgPool } from '../src/store/postgres/pool.js';
import { pendingTx } from './pending-tx.js';

const url = process.env.DDN_BENCH_PG_URL;
if (url === undefined) throw new Error('set DDN_BENCH_PG_URL, e.g. postgres://postgres@127.0.0.1:5432/postgres');
const schema = `bench_shapes_${randomBytes(4).toString('hex')}`;
const pool = await openPgPool({ url, schema, max: 34 });
const header = genesisHeader({ profile: 'platform', chainId: 'bench-shapes', genesisTimeMs: 0, personaAttestors: [] });
await preparePgLedger(pool, { header, hash: blockHash(header) });

/** Advisory locks are database-wide: keys of this run only. */
const LOCK_BASE = randomInt(1_000_000_000);
let seq = 0;
const row = (): TxRecord => pendingTx(++seq, 600);

/** The statements of one admission transaction, on a pooled connection. */
type Statements = (c: pg.PoolClient, lockKey: number, rows: TxRecord[]) => Promise<void>;

/** Session 14's: one round trip per statement. */
const before: Statements = async (c, lockKey, rows) => {
  await c.query(`BEGIN; SELECT pg_advisory_xact_lock(${lockKey})`);
  // the catch-up's reads when no block is new, one at a time: blocks, pending rows
  const [blocks, , , , pending] = catchUpText(1, Number.MAX_SAFE_INTEGER - 1, 100).split(';');
  for (const q of [blocks, pending]) await c.query(q!);
  await insertPendingRows(c, rows);
  await c.query("SELECT pg_notify('bench_shapes', 'pending')");
  await c.query('COMMIT');
};

/** The Directory's now: lock and catch-up in one round trip, the insert with its NOTIFY and the COMMIT in another. */
const now: Statements = async (c, lockKey, rows) => {
  await readCatchUp(c, 1, Number.MAX_SAFE_INTEGER - 1, 100, `BEGIN; SELECT pg_advisory_xact_lock(${lockKey});`, true);
  await Promise.all([insertPendingRows(c, rows, 'bench_shapes'), c.query('COMMIT')]);
};

async function admission(statements: Statements, lockKey: number, rows: number): Promise<void> {
  const c = await pool.connect();
  try {
    await statements(c, lockKey, Array.from({ length: rows }, row));
  } finally {
    c.release();
  }
}

async function shape(name: string, workers: number, lockKey: (w: number) => number, rows: number, statements = before): Promise<void> {
  let n = 0;
  const end = performance.now() + 5000;
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      while (performance.now() < end) {
        await admission(statements, lockKey(w), rows);
        n += rows;
      }
    }),
  );
  console.log(`${name}: ${Math.round(n / 5)} admissions/s`);
  await pool.query('DELETE FROM ledger_txs');
}

try {
  for (let run = 0; run < 2; run++) {
    await shape('one transaction each, 32 at once, a lock per subject', 32, (w) => LOCK_BASE + 1 + w, 1);
    await shape('one transaction each, 32 at once, one lock', 32, () => LOCK_BASE, 1);
    await shape('batches of 16, 2 processes, one lock, session 14 statements', 2, () => LOCK_BASE, 16);
    await shape('batches of 16, 2 processes, one lock, statements now', 2, () => LOCK_BASE, 16, now);
  }
} finally {
  await pool.end();
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await admin.end();
}
