/**
 * Several Directory processes sharing one ledger on PostgreSQL.
 *
 * Each process keeps its {@link Ledger} on a local SQLite replica (reads stay synchronous and local) and copies
 * into it every block the database holds, with the block's state writes and finished transactions. The pool is
 * the set of pending rows of `ledger_txs`:
 * - admission: any process, in batches — the admissions that arrive while its previous batch is in the database
 *   go together into the next one. A batch is checked on the process's own view of the pool and stored by one
 *   statement that takes a transaction-scoped advisory lock shared by all processes, confirms that no block and
 *   no row that wrote what the checks read came after the view, inserts and commits (ledger-admission.ts): the
 *   lock is held only while PostgreSQL works, and different DIDs do not wait for each other's checks. When the
 *   view was behind, the batch is checked again on a fresh one, then under the lock on a pool brought up to date
 *   there with every block and pending row. Either way the checks, the pool's limits included, are exactly the
 *   embedded ledger's;
 * - block production: only the process holding the session-level leader lock. It builds the block from its
 *   up-to-date pool and writes it before it takes the admission lock; under the lock it takes in what was admitted
 *   meanwhile, marks the transactions the block finished and commits, on the very connection that holds the
 *   leader lock, so a producer that lost its connection (and with it the lock) cannot commit; the block number's
 *   primary key rules out a fork. When the leader dies, PostgreSQL releases its lock and another process takes
 *   over within one poll interval. The leader learns of every admission at once (its own, or another
 *   process's by NOTIFY) and makes a block as soon as none was made in the last block interval, as the embedded
 *   ledger does;
 * - every process learns of new blocks and admissions by NOTIFY, and polls as a fallback. It copies a block at
 *   once (with the pending rows stored since); another process's pending rows only when something needs them: a
 *   read of the pool ({@link PgLedgerSync.freshPool}, asked by every Directory route that reads the pool), an
 *   admission whose view they touched, the next block. So a change is not run again on every process's pool as
 *   it is admitted, and a read through any process still shows every change it has heard of.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import pg from 'pg';
import type { Logger } from 'pino';
import { bytesEqual } from '../../base/bytes.js';
import { DdnError } from '../../base/errors.js';
import { insufficientStorage, isStorageFailure } from '../../base/storage-errors.js';
import { SerialQueue } from '../../base/serial-queue.js';
import type { HandOverPeer, HandOverSource } from '../../ports/hand-over-source.js';
import { ReplicaStorage } from './replica-storage.js';
import type { Admission, AdmissionBatch, PoolCoordinator } from '../../ledger/admission-batch.js';
import type { Ledger } from '../../ledger/chain.js';
import type { BuiltBlock } from '../../ledger/types.js';
import { LedgerFailure } from '../../ledger/errors.js';
import type { LedgerStore, StoredBlock, TxRecord } from '../../ledger/store.js';
import { arrived, type Arrivals, batchLeft, batchTook, batchWaitMs, NO_ARRIVALS } from './admission-wait.js';
import { admitOnView, conflictKeysLiteral, type ViewAdmission, type ViewBatch } from './ledger-admission.js';
import { BEGIN_ADMISSION, endTransaction, type LockTaken, readCatchUp, TAKE_ADMISSION_LOCK } from './ledger-catch-up.js';
import {
  blockHashAt,
  finishTxRows,
  genesisHashOf,
  HAND_OVER_TOKEN,
  initGenesis,
  insertPendingRows,
  LEADER_LOCK,
  LEDGER_MIGRATION_NAMESPACE,
  LISTENER_LOCK,
  LIVE_PRODUCER,
  othersListening,
  PUBLISH_PRODUCER,
  LEDGER_PG_MIGRATIONS,
  writeBlockRows,
} from './ledger-tables.js';
import { LEDGER_FEED_PG_MIGRATIONS, LEDGER_FEED_PG_NAMESPACE } from './ledger-feed.js';
import { schemaChannel } from './notify-channel.js';
import { migratePg, type PgPool } from './pool.js';

/** How long a producer whose hand-over failed is not handed writes (they are admitted where they arrive). */
const HAND_OVER_BACKOFF_MS = 1000;

/** Blocks copied per query while catching up. */
const CATCH_UP_BATCH = 100;
/** Admissions checked and stored in one transaction at most. */
const MAX_BATCH = 256;
/**
 * Admissions waiting for a batch at most; beyond, an admission is refused (503 `ledger_unavailable`, the
 * Directory's 503 in http-api.md §1) instead of queued.
 */
const MAX_WAITING = 4096;

interface WaitingAdmission {
  prepare: (batch: AdmissionBatch) => Admission;
  resolve: (r: { txHash: string; duplicate: boolean }) => void;
  reject: (e: unknown) => void;
  /** When it arrived (`performance.now()`). */
  atMs: number;
}

type Outcome = { ok: { txHash: string; duplicate: boolean } } | { err: unknown };

/** Transactions of one kind that took the admission lock, and their time, summed since start (seconds). */
export interface LockUse {
  transactions: number;
  /** From asking for the lock to holding it, as PostgreSQL measured it. */
  waitS: number;
  /** From sending the lock's round trip to the answer to COMMIT (or ROLLBACK): the wait, then the lock held. */
  totalS: number;
  /** From holding the lock to the end of the transaction that released it, as PostgreSQL measured it. */
  heldS: number;
}

