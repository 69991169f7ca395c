/**
 * The Relay's durable state in PostgreSQL: the same tables and rules as the SQLite store
 * (src/store/sqlite/relay-staging-store.ts) — staged chunk sets (http-api.md §10.4.3), remembered delivery
 * results (§10.3 step 6) and node-request nonces (§10.6) — but shared by every process on the database.
 *
 * Concurrency across processes (READ COMMITTED, one transaction per write):
 * - a stage locks its set row (`SELECT … FOR UPDATE`) before reading the set's chunks, so two chunks of one set
 *   are serialised and each counts the other's committed chunk: exactly one observes completion;
 * - every write that changes staged bytes or the number of sets locks the single `relay_usage` row last (lock
 *   order: set rows, then usage), and the capacity counts are read after that lock, so limits are exact;
 * - two processes creating the same set race on its primary key: the loser's unique violation (or a deadlock /
 *   serialisation failure) re-runs the whole transaction, which then finds the winner's set;
 * - a nonce is claimed by one `INSERT … ON CONFLICT … DO UPDATE … WHERE expired` statement: the primary key
 *   makes it single-use across processes.
 */
import { sweepInBatches } from '../../base/periodic-sweeper.js';
import type pg from 'pg';
import { setValuesOf, type RelaySetRow } from '../relay-set-row.js';
import { DdnError } from '../../base/errors.js';
import { retry } from '../../base/retry.js';
import type { NonceClaim } from '../../ports/nonce-registry.js';
import { deliveryResultText, type DeliveryResult } from '../../relay/delivery-result.js';
import {
  boundOwner,
  capacityCheck,
  checkCapacity,
  checkOwnBounds,
  checkSequence,
  checkSetValues,
  idlePressure,
  messageIdConflict,
  type CapacityCheck,
} from '../../relay/staging-rules.js';
import {
  MAX_IDLE_DROPS_PER_STAGE,
  RESULT_RETENTION_MS,
  type RelayStagingStore,
  type RelaySweepResult,
  type StageOutcome,
  type StageRequest,
  type StagedChunk,
  type PriorUse,
  type StagingUsage,
  type StoredResult,
} from '../../relay/staging-store.js';
import { migratePg, openPgPool, type PgMigration, type PgPool } from './pool.js';
import { isRetryablePgError } from './retryable.js';
import { KeyedBatches, settledAll, type BatchLimits } from './keyed-batches.js';
import { NonceReads } from './nonce-reads.js';
import { findPriors, saveResults, SAVE_RESULTS_FUNCTION_SQL, type PriorAsk, type ResultRow } from './relay-results.js';

