/**
 * The admission statement on PostgreSQL (`ddn_admit_on_view`, src/store/postgres/ledger-admission.ts) and the
 * pool-size trigger, called directly: the same verdicts and the same pool size on a schema made by the current
 * migrations and on one made by the migrations up to version 4 with rows in it, then migrated (version 5 changed
 * how the two functions find their tables and hold their settings, not what they answer). Registers only when
 * DDN_TEST_PG_URL is set.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { blockHash, genesisHeader } from '../../src/ledger/block.js';
import type { TxRecord } from '../../src/ledger/store.js';
import { admitOnView, conflictKeysLiteral, type ViewAdmission } from '../../src/store/postgres/ledger-admission.js';
import { LEDGER_FEED_PG_MIGRATIONS, LEDGER_FEED_PG_NAMESPACE } from '../../src/store/postgres/ledger-feed.js';
import { finishTxRows, initGenesis, LEDGER_MIGRATION_NAMESPACE, LEDGER_PG_MIGRATIONS, pendingColumns } from '../../src/store/postgres/ledger-tables.js';
import { migratePg, type PgPool } from '../../src/store/postgres/pool.js';
import { AdmissionLockHolder } from '../support/pg-ledger.js';
import { freshPgSchema, PG_URL } from '../support/pg.js';

let n = 0;
/** A pending row (its contents do not matter to the statement). */
function row(): TxRecord {
  const i = ++n;
  return {
    txHash: `0x${i.toString(16).padStart(64, '0')}`,
    extrinsic: 'update_document',
    status: 'pending',
    submittedAtMs: 1_000 + i,
    meta: { subject: `did:platform:${i}`, action: 'UpdateService', nonceDomain: 'document_nonce', nonce: '1', limitKey: `did:platform:${i}|document_nonce` },
    bytes: new Uint8Array([i & 0xff]),
    signatures: new Uint8Array(32).fill(i & 0xff),
  };
}

/** The ledger's tables migrated up to `version` (all: undefined), with the genesis block. */
async function schemaAt(version?: number) {
  const s = await freshPgSchema();
  await migrate(s.pool, version);
  const header = genesisHeader({ profile: 'platform', chainId: 'admission-statement', genesisTimeMs: 0, personaAttestors: [] });
  await initGenesis(s.pool, { header, hash: blockHash(header) });
  return s;
}

async function migrate(pool: PgPool, version?: number): Promise<void> {
  await migratePg(
    pool,
    LEDGER_PG_MIGRATIONS.filter((m) => version === undefined || m.version <= version),
    LEDGER_MIGRATION_NAMESPACE,
  );
  await migratePg(pool, LEDGER_FEED_PG_MIGRATIONS, LEDGER_FEED_PG_NAMESPACE);
}

/** What a verdict says, without its lock timings. */
const verdict = (r: ViewAdmission) => (r.outcome === 'stored' ? { outcome: r.outcome, lastSeq: r.lastSeq, contiguous: r.contiguous } : { outcome: r.outcome });

const admit = (pool: PgPool, head: number, afterSeq: number, reads: string[], rows: { tx: TxRecord; writes: string[] }[], maxPool = 100) =>
  admitOnView(pool, { head, afterSeq, reads: new Set(reads), maxPool, rows, notifyChannel: undefined }).then(verdict);

/** The pool's size as the trigger keeps it, and as counted. */
async function poolSizes(pool: PgPool): Promise<{ kept: number; counted: number }> {
  const r = await pool.query<{ kept: number; counted: number }>(
    "SELECT (SELECT pending FROM ledger_pool)::int AS kept, (SELECT count(*) FROM ledger_txs WHERE status = 'pending')::int AS counted",
  );
  return r.rows[0]!;
}

/** Block `number` written, finishing `txs` (as included), as the producer does under the lock. */
async function block(pool: PgPool, number: number, txs: TxRecord[]): Promise<void> {
  const c = await pool.connect();
  try {
    await c.query('BEGIN');
    await c.query('INSERT INTO ledger_blocks (number, hash, parent_hash, timestamp_ms, extrinsics_root, results_root) VALUES ($1, $2, $2, 0, $2, $2)', [
      number,
      Buffer.alloc(32, number),
    ]);
    await finishTxRows(
      c,
      number,
      txs.map((t, i) => ({ ...t, status: 'included' as const, blockNumber: number, blockIndex: i, finishedAtMs: 2_000 })),
    );
    await c.query('COMMIT');
  } finally {
    c.release();
  }
}

