/**
 * The Cache's mailbox on PostgreSQL: the same tables and rules as the SQLite mailbox
 * (`../sqlite/mailbox-store.ts`), for several Cache processes sharing one database.
 *
 * Every write is a READ COMMITTED transaction with `synchronous_commit = on`, so its promise resolves only after
 * the commit is durable. What must not interleave is serialised by row locks, never by aborts:
 * - the stores into one recipient run in batches (group commit per recipient, `keyed-batches.ts`): the stores
 *   that arrive while the recipient's previous batch is in the database run together in one transaction (a small
 *   batch waits up to 2 ms for the callers the previous one answered, {@link FILL_MS}). A batch of new plain
 *   stores (all accepted) spends its process's quota lease for the recipient — one call of a stored function,
 *   its own transaction, locking only the lease row, so two processes' batches commit side by side
 *   (`mailbox-leases.ts`: the recipient's `bytes` count every lease's unspent bytes, so the quota stays exact).
 *   Without a lease that fits, the batch first locks the recipient's row of `cache_recipient_bytes` (creating it
 *   if absent): one call as well (`mailbox-one-trip.ts`) when all its stores are accepted, else an explicit
 *   transaction; such batches of one recipient run one after another, the bytes read under the lock (a store
 *   refused for the quota only after the recipient's leases were folded back), and dedupe and chunk-set
 *   completion see every earlier store. `seq` (an identity) is drawn at insert: stores that do not overlap in time
 *   are in `seq` order; every read starts at the recipient's first entry, so one committed late is never skipped. Inside a batch each store is checked and written in turn;
 *   one that breaks a rule is answered with its error (its nonce claim undone) while the others commit. A batch
 *   that fails as a whole (a database error, a failed COMMIT) is run again store by store, so one bad store
 *   fails only itself, and no store is answered before the transaction holding it committed;
 * - nonce single-use rests on the primary key of `cache_nonces` (`INSERT … ON CONFLICT … WHERE expired`): two
 *   processes claiming one nonce never both win;
 * - the sweep locks a recipient's row before purging one of its stale chunk sets, and checks again under it.
 * A transaction that still loses a race (40P01 deadlock between a sweep and a store, 23505 when two processes
 * insert one `message_id` for two recipients) is run again from the start.
 *
 * Errors mirror the SQLite store: rule violations are `DdnError`s; a database failure becomes 507
 * `insufficient_storage`; too many writes in flight here (or a transaction still losing races after every
 * retry) is 429 `rate_limited`; a closed store answers 503 `service_unavailable`.
 */
import { sweepInBatches } from '../../base/periodic-sweeper.js';
import pg from 'pg';
import { DdnError } from '../../base/errors.js';
import { retry, type Backoff } from '../../base/retry.js';
import { checkBudget, checkChunk, checkDuplicate, checkQuota, chunkRetryUntil, chunkSetState, withinQuota } from '../../cache/admission.js';
import type {
  ChunkRef,
  ChunkSetState,
  ChunkSetView,
  EntryMeta,
  EntryWithEnvelope,
  MailboxStore,
  MailboxUsage,
  MessagePage,
  PutRequest,
  PutResult,
  SweepResult,
} from '../../cache/mailbox-store.js';
import type { NonceClaim } from '../../ports/nonce-registry.js';
import { migratePg, openPgPool, type PgMigration, type PgPool } from './pool.js';
import { isRetryablePgError } from './retryable.js';
import { KeyedBatches, type Settled } from './keyed-batches.js';
import { NonceReads } from './nonce-reads.js';
import { bulkClaimSql, bulkPut, bulkShaped } from './mailbox-bulk-put.js';
import { CACHE_PUT_NEW_CACHED_PLANS_SQL, CACHE_PUT_NEW_CUSTOM_PLANS_SQL, CACHE_PUT_NEW_SQL, putNewInOneTrip } from './mailbox-one-trip.js';
import { CACHE_QUOTA_LEASES_SQL, LEASES_UNSPENT_SQL, QuotaLeases } from './mailbox-leases.js';
import { randomUUID } from 'node:crypto';
import { entryValues, INSERT_COLUMNS, META_COLUMNS, placeholders, toMeta, type MetaRow, type Num } from './mailbox-rows.js';