export const PG_RELAY_MIGRATIONS: readonly PgMigration[] = [
  {
    version: 1,
    sql: `
      CREATE TABLE relay_chunk_sets (
        recipient TEXT NOT NULL,
        group_id TEXT NOT NULL,
        total_chunks INTEGER NOT NULL,
        to_value TEXT NOT NULL,
        tag TEXT,
        application_id TEXT,
        sender TEXT,
        created_at_ms BIGINT NOT NULL,
        retry_until_ms BIGINT NOT NULL,
        PRIMARY KEY (recipient, group_id));
      CREATE INDEX relay_chunk_sets_retry ON relay_chunk_sets (retry_until_ms);
      CREATE TABLE relay_chunks (
        recipient TEXT NOT NULL,
        group_id TEXT NOT NULL,
        sequence_number INTEGER NOT NULL,
        message_key TEXT NOT NULL UNIQUE,
        content_hash TEXT NOT NULL,
        size_bytes BIGINT NOT NULL,
        envelope BYTEA NOT NULL,
        PRIMARY KEY (recipient, group_id, sequence_number));
      CREATE TABLE relay_usage (id INTEGER PRIMARY KEY CHECK (id = 1), staged_bytes BIGINT NOT NULL);
      INSERT INTO relay_usage (id, staged_bytes) VALUES (1, 0);
      CREATE TABLE relay_results (
        message_key TEXT PRIMARY KEY,
        content_hash TEXT NOT NULL,
        result TEXT NOT NULL,
        created_at_ms BIGINT NOT NULL);
      CREATE INDEX relay_results_created ON relay_results (created_at_ms);
      CREATE TABLE relay_nonces (
        scope TEXT NOT NULL,
        did TEXT NOT NULL,
        key_id TEXT NOT NULL,
        nonce TEXT NOT NULL,
        expires_at_ms BIGINT NOT NULL,
        PRIMARY KEY (scope, did, key_id, nonce));
      CREATE INDEX relay_nonces_expiry ON relay_nonces (expires_at_ms);
    `,
  },
  {
    // The recipient of a remembered unchunked delivery (the SQLite store's migration 3).
    version: 2,
    sql: 'ALTER TABLE relay_results ADD COLUMN recipient TEXT;',
  },
  {
    // Staging caps per set, recipient and owner, and idle sets dropped under pressure (the SQLite store's migration 4).
    version: 3,
    sql: `
      ALTER TABLE relay_chunk_sets ADD COLUMN owner TEXT;
      ALTER TABLE relay_chunk_sets ADD COLUMN staged_bytes BIGINT NOT NULL DEFAULT 0;
      ALTER TABLE relay_chunk_sets ADD COLUMN last_chunk_ms BIGINT NOT NULL DEFAULT 0;
      UPDATE relay_chunk_sets s SET owner = CASE WHEN sender IS NULL THEN NULL ELSE 'did:' || sender END, last_chunk_ms = created_at_ms, staged_bytes =
        (SELECT COALESCE(SUM(size_bytes), 0) FROM relay_chunks c WHERE c.recipient = s.recipient AND c.group_id = s.group_id);
      CREATE INDEX relay_chunk_sets_owner ON relay_chunk_sets (owner) WHERE owner IS NOT NULL;
      CREATE INDEX relay_chunk_sets_last_chunk ON relay_chunk_sets (last_chunk_ms);
    `,
  },
  {
    // The sends' results remembered by one function call that commits without waiting for its WAL flush
    // (`relay-results.ts`).
    version: 4,
    sql: SAVE_RESULTS_FUNCTION_SQL,
  },
];

/** The migration namespace in `schema_migrations`. */
export const PG_RELAY_NAMESPACE = 'relay';

/** Rows deleted per sweep transaction, so a large purge never holds locks for long. */
const SWEEP_CHUNK = 1_000;

/** Attempts of one write transaction that keeps losing races (src/store/postgres/retryable.ts), run back to back. */
const MAX_ATTEMPTS = 8;

/** Sends read or remembered by one statement at most (more wait for the next one). */
const BATCH_LIMITS: BatchLimits = { maxOps: 256, maxBytes: 16 * 1024 * 1024 };

type Db = pg.PoolClient;
/** Where one statement runs: a transaction's connection, or the pool (a statement atomic on its own). */
type Queryable = Pick<pg.Pool, 'query'>;

type SetRow = RelaySetRow & { retry_until_ms: string; staged_bytes: string };

/** A failed durable write becomes 507 `insufficient_storage`; coded errors and programming errors pass through. */
export function toPgStorageError(err: unknown): unknown {
  if (err instanceof DdnError) return err;
  if (err instanceof TypeError || err instanceof RangeError || err instanceof ReferenceError || err instanceof SyntaxError) return err;
  return new DdnError('insufficient_storage', 'the write could not be persisted');
}

/** A failed durable write of staging state is 507 `staging_persist_failed` (§10.4.3). */
function toStagingError(err: unknown): unknown {
  const e = toPgStorageError(err);
  if (e instanceof DdnError && e.code === 'insufficient_storage') {
    return new DdnError('staging_persist_failed', 'the chunk could not be persisted; retry later');
  }
  return e;
}