/** The first half of the story: three rows, one stored after a view that missed another, one refused for it. */
async function firstHalf(pool: PgPool) {
  const [a, b, c] = [row(), row(), row()];
  return {
    a,
    b,
    verdicts: [
      await admit(pool, 0, 0, ['k:a'], [{ tx: a, writes: ['k:a'] }]),
      // the view missed a's row, which wrote nothing this one read: stored after it
      await admit(pool, 0, 0, ['k:b'], [{ tx: b, writes: ['k:b'] }]),
      // the view missed a's row, which wrote what this one read
      await admit(pool, 0, 0, ['k:a'], [{ tx: c, writes: ['k:a'] }]),
    ],
  };
}

/** The second half: a full pool, a block, a stale view, a view on the new head, a batch with nothing to store. */
async function secondHalf(pool: PgPool, a: TxRecord, b: TxRecord) {
  const verdicts = [
    await admit(
      pool,
      0,
      2,
      ['k:d'],
      [row(), row()].map((tx) => ({ tx, writes: ['k:d'] })),
      3,
    ),
  ];
  await block(pool, 1, [a]);
  const sizes = [await poolSizes(pool)];
  verdicts.push(await admit(pool, 0, 2, ['k:e'], [{ tx: row(), writes: ['k:e'] }], 3));
  verdicts.push(await admit(pool, 1, 2, ['k:e'], [{ tx: row(), writes: ['k:e'] }], 3));
  verdicts.push(await admit(pool, 1, 3, ['k:f'], []));
  sizes.push(await poolSizes(pool));
  await block(pool, 2, [b]);
  sizes.push(await poolSizes(pool));
  return { verdicts, sizes };
}

const FIRST = [{ outcome: 'stored', lastSeq: 1, contiguous: true }, { outcome: 'stored', lastSeq: 2, contiguous: false }, { outcome: 'conflict' }];
const SECOND = [
  { outcome: 'full' },
  { outcome: 'stale' },
  { outcome: 'stored', lastSeq: 3, contiguous: true },
  { outcome: 'stored', lastSeq: undefined, contiguous: true },
];
const SIZES = [
  { kept: 1, counted: 1 },
  { kept: 2, counted: 2 },
  { kept: 1, counted: 1 },
];

if (PG_URL) {
  describe('ledger on PostgreSQL: the admission statement', () => {
    it('answers a view that held, one that missed a row, a conflict, a full pool, a stale view and an empty batch; the pool size stays exact', async () => {
      const s = await schemaAt();
      try {
        const { a, b, verdicts } = await firstHalf(s.pool);
        assert.deepEqual(verdicts, FIRST);
        const second = await secondHalf(s.pool, a, b);
        assert.deepEqual(second.verdicts, SECOND);
        assert.deepEqual(second.sizes, SIZES);
      } finally {
        await s.drop();
      }
    });

    it('answers the same on a schema of version 4 with rows in it, migrated while they wait', async () => {
      const s = await schemaAt(4);
      try {
        const { a, b, verdicts } = await firstHalf(s.pool);
        assert.deepEqual(verdicts, FIRST);
        await migrate(s.pool);
        const second = await secondHalf(s.pool, a, b);
        assert.deepEqual(second.verdicts, SECOND);
        assert.deepEqual(second.sizes, SIZES);
      } finally {
        await s.drop();
      }
    });

    it('sets no search path at each call: its tables and its lock are those of its own schema, whatever the caller’s search path', async () => {
      const s = await schemaAt();
      const holder = await AdmissionLockHolder.open(s.url, s.schema);
      const outsider = new pg.Client({ connectionString: s.url, options: '-c search_path=public' });
      await outsider.connect();
      try {
        const settings = await s.pool.query<{ proname: string; proconfig: string[] | null }>(
          "SELECT proname, proconfig FROM pg_proc WHERE pronamespace = $1::regnamespace AND proname IN ('ddn_admit_on_view', 'ddn_pool_size') ORDER BY proname",
          [s.schema],
        );
        assert.deepEqual(
          settings.rows.map((r) => [r.proname, r.proconfig]),
          [
            ['ddn_admit_on_view', ['enable_seqscan=off']],
            ['ddn_pool_size', null],
          ],
        );
        await holder.take();
        const tx = row();
        const call = outsider.query<{ outcome: string; last_seq: string }>(
          `SELECT * FROM "${s.schema}".ddn_admit_on_view(0, 0, $1, 100, NULL, $2, $3, $4, $5, $6, $7, $8, $9)`,
          [conflictKeysLiteral(['k:x']), ...pendingColumns([tx]), [conflictKeysLiteral(['k:x'])]],
        );
        // it waits for the admission lock of its schema, held by another session
        assert.equal(await holder.waiter(), (outsider as pg.Client & { processID: number }).processID);
        await holder.release();
        const r = (await call).rows[0]!;
        assert.deepEqual([r.outcome, Number(r.last_seq)], ['stored', 1]);
        assert.deepEqual(await poolSizes(s.pool), { kept: 1, counted: 1 });
      } finally {
        await outsider.end();
        await holder.client.end();
        await s.drop();
      }
    });
  });
}
