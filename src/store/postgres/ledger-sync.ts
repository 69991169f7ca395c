/**
 * Several Directory processes sharing one ledger on PostgreSQL.
 *
 * Each process keeps its {@link Ledger} on a local SQLite replica (reads stay synchronous and local) and copies
 * into it every block the database holds, with the block's state writes and finished transactions. The pool is
 * the set of pending rows of `ledger_txs`:
 * - admission: any process, one at a time across all of them (a transaction-scoped advisory lock), on a pool
 *   first brought up to date with every block and pending row — so the checks are exactly the embedded
 *   ledger's;
 * - block production: only the process holding the session-level leader lock. It builds the block from its
 *   up-to-date pool under the same admission lock and commits it on the very connection that holds the leader
 *   lock, so a producer that lost its connection (and with it the lock) cannot commit; the block number's
 *   primary key rules out a fork. When the leader dies, PostgreSQL releases its lock and another process takes
 *   over within one poll interval;
 * - followers learn of new blocks and admissions by NOTIFY, and poll as a fallback.
 */
import { hostname } from 'node:os';
import pg from 'pg';
import type { Logger } from 'pino';
import { bytesEqual } from '../../base/bytes.js';
import { DdnError } from '../../base/errors.js';
import { SerialQueue } from '../../base/serial-queue.js';
import type { Admission, Ledger, PoolCoordinator } from '../../ledger/chain.js';
import { LedgerFailure } from '../../ledger/errors.js';
import type { LedgerStore, StoredBlock, TxRecord } from '../../ledger/store.js';
import {
  ADMISSION_LOCK,
  blockHashAt,
  blocksFrom,
  commitBlockRows,
  genesisHashOf,
  initGenesis,
  insertPending,
  LEADER_LOCK,
  LEDGER_MIGRATION_NAMESPACE,
  LEDGER_PG_MIGRATIONS,
  pendingAfter,
} from './ledger-tables.js';
import { attachExtrinsics, insertBlockExtrinsics, LEDGER_FEED_PG_MIGRATIONS, LEDGER_FEED_PG_NAMESPACE } from './ledger-feed.js';
import { migratePg, type PgPool } from './pool.js';

/** Blocks copied per query while catching up. */
const CATCH_UP_BATCH = 100;

export interface PgLedgerSyncOptions {
  pool: PgPool;
  /** Connection URL and schema of the dedicated session (NOTIFY, leader lock, block commits). */
  url: string;
  schema: string;
  /** The ledger on this process's replica; it must already match the database ({@link replicaMatches}). */
  ledger: Ledger;
  blockIntervalMs: number;
  /** Fallback catch-up and leader-election period (default 500 ms). */
  pollMs?: number;
  /** Compete for block production and produce on a timer (default true); false: only {@link PgLedgerSync.produceOnce}. */
  produce?: boolean;
  logger?: Logger;
}

/**
 * Migrates the ledger tables and writes the genesis block, or checks that the database holds this genesis.
 * False when it holds another chain.
 */
export async function preparePgLedger(pool: PgPool, genesis: StoredBlock): Promise<boolean> {
  await migratePg(pool, LEDGER_PG_MIGRATIONS, LEDGER_MIGRATION_NAMESPACE);
  await migratePg(pool, LEDGER_FEED_PG_MIGRATIONS, LEDGER_FEED_PG_NAMESPACE);
  return inTransaction(pool, async (c) => {
    await c.query(`SELECT pg_advisory_xact_lock(${ADMISSION_LOCK})`);
    const stored = await genesisHashOf(c);
    if (stored === undefined) await initGenesis(c, genesis);
    return stored === undefined || bytesEqual(stored, genesis.hash);
  });
}

/** True when every block of the local replica is also the database's block at that number. */
export async function replicaMatches(pool: PgPool, replica: LedgerStore): Promise<boolean> {
  const head = replica.headNumber();
  if (head < 0) return true;
  const local = replica.getBlock(head);
  const remote = await blockHashAt(pool, head);
  return local !== undefined && remote !== undefined && bytesEqual(local.hash, remote);
}

async function inTransaction<T>(pool: PgPool, work: (c: pg.PoolClient) => Promise<T>): Promise<T> {
  const c = await pool.connect();
  try {
    await c.query('BEGIN');
    try {
      const out = await work(c);
      await c.query('COMMIT');
      return out;
    } catch (e) {
      await c.query('ROLLBACK').catch(() => undefined);
      throw e;
    }
  } finally {
    c.release();
  }
}