/** {@link RelayStagingStore} on PostgreSQL, safe to share between processes. */
export class PgRelayStagingStore implements RelayStagingStore {
  private readonly inFlight = new Set<Promise<unknown>>();
  private closed = false;
  /** The node requests' replay checks, one statement per batch. */
  private readonly nonceReads: NonceReads;
  /** The sends' `findPrior` reads, one statement per batch (`relay-results.ts`). */
  private readonly priors = new KeyedBatches<PriorAsk, PriorUse>(async (_, asks) => settledAll(await findPriors(this.pool, asks)), BATCH_LIMITS);
  /** The sends' `saveResult` upserts, one statement per batch, run again after a lost race. */
  private readonly results = new KeyedBatches<ResultRow, void>(
    async (_, rows) => settledAll(await this.statement((db) => saveResults(db, rows)).then(() => rows.map(() => undefined))),
    BATCH_LIMITS,
  );

  /** Migrates the Relay's tables in `pool`'s schema and returns a store on it (the pool stays the caller's). */
  static async open(pool: PgPool, ownsPool = false): Promise<PgRelayStagingStore> {
    await migratePg(pool, PG_RELAY_MIGRATIONS, PG_RELAY_NAMESPACE);
    return new PgRelayStagingStore(pool, ownsPool);
  }

  constructor(
    readonly pool: PgPool,
    private readonly ownsPool = false,
  ) {
    this.nonceReads = new NonceReads(pool, 'relay_nonces');
  }

  // ------------------------------------------------------------------ reads

  async findResult(messageKey: string, nowMs: number): Promise<StoredResult | null> {
    const r = await this.pool.query<{ content_hash: string; recipient: string | null; result: string; created_at_ms: string }>(
      'SELECT content_hash, recipient, result, created_at_ms FROM relay_results WHERE message_key = $1',
      [messageKey],
    );
    const row = r.rows[0];
    if (row === undefined || Number(row.created_at_ms) + RESULT_RETENTION_MS <= nowMs) return null;
    return { contentHash: row.content_hash, recipientDid: row.recipient, result: JSON.parse(row.result) as DeliveryResult };
  }

  findPrior(messageKey: string, nowMs: number, staged: boolean): Promise<PriorUse> {
    // gathered with the other sends' reads of this turn (and those arriving while the last read runs): one statement
    return this.priors.submit('', { messageKey, nowMs, staged }, 0);
  }

  async loadSet(recipientDid: string, groupId: string): Promise<StagedChunk[]> {
    const r = await this.pool.query<{ sequence_number: number; message_key: string; content_hash: string; envelope: Buffer }>(
      `SELECT sequence_number, message_key, content_hash, envelope FROM relay_chunks
        WHERE recipient = $1 AND group_id = $2 ORDER BY sequence_number`,
      [recipientDid, groupId],
    );
    return r.rows.map((row) => ({
      sequence: row.sequence_number,
      messageKey: row.message_key,
      contentHash: row.content_hash,
      envelope: new Uint8Array(row.envelope.buffer, row.envelope.byteOffset, row.envelope.byteLength),
    }));
  }

  isNonceClaimed(claim: NonceClaim, nowMs: number): Promise<boolean> {
    // the reads of one turn in one statement (`nonce-reads.ts`)
    return this.nonceReads.isClaimed(claim, nowMs);
  }

  async usage(): Promise<StagingUsage> {
    const r = await this.pool.query<{ sets: string; bytes: string | null }>(
      'SELECT (SELECT COUNT(*) FROM relay_chunk_sets) AS sets, (SELECT staged_bytes FROM relay_usage WHERE id = 1) AS bytes',
    );
    return { sets: Number(r.rows[0]?.sets ?? 0), bytes: Number(r.rows[0]?.bytes ?? 0) };
  }

  // ------------------------------------------------------------------ writes

  saveResult(messageKey: string, contentHash: string, recipientDid: string, result: DeliveryResult, nowMs: number): Promise<void> {
    if (this.closed) return Promise.reject(new DdnError('insufficient_storage', 'the Relay store is closed'));
    // group commit: the results of the sends answered in one turn (and while the last upsert runs) in one upsert,
    // atomic on its own (no transaction around it); each resolves once that upsert committed
    const text = deliveryResultText(result);
    return this.track(this.results.submit('', { messageKey, contentHash, recipient: recipientDid, text, nowMs }, text.length));
  }

