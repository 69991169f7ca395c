/**
 * `npx tsx bench/pg-admit-cpu.ts [--rounds 5] [--writes 2000] [--variants v4,v5] [--batch 1]` (needs `DDN_BENCH_PG_URL`): the
 * PostgreSQL backend's CPU per admission statement (`ddn_admit_on_view`, one row, autocommit, as a lone Directory
 * process sends it) with the ledger migrations up to version 4 (`v4`, main before session 29) and all of this
 * tree's (`v5`), each on a scratch schema, rounds interleaved and rotated. Every 10 admissions a "block" is
 * written as the producer writes one (header, the rows finished by one UPDATE), so the view's head moves and the
 * pool stays small. The backend's CPU is read from /proc (its pid from `pg_backend_pid()`), the node side is
 * left out: the statement's text and parameters are the same for every variant.
 *
 * Other variants, for measurement only: `noguard` (v5 without its `SET enable_seqscan` clause), `inline` (v5 with
 * the pool size counted by the function instead of the statement trigger on INSERT). `--batch N`: N admissions per
 * statement (µs per admission still), what a process's batch of admissions that waited together costs.
 */
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import type pg from 'pg';
import { blockHash, genesisHeader } from '../src/ledger/block.js';
import type { TxRecord } from '../src/ledger/store.js';
import { admitOnView } from '../src/store/postgres/ledger-admission.js';
import { LEDGER_FEED_PG_MIGRATIONS, LEDGER_FEED_PG_NAMESPACE } from '../src/store/postgres/ledger-feed.js';
import { BEGIN_ADMISSION } from '../src/store/postgres/ledger-catch-up.js';
import { finishTxRows, initGenesis, LEDGER_MIGRATION_NAMESPACE, LEDGER_PG_MIGRATIONS } from '../src/store/postgres/ledger-tables.js';
import { migratePg, openPgPool, type PgPool } from '../src/store/postgres/pool.js';
import { pendingTx } from './pending-tx.js';
import { cpuMs } from './proc.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    writes: { type: 'string', default: '2000' },
    variants: { type: 'string', default: 'v4,v5' },
    batch: { type: 'string', default: '1' },
  },
});
const url = process.env.DDN_BENCH_PG_URL;
if (url === undefined) throw new Error('set DDN_BENCH_PG_URL, e.g. postgres://postgres@127.0.0.1:5432/postgres');
const PER_BLOCK = 10;
const BATCH = Number(values.batch);

/** What a variant adds after the migrations up to `upTo`. */
interface Variant {
  upTo: number;
  extra?: () => string;
}

/** The v5 function's text as migration 5 creates it, changed by `edit` (for the measurement-only variants). */
const v5Function = (edit: (sql: string) => string): string => edit(LEDGER_PG_MIGRATIONS.find((m) => m.version === 5)!.sql);

const VARIANTS: Record<string, Variant> = {
  v4: { upTo: 4 },
  v5: { upTo: 5 },
  noguard: { upTo: 5, extra: () => v5Function((s) => s.replace('VOLATILE SET enable_seqscan = off AS', 'VOLATILE AS')) },
  inline: {
    upTo: 5,
    extra: () =>
      'DROP TRIGGER ledger_pool_insert ON ledger_txs; ' +
      v5Function((s) =>
        s.replace(
          'SELECT max(seq) INTO last_seq FROM ins;',
          'SELECT max(seq) INTO last_seq FROM ins;\n          UPDATE %1$I.ledger_pool SET pending = pending + n WHERE one;',
        ),
      ),
  },
};

interface Side {
  name: string;
  pool: PgPool;
  client: pg.PoolClient;
  pid: number;
  head: number;
  afterSeq: number;
  pending: TxRecord[];
  schema: string;
}

let txSeq = 0;
const row = (): TxRecord => pendingTx(++txSeq, 400, 32);