export class PgLedgerSync implements PoolCoordinator {
  private readonly queue = new SerialQueue();
  private readonly channel: string;
  private readonly pollMs: number;
  private session: pg.Client | undefined;
  private leader = false;
  private lastPendingSeq = 0;
  /** Pending rows this process could not adopt; the producer drops them with its next block. */
  private readonly unadoptable = new Map<string, TxRecord>();
  private lastCatchUpMs = 0;
  private catchUpQueued = false;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  private constructor(private readonly o: PgLedgerSyncOptions) {
    this.channel = `ddn_ledger_${o.schema}`;
    this.pollMs = o.pollMs ?? 500;
  }

  /** Catches the ledger up, hands it its pool admission, and starts following (and competing to lead). */
  static async open(o: PgLedgerSyncOptions): Promise<PgLedgerSync> {
    const sync = new PgLedgerSync(o);
    await sync.queue.run(() => sync.catchUpWithPool());
    o.ledger.coordinateWith(sync);
    await sync.connectSession().catch((err: unknown) => o.logger?.warn({ err }, 'ledger session connection failed; retrying'));
    sync.schedule(0);
    return sync;
  }

  /** True while this process produces the blocks. */
  get isLeader(): boolean {
    return this.leader;
  }

  admit(prepare: () => Admission): Promise<{ txHash: string; duplicate: boolean }> {
    return this.queue.run(async () => {
      let accepted: { admission: Admission; seq: number } | undefined;
      try {
        const admission = await inTransaction(this.o.pool, async (c) => {
          await c.query(`SELECT pg_advisory_xact_lock(${ADMISSION_LOCK})`);
          await this.catchUp(c);
          const a = prepare();
          if (a.tx) {
            const seq = await insertPending(c, a.tx);
            await c.query('SELECT pg_notify($1, $2)', [this.channel, 'pending']);
            accepted = { admission: a, seq };
          }
          return a;
        });
        if (accepted) {
          accepted.admission.accept();
          this.lastPendingSeq = accepted.seq;
        }
        return admission.result;
      } catch (e) {
        if (e instanceof LedgerFailure || e instanceof DdnError) throw e;
        this.o.logger?.error({ err: e }, 'ledger admission failed');
        throw new DdnError('service_unavailable', 'the ledger database is unavailable');
      }
    });
  }

  /** Copies new blocks and pending rows into the ledger (tests and callers that need a fresh view). */
  refresh(): Promise<void> {
    return this.queue.run(() => this.catchUpWithPool());
  }

  private async catchUpWithPool(): Promise<void> {
    const c = await this.o.pool.connect();
    try {
      await this.catchUp(c);
    } finally {
      c.release();
    }
  }

  private async catchUp(c: pg.ClientBase): Promise<void> {
    for (;;) {
      const batch = await blocksFrom(c, this.o.ledger.headNumber + 1, CATCH_UP_BATCH);
      await attachExtrinsics(c, batch);
      for (const b of batch) {
        this.o.ledger.applyReplicatedBlock(b.block, b.writes, b.txs);
        for (const t of b.txs) this.unadoptable.delete(t.txHash);
      }
      if (batch.length < CATCH_UP_BATCH) break;
    }
    const pending = await pendingAfter(c, this.lastPendingSeq);
    for (const t of this.o.ledger.adoptPending(pending.txs)) this.unadoptable.set(t.txHash, t);
    this.lastPendingSeq = pending.lastSeq;
    this.lastCatchUpMs = Date.now();
  }

  /** A notification arrived (or the poll fell due): one catch-up, however many were asked for meanwhile. */
  private requestCatchUp(): void {
    if (this.catchUpQueued || this.closed) return;
    this.catchUpQueued = true;
    this.queue
      .run(async () => {
        this.catchUpQueued = false;
        if (!this.closed) await this.catchUpWithPool();
      })
      .catch((err: unknown) => this.o.logger?.warn({ err }, 'ledger catch-up failed'));
  }