  stage(req: StageRequest): Promise<StageOutcome> {
    return this.write((db) => this.stageNow(db, req)).catch((err: unknown) => {
      throw toStagingError(err);
    });
  }

  finishSet(recipientDid: string, groupId: string, chunks: readonly StagedChunk[], result: DeliveryResult, nowMs: number): Promise<void> {
    const text = deliveryResultText(result);
    return this.write(async (db) => {
      await lockSet(db, recipientDid, groupId);
      const bytes = await dropSetRows(db, recipientDid, groupId);
      for (const c of chunks) await saveResultRow(db, c.messageKey, c.contentHash, null, text, nowMs);
      await addUsage(db, -bytes.bytes);
    });
  }

  claimNonce(claim: NonceClaim, nowMs: number): Promise<boolean> {
    return this.track(
      this.pool
        .query(
          `INSERT INTO relay_nonces (scope, did, key_id, nonce, expires_at_ms) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (scope, did, key_id, nonce) DO UPDATE SET expires_at_ms = EXCLUDED.expires_at_ms
             WHERE relay_nonces.expires_at_ms <= $6`,
          [claim.scope, claim.did, claim.keyId, claim.nonce, claim.expiresAtMs, nowMs],
        )
        .then(
          (r) => r.rowCount === 1,
          (err: unknown) => {
            throw toPgStorageError(err);
          },
        ),
    );
  }

  sweep(nowMs: number): Promise<RelaySweepResult> {
    return sweepInBatches(() => this.write((db) => this.sweepStep(db, nowMs)), { purgedSets: 0, purgedChunks: 0, expiredResults: 0, expiredNonces: 0 });
  }