/** This process's use of the admission lock: by its admission batches and by the blocks it produced. */
export interface LockUses {
  admission: LockUse;
  block: LockUse;
}

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
  /** Admissions checked and stored in one transaction at most (default 256; 1: one transaction per admission). */
  maxBatch?: number;
  /** Admissions waiting for a batch at most (default 4096); beyond, 503 `ledger_unavailable`. */
  maxWaiting?: number;
  /**
   * The longest a batch waits for others to join it, from its first admission's arrival (default 0: never, the
   * batch leaves when its turn comes). At a steady low rate each admission is otherwise a statement and a commit of
   * its own; waiting lets a few share them. The wait adapts to the recent arrivals (admission-wait.ts): none when
   * company is not due within this cap (a lone write after a quiet period) or comes faster than a batch takes in
   * the database (batches fill on their own), two recent gaps after the last admission joined it otherwise. A batch
   * that is full leaves at once.
   */
  admissionWaitMs?: number;
  /** Compete for block production and produce on a timer (default true); false: only {@link PgLedgerSync.produceOnce}. */
  produce?: boolean;
  /**
   * Hand this process's writes to the producer, when another process produces and has published its address
   * ({@link PgLedgerSync.advertise}); default true. False: this process admits every write it receives.
   */
  handOver?: boolean;
  logger?: Logger;
}

/**
 * Migrates the ledger tables and writes the genesis block, or checks that the database holds this genesis.
 * False when it holds another chain.
 */
