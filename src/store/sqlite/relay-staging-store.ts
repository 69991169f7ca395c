/**
 * The Relay's durable state in its own SQLite file (`<data-dir>/relay.sqlite`, WAL, `synchronous = FULL`):
 * staged chunk sets (http-api.md §10.4.3), remembered delivery results (§10.3 step 6) and node-request nonces
 * (§10.6). Every write goes through one {@link GroupCommitWriter}: concurrent chunks share a transaction and
 * an fsync, and each 202 waits for its batch.
 */
import { sweepInBatches } from '../../base/periodic-sweeper.js';
import { DdnError } from '../../base/errors.js';
import type { NonceClaim } from '../../ports/nonce-registry.js';
import type { DeliveryResult } from '../../relay/delivery-result.js';
import { checkCapacity, checkSequence, checkSetValues, messageIdConflict } from '../../relay/staging-rules.js';
import {
  RESULT_RETENTION_MS,
  type ChunkSetKeyValues,
  type RelayStagingStore,
  type RelaySweepResult,
  type StageOutcome,
  type StageRequest,
  type StagedChunk,
  type StagedMessageRef,
  type StoredResult,
} from '../../relay/staging-store.js';
import { openSqlite, type Migration, type SqliteDb } from './database.js';
import { GroupCommitWriter, type GroupCommitOptions } from './group-commit.js';