  async settle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.settle();
    if (this.ownsPool) await this.pool.end();
  }

  // ------------------------------------------------------------------ transactions

  private track<T>(p: Promise<T>): Promise<T> {
    this.inFlight.add(p);
    const done = () => this.inFlight.delete(p);
    p.then(done, done);
    return p;
  }

  /** Runs `fn` in one transaction on one connection, re-running it after a lost race; resolves once committed. */
  private write<T>(fn: (db: Db) => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new DdnError('insufficient_storage', 'the Relay store is closed'));
    return this.track(
      this.transaction(fn).catch((err: unknown) => {
        throw toPgStorageError(err);
      }),
    );
  }

  /** Runs one statement on the pool, again after a lost race; resolves once committed (autocommit). */
  private statement<T>(fn: (db: Queryable) => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new DdnError('insufficient_storage', 'the Relay store is closed'));
    return this.track(
      retry(() => fn(this.pool), { attempts: MAX_ATTEMPTS, retryable: isRetryablePgError }).catch((err: unknown) => {
        throw toPgStorageError(err);
      }),
    );
  }

  private transaction<T>(fn: (db: Db) => Promise<T>): Promise<T> {
    return retry(() => this.attempt(fn), { attempts: MAX_ATTEMPTS, retryable: isRetryablePgError });
  }

  /** One attempt of {@link transaction}. */
  private async attempt<T>(fn: (db: Db) => Promise<T>): Promise<T> {
    const db = await this.pool.connect();
    let broken = false;
    try {
      await db.query('BEGIN');
      try {
        const value = await fn(db);
        await db.query('COMMIT');
        return value;
      } catch (err) {
        await db.query('ROLLBACK').catch(() => {
          broken = true;
        });
        throw err;
      }
    } catch (err) {
      // a lost race rolled back cleanly; after anything else but a rule's refusal the connection is suspect
      if (!(err instanceof DdnError) && !isRetryablePgError(err)) broken = true;
      throw err;
    } finally {
      // a connection whose transaction state is unknown is discarded, not reused
      db.release(broken ? true : undefined);
    }
  }

  // ------------------------------------------------------------------ inside the write transaction

  private async state(db: Db, recipient: string, groupId: string, set: SetRow, replayed: boolean): Promise<StageOutcome> {
    const received = await countOf(db, 'SELECT COUNT(*) AS n FROM relay_chunks WHERE recipient = $1 AND group_id = $2', [recipient, groupId]);
    return { replayed, received, total: set.total_chunks, retryUntilMs: Number(set.retry_until_ms), complete: received >= set.total_chunks };
  }

  private async stageNow(db: Db, req: StageRequest): Promise<StageOutcome> {
    const { recipientDid: recipient, groupId, nowMs } = req;
    let set = await lockSet(db, recipient, groupId);
    let freedBytes = 0;
    if (set !== undefined && Number(set.retry_until_ms) <= nowMs) {
      freedBytes += (await dropSetRows(db, recipient, groupId)).bytes;
      set = undefined;
    }
    if (set !== undefined) {
      checkSetValues(groupId, setValuesOf(set), req.set);
      const held = await db.query<{ content_hash: string }>(
        'SELECT content_hash FROM relay_chunks WHERE recipient = $1 AND group_id = $2 AND sequence_number = $3',
        [recipient, groupId, req.sequence],
      );
      const heldHash = held.rows[0]?.content_hash ?? null;
      if (checkSequence(groupId, req.sequence, heldHash, req.contentHash) === 'replay') {
        if (freedBytes !== 0) await addUsage(db, -freedBytes);
        return this.state(db, recipient, groupId, set, true);
      }
    }
    const other = await db.query<{ recipient: string; group_id: string }>('SELECT recipient, group_id FROM relay_chunks WHERE message_key = $1', [
      req.messageKey,
    ]);
    const o = other.rows[0];
    if (o !== undefined) {
      const otherSet = await lockSet(db, o.recipient, o.group_id);
      if (otherSet !== undefined && Number(otherSet.retry_until_ms) <= nowMs) freedBytes += (await dropSetRows(db, o.recipient, o.group_id)).bytes;
      else throw messageIdConflict(req.messageKey);
    }
    // the usage row is locked last; the capacity counts are read after it, so they include every committed stage
    const usage = await db.query<{ staged_bytes: string }>('SELECT staged_bytes FROM relay_usage WHERE id = 1 FOR UPDATE');
    let stagedBytes = Math.max(0, Number(usage.rows[0]?.staged_bytes ?? 0) - freedBytes);
    let check = await capacityOf(db, req, set, stagedBytes);
    checkOwnBounds(check);
    const pressure = req.idleDropMs === undefined ? undefined : idlePressure(check);
    if (pressure !== undefined && (pressure.recipient || pressure.node)) {
      const dropped = await dropIdleSets(db, req, pressure.node);
      freedBytes += dropped.bytes;
      stagedBytes = Math.max(0, stagedBytes - dropped.bytes);
      if (dropped.sets > 0) check = await capacityOf(db, req, set, stagedBytes);
    }
    checkCapacity(check);
    set ??= await insertSet(db, req);
    await db.query(
      `INSERT INTO relay_chunks (recipient, group_id, sequence_number, message_key, content_hash, size_bytes, envelope)
       VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [
        recipient,
        groupId,
        req.sequence,
        req.messageKey,
        req.contentHash,
        req.envelope.byteLength,
        Buffer.from(req.envelope.buffer, req.envelope.byteOffset, req.envelope.byteLength),
      ],
    );
    await db.query('UPDATE relay_chunk_sets SET staged_bytes = staged_bytes + $1, last_chunk_ms = $2 WHERE recipient = $3 AND group_id = $4', [
      req.envelope.byteLength,
      nowMs,
      recipient,
      groupId,
    ]);
    await addUsage(db, req.envelope.byteLength - freedBytes);
    return this.state(db, recipient, groupId, set, false);
  }

  private async sweepStep(db: Db, nowMs: number): Promise<RelaySweepResult & { more: boolean }> {
    // sets being staged or delivered by another process are left for the next sweep
    const stale = await db.query<{ recipient: string; group_id: string }>(
      `SELECT recipient, group_id FROM relay_chunk_sets WHERE retry_until_ms <= $1
        ORDER BY recipient, group_id LIMIT ${SWEEP_CHUNK} FOR UPDATE SKIP LOCKED`,
      [nowMs],
    );
    let purgedChunks = 0;
    let bytes = 0;
    for (const s of stale.rows) {
      const d = await dropSetRows(db, s.recipient, s.group_id);
      purgedChunks += d.chunks;
      bytes += d.bytes;
    }
    if (bytes !== 0) await addUsage(db, -bytes);
    const expiredResults =
      (
        await db.query(
          `DELETE FROM relay_results WHERE message_key IN
             (SELECT message_key FROM relay_results WHERE created_at_ms <= $1 LIMIT ${SWEEP_CHUNK} FOR UPDATE SKIP LOCKED)`,
          [nowMs - RESULT_RETENTION_MS],
        )
      ).rowCount ?? 0;
    const expiredNonces =
      (
        await db.query(
          `DELETE FROM relay_nonces WHERE (scope, did, key_id, nonce) IN
             (SELECT scope, did, key_id, nonce FROM relay_nonces WHERE expires_at_ms <= $1 LIMIT ${SWEEP_CHUNK} FOR UPDATE SKIP LOCKED)`,
          [nowMs],
        )
      ).rowCount ?? 0;
    const more = stale.rows.length === SWEEP_CHUNK || expiredResults === SWEEP_CHUNK || expiredNonces === SWEEP_CHUNK;
    return { purgedSets: stale.rows.length, purgedChunks, expiredResults, expiredNonces, more };
  }
}

async function countOf(db: Db, sql: string, params: unknown[]): Promise<number> {
  const r = await db.query<{ n: string }>(sql, params);
  return Number(r.rows[0]?.n ?? 0);
}

/** The counts a stage of `req` is checked against, read after the usage row's lock (`set`: its set, when staged). */
async function capacityOf(db: Db, req: StageRequest, set: SetRow | undefined, stagedBytes: number): Promise<CapacityCheck> {
  const recipient = req.recipientDid;
  const owner = boundOwner(req);
  const sums = await db.query<{ sets: string; bytes: string; owner_bytes: string | null }>(
    `SELECT COUNT(*) AS sets, COALESCE(SUM(staged_bytes), 0) AS bytes,
       (SELECT COALESCE(SUM(staged_bytes), 0) FROM relay_chunk_sets WHERE owner = $2) AS owner_bytes
     FROM relay_chunk_sets WHERE recipient = $1`,
    [recipient, owner],
  );
  const row = sums.rows[0];
  return capacityCheck(req, {
    newSet: set === undefined,
    setBytes: Number(set?.staged_bytes ?? 0),
    setsOfRecipient: Number(row?.sets ?? 0),
    recipientBytes: Number(row?.bytes ?? 0),
    ownerBytes: owner === null ? undefined : Number(row?.owner_bytes ?? 0),
    stagedBytes,
  });
}

/**
 * Idle sets make room: the recipient's own for its bounds, anyone's for the node's (`forNode`); sets another process
 * holds are skipped (never waited for: the usage row is locked already). What was dropped.
 */
async function dropIdleSets(db: Db, req: StageRequest, forNode: boolean): Promise<{ sets: number; bytes: number }> {
  const cutoff = req.nowMs - req.idleDropMs!;
  const idle = await db.query<{ recipient: string; group_id: string }>(
    forNode
      ? `SELECT recipient, group_id FROM relay_chunk_sets WHERE last_chunk_ms <= $1 AND NOT (recipient = $2 AND group_id = $3)
          ORDER BY last_chunk_ms LIMIT ${MAX_IDLE_DROPS_PER_STAGE} FOR UPDATE SKIP LOCKED`
      : `SELECT recipient, group_id FROM relay_chunk_sets WHERE recipient = $2 AND last_chunk_ms <= $1 AND group_id <> $3
          ORDER BY last_chunk_ms LIMIT ${MAX_IDLE_DROPS_PER_STAGE} FOR UPDATE SKIP LOCKED`,
    [cutoff, req.recipientDid, req.groupId],
  );
  let bytes = 0;
  for (const s of idle.rows) bytes += (await dropSetRows(db, s.recipient, s.group_id)).bytes;
  return { sets: idle.rows.length, bytes };
}

/** Inserts the row of a new chunk set (no chunk yet); the row as read back. */
async function insertSet(db: Db, req: StageRequest): Promise<SetRow> {
  const s = req.set;
  await db.query(
    `INSERT INTO relay_chunk_sets (recipient, group_id, total_chunks, to_value, tag, application_id, sender, created_at_ms, retry_until_ms,
       owner, staged_bytes, last_chunk_ms)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 0, $8)`,
    [req.recipientDid, req.groupId, s.total, s.to, s.tag, s.applicationId, s.sender, req.nowMs, req.retryUntilMs, req.owner ?? null],
  );
  return {
    total_chunks: s.total,
    to_value: s.to,
    tag: s.tag,
    application_id: s.applicationId,
    sender: s.sender,
    retry_until_ms: String(req.retryUntilMs),
    staged_bytes: '0',
  };
}

/** The set row, locked until the transaction ends (undefined when there is none). */
async function lockSet(db: Db, recipient: string, groupId: string): Promise<SetRow | undefined> {
  const r = await db.query<SetRow>(
    `SELECT total_chunks, to_value, tag, application_id, sender, retry_until_ms, staged_bytes FROM relay_chunk_sets
      WHERE recipient = $1 AND group_id = $2 FOR UPDATE`,
    [recipient, groupId],
  );
  return r.rows[0];
}

/** Deletes a set and its chunks (the caller releases the bytes from `relay_usage`). */
async function dropSetRows(db: Db, recipient: string, groupId: string): Promise<{ chunks: number; bytes: number }> {
  const r = await db.query<{ size_bytes: string }>('DELETE FROM relay_chunks WHERE recipient = $1 AND group_id = $2 RETURNING size_bytes', [
    recipient,
    groupId,
  ]);
  await db.query('DELETE FROM relay_chunk_sets WHERE recipient = $1 AND group_id = $2', [recipient, groupId]);
  return { chunks: r.rows.length, bytes: r.rows.reduce((n, row) => n + Number(row.size_bytes), 0) };
}

async function addUsage(db: Db, delta: number): Promise<void> {
  await db.query('UPDATE relay_usage SET staged_bytes = GREATEST(0, staged_bytes + $1) WHERE id = 1', [delta]);
}

async function saveResultRow(db: Queryable, messageKey: string, contentHash: string, recipient: string | null, text: string, nowMs: number): Promise<void> {
  await db.query(
    `INSERT INTO relay_results (message_key, content_hash, recipient, result, created_at_ms) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (message_key) DO UPDATE SET content_hash = EXCLUDED.content_hash, recipient = EXCLUDED.recipient,
       result = EXCLUDED.result, created_at_ms = EXCLUDED.created_at_ms`,
    [messageKey, contentHash, recipient, text, nowMs],
  );
}

/** Options of {@link openPgRelayStagingStore}. */
export interface PgRelayStagingOptions {
  /** Connections in the pool (default 10). */
  max?: number;
  /**
   * Errors of idle pooled connections (e.g. the server restarted). The pool drops such a connection and the
   * next write opens a new one; without a listener node would treat the event as an uncaught error.
   */
  onPoolError?: (err: Error) => void;
}

/**
 * Opens a pool on `url` scoped to `schema` (created if absent), migrates the Relay's tables and returns a store
 * that closes the pool on {@link PgRelayStagingStore.close}.
 */
export async function openPgRelayStagingStore(url: string, schema = 'public', options: PgRelayStagingOptions = {}): Promise<PgRelayStagingStore> {
  const pool = await openPgPool({ url, schema, ...(options.max === undefined ? {} : { max: options.max }) });
  pool.on('error', (err) => options.onPoolError?.(err));
  try {
    return await PgRelayStagingStore.open(pool, true);
  } catch (err) {
    await pool.end().catch(() => undefined);
    throw err;
  }
}
