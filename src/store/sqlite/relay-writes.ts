/**
 * The writes of the Relay's SQLite store (`relay-staging-store.ts`), each run inside the writer's transaction — on
 * the Relay's writer thread (`relay-writer-worker.ts`) or on the store's own connection. Staging rules are the pure
 * ones of `relay/staging-rules.ts`; this file only reads and writes rows.
 */
import { asBuffer } from '../../base/bytes.js';
import type { NonceClaim } from '../../ports/nonce-registry.js';
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
import { MAX_IDLE_DROPS_PER_STAGE, RESULT_RETENTION_MS, type RelaySweepResult, type StageOutcome, type StageRequest } from '../../relay/staging-store.js';
import { setValuesOf, type RelaySetRow } from '../relay-set-row.js';
import type { SqliteDb } from './database.js';
import { nonceKey } from './nonce-key.js';

/** Rows deleted per sweep statement, so a large purge never holds the writer for long. */
const SWEEP_CHUNK = 1_000;

/** A staged set's row (SQLite gives its integers as numbers). */
export type SetRow = RelaySetRow & { retry_until_ms: number; staged_bytes: number };

/** The key columns of a staged chunk. */
export interface ChunkRow {
  recipient: string;
  group_id: string;
  sequence_number: number;
  message_key: string;
  content_hash: string;
}

export const SELECT_SET =
  'SELECT total_chunks, to_value, tag, application_id, sender, retry_until_ms, staged_bytes FROM relay_chunk_sets WHERE recipient = ? AND group_id = ?';
export const SELECT_CHUNK_BY_KEY = 'SELECT recipient, group_id, sequence_number, message_key, content_hash FROM relay_chunks WHERE message_key = ?';

/** A delivered chunk whose result is remembered. */
export interface DeliveredKey {
  messageKey: string;
  contentHash: string;
}

/** The Relay store's write statements. */
export class RelayWrites {
  private readonly q;