export const PG_MAILBOX_MIGRATIONS: readonly PgMigration[] = [
  {
    version: 1,
    sql: `
      CREATE TABLE cache_entries (
        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        message_key TEXT NOT NULL UNIQUE,
        message_id TEXT NOT NULL,
        recipient TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        stored_at_ms BIGINT NOT NULL,
        expires_at_ms BIGINT NOT NULL,
        max_ttl_s BIGINT NOT NULL,
        applied_ttl_s BIGINT NOT NULL,
        tag TEXT,
        application_id TEXT,
        group_id TEXT,
        sequence_number INTEGER,
        total_chunks INTEGER,
        sort_key BIGINT,
        size_bytes BIGINT NOT NULL,
        provenance TEXT,
        envelope BYTEA NOT NULL);
      CREATE INDEX cache_entries_recipient ON cache_entries (recipient);
      CREATE INDEX cache_entries_expiry ON cache_entries (expires_at_ms);
      CREATE UNIQUE INDEX cache_entries_chunk ON cache_entries (recipient, group_id, sequence_number)
        WHERE group_id IS NOT NULL;
      CREATE TABLE cache_chunk_sets (
        recipient TEXT NOT NULL,
        group_id TEXT NOT NULL,
        total_chunks INTEGER NOT NULL,
        first_at_ms BIGINT NOT NULL,
        first_seq BIGINT NOT NULL,
        retry_until_ms BIGINT NOT NULL,
        complete BOOLEAN NOT NULL,
        PRIMARY KEY (recipient, group_id));
      CREATE INDEX cache_chunk_sets_retry ON cache_chunk_sets (complete, retry_until_ms);
      CREATE TABLE cache_nonces (
        scope TEXT NOT NULL,
        did TEXT NOT NULL,
        key_id TEXT NOT NULL,
        nonce TEXT NOT NULL,
        expires_at_ms BIGINT NOT NULL,
        PRIMARY KEY (scope, did, key_id, nonce));
      CREATE INDEX cache_nonces_expiry ON cache_nonces (expires_at_ms);
    `,
  },
  {
    // Envelope bytes held per recipient, kept by triggers on every insert and delete (store, replace, ack,
    // sweep), so the storage quota is one indexed read.
    version: 2,
    sql: `
      CREATE TABLE cache_recipient_bytes (recipient TEXT PRIMARY KEY, bytes BIGINT NOT NULL);
      INSERT INTO cache_recipient_bytes (recipient, bytes) SELECT recipient, SUM(size_bytes) FROM cache_entries GROUP BY recipient;
      CREATE FUNCTION cache_recipient_bytes_track() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        IF TG_OP = 'INSERT' THEN
          INSERT INTO cache_recipient_bytes (recipient, bytes) VALUES (NEW.recipient, NEW.size_bytes)
          ON CONFLICT (recipient) DO UPDATE SET bytes = cache_recipient_bytes.bytes + EXCLUDED.bytes;
        ELSE
          UPDATE cache_recipient_bytes SET bytes = bytes - OLD.size_bytes WHERE recipient = OLD.recipient;
        END IF;
        RETURN NULL;
      END $fn$;
      CREATE TRIGGER cache_entries_bytes AFTER INSERT OR DELETE ON cache_entries
        FOR EACH ROW EXECUTE FUNCTION cache_recipient_bytes_track();
    `,
  },
  {
    // Entries held per recipient beside their bytes, in the row the trigger already updates (a single totals row
    // would make every pair of concurrent stores conflict), so the metrics' count reads one row per recipient.
    version: 3,
    sql: `
      ALTER TABLE cache_recipient_bytes ADD COLUMN entries BIGINT NOT NULL DEFAULT 0;
      UPDATE cache_recipient_bytes r SET entries = c.n
        FROM (SELECT recipient, COUNT(*) AS n FROM cache_entries GROUP BY recipient) c WHERE c.recipient = r.recipient;
      CREATE OR REPLACE FUNCTION cache_recipient_bytes_track() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        IF TG_OP = 'INSERT' THEN
          INSERT INTO cache_recipient_bytes (recipient, bytes, entries) VALUES (NEW.recipient, NEW.size_bytes, 1)
          ON CONFLICT (recipient) DO UPDATE SET bytes = cache_recipient_bytes.bytes + EXCLUDED.bytes,
            entries = cache_recipient_bytes.entries + 1;
        ELSE
          UPDATE cache_recipient_bytes SET bytes = bytes - OLD.size_bytes, entries = entries - 1 WHERE recipient = OLD.recipient;
        END IF;
        RETURN NULL;
      END $fn$;
    `,
  },
  {
    // The per-recipient totals kept once per statement instead of once per row: a batch of n stores into one
    // recipient updated its row n times in one transaction, each update a new version of the same row that the
    // next one had to walk to (a batch of 128 stores spent a fifth of its statements' time there). Statement
    // triggers with transition tables add or take each recipient's sums once; recipients in one order.
    version: 4,
    sql: `
      DROP TRIGGER cache_entries_bytes ON cache_entries;
      DROP FUNCTION cache_recipient_bytes_track();
      CREATE FUNCTION cache_recipient_bytes_added() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        INSERT INTO cache_recipient_bytes (recipient, bytes, entries)
          SELECT recipient, SUM(size_bytes), COUNT(*) FROM cache_added GROUP BY recipient ORDER BY recipient
        ON CONFLICT (recipient) DO UPDATE SET bytes = cache_recipient_bytes.bytes + EXCLUDED.bytes,
          entries = cache_recipient_bytes.entries + EXCLUDED.entries;
        RETURN NULL;
      END $fn$;
      CREATE FUNCTION cache_recipient_bytes_removed() RETURNS trigger LANGUAGE plpgsql AS $fn$
      DECLARE d RECORD;
      BEGIN
        FOR d IN SELECT recipient, SUM(size_bytes) AS b, COUNT(*) AS n FROM cache_removed GROUP BY recipient ORDER BY recipient LOOP
          UPDATE cache_recipient_bytes SET bytes = bytes - d.b, entries = entries - d.n WHERE recipient = d.recipient;
        END LOOP;
        RETURN NULL;
      END $fn$;
      CREATE TRIGGER cache_entries_bytes_added AFTER INSERT ON cache_entries
        REFERENCING NEW TABLE AS cache_added FOR EACH STATEMENT EXECUTE FUNCTION cache_recipient_bytes_added();
      CREATE TRIGGER cache_entries_bytes_removed AFTER DELETE ON cache_entries
        REFERENCING OLD TABLE AS cache_removed FOR EACH STATEMENT EXECUTE FUNCTION cache_recipient_bytes_removed();
    `,
  },
  // A batch of new plain stores in one round trip, its transaction that of the statement (`mailbox-one-trip.ts`).
  { version: 5, sql: CACHE_PUT_NEW_SQL },
  // Its statements planned for each call's values, never a generic plan cached on a small table.
  { version: 6, sql: CACHE_PUT_NEW_CUSTOM_PLANS_SQL },
  // No statement of it (nor of the removing trigger) reads a table but through a unique index's conflict check,
  // so their plans are cached again.
  { version: 7, sql: CACHE_PUT_NEW_CACHED_PLANS_SQL },
  // Quota leases: a lane's batches of new plain stores without the recipient's lock (`mailbox-leases.ts`).
  { version: 8, sql: CACHE_QUOTA_LEASES_SQL },
];

/** Rows deleted per sweep transaction, so a large purge never holds locks for long. */
const SWEEP_CHUNK = 2_000;

/** Visible = unexpired and (unchunked or in a complete set), §11.5. `$2` is now. */
const VISIBLE = `e.expires_at_ms > $2 AND (e.group_id IS NULL OR EXISTS (SELECT 1 FROM cache_chunk_sets s
  WHERE s.recipient = e.recipient AND s.group_id = e.group_id AND s.complete))`;

/** Store order (sets together, by sequence), as in the SQLite store (whose NULLs sort first). */
const STORE_ORDER = 'COALESCE(e.sort_key, e.seq), e.sequence_number NULLS FIRST, e.seq';