  private async connectSession(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.o.url,
      // The server probes this session's socket, so a producer whose machine vanished (no FIN, no RST) loses the
      // leader lock within about 25 s instead of the operating system's default hours.
      options: `-c search_path="${this.o.schema}" -c tcp_keepalives_idle=10 -c tcp_keepalives_interval=5 -c tcp_keepalives_count=3`,
      keepAlive: true,
      application_name: this.applicationName('ddn-ledger'),
    });
    client.on('error', (err) => this.lostSession(client, err));
    client.on('end', () => this.lostSession(client));
    client.on('notification', (msg) => {
      if (msg.channel === this.channel) this.requestCatchUp();
    });
    await client.connect();
    try {
      await client.query(`LISTEN "${this.channel}"`);
    } catch (e) {
      await client.end().catch(() => undefined);
      throw e;
    }
    this.session = client;
  }

  private lostSession(client: pg.Client, err?: Error): void {
    if (this.session !== client) return;
    this.session = undefined;
    if (this.leader) this.o.logger?.warn({ err }, 'ledger leadership lost with its connection');
    this.leader = false;
    client.end().catch(() => undefined);
  }

  private schedule(delayMs: number): void {
    if (this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.tick().finally(() => this.schedule(this.leader ? this.o.blockIntervalMs : this.pollMs));
    }, delayMs);
  }

  private async tick(): Promise<void> {
    try {
      if (this.session === undefined) await this.connectSession();
      const produce = (this.o.produce ?? true) && (await this.compete());
      if (produce && (this.o.ledger.pendingEntries().length > 0 || this.unadoptable.size > 0)) await this.queue.run(() => this.produceBlock());
      else if (Date.now() - this.lastCatchUpMs >= this.pollMs) this.requestCatchUp();
    } catch (err) {
      if (!this.closed) this.o.logger?.warn({ err }, 'ledger tick failed');
    }
  }

  /** `<role> <schema> <pid>@<host>` (PostgreSQL keeps the first 63 bytes). */
  private applicationName(role: string): string {
    return `${role} ${this.o.schema} ${process.pid}@${hostname()}`.replace(/[^\w@. -]/g, '_');
  }

  /** Takes the leader lock if it is free; true when this process leads. */
  private async compete(): Promise<boolean> {
    const session = this.session;
    if (session === undefined || this.leader) return this.leader;
    const r = await session.query<{ ok: boolean }>(`SELECT pg_try_advisory_lock(${LEADER_LOCK}) AS ok`);
    if (r.rows[0]?.ok === true && this.session === session) {
      this.leader = true;
      // Operators (and the deployment test) find the producer in pg_stat_activity.
      await session.query(`SET application_name = '${this.applicationName('ddn-ledger-leader')}'`);
      this.o.logger?.info({ head: this.o.ledger.headNumber }, 'this process now produces the ledger blocks');
    }
    return this.leader;
  }

  /**
   * Competes for leadership now and, when leading, produces one block out of the pool (a process with
   * `produce: false` never competes on its own; tests drive it with this). False when another process leads.
   */
  async produceOnce(): Promise<boolean> {
    if (this.session === undefined) await this.connectSession();
    if (!(await this.compete())) return false;
    await this.queue.run(() => this.produceBlock());
    return true;
  }

  /** One block out of the shared pool, committed on the leader's own session. */
  private async produceBlock(): Promise<void> {
    const c = this.session;
    if (c === undefined || !this.leader || this.closed) return;
    await c.query('BEGIN');
    try {
      await c.query(`SELECT pg_advisory_xact_lock(${ADMISSION_LOCK})`);
      await this.catchUp(c);
      const next = this.o.ledger.buildBlock({ allowEmpty: this.unadoptable.size > 0 });
      if (!next) {
        await c.query('ROLLBACK');
        return;
      }
      // Rows this process could not adopt leave the shared pool with this block, as failed.
      const built = { ...next, dropped: [...next.dropped, ...this.unadoptable.values()] };
      await commitBlockRows(c, built.block, built.writes, [...built.records, ...built.dropped]);
      await insertBlockExtrinsics(c, built.block.header.number, built.records);
      await c.query('SELECT pg_notify($1, $2)', [this.channel, 'block']);
      await c.query('COMMIT');
      this.o.ledger.commitBuilt(built);
      this.unadoptable.clear();
    } catch (e) {
      await c.query('ROLLBACK').catch(() => undefined);
      throw e;
    }
  }

  /** Stops following; a leader gives up its lock (its session ends), so another process takes over at once. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    await this.queue.run(async () => undefined);
    const session = this.session;
    this.session = undefined;
    this.leader = false;
    await session?.end().catch(() => undefined);
  }
}