export async function preparePgLedger(pool: PgPool, genesis: StoredBlock): Promise<boolean> {
  await migratePg(pool, LEDGER_PG_MIGRATIONS, LEDGER_MIGRATION_NAMESPACE);
  await migratePg(pool, LEDGER_FEED_PG_MIGRATIONS, LEDGER_FEED_PG_NAMESPACE);
  return inAdmissionTransaction(pool, async (c) => {
    await c.query(BEGIN_ADMISSION);
    const stored = await genesisHashOf(c);
    if (stored === undefined) await initGenesis(c, genesis);
    await c.query('COMMIT');
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

/** The deployment's hand-over token: the one stored, or a new one stored now. */
async function handOverToken(pool: PgPool): Promise<string> {
  for (;;) {
    const r = await pool.query<{ token: string }>(HAND_OVER_TOKEN, [randomBytes(24).toString('base64url')]);
    // a process storing one at the same time: the row is there once its statement ends
    const token = r.rows[0]?.token;
    if (token !== undefined) return token;
  }
}

/** The backend pid of a connected client's session (node-postgres keeps it; its types do not say so). */
function backendPid(client: pg.Client): number | undefined {
  return (client as pg.Client & { processID?: number }).processID;
}

/**
 * `work` in a transaction holding the admission lock: `work` takes it, sending {@link BEGIN_ADMISSION} first
 * (alone, or in front of its first statements), and commits. On failure the transaction is rolled back; a
 * connection that cannot roll back (it broke) is released with the error, so the pool discards it.
 */
async function inAdmissionTransaction<T>(pool: PgPool, work: (c: pg.PoolClient) => Promise<T>): Promise<T> {
  const c = await pool.connect();
  let broken: Error | undefined;
  try {
    return await work(c);
  } catch (e) {
    // also when the lock was not granted (a timeout, a lost connection): BEGIN was, and is rolled back
    broken = await c.query('ROLLBACK').then(
      () => undefined,
      (err: unknown) => (err instanceof Error ? err : new Error(String(err))),
    );
    throw e;
  } finally {
    c.release(broken);
  }
}

export class PgLedgerSync implements PoolCoordinator, HandOverSource {
  private readonly queue = new SerialQueue();
  private readonly channel: string;
  private readonly pollMs: number;
  private session: pg.Client | undefined;
  /** The session being connected (by the poll, or {@link produceOnce}): one at a time, and {@link close} waits for it. */
  private connecting: Promise<void> | undefined;
  private leader = false;
  private lastPendingSeq = 0;
  /** Pending rows this process could not adopt; the producer drops them with its next block. */
  private readonly unadoptable = new Map<string, TxRecord>();
  private lastCatchUpMs = 0;
  /** Sessions listening so far: each new one may have missed notifications sent before its LISTEN. */
  private listening = 0;
  /** {@link listening} when the last catch-up began: a catch-up since the LISTEN read what came before it. */
  private caughtUpListening = 0;
  private catchUpQueued = false;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly waiting: WaitingAdmission[] = [];
  private batchQueued = false;
  /** The leader's next block, when one is due. */
  private blockTimer: NodeJS.Timeout | undefined;
  /** A batch waiting for more admissions ({@link PgLedgerSyncOptions.admissionWaitMs}). */
  private batchWaitTimer: NodeJS.Timeout | undefined;
  /** Whether the batch being formed waited for company. */
  private batchWaited = false;
  /** The recent admissions' arrivals, which decide whether and how long a batch waits. */
  private arrivals: Arrivals = NO_ARRIVALS;
  /** Batches that waited for company, and of them those that found none (metrics). */
  private readonly waits = { batches: 0, lonely: 0 };
  private lastBlockMs = 0;
  /** The highest block number announced (NOTIFY `block:<n>`; this process's own blocks among them). */
  private notifiedHead = -1;
  /** The highest pending row's seq announced (NOTIFY `pending:<seq>`; this process's own rows among them). */
  private notifiedPending = 0;
  /**
   * {@link notifiedPending} when the last catch-up of blocks and rows began: every row announced by then was read,
   * pending, or finished by a block read with it or announced after it (a row can be finished before this process
   * sees it pending, so {@link lastPendingSeq} alone may stay below its seq).
   */
  private heardPending = 0;
  /** The queued catch-up runs even when no notification asks for one (the poll's). */
  private catchUpForced = false;
  /** The catch-up reads of the pool wait for ({@link freshPool}), until it starts. */
  private readsCatchUp: Promise<void> | undefined;
  /**
   * Another process may hear this one's announcements: its session holds the listener (or leader) lock, or said
   * `listening:<pid>` since the last look. Until this process knows, true; false only after a look at the locks
   * found none, so a process alone sends no `pending:` or `block:` notification that would only come back to it.
   */
  private othersListening = true;
  /** `listening:<pid>` notifications of other processes heard so far: one heard during a look outdates it. */
  private othersHeard = 0;
  /**
   * This process's batches stored after rows of other processes it had not copied, by their first transaction's
   * hash, until the catch-up that reaches them (cleared when a block comes first: then their rows are checked
   * again as any other's).
   */
  private readonly storedAfterOthers = new Map<string, AdmissionBatch>();
  /** Batches checked on this process's own view, by what became of them (metrics). */
  private readonly viewBatches: Record<ViewAdmission['outcome'], number> = { stored: 0, stale: 0, conflict: 0, full: 0 };
  /** Whether this process's replica is out of storage, as its catch-ups find it (logged once per state). */
  private readonly replica: ReplicaStorage;
  /** The deployment's hand-over token (src/http/hand-over.ts). */
  private handOverToken: string | undefined;
  /** Where other processes reach this one ({@link advertise}), published while it produces. */
  private advertised: string | undefined;
  /** The producer's published address, while another process produces (read every poll, and when it changes). */
  private producer: HandOverPeer | undefined;
  /** No write is handed over before this time (`Date.now()`): the last hand-over failed. */
  private handOverPausedUntil = 0;
  /**
   * Writes answered whose rows this pool may lack — handed to the producer and answered, or stored here by a batch
   * that could not join the pool — so far: a read after one copies them first.
   */
  private owed = 0;
  /** {@link owed} when the last catch-up began. */
  private caughtUpOwed = 0;
  private readonly locks: LockUses = {
    admission: { transactions: 0, waitS: 0, totalS: 0, heldS: 0 },
    block: { transactions: 0, waitS: 0, totalS: 0, heldS: 0 },
  };

  private constructor(private readonly o: PgLedgerSyncOptions) {
    this.channel = schemaChannel('ddn_ledger_', o.schema);
    this.pollMs = o.pollMs ?? 500;
    this.replica = new ReplicaStorage(o.logger);
  }

  /** Catches the ledger up, hands it its pool admission, and starts following (and competing to lead). */
  static async open(o: PgLedgerSyncOptions): Promise<PgLedgerSync> {
    const sync = new PgLedgerSync(o);
    sync.handOverToken = await handOverToken(o.pool);
    await sync.queue.run(() => sync.catchUpWithPool());
    o.ledger.coordinateWith(sync);
    await sync.ensureSession().catch((err: unknown) => o.logger?.warn({ err }, 'ledger session connection failed; retrying'));
    sync.schedule(0);
    return sync;
  }

  /** True from a catch-up that failed for want of storage in this process's replica until one succeeds (metrics). */
  get replicaOutOfStorage(): boolean {
    return this.replica.isFull;
  }

  /** True while this process produces the blocks. */
  get isLeader(): boolean {
    return this.leader;
  }

  /**
   * Where other Directory processes reach this one (its origin, `http://host:port`): published while it produces
   * the blocks, so they hand their writes to it.
   */
  advertise(url: string): void {
    this.advertised = url;
    this.publishSoon();
  }

  /** HandOverSource: the producer to hand a write to, unless this process produces, none is known, or it failed lately. */
  peer(): HandOverPeer | undefined {
    if (this.leader || (this.o.handOver ?? true) === false || Date.now() < this.handOverPausedUntil) return undefined;
    return this.producer;
  }

  /** HandOverSource: the deployment's shared token. */
  token(): string | undefined {
    return this.handOverToken;
  }

  /** HandOverSource: a hand-over failed; the next writes stay here for a while, and the producer is looked up again. */
  failed(peer: HandOverPeer): void {
    if (this.producer === peer) this.handOverPausedUntil = Date.now() + HAND_OVER_BACKOFF_MS;
    void this.readProducer();
  }

  /** HandOverSource: a hand-over was answered; reads through this process first copy what the producer took. */
  answered(): void {
    this.owed++;
  }

  /** Publishes this process's address as the producer's when it produces, in the queue (between blocks). */
  private publishSoon(): void {
    if (!this.leader || this.advertised === undefined) return;
    this.queue.run(() => this.publishProducer()).catch((err: unknown) => this.o.logger?.warn({ err }, 'the producer address could not be published'));
  }

  /** Publishes this process's address as the producer's, on its leader session. */
  private async publishProducer(): Promise<void> {
    const session = this.session;
    if (!this.leader || session === undefined || this.advertised === undefined) return;
    await session.query(PUBLISH_PRODUCER, [this.advertised]);
    await session.query(`SELECT pg_notify(${pg.escapeLiteral(this.channel)}, 'producer:' || pg_backend_pid())`);
  }

  /** Reads the producer's published address (none while this process produces, or when its session is gone). */
  private async readProducer(): Promise<void> {
    if (this.leader || this.closed) return;
    const r = await this.o.pool.query<{ url: string }>(LIVE_PRODUCER).catch(() => undefined);
    if (r === undefined || this.leader) return;
    const url = r.rows[0]?.url;
    if (url !== this.producer?.url) this.producer = url === undefined ? undefined : { url };
  }

  /**
   * Admission batches checked on this process's own view so far, by outcome: `stored`, or (then checked again)
   * `stale` (a block came), `conflict` (another process's row wrote what it read), `full` (metrics).
   */
  get viewAdmissions(): Readonly<Record<ViewAdmission['outcome'], number>> {
    return this.viewBatches;
  }

  /** Admission batches that waited for company so far, and of them those that left alone (metrics). */
  get admissionWaits(): Readonly<{ batches: number; lonely: number }> {
    return this.waits;
  }

  /** How long this process waited for and held the admission lock so far (metrics). */
  get lockUses(): Readonly<LockUses> {
    return this.locks;
  }

  /**
   * Counts one transaction under the admission lock that started at `startedMs` (`performance.now()`), took the
   * lock as `lock` says and ended at `endedAtS` (server clock; unknown when it failed).
   */
  private lockUsed(use: LockUse, startedMs: number, lock: LockTaken | undefined, endedAtS: number | undefined): void {
    use.transactions++;
    use.waitS += lock?.waitS ?? 0;
    use.totalS += (performance.now() - startedMs) / 1000;
    if (lock !== undefined && endedAtS !== undefined) use.heldS += Math.max(0, endedAtS - lock.atS);
  }

  admit(prepare: (batch: AdmissionBatch) => Admission): Promise<{ txHash: string; duplicate: boolean }> {
    if (this.closed) return Promise.reject(new DdnError('ledger_unavailable', 'the ledger is closing'));
    if (this.waiting.length >= (this.o.maxWaiting ?? MAX_WAITING)) {
      return Promise.reject(new DdnError('ledger_unavailable', 'too many admissions are waiting for the ledger database'));
    }
    return new Promise((resolve, reject) => {
      const atMs = performance.now();
      if (this.o.admissionWaitMs) this.arrivals = arrived(this.arrivals, this.o.admissionWaitMs, atMs);
      this.waiting.push({ prepare, resolve, reject, atMs });
      this.queueBatch();
    });
  }

  /** How long the batch being formed still waits for company ({@link batchWaitMs}). */
  private batchWaitMs(): number {
    const capMs = this.o.admissionWaitMs ?? 0;
    const n = Math.min(this.waiting.length, this.o.maxBatch ?? MAX_BATCH);
    if (capMs <= 0 || n === 0) return 0;
    const batch = { firstAtMs: this.waiting[0]!.atMs, lastAtMs: this.waiting[n - 1]!.atMs, size: this.waiting.length };
    return batchWaitMs(capMs, this.arrivals, batch, this.o.maxBatch ?? MAX_BATCH, performance.now());
  }

  /**
   * One batch of whatever admissions are waiting when its turn comes — after {@link PgLedgerSyncOptions.admissionWaitMs}
   * when one is set and the batch is not full yet.
   */
  private queueBatch(): void {
    const waitMs = this.batchWaitMs();
    if (this.batchQueued) {
      // a waiting batch that filled up leaves now
      if (this.batchWaitTimer !== undefined && waitMs === 0) this.stopWaiting();
      return;
    }
    this.batchQueued = true;
    this.batchWaited = waitMs > 0 && !this.closed;
    if (this.batchWaited) this.batchWaitTimer = setTimeout(() => this.waitedOut(), waitMs);
    else this.runBatch();
  }

  /** The wait's timer: the batch leaves, unless admissions that joined it since moved its end later. */
  private waitedOut(): void {
    const waitMs = this.closed ? 0 : this.batchWaitMs();
    if (waitMs > 0) this.batchWaitTimer = setTimeout(() => this.waitedOut(), waitMs);
    else this.stopWaiting();
  }

  /** The batch that waits for company leaves. */
  private stopWaiting(): void {
    clearTimeout(this.batchWaitTimer);
    this.batchWaitTimer = undefined;
    this.runBatch();
  }

  private runBatch(): void {
    void this.queue.run(async () => {
      this.batchQueued = false;
      const batch = this.waiting.splice(0, this.o.maxBatch ?? MAX_BATCH);
      if (this.o.admissionWaitMs) {
        this.arrivals = batchLeft(this.arrivals, batch.length, this.batchWaited);
        if (this.batchWaited) {
          this.waits.batches++;
          if (batch.length === 1) this.waits.lonely++;
        }
      }
      this.batchWaited = false;
      if (this.waiting.length > 0) this.queueBatch();
      if (batch.length === 0) return;
      const startedMs = performance.now();
      await this.admitBatch(batch);
      if (this.o.admissionWaitMs) this.arrivals = batchTook(this.arrivals, performance.now() - startedMs);
    });
  }

  /**
   * Checks the batch in arrival order, each admission seeing the ones before it, on this process's own view of
   * the pool, stored in one statement if the view holds for it ({@link admitOnView}); when it does not, once more
   * on a fresh view, then under the lock, on the pool brought up to date there.
   */
  private async admitBatch(batch: readonly WaitingAdmission[]): Promise<void> {
    // A block this process has not copied yet is copied first: its replica commit is the longest step of a
    // catch-up, and under the lock every other process's admissions would wait for it; on an old head, the view
    // would not hold.
    if (this.notifiedHead > this.o.ledger.headNumber) await this.tryCatchUp();
    if (await this.admitOnOwnView(batch)) return;
    // A block or another process's rows came after the view: once more on a view brought up to date (outside the
    // lock), then under the lock.
    if ((await this.tryCatchUp()) && (await this.admitOnOwnView(batch))) return;
    await this.admitUnderLock(batch);
  }

  /** Where this process announces its rows and blocks: its channel, unless no other process listens. */
  private announceOn(): string | undefined {
    return this.othersListening ? this.channel : undefined;
  }

  /** True when a notification announced a block or a pending row this process has not copied. */
  private announcedUnseen(): boolean {
    return this.notifiedHead > this.o.ledger.headNumber || this.notifiedPending > Math.max(this.lastPendingSeq, this.heardPending);
  }

  /**
   * True unless this process holds everything the database may have: a catch-up since this session's LISTEN read
   * what came before, and no notification since announced a block or a row it has not copied. (A notification in
   * flight may still be missed: the catch-ups under the admission lock read the pending rows anyway, and a block
   * comes only from the producer.)
   */
  private unheard(): boolean {
    return this.caughtUpListening !== this.listening || this.caughtUpOwed !== this.owed || this.announcedUnseen();
  }

  /**
   * True when this process's pool may lack a pending change it knows of: a row another process announced, its own
   * rows stored after others' it had not copied, anything stored before its session listened.
   */
  private poolBehind(): boolean {
    return this.storedAfterOthers.size > 0 || this.unheard();
  }

  /**
   * Undefined when this process's pool holds every pending change it knows of (one process alone: always, once
   * caught up since it listened); else the one catch-up that the reads arriving meanwhile wait for. It never
   * rejects: when it fails (logged), the reads see this process's pool as it is.
   */
  freshPool(): Promise<void> | undefined {
    if (this.closed || !this.poolBehind()) return undefined;
    this.readsCatchUp ??= this.queue
      .run(async () => {
        // reads that arrive from now on wait for a catch-up of their own, if they need one
        this.readsCatchUp = undefined;
        if (!this.closed && this.poolBehind()) await this.catchUpWithPool();
      })
      .catch((err: unknown) => this.catchUpFailed(err));
    return this.readsCatchUp;
  }

  /** A failed catch-up: logged, unless it is the replica out of storage (logged when that state begins). */
  private catchUpFailed(err: unknown): void {
    if (!this.replica.failed(err, Date.now())) this.o.logger?.warn({ err }, 'ledger catch-up failed');
  }

  /** A catch-up outside the lock; false (logged) when it failed. */
  private tryCatchUp(): Promise<boolean> {
    return this.catchUpWithPool().then(
      () => true,
      (err: unknown) => {
        this.catchUpFailed(err);
        return false;
      },
    );
  }

  /** Each admission's verdict on `view`; the accepted ones join it, with what they write. */
  private checkBatch(view: AdmissionBatch, batch: readonly WaitingAdmission[]): { outcomes: Outcome[]; rows: ViewBatch['rows'][number][] } {
    const outcomes: Outcome[] = [];
    const rows: ViewBatch['rows'][number][] = [];
    for (const w of batch) {
      try {
        const a = w.prepare(view);
        if (a.tx) {
          a.accept();
          rows.push({ tx: a.tx, writes: a.writes });
        }
        outcomes.push({ ok: a.result });
      } catch (e) {
        outcomes.push({ err: e });
      }
    }
    return { outcomes, rows };
  }

  /** Answers every admission of the batch with its verdict. */
  private answer(batch: readonly WaitingAdmission[], outcomes: readonly Outcome[]): void {
    batch.forEach((w, i) => {
      const o = outcomes[i]!;
      if ('ok' in o) w.resolve(o.ok);
      else w.reject(this.refusal(o.err));
    });
  }

  /**
   * A batch whose statement failed: 503 for every admission (507 when it was this process's replica that could
   * not take the catch-up: its disk is full), except the refusals among `refused` (verdicts on the up-to-date
   * pool, under the lock).
   */
  private fail(batch: readonly WaitingAdmission[], err: unknown, refused: readonly Outcome[] = []): void {
    // a replica out of storage is logged when that state begins, not at each admission
    if (!this.replica.failed(err, Date.now())) this.o.logger?.error({ err, batch: batch.length }, 'ledger admission failed');
    const unavailable = isStorageFailure(err) ? insufficientStorage() : new DdnError('ledger_unavailable', 'the ledger database is unavailable');
    batch.forEach((w, i) => {
      const o = refused[i];
      w.reject(o && 'err' in o ? this.refusal(o.err) : unavailable);
    });
  }

  /**
   * The batch checked on this process's view, without the lock, and stored by one statement that holds the lock
   * only while PostgreSQL works. False when the view did not hold (nothing stored, nothing answered).
   */
  private async admitOnOwnView(batch: readonly WaitingAdmission[]): Promise<boolean> {
    const view = this.o.ledger.openBatch();
    const { outcomes, rows } = this.checkBatch(view, batch);
    const startedMs = performance.now();
    let r: ViewAdmission;
    try {
      r = await admitOnView(this.o.pool, {
        head: view.headNumber,
        afterSeq: this.lastPendingSeq,
        reads: view.reads,
        maxPool: this.o.ledger.maxPoolSize,
        rows,
        notifyChannel: this.announceOn(),
      });
    } catch (e) {
      if (rows.length > 0) this.lockUsed(this.locks.admission, startedMs, undefined, undefined);
      // verdicts on a view that was not confirmed: none is answered
      this.fail(batch, e);
      return true;
    }
    this.viewBatches[r.outcome]++;
    if (r.lock !== undefined) this.lockUsed(this.locks.admission, startedMs, r.lock, r.endedAtS);
    if (r.outcome !== 'stored') return false;
    if (rows.length > 0 && r.contiguous && r.lastSeq !== undefined && this.o.ledger.joinBatch(view)) {
      this.lastPendingSeq = r.lastSeq;
    } else if (rows.length > 0) {
      // Rows stored after another process's join this pool with the next catch-up (a read of the pool asks for
      // one: freshPool), after the rows before them — as they were checked: the rows between wrote nothing they
      // read.
      if (this.storedAfterOthers.size >= MAX_WAITING) this.storedAfterOthers.clear();
      this.storedAfterOthers.set(view.entries[0]!.tx.txHash, view);
    }
    this.answer(batch, outcomes);
    if (rows.length > 0) this.wantBlock(true);
    return true;
  }

  /**
   * The batch checked on the pool brought up to date under the admission lock, and stored in one insert; when
   * the transaction fails, every admission the checks accepted is answered 503.
   */
  private async admitUnderLock(batch: readonly WaitingAdmission[]): Promise<void> {
    let checked: ReturnType<PgLedgerSync['checkBatch']> | undefined;
    let view: AdmissionBatch | undefined;
    let lastSeq = 0;
    let startedMs: number | undefined;
    let lock: LockTaken | undefined;
    let endedAtS: number | undefined;
    try {
      await inAdmissionTransaction(this.o.pool, async (c) => {
        // the lock and the catch-up under it in one round trip; the checks are pure work on the local pool (the
        // signatures were verified before, see Ledger.admit)
        startedMs = performance.now();
        lock = await this.catchUp(c, BEGIN_ADMISSION);
        view = this.o.ledger.openBatch();
        checked = this.checkBatch(view, batch);
        const { rows } = checked;
        if (rows.length === 0) {
          endedAtS = await endTransaction(c, 'COMMIT');
          return;
        }
        // the insert (with its NOTIFY) and the COMMIT queued together: the COMMIT leaves as the insert's answer
        // arrives, without waiting for this process's event loop; a failed insert makes it a rollback
        const txs = rows.map((r) => r.tx);
        const keys = rows.map((r) => conflictKeysLiteral(r.writes));
        [lastSeq, endedAtS] = await Promise.all([insertPendingRows(c, txs, this.announceOn(), keys), endTransaction(c, 'COMMIT')]);
      });
    } catch (e) {
      if (startedMs !== undefined) this.lockUsed(this.locks.admission, startedMs, lock, undefined);
      this.fail(batch, e, checked?.outcomes);
      return;
    }
    if (startedMs !== undefined) this.lockUsed(this.locks.admission, startedMs, lock, endedAtS);
    // (a pool that changed meanwhile takes the rows with its next catch-up, asked for here; a read answered before
    // it waits for a catch-up of its own, so that a 202 is followed by reads that show its change)
    if (lastSeq > 0 && view !== undefined && this.o.ledger.joinBatch(view)) this.lastPendingSeq = lastSeq;
    else if (lastSeq > 0) {
      this.owed++;
      this.requestCatchUp(true);
    }
    this.answer(batch, checked!.outcomes);
    if (lastSeq > 0) this.wantBlock();
  }

  /** What a failed check answers: the ledger's or the Directory's refusal, else 503 (logged). */
  private refusal(e: unknown): unknown {
    if (e instanceof LedgerFailure || e instanceof DdnError) return e;
    this.o.logger?.error({ err: e }, 'ledger admission failed');
    return new DdnError('ledger_unavailable', 'the ledger database is unavailable');
  }

  /** Copies new blocks and pending rows into the ledger (tests and callers that need a fresh view). */
  refresh(): Promise<void> {
    return this.queue.run(() => this.catchUpWithPool());
  }

  private async catchUpWithPool(): Promise<void> {
    const c = await this.o.pool.connect();
    try {
      await this.catchUp(c);
      c.release();
    } catch (e) {
      // outside a transaction: a failed read may have broken the connection, which the pool then discards
      c.release(e instanceof Error ? e : true);
      throw e;
    }
  }

  /**
   * New blocks (unless `blocks` is false), then new pending rows, one round trip per {@link CATCH_UP_BATCH} blocks;
   * `prefix` goes first. With {@link BEGIN_ADMISSION} or {@link TAKE_ADMISSION_LOCK} as the prefix: when its lock
   * was taken.
   */
  private async catchUp(c: pg.ClientBase, prefix = '', blocks = true): Promise<LockTaken | undefined> {
    let lock: LockTaken | undefined;
    const listening = this.listening;
    const owed = this.owed;
    const announced = this.notifiedPending;
    // a prefix begins a transaction (or takes a lock in one): the reads after its first take its snapshots
    const inTransaction = prefix !== '';
    for (let first = true; ; first = false) {
      const rows = await readCatchUp(c, this.o.ledger.headNumber + 1, this.lastPendingSeq, blocks ? CATCH_UP_BATCH : 0, first ? prefix : '', inTransaction);
      if (first) lock = rows.lock;
      for (const b of rows.blocks) {
        this.o.ledger.applyReplicatedBlock(b.block, b.writes, b.txs, b.serialized);
        for (const t of b.txs) this.unadoptable.delete(t.txHash);
      }
      // a batch checked on an older head is adopted row by row
      if (rows.blocks.length > 0) this.storedAfterOthers.clear();
      if (blocks && rows.blocks.length === CATCH_UP_BATCH) continue;
      this.adopt(rows.pending);
      this.lastPendingSeq = rows.lastSeq;
      this.lastCatchUpMs = Date.now();
      if (blocks) {
        this.replica.caughtUp(this.lastCatchUpMs);
        this.caughtUpListening = listening;
        this.caughtUpOwed = owed;
        this.heardPending = Math.max(this.heardPending, announced);
      }
      if (rows.pending.length > 0) this.wantBlock();
      return lock;
    }
  }

  /**
   * Pending rows in the database's order join the pool: this process's own batches stored after rows of others
   * ({@link storedAfterOthers}) as they were checked, every other row checked on the pool.
   */
  private adopt(pending: readonly TxRecord[]): void {
    let from = 0;
    const adoptRows = (to: number) => {
      for (const t of this.o.ledger.adoptPending(pending.slice(from, to))) this.unadoptable.set(t.txHash, t);
      from = to;
    };
    for (let i = 0; i < pending.length; i++) {
      const batch = this.storedAfterOthers.get(pending[i]!.txHash);
      if (batch === undefined) continue;
      this.storedAfterOthers.delete(pending[i]!.txHash);
      if (!batch.entries.every((e, k) => pending[i + k]?.txHash === e.tx.txHash)) continue;
      adoptRows(i);
      if (!this.o.ledger.adoptBatch(batch)) continue;
      from = i + batch.entries.length;
      i = from - 1;
    }
    adoptRows(pending.length);
  }

  /**
   * The leader's next block: at once when none was made in the last block interval, else when the interval is
   * over (a process with `produce: false` only produces through {@link produceOnce}). `knownWork`: another
   * process admitted something this one has not caught up with yet. True when a block is due.
   */
  private wantBlock(knownWork = false): boolean {
    if (!this.leader || this.closed || !(this.o.produce ?? true)) return false;
    if (this.blockTimer !== undefined) return true;
    if (!knownWork && this.o.ledger.pendingEntries().length === 0 && this.unadoptable.size === 0) return false;
    const delay = Math.max(0, this.lastBlockMs + this.o.blockIntervalMs - Date.now());
    this.blockTimer = setTimeout(() => {
      this.queue
        .run(() => this.produceBlock())
        .catch((err: unknown) => {
          if (!this.closed && !this.replica.failed(err, Date.now())) this.o.logger?.warn({ err }, 'block production failed');
        })
        .finally(() => {
          this.blockTimer = undefined;
          this.wantBlock();
        });
    }, delay);
    return true;
  }

  /**
   * A notification arrived (or, `forced`, the poll fell due): one catch-up, however many were asked for meanwhile.
   * A notification's catch-up is skipped when, its turn come, this process holds what was announced: its own
   * block or admission announces itself, and the notification can arrive before the work that sent it ends.
   */
  private requestCatchUp(forced = false): void {
    this.catchUpForced ||= forced;
    if (this.catchUpQueued || this.closed) return;
    this.catchUpQueued = true;
    this.queue
      .run(async () => {
        this.catchUpQueued = false;
        const needed = this.catchUpForced || this.announcedUnseen();
        this.catchUpForced = false;
        if (!this.closed && needed) await this.catchUpWithPool();
      })
      .catch((err: unknown) => this.catchUpFailed(err));
  }

  /**
   * Connects the session unless it is connected, or being connected (a second client would listen, and stay open,
   * beside the one kept).
   */
  private ensureSession(): Promise<void> {
    if (this.session !== undefined || this.closed) return Promise.resolve();
    this.connecting ??= this.connectSession().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
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
      if (msg.channel !== this.channel) return;
      const [kind, at] = (msg.payload ?? '').split(':');
      const n = Number(at);
      if (!Number.isSafeInteger(n)) return this.requestCatchUp(true);
      // a process began to listen (this one's own session among them)
      if (kind === 'listening') {
        if (n !== backendPid(client)) {
          this.othersListening = true;
          this.othersHeard++;
        }
        return;
      }
      if (kind === 'producer') {
        void this.readProducer();
        return;
      }
      if (kind === 'pending') {
        this.notifiedPending = Math.max(this.notifiedPending, n);
        // Another process's rows are copied when something here needs them — a read of the pool (freshPool), an
        // admission whose view they touched (the statement says so), the next block's catch-up — not at every
        // announcement. The leader's block catches up anyway: an admission elsewhere goes straight to production.
        if (n > this.lastPendingSeq) this.wantBlock(true);
        return;
      }
      if (kind === 'block') this.notifiedHead = Math.max(this.notifiedHead, n);
      // what this process already holds (its own blocks among them) needs no catch-up
      if (kind === 'block' && n <= this.o.ledger.headNumber) return;
      this.requestCatchUp();
    });
    await client.connect();
    let others: boolean;
    try {
      // listening, then known to listen (the listener lock, and `listening:<pid>` for the processes that looked
      // before), then whether any other process listens: one round trip
      const results = (await client.query(
        `LISTEN "${this.channel}"; SELECT pg_advisory_lock_shared((${LISTENER_LOCK})::int8); ` +
          `SELECT pg_notify(${pg.escapeLiteral(this.channel)}, 'listening:' || pg_backend_pid()); ${othersListening()}`,
      )) as unknown as pg.QueryResult<{ others?: boolean }>[];
      others = results[results.length - 1]?.rows[0]?.others !== false;
    } catch (e) {
      await client.end().catch(() => undefined);
      throw e;
    }
    // closed while connecting: nothing may keep this client (it would hold the process open)
    if (this.closed) return client.end().catch(() => undefined);
    this.session = client;
    this.othersListening = others;
    this.listening++;
  }

  /**
   * Looks again, on a pooled connection (the session may be in a block's transaction), whether another process
   * listens: one that stopped listening stops being announced to. On failure, announcements go on.
   */
  private async lookForOthers(): Promise<void> {
    const session = this.session;
    const pid = session === undefined ? undefined : backendPid(session);
    if (session === undefined || pid === undefined) return;
    const heard = this.othersHeard;
    const others = await this.o.pool.query<{ others: boolean }>(othersListening(pid)).then(
      (r) => r.rows[0]?.others !== false,
      () => true,
    );
    if (this.session === session && (others || this.othersHeard === heard)) this.othersListening = others;
  }

  private lostSession(client: pg.Client, err?: Error): void {
    if (this.session !== client) return;
    this.session = undefined;
    this.othersListening = true;
    if (this.leader) this.o.logger?.warn({ err }, 'ledger leadership lost with its connection');
    this.leader = false;
    client.end().catch(() => undefined);
  }

  private schedule(delayMs: number): void {
    if (this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.tick().finally(() => this.schedule(this.pollMs));
    }, delayMs);
  }

  private async tick(): Promise<void> {
    try {
      if (this.session === undefined) await this.ensureSession();
      else void this.lookForOthers();
      void this.readProducer();
      if (this.o.produce ?? true) await this.compete();
      if (Date.now() - this.lastCatchUpMs >= this.pollMs) this.requestCatchUp(true);
      this.wantBlock();
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
      this.producer = undefined;
      // Operators (and the deployment test) find the producer in pg_stat_activity; other processes find its address.
      await session.query(`SET application_name = '${this.applicationName('ddn-ledger-leader')}'`);
      this.publishSoon();
      this.o.logger?.info({ head: this.o.ledger.headNumber }, 'this process now produces the ledger blocks');
      this.wantBlock();
    }
    return this.leader;
  }

  /**
   * Competes for leadership now and, when leading, produces one block out of the pool (a process with
   * `produce: false` never competes on its own; tests drive it with this). False when another process leads.
   */
  async produceOnce(): Promise<boolean> {
    await this.ensureSession();
    if (!(await this.compete())) return false;
    await this.queue.run(() => this.produceBlock());
    return true;
  }

  /** One block out of the shared pool, committed on the leader's own session. */
  private async produceBlock(): Promise<void> {
    const c = this.session;
    if (c === undefined || !this.leader || this.closed) return;
    this.lastBlockMs = Date.now();
    // Before the lock: what other processes admitted joins the pool, with the digests of the signatures its
    // admitting process verified (rows without them have their signatures verified here), so the catch-up under
    // the lock finds little and the block's execution verifies nothing new. Skipped when nothing was announced
    // (one process alone: always): the session is idle between blocks, so announcements come in.
    if (this.unheard()) await this.catchUp(c);
    this.o.ledger.verifyPoolSignatures();
    // The block is executed and written before the lock too: only this process makes blocks, so the head stays,
    // and the block's rows stay invisible until the commit. What other processes admit meanwhile joins the pool
    // after every entry the block was built from; under the lock those entries are checked after the block's
    // pool, exactly as building it then would check them (they wait for the next block, as if they had arrived
    // just after this one was built), and those that fail leave the shared pool with it.
    const head = this.o.ledger.headNumber;
    const poolBefore = [...this.o.ledger.pendingEntries()];
    const early = this.o.ledger.buildBlock({ allowEmpty: this.unadoptable.size > 0 });
    if (early === null) return;
    let startedMs = performance.now();
    let lock: LockTaken | undefined;
    let endedAtS: number | undefined;
    let built: BuiltBlock | undefined;
    try {
      // the transaction begun with the pending rows only, here and under the lock (the block this transaction
      // writes is not one to copy), in one round trip: what was admitted while the block was built joins the pool
      // before the lock, so little is left for under it
      await this.catchUp(c, 'BEGIN;', false);
      await writeBlockRows(c, early.block, early.writes, early.records, this.announceOn());
      startedMs = performance.now();
      lock = await this.catchUp(c, TAKE_ADMISSION_LOCK, false);
      const pool = this.o.ledger.pendingEntries();
      if (this.o.ledger.headNumber === head && poolBefore.every((e, i) => pool[i] === e)) {
        const next = this.o.ledger.extendBuilt(early, pool.slice(poolBefore.length));
        // Rows this process could not adopt leave the shared pool with this block, as failed.
        built = { ...next, dropped: [...next.dropped, ...this.unadoptable.values()] };
        // marked under the lock (admissions wait for no row this transaction holds), the COMMIT queued behind
        [, endedAtS] = await Promise.all([finishTxRows(c, early.block.header.number, [...built.records, ...built.dropped]), endTransaction(c, 'COMMIT')]);
      } else endedAtS = await endTransaction(c, 'ROLLBACK');
    } catch (e) {
      await c.query('ROLLBACK').catch(() => undefined);
      throw e;
    } finally {
      this.lockUsed(this.locks.block, startedMs, lock, endedAtS);
    }
    if (built === undefined) return;
    this.o.ledger.commitBuilt(built);
    this.unadoptable.clear();
    this.storedAfterOthers.clear();
  }

  /** Stops following; a leader gives up its lock (its session ends), so another process takes over at once. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    if (this.blockTimer !== undefined) clearTimeout(this.blockTimer);
    // a batch that waits for company leaves now, ahead of the close
    if (this.batchWaitTimer !== undefined) this.stopWaiting();
    await this.queue.run(async () => undefined);
    await this.connecting?.catch(() => undefined);
    const session = this.session;
    this.session = undefined;
    this.leader = false;
    await session?.end().catch(() => undefined);
  }
}