interface SetRow {
  total_chunks: number;
  first_at_ms: Num;
  first_seq: Num;
  retry_until_ms: Num;
  complete: boolean;
}

const asBytes = (b: Buffer): Uint8Array => new Uint8Array(b.buffer, b.byteOffset, b.byteLength);

/** How long the summed envelope bytes of the mailbox are reused for the storage budget. */
const TOTAL_REFRESH_MS = 1_000;

/**
 * A recipient's batch of fewer than {@link FILL_OPS} stores that follows another waits up to {@link FILL_MS} for the
 * callers the previous batch answered (`KeyedBatches`' fill): two Cache processes sharing a hot recipient each
 * split their half of its senders into two alternating half-size batches (8 stores a call in the bench's two-process
 * line against one process's 16), each paying a call's and a commit's fixed cost; waiting for the callers to come
 * back (a round trip) makes the batches larger (11–13; 14–15 since session 36's fill also follows a batch that left
 * none waiting) and every store cheaper. A batch of 16 already spreads that
 * cost, and one process that keeps two such batches going (one in the database while the next fills) is not made to
 * take turns (its rate fell with an unbounded fill). Measured in bench/HISTORY.md, sessions 35 and 36.
 */
const FILL_MS = 2;
const FILL_OPS = 16;

/** Pauses between the attempts of a transaction that lost a race: random, below 2, 4, 8 … up to 50 ms. */
const RACE_BACKOFF: Backoff = { firstMs: 2, maxMs: 50, jitter: true };

/** How every write transaction starts: READ COMMITTED, and its commit durable before it is answered. */
const BEGIN = 'BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL synchronous_commit TO on';

/**
 * Locks `recipient`'s row of `cache_recipient_bytes` until the transaction ends (creating it if absent) and
 * answers its bytes: every store into the recipient and every change of its bytes waits for the lock. The DID is
 * a quoted literal (`pg.escapeLiteral`), not a parameter, so the statement travels with the BEGIN in one round trip.
 */
function lockRecipientSql(recipient: string): string {
  return `INSERT INTO cache_recipient_bytes (recipient, bytes, entries) VALUES (${pg.escapeLiteral(recipient)}, 0, 0)
    ON CONFLICT (recipient) DO UPDATE SET bytes = cache_recipient_bytes.bytes RETURNING bytes`;
}

/**
 * What a batch of stores into `recipient` sends with its BEGIN: the nonce claims of a batch the bulk path takes by
 * its shape (`mailbox-bulk-put.ts`; they need no lock of the recipient), then the recipient's lock — the lock's
 * answer last.
 */
function batchOpening(recipient: string, reqs: readonly PutRequest[]): string[] {
  const claims = bulkShaped(reqs) ? bulkClaimSql(reqs) : null;
  return claims === null ? [lockRecipientSql(recipient)] : [claims, lockRecipientSql(recipient)];
}

/** Errors raised by pg itself (server SQLSTATEs, lost connections, pool timeouts) are storage failures. */
function isDatabaseError(err: unknown): boolean {
  if (err instanceof pg.DatabaseError) return true;
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && /^(E[A-Z]+|[0-9A-Z]{5})$/.test(code)) return true;
  return /^(Connection terminated|Client has encountered a connection error|timeout exceeded when trying to connect)/.test(err.message);
}

/** A storage failure becomes 507 `insufficient_storage`; coded errors (and programming errors) pass through. */
export function toPgStorageError(err: unknown): unknown {
  if (err instanceof DdnError || !isDatabaseError(err)) return err;
  return new DdnError('insufficient_storage', 'the write could not be persisted');
}

/** Options of {@link PgMailboxStore}. */
export interface PgMailboxOptions {
  /** Writes in flight beyond which new ones are refused with 429 `rate_limited` (default 10 000). */
  maxQueuedOps?: number;
  /** Bytes of writes in flight beyond which new ones are refused (default 512 MiB). */
  maxQueuedBytes?: number;
  /** Attempts of one transaction that keeps losing races (default 12). */
  maxAttempts?: number;
  /** Stores into one recipient committed by one transaction at most (default 256). */
  maxBatchOps?: number;
  /** Envelope bytes committed by one transaction at most; a larger store still runs, alone (default 16 MiB). */
  maxBatchBytes?: number;
  /** Batches of stores into one recipient this process runs at once, each lane with its quota lease (default 1). */
  lanes?: number;
  /** How long a small batch waits for the callers its recipient's previous batch answered (`KeyedBatches`' fill), ms; 0: never. */
  fillMs?: number;
  /** The most stores such a batch waits for (a batch of the recipient this large does not wait). */
  fillOps?: number;
}

/** What a batch knows of its recipient while it holds the recipient's lock. */
interface RecipientHold {
  /** The recipient's envelope bytes now, unexpired or not (`undefined`: read again, something was deleted). */
  bytes: number | undefined;
  /** Whether the store running now claimed its nonce (undone if the store then fails). */
  claimed: boolean;
}

/** {@link MailboxStore} on PostgreSQL. */
export class PgMailboxStore implements MailboxStore {
  private inFlight = 0;
  /** The mailbox's envelope bytes as last summed ({@link heldTotal}), plus this process's stores since. */
  private total = { bytes: 0, atMs: -Infinity };
  private inFlightBytes = 0;
  private closed = false;
  private idle: (() => void)[] = [];
  private readonly maxQueuedOps: number;
  private readonly maxQueuedBytes: number;
  private readonly maxAttempts: number;
  private readonly batches: KeyedBatches<PutRequest, PutResult>;
  private readonly nonceReads: NonceReads;
  private readonly leases = new QuotaLeases(randomUUID());

  /** Migrates the `cache` namespace of `pool`'s schema and returns a store on it. */
  static async open(pool: PgPool, options: PgMailboxOptions = {}, ownsPool = false): Promise<PgMailboxStore> {
    await migratePg(pool, PG_MAILBOX_MIGRATIONS, 'cache');
    return new PgMailboxStore(pool, options, ownsPool);
  }