  constructor(db: SqliteDb) {
    // each statement declares its row once (better-sqlite3 cannot check it): the reads below need no casts
    const p = <R = unknown>(sql: string) => db.prepare<unknown[], R>(sql);
    this.q = {
      saveResult: p(`INSERT INTO relay_results (message_key, content_hash, recipient, result, created_at_ms) VALUES (?, ?, ?, ?, ?)
        ON CONFLICT (message_key) DO UPDATE SET content_hash = excluded.content_hash, recipient = excluded.recipient,
        result = excluded.result, created_at_ms = excluded.created_at_ms`),
      set: p<SetRow>(SELECT_SET),
      insertSet: p(`INSERT INTO relay_chunk_sets (recipient, group_id, total_chunks, to_value, tag, application_id, sender,
        created_at_ms, retry_until_ms, owner, staged_bytes, last_chunk_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?)`),
      growSet: p('UPDATE relay_chunk_sets SET staged_bytes = staged_bytes + ?, last_chunk_ms = ? WHERE recipient = ? AND group_id = ?'),
      recipientBytes: p<number>('SELECT COALESCE(SUM(staged_bytes), 0) FROM relay_chunk_sets WHERE recipient = ?').pluck(),
      ownerBytes: p<number>('SELECT COALESCE(SUM(staged_bytes), 0) FROM relay_chunk_sets WHERE owner = ?').pluck(),
      idleSets: p<{
        recipient: string;
        group_id: string;
      }>(`SELECT recipient, group_id FROM relay_chunk_sets WHERE last_chunk_ms <= ? AND NOT (recipient = ? AND group_id = ?)
        ORDER BY last_chunk_ms LIMIT ${MAX_IDLE_DROPS_PER_STAGE}`),
      idleSetsOf: p<{
        recipient: string;
        group_id: string;
      }>(`SELECT recipient, group_id FROM relay_chunk_sets WHERE recipient = ? AND last_chunk_ms <= ? AND group_id <> ?
        ORDER BY last_chunk_ms LIMIT ${MAX_IDLE_DROPS_PER_STAGE}`),
      deleteSet: p('DELETE FROM relay_chunk_sets WHERE recipient = ? AND group_id = ?'),
      setBytes: p<{ n: number }>('SELECT COALESCE(SUM(size_bytes), 0) AS n FROM relay_chunks WHERE recipient = ? AND group_id = ?'),
      deleteSetChunks: p('DELETE FROM relay_chunks WHERE recipient = ? AND group_id = ?'),
      setsOf: p<{ n: number }>('SELECT COUNT(*) AS n FROM relay_chunk_sets WHERE recipient = ?'),
      received: p<{ n: number }>('SELECT COUNT(*) AS n FROM relay_chunks WHERE recipient = ? AND group_id = ?'),
      chunkAt: p<string>('SELECT content_hash FROM relay_chunks WHERE recipient = ? AND group_id = ? AND sequence_number = ?').pluck(),
      byKey: p<ChunkRow>(SELECT_CHUNK_BY_KEY),
      insertChunk: p(`INSERT INTO relay_chunks (recipient, group_id, sequence_number, message_key, content_hash, size_bytes, envelope)
        VALUES (?, ?, ?, ?, ?, ?, ?)`),
      usage: p<number>('SELECT staged_bytes FROM relay_usage WHERE id = 1').pluck(),
      addUsage: p('UPDATE relay_usage SET staged_bytes = MAX(0, staged_bytes + ?) WHERE id = 1'),
      claimNonce: p(`INSERT INTO relay_nonce_keys (key, expires_at_ms) VALUES (@key, @expires)
        ON CONFLICT (key) DO UPDATE SET expires_at_ms = excluded.expires_at_ms WHERE relay_nonce_keys.expires_at_ms <= @now`),
      staleSets: p<{ recipient: string; group_id: string }>(`SELECT recipient, group_id FROM relay_chunk_sets WHERE retry_until_ms <= ? LIMIT ${SWEEP_CHUNK}`),
      oldResults: p(`DELETE FROM relay_results WHERE message_key IN
        (SELECT message_key FROM relay_results WHERE created_at_ms <= ? LIMIT ${SWEEP_CHUNK})`),
      expiredNonces: p(`DELETE FROM relay_nonce_keys WHERE key IN
        (SELECT key FROM relay_nonce_keys WHERE expires_at_ms <= ? LIMIT ${SWEEP_CHUNK})`),
    };
  }

  saveResult(messageKey: string, contentHash: string, recipient: string, resultText: string, nowMs: number): void {
    this.q.saveResult.run(messageKey, contentHash, recipient, resultText, nowMs);
  }

  /** A delivered set: its chunks are dropped and each chunk's message id remembers the set's result. */
  finishSet(recipient: string, groupId: string, delivered: readonly DeliveredKey[], resultText: string, nowMs: number): void {
    this.dropSet(recipient, groupId);
    for (const c of delivered) this.q.saveResult.run(c.messageKey, c.contentHash, null, resultText, nowMs);
  }

  claim(claim: NonceClaim, nowMs: number): boolean {
    return this.q.claimNonce.run({ key: nonceKey(claim), expires: claim.expiresAtMs, now: nowMs }).changes > 0;
  }

