/**
 * Ledgers of several "processes" on one PostgreSQL schema, in one test process: each with its own SQLite
 * replica file and its own {@link PgLedgerSync} (own pool, own session), exactly as `ddn serve --db` opens them.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import pino, { type Logger } from 'pino';
import { ManualClock } from '../../src/base/clock.js';
import { blockHash, genesisHeader } from '../../src/ledger/block.js';
import { Ledger } from '../../src/ledger/chain.js';
import type { ModuleHandlers } from '../../src/ledger/runtime/dispatch.js';
import { PgLedgerSync, preparePgLedger } from '../../src/store/postgres/ledger-sync.js';
import { ADMISSION_LOCK } from '../../src/store/postgres/ledger-tables.js';
import { openPgPool, type PgPool } from '../../src/store/postgres/pool.js';
import { openSqlite, type SqliteDb } from '../../src/store/sqlite/database.js';
import { LEDGER_MIGRATIONS, SqliteLedgerStore } from '../../src/store/sqlite/ledger-store.js';
import { genesisConfig, T0 } from '../ledger/harness.js';
import { PLATFORM, type Profile } from '../../src/protocol/profile.js';
import { freshPgSchema } from './pg.js';

export interface PgLedgerProcess {
  readonly ledger: Ledger;
  /** Its replica's connection (the ledger's store writes through it). */
  readonly db: SqliteDb;
  readonly sync: PgLedgerSync;
  readonly pool: PgPool;
  close(): Promise<void>;
}

/** One schema; `start(i)` opens "process" i (its replica file survives close, as a data dir would). */
export async function pgLedgerDeployment(
  opts: {
    blockIntervalMs?: number;
    profile?: Profile;
    maxPoolSize?: number;
    maxPendingPerKey?: number;
    maxBatch?: number;
    maxWaiting?: number;
    /** PgLedgerSyncOptions.admissionWaitMs (default: none). */
    admissionWaitMs?: number;
    pollMs?: number;
    /** Calls run by these instead of the ledger's own handlers (e.g. one that counts runs, then runs the call). */
    handlers?: ModuleHandlers;
    /** The schema name's length (default: the shortest). */
    schemaLength?: number;
  } = {},
) {
  const pg = await freshPgSchema(opts.schemaLength);
  const dir = mkdtempSync(join(tmpdir(), 'ddn-pg-ledger-'));
  const clock = new ManualClock(T0 + 1_000);
  const profile = opts.profile ?? PLATFORM;
  const genesis = genesisConfig({ profile: profile.p });
  const header = genesisHeader(genesis);
  const silent = pino({ level: 'silent' });

  /** `logger`: where this process's sync logs (default: nowhere). */
  async function start(i: number, produce = true, logger: Logger = silent): Promise<PgLedgerProcess> {
    const pool = await openPgPool({ url: pg.url, schema: pg.schema, max: 4 });
    assert.ok(await preparePgLedger(pool, { header, hash: blockHash(header) }), 'same genesis');
    const db: SqliteDb = openSqlite(join(dir, `replica-${i}.sqlite`), LEDGER_MIGRATIONS, 'ledger');
    const ledger = new Ledger(new SqliteLedgerStore(db), {
      profile,
      genesis,
      blockIntervalMs: opts.blockIntervalMs ?? 10,
      finalityDepth: 0,
      clock,
      autoProduce: false,
      ...(opts.maxPoolSize === undefined ? {} : { maxPoolSize: opts.maxPoolSize }),
      ...(opts.maxPendingPerKey === undefined ? {} : { maxPendingPerKey: opts.maxPendingPerKey }),
      ...(opts.handlers === undefined ? {} : { handlers: opts.handlers }),
    });
    const sync = await PgLedgerSync.open({
      pool,
      url: pg.url,
      schema: pg.schema,
      ledger,
      blockIntervalMs: opts.blockIntervalMs ?? 10,
      pollMs: opts.pollMs ?? 50,
      produce,
      ...(opts.maxBatch === undefined ? {} : { maxBatch: opts.maxBatch }),
      ...(opts.maxWaiting === undefined ? {} : { maxWaiting: opts.maxWaiting }),
      ...(opts.admissionWaitMs === undefined ? {} : { admissionWaitMs: opts.admissionWaitMs }),
      logger,
    });
    let closed = false;
    return {
      ledger,
      db,
      sync,
      pool,
      /** Idempotent, as a process's close. */
      async close() {
        if (closed) return;
        closed = true;
        await sync.close();
        db.close();
        await pool.end();
      },
    };
  }

  return {
    /** Where the replicas live (`replica-<i>.sqlite`). */
    dir,
    schema: pg.schema,
    url: pg.url,
    clock,
    start,
    async drop() {
      await pg.drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Polls `done` (refreshing every process's view first) until it holds; fails after `maxTries`. */
/**
 * Ends `p`'s notification session from the server side, as a dropped connection would, and waits until `p` has seen
 * it go (the client hears of it when its socket ends: on a loaded machine that can take seconds).
 */
export async function loseSession(p: PgLedgerProcess): Promise<void> {
  const sync = p.sync as unknown as { session?: { processID: number } };
  const pid = sync.session?.processID;
  assert.ok(pid !== undefined, 'the process listens');
  await p.pool.query('SELECT pg_terminate_backend($1)', [pid]);
  for (let i = 0; i < 3000 && sync.session !== undefined; i++) await new Promise((r) => setTimeout(r, 10));
  assert.equal(sync.session, undefined, 'the process lost its session');
}

export async function eventually(procs: readonly PgLedgerProcess[], done: () => boolean, what: string, maxTries = 400): Promise<void> {
  for (let i = 0; i < maxTries; i++) {
    for (const p of procs) await p.sync.refresh();
    if (done()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`never happened: ${what}`);
}

/** Another session on a deployment's schema that takes the admission lock, as a process in its turn would. */
export class AdmissionLockHolder {
  private constructor(readonly client: pg.Client) {}

  static async open(url: string, schema: string): Promise<AdmissionLockHolder> {
    const client = new pg.Client({ connectionString: url, options: `-c search_path="${schema}"` });
    await client.connect();
    return new AdmissionLockHolder(client);
  }

  /** Begins a transaction and takes the lock in it. */
  async take(): Promise<void> {
    await this.client.query(`BEGIN; SELECT pg_advisory_xact_lock(${ADMISSION_LOCK})`);
  }

  /** Commits and takes the lock again in a new transaction, in one query: a session waiting for it goes first. */
  async commitAndTake(): Promise<void> {
    await this.client.query(`COMMIT; BEGIN; SELECT pg_advisory_xact_lock(${ADMISSION_LOCK})`);
  }

  /** Ends the transaction, releasing the lock. */
  async release(end: 'COMMIT' | 'ROLLBACK' = 'COMMIT'): Promise<void> {
    await this.client.query(end);
  }

  /**
   * The backend pid of a session waiting for this one, once there is one; fails after `giveUpMs` (a test whose
   * session never waits fails instead of polling forever and keeping its process alive).
   */
  async waiter(giveUpMs = 60_000): Promise<number> {
    const until = Date.now() + giveUpMs;
    for (;;) {
      if (Date.now() > until) throw new Error(`no session waited for this one within ${giveUpMs} ms`);
      // inside this session's transaction the sessions' list is read once: a connection opened since would never show
      await this.client.query('SELECT pg_stat_clear_snapshot()');
      const r = await this.client.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE pg_backend_pid() = ANY(pg_blocking_pids(pid))');
      if (r.rows[0]) return r.rows[0].pid;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  close(): Promise<void> {
    return this.client.end();
  }
}