  private constructor(
    readonly pool: PgPool,
    options: PgMailboxOptions,
    private readonly ownsPool: boolean,
  ) {
    this.maxQueuedOps = options.maxQueuedOps ?? 10_000;
    this.maxQueuedBytes = options.maxQueuedBytes ?? 512 * 1024 * 1024;
    this.maxAttempts = options.maxAttempts ?? 12;
    this.nonceReads = new NonceReads(pool, 'cache_nonces');
    this.batches = new KeyedBatches((recipient, reqs, lane) => this.runBatch(recipient, reqs, lane), {
      maxOps: options.maxBatchOps ?? 256,
      maxBytes: options.maxBatchBytes ?? 16 * 1024 * 1024,
      lanes: options.lanes ?? 1,
      fillMs: options.fillMs ?? FILL_MS,
      fillOps: options.fillOps ?? FILL_OPS,
    });
  }

  // ------------------------------------------------------------------ writes

  put(req: PutRequest): Promise<PutResult> {
    const bytes = req.entry.envelope.byteLength;
    return this.admitted(() => this.batches.submit(req.entry.recipientDid, req, bytes), bytes);
  }

  claimNonce(claim: NonceClaim, nowMs: number): Promise<boolean> {
    return this.write((c) => this.claimNow(c, claim, nowMs));
  }

  async releaseNonce(claim: NonceClaim): Promise<void> {
    await this.write((c) => this.unclaim(c, claim));
  }

  ack(did: string, messageIds: readonly string[], nowMs: number, claim: NonceClaim): Promise<string[]> {
    return this.write(async (c) => {
      if (!(await this.claimNow(c, claim, nowMs))) throw replayed();
      const seen = new Set<string>();
      const deleted: string[] = [];
      for (const id of messageIds) {
        const key = id.toLowerCase();
        if (seen.has(key)) continue;
        seen.add(key);
        const r = await c.query('DELETE FROM cache_entries WHERE message_key = $1 AND recipient = $2 AND expires_at_ms > $3', [key, did, nowMs]);
        if ((r.rowCount ?? 0) > 0) deleted.push(id);
      }
      return deleted;
    });
  }

  sweep(nowMs: number): Promise<SweepResult> {
    return sweepInBatches(() => this.write((c) => this.sweepStep(c, nowMs)), { expiredEntries: 0, purgedChunkSets: 0, purgedChunks: 0, expiredNonces: 0 });
  }