  stage(req: StageRequest): StageOutcome {
    const { recipientDid: recipient, groupId, nowMs } = req;
    let set = this.q.set.get(recipient, groupId);
    if (set !== undefined && set.retry_until_ms <= nowMs) {
      this.dropSet(recipient, groupId);
      set = undefined;
    }
    if (set !== undefined) {
      checkSetValues(groupId, setValuesOf(set), req.set);
      const held = (this.q.chunkAt.get(recipient, groupId, req.sequence) as string | undefined) ?? null;
      if (checkSequence(groupId, req.sequence, held, req.contentHash) === 'replay') return this.state(recipient, groupId, set, true);
    }
    const other = this.q.byKey.get(req.messageKey);
    if (other !== undefined) {
      const otherSet = this.q.set.get(other.recipient, other.group_id);
      if (otherSet !== undefined && otherSet.retry_until_ms <= nowMs) this.dropSet(other.recipient, other.group_id);
      else throw messageIdConflict(req.messageKey);
    }
    let check = this.capacity(req, set);
    checkOwnBounds(check);
    const pressure = req.idleDropMs === undefined ? undefined : idlePressure(check);
    if (pressure !== undefined && (pressure.recipient || pressure.node)) {
      // idle sets make room: the recipient's own for its bounds, anyone's for the node's
      const cutoff = nowMs - req.idleDropMs!;
      const idle = pressure.node ? this.q.idleSets.all(cutoff, recipient, groupId) : this.q.idleSetsOf.all(recipient, cutoff, groupId);
      for (const s of idle) this.dropSet(s.recipient, s.group_id);
      if (idle.length > 0) check = this.capacity(req, set);
    }
    checkCapacity(check);
    if (set === undefined) {
      const s = req.set;
      this.q.insertSet.run(recipient, groupId, s.total, s.to, s.tag, s.applicationId, s.sender, nowMs, req.retryUntilMs, req.owner ?? null, nowMs);
      set = {
        total_chunks: s.total,
        to_value: s.to,
        tag: s.tag,
        application_id: s.applicationId,
        sender: s.sender,
        retry_until_ms: req.retryUntilMs,
        staged_bytes: 0,
      };
    }
    // a plain Uint8Array once it crossed to the writer thread: SQLite binds a Buffer
    const e = req.envelope;
    const bytes = asBuffer(e);
    this.q.insertChunk.run(recipient, groupId, req.sequence, req.messageKey, req.contentHash, bytes.byteLength, bytes);
    this.q.growSet.run(bytes.byteLength, nowMs, recipient, groupId);
    this.q.addUsage.run(bytes.byteLength);
    return this.state(recipient, groupId, set, false);
  }

  /** The counts a stage of `req` is checked against (`set`: its set, when staged). */
  private capacity(req: StageRequest, set: SetRow | undefined): CapacityCheck {
    const recipient = req.recipientDid;
    const owner = boundOwner(req);
    return capacityCheck(req, {
      newSet: set === undefined,
      setBytes: set?.staged_bytes ?? 0,
      setsOfRecipient: this.q.setsOf.get(recipient)!.n,
      recipientBytes: this.q.recipientBytes.get(recipient) as number,
      ownerBytes: owner === null ? undefined : (this.q.ownerBytes.get(owner) as number),
      stagedBytes: this.q.usage.get() as number,
    });
  }

  sweepStep(nowMs: number): RelaySweepResult & { more: boolean } {
    const stale = this.q.staleSets.all(nowMs);
    let purgedChunks = 0;
    for (const s of stale) purgedChunks += this.dropSet(s.recipient, s.group_id);
    const expiredResults = this.q.oldResults.run(nowMs - RESULT_RETENTION_MS).changes;
    const expiredNonces = this.q.expiredNonces.run(nowMs).changes;
    const more = stale.length === SWEEP_CHUNK || expiredResults === SWEEP_CHUNK || expiredNonces === SWEEP_CHUNK;
    return { purgedSets: stale.length, purgedChunks, expiredResults, expiredNonces, more };
  }

  /** Deletes a set and its chunks; returns the chunks deleted. */
  private dropSet(recipient: string, groupId: string): number {
    const bytes = this.q.setBytes.get(recipient, groupId)!.n;
    const n = this.q.deleteSetChunks.run(recipient, groupId).changes;
    this.q.deleteSet.run(recipient, groupId);
    this.q.addUsage.run(-bytes);
    return n;
  }

  private state(recipient: string, groupId: string, set: SetRow, replayed: boolean): StageOutcome {
    const received = this.q.received.get(recipient, groupId)!.n;
    return { replayed, received, total: set.total_chunks, retryUntilMs: set.retry_until_ms, complete: received >= set.total_chunks };
  }
}
