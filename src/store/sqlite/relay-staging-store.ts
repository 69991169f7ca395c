/**
 * The Relay's durable state in its own SQLite file (`<data-dir>/relay.sqlite`, WAL, `synchronous = FULL`):
 * staged chunk sets (http-api.md §10.4.3), remembered delivery results (§10.3 step 6) and node-request nonces
 * (§10.6). Reads run on this connection; every write goes through one {@link OpWriter}: for a file, a writer
 * thread with its own connection (`relay-writer-worker.ts`), so concurrent chunks share a transaction and an
 * fsync, each 202 waits for its batch, and the event loop keeps serving while that fsync is in progress.
 */
import { sweepInBatches } from '../../base/periodic-sweeper.js';
import { DdnError } from '../../base/errors.js';
import type { NonceClaim } from '../../ports/nonce-registry.js';
import { deliveryResultText, type DeliveryResult } from '../../relay/delivery-result.js';
import {
  RESULT_RETENTION_MS,
  type RelayStagingStore,
  type RelaySweepResult,
  type StageOutcome,
  type StageRequest,
  type StagedChunk,
  type PriorUse,
  type StagedMessageRef,
  type StagingUsage,
  type StoredResult,
} from '../../relay/staging-store.js';
import { openSqlite, type SqliteDb } from './database.js';
import { nonceKey } from './nonce-key.js';
import type { OpWriter } from './op-writer.js';
import type { StorageGuard } from '../storage-guard.js';
import { RELAY_MIGRATIONS } from './relay-schema.js';
import { relayOpBytes, relayOpRunner, type RelayWriteOp, type RelayWriteResults } from './relay-write-ops.js';
import { RelayWrites, SELECT_CHUNK_BY_KEY, SELECT_SET, type ChunkRow, type SetRow } from './relay-writes.js';
import { storeWriter, type WorkerWriterOptions } from './worker-writer.js';

export { RELAY_MIGRATIONS } from './relay-schema.js';

/** Options of {@link SqliteRelayStagingStore.open}. */
export interface SqliteRelayStagingOptions {
  writer?: WorkerWriterOptions;
  /** Run writes on the calling thread instead of a writer thread (always so for `:memory:`). */
  inThreadWriter?: boolean;
  /** The data directory's storage guard: chunks are refused while the disk is full, nonces and results go on. */
  guard?: StorageGuard;
}

/** A failed durable write of staging state is 507 `staging_persist_failed` (§10.4.3). */
function toStagingError(err: unknown): unknown {
  if (err instanceof DdnError && err.code === 'insufficient_storage') {
    return new DdnError('staging_persist_failed', 'the chunk could not be persisted; retry later');
  }
  return err;
}

/** A remembered result as the store answers it: null once {@link RESULT_RETENTION_MS} past its recording. */
function liveResult(contentHash: string, recipient: string | null, text: string, createdAtMs: number, nowMs: number): StoredResult | null {
  if (createdAtMs + RESULT_RETENTION_MS <= nowMs) return null;
  return { contentHash, recipientDid: recipient, result: JSON.parse(text) as DeliveryResult };
}

/** {@link RelayStagingStore} on SQLite with group commit. */
export class SqliteRelayStagingStore implements RelayStagingStore {
  private readonly q;

  /** Opens (creating and migrating) `path` with WAL and `synchronous = FULL`. */
  static open(path: string, options: SqliteRelayStagingOptions = {}): SqliteRelayStagingStore {
    const db = openSqlite(path, RELAY_MIGRATIONS, 'relay', { synchronous: 'FULL' });
    const writer = storeWriter<RelayWriteOp, RelayWriteResults>(db, path, {
      ...(options.inThreadWriter === undefined ? {} : { inThread: options.inThreadWriter }),
      runner: (d) => relayOpRunner(new RelayWrites(d)),
      module: { name: 'relay-writer-worker', label: 'relay staging store' },
      ...(options.writer === undefined ? {} : { options: options.writer }),
      ...(options.guard === undefined ? {} : { guard: { guard: options.guard, addsData: (op) => op.kind === 'stage' } }),
    });
    return new SqliteRelayStagingStore(db, writer);
  }