async function open(name: string): Promise<Side> {
  const v = VARIANTS[name];
  if (v === undefined) throw new Error(`unknown variant ${name}`);
  const schema = `bench_admit_${name}_${randomBytes(3).toString('hex')}`;
  const pool = await openPgPool({ url: url!, schema, max: 2 });
  await migratePg(
    pool,
    LEDGER_PG_MIGRATIONS.filter((m) => m.version <= v.upTo),
    LEDGER_MIGRATION_NAMESPACE,
  );
  await migratePg(pool, LEDGER_FEED_PG_MIGRATIONS, LEDGER_FEED_PG_NAMESPACE);
  if (v.extra !== undefined) await pool.query(v.extra());
  const header = genesisHeader({ profile: 'platform', chainId: 'bench-admit', genesisTimeMs: 0, personaAttestors: [] });
  await initGenesis(pool, { header, hash: blockHash(header) });
  const client = await pool.connect();
  const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
  return { name, pool, client, pid, head: 0, afterSeq: 0, pending: [], schema };
}

/** `--batch` admissions in one statement (a process's batch of the admissions that waited together). */
async function admitOne(s: Side): Promise<void> {
  const txs = Array.from({ length: BATCH }, row);
  const r = await admitOnView(s.client, {
    head: s.head,
    afterSeq: s.afterSeq,
    reads: new Set(txs.flatMap((tx) => [`doc:${tx.meta.subject}`, `nonce:${tx.meta.subject}`])),
    maxPool: 10_000,
    rows: txs.map((tx) => ({ tx, writes: [`doc:${tx.meta.subject}`, `nonce:${tx.meta.subject}`] })),
    notifyChannel: undefined,
  });
  if (r.outcome !== 'stored' || r.lastSeq === undefined || !r.contiguous) throw new Error(`${s.name}: ${r.outcome}`);
  s.afterSeq = r.lastSeq;
  s.pending.push(...txs);
}

/** A block as the producer writes it (its header, then the rows it finished), under the admission lock. */
async function block(s: Side): Promise<void> {
  const n = s.head + 1;
  const c = s.client;
  await c.query(BEGIN_ADMISSION);
  await c.query(`INSERT INTO ledger_blocks (number, hash, parent_hash, timestamp_ms, extrinsics_root, results_root) VALUES ($1, $2, $2, 0, $2, $2)`, [
    n,
    randomBytes(32),
  ]);
  await finishTxRows(
    c,
    n,
    s.pending.map((t, i) => ({ ...t, status: 'included' as const, blockNumber: n, blockIndex: i, finishedAtMs: Date.now() })),
  );
  await c.query('COMMIT');
  s.head = n;
  s.pending = [];
}

async function round(s: Side, writes: number): Promise<number> {
  const before = cpuMs(s.pid);
  for (let i = 0; i < writes; i += BATCH) {
    await admitOne(s);
    if (s.pending.length >= PER_BLOCK) await block(s);
  }
  return ((cpuMs(s.pid) - before) * 1000) / writes;
}

const names = values.variants.split(',');
const sides: Side[] = [];
for (const n of names) sides.push(await open(n));
try {
  // warm-up: plans cached, tables past their first pages
  for (const s of sides) await round(s, 200);
  const results = new Map<string, number[]>(names.map((n) => [n, []]));
  for (let r = 0; r < Number(values.rounds); r++) {
    const order = sides.map((_, i) => sides[(i + r) % sides.length]!);
    const line: string[] = [];
    for (const s of order) {
      const us = await round(s, Number(values.writes));
      results.get(s.name)!.push(us);
      line.push(`${s.name} ${us.toFixed(0)}`);
    }
    console.log(`round ${r + 1} (load ${loadavg()[0]!.toFixed(1)}): backend µs per admission (a block per ${PER_BLOCK} included): ${line.join(', ')}`);
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  console.log(`medians: ${names.map((n) => `${n} ${median(results.get(n)!).toFixed(0)}`).join(', ')}`);
} finally {
  for (const s of sides) {
    s.client.release();
    await s.pool.query(`DROP SCHEMA "${s.schema}" CASCADE`);
    await s.pool.end();
  }
}