export const RELAY_MIGRATIONS: readonly Migration[] = [
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
        created_at_ms INTEGER NOT NULL,
        retry_until_ms INTEGER NOT NULL,
        PRIMARY KEY (recipient, group_id)) WITHOUT ROWID;
      CREATE INDEX relay_chunk_sets_retry ON relay_chunk_sets (retry_until_ms);
      CREATE TABLE relay_chunks (
        recipient TEXT NOT NULL,
        group_id TEXT NOT NULL,
        sequence_number INTEGER NOT NULL,
        message_key TEXT NOT NULL UNIQUE,
        content_hash TEXT NOT NULL,
        size_bytes INTEGER NOT NULL,
        envelope BLOB NOT NULL,
        PRIMARY KEY (recipient, group_id, sequence_number));
      CREATE TABLE relay_usage (id INTEGER PRIMARY KEY CHECK (id = 1), staged_bytes INTEGER NOT NULL);
      INSERT INTO relay_usage (id, staged_bytes) VALUES (1, 0);
      CREATE TABLE relay_results (
        message_key TEXT PRIMARY KEY,
        content_hash TEXT NOT NULL,
        result TEXT NOT NULL,
        created_at_ms INTEGER NOT NULL) WITHOUT ROWID;
      CREATE INDEX relay_results_created ON relay_results (created_at_ms);
      CREATE TABLE relay_nonces (
        scope TEXT NOT NULL,
        did TEXT NOT NULL,
        key_id TEXT NOT NULL,
        nonce TEXT NOT NULL,
        expires_at_ms INTEGER NOT NULL,
        PRIMARY KEY (scope, did, key_id, nonce)) WITHOUT ROWID;
      CREATE INDEX relay_nonces_expiry ON relay_nonces (expires_at_ms);
    `,
  },
];

/** Rows deleted per sweep statement, so a large purge never holds the writer for long. */
const SWEEP_CHUNK = 1_000;

interface SetRow {
  total_chunks: number;
  to_value: string;
  tag: string | null;
  application_id: string | null;
  sender: string | null;
  retry_until_ms: number;
}

interface ChunkRow {
  recipient: string;
  group_id: string;
  sequence_number: number;
  message_key: string;
  content_hash: string;
}

const valuesOf = (s: SetRow): ChunkSetKeyValues => ({
  total: s.total_chunks,
  to: s.to_value,
  tag: s.tag,
  applicationId: s.application_id,
  sender: s.sender,
});

/** Options of {@link SqliteRelayStagingStore.open}. */
export interface SqliteRelayStagingOptions {
  writer?: GroupCommitOptions;
}

/** A failed durable write of staging state is 507 `staging_persist_failed` (§10.4.3). */
function toStagingError(err: unknown): unknown {
  if (err instanceof DdnError && err.code === 'insufficient_storage') {
    return new DdnError('staging_persist_failed', 'the chunk could not be persisted; retry later');
  }
  return err;
}

/** {@link RelayStagingStore} on SQLite with group commit. */
export class SqliteRelayStagingStore implements RelayStagingStore {
  private readonly writer: GroupCommitWriter;
  private readonly q;

  /** Opens (creating and migrating) `path` with WAL and `synchronous = FULL`. */
  static open(path: string, options: SqliteRelayStagingOptions = {}): SqliteRelayStagingStore {
    return new SqliteRelayStagingStore(openSqlite(path, RELAY_MIGRATIONS, 'relay', { synchronous: 'FULL' }), options, true);
  }

  constructor(
    /** The connection (tests use it to inject storage faults). */
    readonly db: SqliteDb,
    options: SqliteRelayStagingOptions = {},
    private readonly ownsDb = false,
  ) {
    this.writer = new GroupCommitWriter(db, options.writer);
    const p = (sql: string) => db.prepare(sql);
    this.q = {
      result: p('SELECT content_hash, result, created_at_ms FROM relay_results WHERE message_key = ?'),
      saveResult: p(`INSERT INTO relay_results (message_key, content_hash, result, created_at_ms) VALUES (?, ?, ?, ?)
        ON CONFLICT (message_key) DO UPDATE SET content_hash = excluded.content_hash, result = excluded.result,
        created_at_ms = excluded.created_at_ms`),
      set: p('SELECT total_chunks, to_value, tag, application_id, sender, retry_until_ms FROM relay_chunk_sets WHERE recipient = ? AND group_id = ?'),
      insertSet: p(`INSERT INTO relay_chunk_sets (recipient, group_id, total_chunks, to_value, tag, application_id, sender,
        created_at_ms, retry_until_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`),
      deleteSet: p('DELETE FROM relay_chunk_sets WHERE recipient = ? AND group_id = ?'),
      setBytes: p('SELECT COALESCE(SUM(size_bytes), 0) AS n FROM relay_chunks WHERE recipient = ? AND group_id = ?'),
      deleteSetChunks: p('DELETE FROM relay_chunks WHERE recipient = ? AND group_id = ?'),
      setsOf: p('SELECT COUNT(*) AS n FROM relay_chunk_sets WHERE recipient = ?'),
      received: p('SELECT COUNT(*) AS n FROM relay_chunks WHERE recipient = ? AND group_id = ?'),
      chunkAt: p('SELECT content_hash FROM relay_chunks WHERE recipient = ? AND group_id = ? AND sequence_number = ?').pluck(),
      byKey: p('SELECT recipient, group_id, sequence_number, message_key, content_hash FROM relay_chunks WHERE message_key = ?'),
      insertChunk: p(`INSERT INTO relay_chunks (recipient, group_id, sequence_number, message_key, content_hash, size_bytes, envelope)
        VALUES (?, ?, ?, ?, ?, ?, ?)`),
      chunksOf: p(`SELECT sequence_number, message_key, content_hash, envelope FROM relay_chunks
        WHERE recipient = ? AND group_id = ? ORDER BY sequence_number`),
      usage: p('SELECT staged_bytes FROM relay_usage WHERE id = 1').pluck(),
      addUsage: p('UPDATE relay_usage SET staged_bytes = MAX(0, staged_bytes + ?) WHERE id = 1'),
      nonceLive: p('SELECT 1 FROM relay_nonces WHERE scope = ? AND did = ? AND key_id = ? AND nonce = ? AND expires_at_ms > ?'),
      claimNonce: p(`INSERT INTO relay_nonces (scope, did, key_id, nonce, expires_at_ms) VALUES (@scope, @did, @key_id, @nonce, @expires)
        ON CONFLICT (scope, did, key_id, nonce) DO UPDATE SET expires_at_ms = excluded.expires_at_ms
        WHERE relay_nonces.expires_at_ms <= @now`),
      staleSets: p(`SELECT recipient, group_id FROM relay_chunk_sets WHERE retry_until_ms <= ? LIMIT ${SWEEP_CHUNK}`),
      oldResults: p(`DELETE FROM relay_results WHERE message_key IN
        (SELECT message_key FROM relay_results WHERE created_at_ms <= ? LIMIT ${SWEEP_CHUNK})`),
      expiredNonces: p(`DELETE FROM relay_nonces WHERE (scope, did, key_id, nonce) IN
        (SELECT scope, did, key_id, nonce FROM relay_nonces WHERE expires_at_ms <= ? LIMIT ${SWEEP_CHUNK})`),
    };
  }

  /** Committed write transactions and the operations they carried. */
  get writeStats(): { readonly commits: number; readonly operations: number } {
    return this.writer.stats;
  }

  // ------------------------------------------------------------------ reads

  async findResult(messageKey: string, nowMs: number): Promise<StoredResult | null> {
    const r = this.q.result.get(messageKey) as { content_hash: string; result: string; created_at_ms: number } | undefined;
    if (r === undefined || r.created_at_ms + RESULT_RETENTION_MS <= nowMs) return null;
    return { contentHash: r.content_hash, result: JSON.parse(r.result) as DeliveryResult };
  }

  async findStagedMessage(messageKey: string, nowMs: number): Promise<StagedMessageRef | null> {
    const c = this.q.byKey.get(messageKey) as ChunkRow | undefined;
    if (c === undefined) return null;
    const set = this.q.set.get(c.recipient, c.group_id) as SetRow | undefined;
    if (set === undefined || set.retry_until_ms <= nowMs) return null;
    return { recipientDid: c.recipient, groupId: c.group_id, sequence: c.sequence_number, contentHash: c.content_hash };
  }

  async loadSet(recipientDid: string, groupId: string): Promise<StagedChunk[]> {
    const rows = this.q.chunksOf.all(recipientDid, groupId) as {
      sequence_number: number;
      message_key: string;
      content_hash: string;
      envelope: Buffer;
    }[];
    return rows.map((r) => ({
      sequence: r.sequence_number,
      messageKey: r.message_key,
      contentHash: r.content_hash,
      envelope: new Uint8Array(r.envelope.buffer, r.envelope.byteOffset, r.envelope.byteLength),
    }));
  }

  isNonceClaimed(claim: NonceClaim, nowMs: number): boolean {
    return this.q.nonceLive.get(claim.scope, claim.did, claim.keyId, claim.nonce, nowMs) !== undefined;
  }

  // ------------------------------------------------------------------ writes

  saveResult(messageKey: string, contentHash: string, result: DeliveryResult, nowMs: number): Promise<void> {
    // bookkeeping: a result lost to a power failure only means an identical retry delivers again (and the Cache
    // deduplicates it), so these commits need no fsync of their own
    const text = JSON.stringify(result);
    return this.writer.submit(
      () => {
        this.q.saveResult.run(messageKey, contentHash, text, nowMs);
      },
      0,
      false,
    );
  }

  stage(req: StageRequest): Promise<StageOutcome> {
    return this.writer.submit(() => this.stageNow(req), req.envelope.byteLength).catch((err: unknown) => {
      throw toStagingError(err);
    });
  }

  finishSet(recipientDid: string, groupId: string, chunks: readonly StagedChunk[], result: DeliveryResult, nowMs: number): Promise<void> {
    const text = JSON.stringify(result);
    return this.writer.submit(() => {
      this.dropSet(recipientDid, groupId);
      for (const c of chunks) this.q.saveResult.run(c.messageKey, c.contentHash, text, nowMs);
    });
  }

  claimNonce(claim: NonceClaim, nowMs: number): Promise<boolean> {
    return this.writer.submit(() => this.claimNow(claim, nowMs));
  }

  sweep(nowMs: number): Promise<RelaySweepResult> {
    return sweepInBatches(() => this.writer.submit(() => this.sweepStep(nowMs)), { purgedSets: 0, purgedChunks: 0, expiredResults: 0, expiredNonces: 0 });
  }

  settle(): Promise<void> {
    return this.writer.settle();
  }

  async close(): Promise<void> {
    await this.writer.close();
    if (this.ownsDb && this.db.open) this.db.close();
  }

  // ------------------------------------------------------------------ inside the write transaction

  private claimNow(claim: NonceClaim, nowMs: number): boolean {
    const r = this.q.claimNonce.run({
      scope: claim.scope,
      did: claim.did,
      key_id: claim.keyId,
      nonce: claim.nonce,
      expires: claim.expiresAtMs,
      now: nowMs,
    });
    return r.changes > 0;
  }

  /** Deletes a set and its chunks; returns the chunks deleted. */
  private dropSet(recipient: string, groupId: string): number {
    const bytes = (this.q.setBytes.get(recipient, groupId) as { n: number }).n;
    const n = this.q.deleteSetChunks.run(recipient, groupId).changes;
    this.q.deleteSet.run(recipient, groupId);
    this.q.addUsage.run(-bytes);
    return n;
  }

  private state(recipient: string, groupId: string, set: SetRow, replayed: boolean): StageOutcome {
    const received = (this.q.received.get(recipient, groupId) as { n: number }).n;
    return { replayed, received, total: set.total_chunks, retryUntilMs: set.retry_until_ms, complete: received >= set.total_chunks };
  }

  private stageNow(req: StageRequest): StageOutcome {
    const { recipientDid: recipient, groupId, nowMs } = req;
    let set = this.q.set.get(recipient, groupId) as SetRow | undefined;
    if (set !== undefined && set.retry_until_ms <= nowMs) {
      this.dropSet(recipient, groupId);
      set = undefined;
    }
    if (set !== undefined) {
      checkSetValues(groupId, valuesOf(set), req.set);
      const held = (this.q.chunkAt.get(recipient, groupId, req.sequence) as string | undefined) ?? null;
      if (checkSequence(groupId, req.sequence, held, req.contentHash) === 'replay') return this.state(recipient, groupId, set, true);
    }
    const other = this.q.byKey.get(req.messageKey) as ChunkRow | undefined;
    if (other !== undefined) {
      const otherSet = this.q.set.get(other.recipient, other.group_id) as SetRow | undefined;
      if (otherSet !== undefined && otherSet.retry_until_ms <= nowMs) this.dropSet(other.recipient, other.group_id);
      else throw messageIdConflict(req.messageKey);
    }
    checkCapacity({
      newSet: set === undefined,
      setsOfRecipient: (this.q.setsOf.get(recipient) as { n: number }).n,
      maxSetsPerRecipient: req.maxSetsPerRecipient,
      stagedBytes: this.q.usage.get() as number,
      addBytes: req.envelope.byteLength,
      maxBytes: req.maxBytes,
    });
    if (set === undefined) {
      const s = req.set;
      this.q.insertSet.run(recipient, groupId, s.total, s.to, s.tag, s.applicationId, s.sender, nowMs, req.retryUntilMs);
      set = { total_chunks: s.total, to_value: s.to, tag: s.tag, application_id: s.applicationId, sender: s.sender, retry_until_ms: req.retryUntilMs };
    }
    this.q.insertChunk.run(recipient, groupId, req.sequence, req.messageKey, req.contentHash, req.envelope.byteLength, req.envelope);
    this.q.addUsage.run(req.envelope.byteLength);
    return this.state(recipient, groupId, set, false);
  }

  private sweepStep(nowMs: number): RelaySweepResult & { more: boolean } {
    const stale = this.q.staleSets.all(nowMs) as { recipient: string; group_id: string }[];
    let purgedChunks = 0;
    for (const s of stale) purgedChunks += this.dropSet(s.recipient, s.group_id);
    const expiredResults = this.q.oldResults.run(nowMs - RESULT_RETENTION_MS).changes;
    const expiredNonces = this.q.expiredNonces.run(nowMs).changes;
    const more = stale.length === SWEEP_CHUNK || expiredResults === SWEEP_CHUNK || expiredNonces === SWEEP_CHUNK;
    return { purgedSets: stale.length, purgedChunks, expiredResults, expiredNonces, more };
  }
}