  settle(): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.settle();
    if (this.ownsPool && !this.pool.ended) await this.pool.end();
  }

  // ------------------------------------------------------------------ reads

  async usage(): Promise<MailboxUsage> {
    // one row per recipient (kept by the trigger) and an indexed count of the incomplete sets; never the entries
    // a recipient's row counts its leases' unspent bytes and not their spent entries (`mailbox-leases.ts`)
    const r = await this.pool.query<{ entries: Num; bytes: Num; incomplete: Num }>(
      `SELECT COALESCE(SUM(entries), 0) + (SELECT COALESCE(SUM(spent_entries), 0) FROM cache_quota_leases) AS entries,
        COALESCE(SUM(bytes), 0) - ${LEASES_UNSPENT_SQL} AS bytes,
        (SELECT COUNT(*) FROM cache_chunk_sets WHERE complete = false) AS incomplete FROM cache_recipient_bytes`,
    );
    const row = r.rows[0];
    const bytes = Number(row?.bytes ?? 0);
    return { entries: Number(row?.entries ?? 0), bytes, incompleteChunkSets: Number(row?.incomplete ?? 0), budgetUsedBytes: bytes };
  }

  isNonceClaimed(claim: NonceClaim, nowMs: number): Promise<boolean> {
    // the replay check of every node-signed store: the reads of one turn in one statement (`nonce-reads.ts`)
    return this.nonceReads.isClaimed(claim, nowMs);
  }

  async listMessages(did: string, nowMs: number, maxEnvelopeBytes: number): Promise<MessagePage> {
    // One statement (one snapshot): the visible entries in store order with their running byte total; the
    // first entry is always returned, later ones while the total stays within the budget.
    const r = await this.pool.query<MetaRow & { rn: Num; cum: Num; envelope: Buffer | null; n: Num }>(
      `WITH v AS (
         SELECT ${META_COLUMNS},
           row_number() OVER (ORDER BY ${STORE_ORDER}) AS rn,
           sum(e.size_bytes) OVER (ORDER BY ${STORE_ORDER} ROWS UNBOUNDED PRECEDING) AS cum
         FROM cache_entries e WHERE e.recipient = $1 AND ${VISIBLE})
       SELECT v.*, x.envelope, (SELECT count(*) FROM v) AS n
       FROM v JOIN cache_entries x ON x.seq = v.seq
       WHERE v.rn = 1 OR v.cum <= $3
       ORDER BY v.rn`,
      [did, nowMs, maxEnvelopeBytes],
    );
    const entries: EntryWithEnvelope[] = r.rows.map((row) => ({ meta: toMeta(row), envelope: asBytes(row.envelope as Buffer) }));
    const visible = r.rows.length === 0 ? 0 : Number(r.rows[0].n);
    return { entries, truncated: entries.length < visible };
  }

  async listSummary(did: string, nowMs: number): Promise<EntryMeta[]> {
    const r = await this.pool.query<MetaRow>(`SELECT ${META_COLUMNS} FROM cache_entries e WHERE e.recipient = $1 AND ${VISIBLE} ORDER BY ${STORE_ORDER}`, [
      did,
      nowMs,
    ]);
    return r.rows.map(toMeta);
  }

  async getChunkSet(did: string, groupId: string, nowMs: number): Promise<ChunkSetView | null> {
    const r = await this.pool.query<MetaRow & { set_total: number; envelope: Buffer }>(
      `SELECT s.total_chunks AS set_total, ${META_COLUMNS}, e.envelope
       FROM cache_chunk_sets s JOIN cache_entries e ON e.recipient = s.recipient AND e.group_id = s.group_id
       WHERE s.recipient = $1 AND s.group_id = $3 AND s.complete AND e.expires_at_ms > $2
       ORDER BY e.sequence_number`,
      [did, nowMs, groupId.toLowerCase()],
    );
    if (r.rows.length === 0) return null;
    return {
      total: r.rows[0].set_total,
      entries: r.rows.map((row) => ({ meta: toMeta(row), envelope: asBytes(row.envelope) })),
    };
  }

  async getMessage(did: string, messageId: string, nowMs: number): Promise<EntryWithEnvelope | null> {
    const r = await this.pool.query<MetaRow & { envelope: Buffer }>(
      `SELECT ${META_COLUMNS}, e.envelope FROM cache_entries e
       WHERE e.message_key = $3 AND e.recipient = $1 AND ${VISIBLE}`,
      [did, nowMs, messageId.toLowerCase()],
    );
    const row = r.rows[0];
    return row === undefined ? null : { meta: toMeta(row), envelope: asBytes(row.envelope) };
  }

  // ------------------------------------------------------------------ transactions

  /** Runs `body` in its own durable transaction, retried while it loses races. */
  private write<T>(body: (c: pg.PoolClient) => Promise<T>, bytes = 0): Promise<T> {
    return this.admitted(() => this.transaction(body), bytes);
  }

  /** Runs `op` counted among the writes in flight, or refuses it when too many are. */
  private async admitted<T>(op: () => Promise<T>, bytes: number): Promise<T> {
    if (this.closed) throw new DdnError('service_unavailable', 'the store is closing');
    if (this.inFlight >= this.maxQueuedOps || (this.inFlight > 0 && this.inFlightBytes + bytes > this.maxQueuedBytes)) {
      throw new DdnError('rate_limited', 'the write queue is full', { retry_after_seconds: 1 });
    }
    this.inFlight++;
    this.inFlightBytes += bytes;
    try {
      return await op();
    } finally {
      this.inFlight--;
      this.inFlightBytes -= bytes;
      if (this.inFlight === 0) for (const f of this.idle.splice(0)) f();
    }
  }

  /**
   * `body` in one transaction, run again (up to `maxAttempts` in all) while it loses races. `opening`: statements
   * without parameters sent with the `BEGIN` (one round trip for all), whose results `body` gets in their order.
   */
  private transaction<T>(body: (c: pg.PoolClient, opened: pg.QueryResult[]) => Promise<T>, opening: readonly string[] = []): Promise<T> {
    return this.retried(() => this.attempt(body, opening));
  }

  /** `attempt` run again (up to `maxAttempts` in all) while it loses races; its failures as the store answers them. */
  private async retried<T>(attempt: () => Promise<T>): Promise<T> {
    try {
      return await retry(attempt, { attempts: this.maxAttempts, retryable: isRetryablePgError, backoff: RACE_BACKOFF });
    } catch (err) {
      if (isRetryablePgError(err)) {
        throw new DdnError('rate_limited', 'too much contention on the mailbox; retry', { retry_after_seconds: 1 });
      }
      throw toPgStorageError(err);
    }
  }

  /** One attempt of {@link transaction}: its connection is discarded when the rollback failed. */
  private async attempt<T>(body: (c: pg.PoolClient, opened: pg.QueryResult[]) => Promise<T>, opening: readonly string[]): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw toPgStorageError(err);
    }
    let outcome: { ok: true; value: T } | { ok: false; error: unknown };
    let discard: Error | undefined;
    try {
      // several statements in one query answer one result each: the opening's are the last ones
      const begun = (await client.query([BEGIN, ...opening].join('; '))) as unknown as pg.QueryResult | pg.QueryResult[];
      const value = await body(client, opening.length === 0 ? [] : (begun as pg.QueryResult[]).slice(-opening.length));
      await client.query('COMMIT');
      outcome = { ok: true, value };
    } catch (error) {
      outcome = { ok: false, error };
      try {
        await client.query('ROLLBACK');
      } catch (rollbackErr) {
        discard = rollbackErr instanceof Error ? rollbackErr : new Error(String(rollbackErr));
      }
    }
    client.release(discard);
    if (outcome.ok) return outcome.value;
    throw outcome.error;
  }

  /**
   * One batch of stores into `recipient`, in one transaction; when that fails as a whole (a database error, a
   * failed COMMIT), each store again in a transaction of its own, so only a store that fails by itself fails.
   */
  private async runBatch(recipient: string, reqs: readonly PutRequest[], lane: number): Promise<Settled<PutResult>[]> {
    try {
      const taken = bulkShaped(reqs) ? await this.putNew(recipient, reqs, lane) : null;
      return taken ?? (await this.transaction((c, opened) => this.putBatch(c, recipient, reqs, opened), batchOpening(recipient, reqs)));
    } catch (error) {
      if (reqs.length === 1) return [{ ok: false, error }];
    }
    const out: Settled<PutResult>[] = [];
    for (const req of reqs) {
      try {
        out.push(...(await this.transaction((c, opened) => this.putBatch(c, recipient, [req], opened), batchOpening(recipient, [req]))));
      } catch (error) {
        out.push({ ok: false, error });
      }
    }
    return out;
  }

  /**
   * A batch of plain stores that are all new and within the quota and the budget, in one round trip
   * (`mailbox-one-trip.ts`); null when it is not one (nothing written), for {@link putBatch}.
   */
  private putNew(recipient: string, reqs: readonly PutRequest[], lane: number): Promise<Settled<PutResult>[] | null> {
    return this.retried(async () => {
      let c: pg.PoolClient;
      try {
        c = await this.pool.connect();
      } catch (err) {
        throw toPgStorageError(err);
      }
      let discard: Error | undefined;
      try {
        if (reqs.some((r) => r.budgetBytes != null)) {
          // the budget's per-process sum, read before the call and not under the recipient's lock (it sees no
          // other process's stores since its last read either way)
          let total = await this.heldTotal(c);
          for (const r of reqs) {
            if (r.budgetBytes != null && total + r.entry.sizeBytes > r.budgetBytes) return null;
            total += r.entry.sizeBytes;
          }
        }
        // spent from the lane's lease (no lock of the recipient), else under the recipient's lock
        const out = (await this.leases.put(c, recipient, lane, reqs)) ?? (await putNewInOneTrip(c, recipient, reqs));
        if (out !== null) this.total.bytes += reqs.reduce((n, r) => n + r.entry.sizeBytes, 0);
        return out;
      } catch (err) {
        // a server's error leaves the connection usable (the statement's transaction ended with it)
        if (!(err instanceof pg.DatabaseError)) discard = err instanceof Error ? err : new Error(String(err));
        throw err;
      } finally {
        c.release(discard);
      }
    });
  }

  /**
   * Writes the batch under `recipient`'s lock (`opened`: the answers of {@link batchOpening}, sent with the BEGIN):
   * plain stores in a few statements (`mailbox-bulk-put.ts`), any other batch store by store; a rule violation
   * answers only its store.
   */
  private async putBatch(c: pg.PoolClient, recipient: string, reqs: readonly PutRequest[], opened: readonly pg.QueryResult[]): Promise<Settled<PutResult>[]> {
    const locked = opened.at(-1)!;
    const heldBytes = Number((locked.rows[0] as { bytes?: Num } | undefined)?.bytes ?? 0);
    const bulk = bulkShaped(reqs)
      ? await bulkPut(
          c,
          recipient,
          reqs,
          {
            heldBytes,
            heldTotal: () => this.heldTotal(c),
            // counted before the commit: a store that then fails only makes the next sum come a little early
            stored: (bytes) => void (this.total.bytes += bytes),
          },
          opened.length > 1 ? opened[0]! : null,
        )
      : null;
    if (bulk !== null) return bulk;
    const hold: RecipientHold = { bytes: heldBytes, claimed: false };
    const out: Settled<PutResult>[] = [];
    for (const req of reqs) {
      hold.claimed = false;
      try {
        out.push({ ok: true, value: await this.putNow(c, req, hold) });
      } catch (error) {
        if (!(error instanceof DdnError)) throw error;
        // the store is refused: its claim goes with it (a claim it replaced had expired, so none is lost)
        if (hold.claimed && req.claim !== null) await this.unclaim(c, req.claim);
        out.push({ ok: false, error });
      }
    }
    return out;
  }

  // ------------------------------------------------------------------ inside a write transaction

  private async unclaim(c: pg.PoolClient, claim: NonceClaim): Promise<void> {
    await c.query('DELETE FROM cache_nonces WHERE scope = $1 AND did = $2 AND key_id = $3 AND nonce = $4 AND expires_at_ms = $5', [
      claim.scope,
      claim.did,
      claim.keyId,
      claim.nonce,
      claim.expiresAtMs,
    ]);
  }

  private async claimNow(c: pg.PoolClient, claim: NonceClaim, nowMs: number): Promise<boolean> {
    const r = await c.query(
      `INSERT INTO cache_nonces (scope, did, key_id, nonce, expires_at_ms) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (scope, did, key_id, nonce) DO UPDATE SET expires_at_ms = EXCLUDED.expires_at_ms
       WHERE cache_nonces.expires_at_ms <= $6`,
      [claim.scope, claim.did, claim.keyId, claim.nonce, claim.expiresAtMs, nowMs],
    );
    return (r.rowCount ?? 0) > 0;
  }

  /**
   * Envelope bytes the whole mailbox holds, for the storage budget: summed over every recipient at most once a
   * second per process (other processes' stores since then are not seen; this process's are added).
   */
  private async heldTotal(c: pg.PoolClient): Promise<number> {
    const now = Date.now();
    if (now - this.total.atMs >= TOTAL_REFRESH_MS) {
      const r = await c.query<{ b: Num }>(`SELECT COALESCE(SUM(bytes), 0) - ${LEASES_UNSPENT_SQL} AS b FROM cache_recipient_bytes`);
      this.total = { bytes: Number(r.rows[0]?.b ?? 0), atMs: now };
    }
    return this.total.bytes;
  }

  private async getSet(c: pg.PoolClient, recipient: string, groupId: string): Promise<SetRow | undefined> {
    const r = await c.query<SetRow>(
      `SELECT total_chunks, first_at_ms, first_seq, retry_until_ms, complete FROM cache_chunk_sets
       WHERE recipient = $1 AND group_id = $2`,
      [recipient, groupId],
    );
    return r.rows[0];
  }

  private async setCount(c: pg.PoolClient, recipient: string, groupId: string, nowMs: number): Promise<number> {
    const r = await c.query<{ n: Num }>('SELECT COUNT(*) AS n FROM cache_entries WHERE recipient = $1 AND group_id = $2 AND expires_at_ms > $3', [
      recipient,
      groupId,
      nowMs,
    ]);
    return Number(r.rows[0].n);
  }

  private async deleteSet(c: pg.PoolClient, recipient: string, groupId: string): Promise<number> {
    const r = await c.query('DELETE FROM cache_entries WHERE recipient = $1 AND group_id = $2', [recipient, groupId]);
    await c.query('DELETE FROM cache_chunk_sets WHERE recipient = $1 AND group_id = $2', [recipient, groupId]);
    return r.rowCount ?? 0;
  }

  /** Deletes an incomplete set past its `retry_until` (entries included); returns whether it did. */
  private async purgeIfStale(c: pg.PoolClient, recipient: string, groupId: string, set: SetRow | undefined, nowMs: number): Promise<boolean> {
    if (set === undefined || set.complete || Number(set.retry_until_ms) > nowMs) return false;
    await this.deleteSet(c, recipient, groupId);
    return true;
  }

  private async setState(c: pg.PoolClient, recipient: string, groupId: string, nowMs: number): Promise<ChunkSetState | null> {
    const set = await this.getSet(c, recipient, groupId);
    if (set === undefined) return null;
    const received = await this.setCount(c, recipient, groupId, nowMs);
    return chunkSetState(groupId, set.total_chunks, received, set.complete, Number(set.retry_until_ms));
  }

  /**
   * One store, under its recipient's lock (`hold`), step by step as the SQLite mailbox's `put`: the nonce, the live
   * entry under the id (a duplicate dedupes), the chunk's set, the space, the row, the set's state.
   */
  private async putNow(c: pg.PoolClient, req: PutRequest, hold: RecipientHold): Promise<PutResult> {
    const { entry, nowMs } = req;
    if (req.claim !== null) {
      if (!(await this.claimNow(c, req.claim, nowMs))) throw replayed();
      hold.claimed = true;
    }
    const meta = await this.liveEntry(c, entry.messageId.toLowerCase(), nowMs, hold);
    if (checkDuplicate(meta, entry) === 'dedupe' && meta !== null) {
      return {
        deduped: true,
        entry: meta,
        chunkSet: meta.chunk === null ? null : await this.setState(c, meta.recipientDid, meta.chunk.groupId, nowMs),
      };
    }
    const chunk = entry.chunk;
    const set = chunk === null ? undefined : await this.admitChunk(c, entry.recipientDid, chunk, nowMs, hold);
    await this.admitSpace(c, req, hold);
    const inserted = await c.query<{ seq: Num }>(
      `INSERT INTO cache_entries (${INSERT_COLUMNS}) VALUES (${placeholders(0)}) RETURNING seq`,
      entryValues(entry, set === undefined ? null : Number(set.first_seq)),
    );
    // counted before the commit: a store that then fails only makes the next sum come a little early
    this.total.bytes += entry.sizeBytes;
    if (hold.bytes !== undefined) hold.bytes += entry.sizeBytes;
    const chunkSet = chunk === null ? null : await this.settleChunkSet(c, req, chunk, set, Number(inserted.rows[0].seq));
    const { envelope, ...stored } = entry;
    void envelope;
    return { deduped: false, entry: stored, chunkSet };
  }

  /**
   * The live entry stored under `key`, if any: an expired one, or one of an incomplete set past its retry, is
   * deleted (and the recipient's held bytes read again).
   */
  private async liveEntry(c: pg.PoolClient, key: string, nowMs: number, hold: RecipientHold): Promise<EntryMeta | null> {
    const existing = (await c.query<MetaRow>(`SELECT ${META_COLUMNS} FROM cache_entries e WHERE e.message_key = $1`, [key])).rows[0];
    if (existing === undefined) return null;
    if (existing.group_id !== null) {
      const set = await this.getSet(c, existing.recipient, existing.group_id);
      if (await this.purgeIfStale(c, existing.recipient, existing.group_id, set, nowMs)) {
        hold.bytes = undefined;
        return null;
      }
    }
    if (Number(existing.expires_at_ms) <= nowMs) {
      await c.query('DELETE FROM cache_entries WHERE seq = $1', [existing.seq]);
      hold.bytes = undefined;
      return null;
    }
    return toMeta(existing);
  }

  /**
   * The chunk's set (undefined: the set's first chunk), after the §11.3 checks against the set and the chunk held at
   * its place; a stale set, or an expired chunk at the place, is deleted first.
   */
  private async admitChunk(c: pg.PoolClient, recipient: string, chunk: ChunkRef, nowMs: number, hold: RecipientHold): Promise<SetRow | undefined> {
    let set = await this.getSet(c, recipient, chunk.groupId);
    if (await this.purgeIfStale(c, recipient, chunk.groupId, set, nowMs)) {
      set = undefined;
      hold.bytes = undefined;
    }
    let held: { seq: Num; message_id: string; expires_at_ms: Num } | undefined = (
      await c.query<{ seq: Num; message_id: string; expires_at_ms: Num }>(
        `SELECT seq, message_id, expires_at_ms FROM cache_entries
         WHERE recipient = $1 AND group_id = $2 AND sequence_number = $3`,
        [recipient, chunk.groupId, chunk.sequence],
      )
    ).rows[0];
    if (held !== undefined && Number(held.expires_at_ms) <= nowMs) {
      await c.query('DELETE FROM cache_entries WHERE seq = $1', [held.seq]);
      held = undefined;
      hold.bytes = undefined;
    }
    checkChunk(set === undefined ? null : { total: set.total_chunks }, held?.message_id ?? null, chunk);
    return set;
  }

  /** The recipient's quota (its held bytes read under its lock, kept in `hold` across the batch) and the budget. */
  private async admitSpace(c: pg.PoolClient, req: PutRequest, hold: RecipientHold): Promise<void> {
    const { entry } = req;
    if (req.quotaBytes !== null) {
      // the trigger keeps the row
      const held = async () =>
        (hold.bytes ??= Number(
          (await c.query<{ b: Num }>('SELECT bytes AS b FROM cache_recipient_bytes WHERE recipient = $1', [entry.recipientDid])).rows[0]?.b ?? 0,
        ));
      // Expired copies count until removed: only when they would make the difference are they removed here.
      // So do the quota leases' unspent bytes (`mailbox-leases.ts`): folded back before a store is refused.
      if (!withinQuota(await held(), entry.sizeBytes, req.quotaBytes)) {
        await c.query('DELETE FROM cache_entries WHERE recipient = $1 AND expires_at_ms <= $2', [entry.recipientDid, req.nowMs]);
        await c.query('SELECT cache_fold_leases($1, NULL)', [entry.recipientDid]);
        hold.bytes = undefined;
      }
      checkQuota(await held(), entry.sizeBytes, req.quotaBytes);
    }
    if (req.budgetBytes != null) checkBudget(await this.heldTotal(c), entry.sizeBytes, req.budgetBytes);
  }

  /** Creates the set at its first chunk (entry `seq`), then its state and retry deadline after this chunk. */
  private async settleChunkSet(c: pg.PoolClient, req: PutRequest, chunk: ChunkRef, found: SetRow | undefined, seq: number): Promise<ChunkSetState> {
    const { entry, nowMs } = req;
    let set = found;
    if (set === undefined) {
      const retry = chunkRetryUntil(nowMs, req.chunkWindowMs, entry.expiresAtMs);
      await c.query(
        `INSERT INTO cache_chunk_sets (recipient, group_id, total_chunks, first_at_ms, first_seq, retry_until_ms, complete)
         VALUES ($1, $2, $3, $4, $5, $6, FALSE)`,
        [entry.recipientDid, chunk.groupId, chunk.total, nowMs, seq, retry],
      );
      set = { total_chunks: chunk.total, first_at_ms: nowMs, first_seq: seq, retry_until_ms: retry, complete: false };
    }
    const agg = await c.query<{ m: Num; n: Num }>(
      `SELECT MIN(expires_at_ms) AS m, COUNT(*) FILTER (WHERE expires_at_ms > $3) AS n FROM cache_entries
       WHERE recipient = $1 AND group_id = $2`,
      [entry.recipientDid, chunk.groupId, nowMs],
    );
    const retry = chunkRetryUntil(Number(set.first_at_ms), req.chunkWindowMs, Number(agg.rows[0].m));
    const state = chunkSetState(chunk.groupId, chunk.total, Number(agg.rows[0].n), set.complete, retry);
    await c.query('UPDATE cache_chunk_sets SET retry_until_ms = $1, complete = $2 WHERE recipient = $3 AND group_id = $4', [
      retry,
      state.complete,
      entry.recipientDid,
      chunk.groupId,
    ]);
    return state;
  }

  private async sweepStep(c: pg.PoolClient, nowMs: number): Promise<SweepResult & { more: boolean }> {
    // Chunk sets go under their recipients' locks (taken in one order, as every sweep does), each checked again
    // under it by a statement that sees every store committed before: a store adding a chunk to a set waits for
    // the sweep, or the sweep for it and then keeps the set.
    const stale = await this.lockSets(
      c,
      `SELECT recipient, group_id FROM cache_chunk_sets WHERE NOT complete AND retry_until_ms <= $1 ORDER BY recipient, group_id LIMIT ${SWEEP_CHUNK}`,
      [nowMs],
    );
    let purgedChunkSets = 0;
    let purgedChunks = 0;
    for (const k of stale) {
      const set = await this.getSet(c, k.recipient, k.group_id);
      if (set === undefined || set.complete || Number(set.retry_until_ms) > nowMs) continue;
      purgedChunkSets++;
      purgedChunks += await this.deleteSet(c, k.recipient, k.group_id);
    }
    const expiredEntries =
      (
        await c.query(
          `DELETE FROM cache_entries WHERE seq IN
             (SELECT seq FROM cache_entries WHERE expires_at_ms <= $1 LIMIT ${SWEEP_CHUNK})`,
          [nowMs],
        )
      ).rowCount ?? 0;
    const EMPTY = 'NOT EXISTS (SELECT 1 FROM cache_entries e WHERE e.recipient = s.recipient AND e.group_id = s.group_id)';
    const emptied = await this.lockSets(
      c,
      `SELECT recipient, group_id FROM cache_chunk_sets s WHERE s.complete AND ${EMPTY} ORDER BY recipient, group_id LIMIT ${SWEEP_CHUNK}`,
      [],
    );
    if (emptied.length > 0) {
      await c.query(
        `DELETE FROM cache_chunk_sets s WHERE s.complete AND (s.recipient, s.group_id) IN (SELECT * FROM unnest($1::text[], $2::text[])) AND ${EMPTY}`,
        [emptied.map((k) => k.recipient), emptied.map((k) => k.group_id)],
      );
    }
    const expiredNonces =
      (
        await c.query(
          `DELETE FROM cache_nonces WHERE (scope, did, key_id, nonce) IN
             (SELECT scope, did, key_id, nonce FROM cache_nonces WHERE expires_at_ms <= $1 LIMIT ${SWEEP_CHUNK})`,
          [nowMs],
        )
      ).rowCount ?? 0;
    const expiredLeases = await this.foldExpiredLeases(c, nowMs);
    const more =
      stale.length === SWEEP_CHUNK ||
      emptied.length === SWEEP_CHUNK ||
      expiredEntries === SWEEP_CHUNK ||
      expiredNonces === SWEEP_CHUNK ||
      expiredLeases === SWEEP_CHUNK;
    return { expiredEntries, purgedChunkSets, purgedChunks, expiredNonces, more };
  }

  /**
   * Folds the quota leases expired at `nowMs` back into their recipients' rows (a stopped process's, a lane's that
   * went idle; `mailbox-leases.ts`), the rows locked in recipient order first; answers the recipients folded.
   */
  private async foldExpiredLeases(c: pg.PoolClient, nowMs: number): Promise<number> {
    const recipients = (
      await c.query<{ recipient: string }>(
        `SELECT DISTINCT recipient FROM cache_quota_leases WHERE expires_at_ms <= $1 ORDER BY recipient LIMIT ${SWEEP_CHUNK}`,
        [nowMs],
      )
    ).rows.map((r) => r.recipient);
    if (recipients.length > 0) {
      await c.query('SELECT 1 FROM cache_recipient_bytes WHERE recipient = ANY($1) ORDER BY recipient FOR UPDATE', [recipients]);
      await c.query('SELECT cache_fold_leases(r, $2) FROM unnest($1::text[]) AS r ORDER BY r', [recipients, nowMs]);
    }
    return recipients.length;
  }

  /** The chunk sets `select` names, their recipients locked (in recipient order) before they are returned. */
  private async lockSets(c: pg.PoolClient, select: string, params: unknown[]): Promise<{ recipient: string; group_id: string }[]> {
    const sets = (await c.query<{ recipient: string; group_id: string }>(select, params)).rows;
    if (sets.length > 0) {
      await c.query('SELECT 1 FROM cache_recipient_bytes WHERE recipient = ANY($1) ORDER BY recipient FOR UPDATE', [
        [...new Set(sets.map((k) => k.recipient))],
      ]);
    }
    return sets;
  }
}

/**
 * Opens the Cache's mailbox on PostgreSQL: a pool on `schema` (created if absent, default `public`), migrated,
 * owned by the store (closed by `close()`).
 */
export async function openPgMailboxStore(url: string, schema?: string, options: PgMailboxOptions = {}): Promise<PgMailboxStore> {
  const pool = await openPgPool({ url, schema });
  try {
    return await PgMailboxStore.open(pool, options, true);
  } catch (err) {
    await pool.end().catch(() => undefined);
    throw err;
  }
}

function replayed(): DdnError {
  return new DdnError('proof_nonce_replayed', 'this nonce was already used');
}