  private constructor(
    /** The connection reads run on. */
    readonly db: SqliteDb,
    private readonly writer: OpWriter<RelayWriteOp, RelayWriteResults>,
  ) {
    // each statement declares its row once (better-sqlite3 cannot check it): the reads below need no casts
    const p = <R = unknown>(sql: string) => db.prepare<unknown[], R>(sql);
    this.q = {
      result: p<{ content_hash: string; recipient: string | null; result: string; created_at_ms: number }>(
        'SELECT content_hash, recipient, result, created_at_ms FROM relay_results WHERE message_key = ?',
      ),
      // a message id's remembered result and (when asked: `@staged`) its staged chunk with its set's deadline, in one read;
      // at most one row of each kind (message_key is unique in both tables)
      prior: p<{
        staged: 0 | 1;
        content_hash: string;
        recipient: string | null;
        result: string | null;
        at_ms: number;
        group_id: string | null;
        sequence_number: number | null;
      }>(`SELECT 0 AS staged, content_hash, recipient, result, created_at_ms AS at_ms, NULL AS group_id, NULL AS sequence_number
          FROM relay_results WHERE message_key = @key
        UNION ALL
        SELECT 1, c.content_hash, c.recipient, NULL, s.retry_until_ms, c.group_id, c.sequence_number
          FROM relay_chunks c JOIN relay_chunk_sets s ON s.recipient = c.recipient AND s.group_id = c.group_id
          WHERE @staged AND c.message_key = @key`),
      set: p<SetRow>(SELECT_SET),
      byKey: p<ChunkRow>(SELECT_CHUNK_BY_KEY),
      chunksOf: p<{
        sequence_number: number;
        message_key: string;
        content_hash: string;
        envelope: Buffer;
      }>(`SELECT sequence_number, message_key, content_hash, envelope FROM relay_chunks
        WHERE recipient = ? AND group_id = ? ORDER BY sequence_number`),
      nonceLive: p('SELECT 1 FROM relay_nonce_keys WHERE key = ? AND expires_at_ms > ?'),
      stagedSets: p<number>('SELECT COUNT(*) FROM relay_chunk_sets').pluck(),
      stagedBytes: p<number>('SELECT staged_bytes FROM relay_usage WHERE id = 1').pluck(),
    };
  }

  /** Committed write transactions and the operations they carried. */
  get writeStats(): { readonly commits: number; readonly operations: number } {
    return this.writer.stats;
  }

  /** Operations waiting for the writer. */
  get writeQueue(): number {
    return this.writer.queued;
  }

  // ------------------------------------------------------------------ reads

  async usage(): Promise<StagingUsage> {
    return { sets: this.q.stagedSets.get()!, bytes: this.q.stagedBytes.get() ?? 0 };
  }

  async findResult(messageKey: string, nowMs: number): Promise<StoredResult | null> {
    const r = this.q.result.get(messageKey);
    return r === undefined ? null : liveResult(r.content_hash, r.recipient, r.result, r.created_at_ms, nowMs);
  }

  /**
   * One statement for both reads (every unchunked send asks both, and a statement of its own costs the event loop a
   * read transaction: the WAL's locks, and pages read again after the writer thread's last commit).
   */
  async findPrior(messageKey: string, nowMs: number, staged: boolean): Promise<PriorUse> {
    let result: StoredResult | null = null;
    let chunk: StagedMessageRef | null = null;
    for (const r of this.q.prior.all({ key: messageKey, staged: staged ? 1 : 0 })) {
      if (r.staged === 0) {
        result = liveResult(r.content_hash, r.recipient, r.result!, r.at_ms, nowMs);
      } else if (r.at_ms > nowMs) {
        chunk = { recipientDid: r.recipient!, groupId: r.group_id!, sequence: r.sequence_number!, contentHash: r.content_hash };
      }
    }
    return { result, staged: result === null ? chunk : null };
  }

  async loadSet(recipientDid: string, groupId: string): Promise<StagedChunk[]> {
    const rows = this.q.chunksOf.all(recipientDid, groupId);
    return rows.map((r) => ({
      sequence: r.sequence_number,
      messageKey: r.message_key,
      contentHash: r.content_hash,
      envelope: new Uint8Array(r.envelope.buffer, r.envelope.byteOffset, r.envelope.byteLength),
    }));
  }

  isNonceClaimed(claim: NonceClaim, nowMs: number): boolean {
    return this.q.nonceLive.get(nonceKey(claim), nowMs) !== undefined;
  }

  // ------------------------------------------------------------------ writes

  saveResult(messageKey: string, contentHash: string, recipientDid: string, result: DeliveryResult, nowMs: number): Promise<void> {
    // bookkeeping: a result lost to a power failure only means an identical retry delivers again (and the Cache
    // deduplicates it), so these commits need no fsync of their own (`relayOpRunner`)
    return this.submit({ kind: 'result', messageKey, contentHash, recipient: recipientDid, resultText: deliveryResultText(result), nowMs });
  }

  stage(req: StageRequest): Promise<StageOutcome> {
    return this.submit({ kind: 'stage', req }).catch((err: unknown) => {
      throw toStagingError(err);
    });
  }

  finishSet(recipientDid: string, groupId: string, chunks: readonly StagedChunk[], result: DeliveryResult, nowMs: number): Promise<void> {
    const delivered = chunks.map((c) => ({ messageKey: c.messageKey, contentHash: c.contentHash }));
    return this.submit({ kind: 'finish_set', recipient: recipientDid, groupId, delivered, resultText: deliveryResultText(result), nowMs });
  }

  claimNonce(claim: NonceClaim, nowMs: number): Promise<boolean> {
    return this.submit({ kind: 'claim', claim, nowMs });
  }

  sweep(nowMs: number): Promise<RelaySweepResult> {
    return sweepInBatches(() => this.submit({ kind: 'sweep', nowMs }), {
      purgedSets: 0,
      purgedChunks: 0,
      expiredResults: 0,
      expiredNonces: 0,
    });
  }

  settle(): Promise<void> {
    return this.writer.settle();
  }

  async close(): Promise<void> {
    await this.writer.close();
    if (this.db.open) this.db.close();
  }

  private submit<O extends RelayWriteOp>(op: O): Promise<RelayWriteResults[O['kind']]> {
    return this.writer.submit(op, relayOpBytes(op));
  }
}
