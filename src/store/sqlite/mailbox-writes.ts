/**
 * The Cache mailbox's writes, each run inside the writer's transaction (one savepoint per operation, see
 * `group-commit.ts`): stores with their deduplication and chunk-set rules (http-api.md §11.1 steps 10–12,
 * §11.3), nonce claims (§11.4 step 9, §10.6), acknowledgements and purges. Synchronous; the connection is the
 * writer's own (on the writer thread, `mailbox-writer-worker.ts`).
 */
import { DdnError } from '../../base/errors.js';
import { checkBudget, checkChunk, checkDuplicate, checkQuota, chunkRetryUntil, chunkSetState, withinQuota } from '../../cache/admission.js';
import type { ChunkRef, ChunkSetState, EntryMeta, NewEntry, PutRequest, PutResult, SweepResult } from '../../cache/mailbox-store.js';
import type { NonceClaim } from '../../ports/nonce-registry.js';
import type { SqliteDb } from './database.js';
import { COL, ENVELOPE_PART_BYTES, META_COLUMNS, SWEEP_CHUNK, toMeta, type MetaRow, type SetRow } from './mailbox-schema.js';
import { nonceKey } from './nonce-key.js';

export function replayed(): DdnError {
  return new DdnError('proof_nonce_replayed', 'this nonce was already used');
}

/** The write statements of one connection. */
export class MailboxWrites {
  private readonly q;
  private readonly pageBytes: number;

  constructor(db: SqliteDb) {
    // each statement declares its row once (better-sqlite3 cannot check it): the reads below need no casts
    const p = <R = unknown>(sql: string) => db.prepare<unknown[], R>(sql);
    this.pageBytes = db.pragma('page_size', { simple: true }) as number;
    this.q = {
      pageCount: p<number>('PRAGMA page_count').pluck(),
      freePages: p<number>('PRAGMA freelist_count').pluck(),
      byKey: p<MetaRow>(`SELECT ${META_COLUMNS} FROM cache_entries e WHERE e.message_key = ?`).raw(),
      deleteSeq: p('DELETE FROM cache_entries WHERE seq = ?'),
      chunkAt: p<{ seq: number; message_id: string; expires_at_ms: number }>(`SELECT e.seq, e.message_id, e.expires_at_ms FROM cache_entries e
        WHERE e.recipient = ? AND e.group_id = ? AND e.sequence_number = ?`),
      set: p<SetRow>('SELECT total_chunks, first_at_ms, first_seq, retry_until_ms, complete FROM cache_chunk_sets WHERE recipient = ? AND group_id = ?'),
      setCount: p<{ n: number }>('SELECT COUNT(*) AS n FROM cache_entries WHERE recipient = ? AND group_id = ? AND expires_at_ms > ?'),
      heldBytes: p<{ b: number }>('SELECT bytes AS b FROM cache_recipient_bytes WHERE recipient = ?'),
      deleteExpiredOf: p('DELETE FROM cache_entries WHERE recipient = ? AND expires_at_ms <= ?'),
      setMinExpiry: p<{ m: number }>('SELECT MIN(expires_at_ms) AS m FROM cache_entries WHERE recipient = ? AND group_id = ?'),
      insertSet: p(`INSERT INTO cache_chunk_sets (recipient, group_id, total_chunks, first_at_ms, first_seq, retry_until_ms, complete)
        VALUES (?, ?, ?, ?, ?, ?, 0)`),
      updateSet: p('UPDATE cache_chunk_sets SET retry_until_ms = ?, complete = ? WHERE recipient = ? AND group_id = ?'),
      deleteSet: p('DELETE FROM cache_chunk_sets WHERE recipient = ? AND group_id = ?'),
      deleteSetEntries: p('DELETE FROM cache_entries WHERE recipient = ? AND group_id = ?'),
      insert: p(`INSERT INTO cache_entries (message_key, message_id, recipient, content_hash, stored_at_ms, expires_at_ms,
        max_ttl_s, applied_ttl_s, tag, application_id, group_id, sequence_number, total_chunks, sort_key, size_bytes,
        provenance, envelope) VALUES (@message_key, @message_id, @recipient, @content_hash, @stored_at_ms, @expires_at_ms,
        @max_ttl_s, @applied_ttl_s, @tag, @application_id, @group_id, @sequence_number, @total_chunks, @sort_key,
        @size_bytes, @provenance, @envelope)`),
      insertPart: p('INSERT INTO cache_envelope_parts (seq, part, bytes) VALUES (?, ?, ?)'),
      claimNonce: p(`INSERT INTO cache_nonce_keys (key, expires_at_ms) VALUES (@key, @expires)
        ON CONFLICT (key) DO UPDATE SET expires_at_ms = excluded.expires_at_ms WHERE cache_nonce_keys.expires_at_ms <= @now`),
      releaseNonce: p('DELETE FROM cache_nonce_keys WHERE key = @key AND expires_at_ms = @expires'),
      ackTarget: p<number>('SELECT seq FROM cache_entries WHERE message_key = ? AND recipient = ? AND expires_at_ms > ?').pluck(),
      expiredEntries: p(`DELETE FROM cache_entries WHERE seq IN
        (SELECT seq FROM cache_entries WHERE expires_at_ms <= ? LIMIT ${SWEEP_CHUNK})`),
      staleSets: p<{ recipient: string; group_id: string }>(`SELECT recipient, group_id FROM cache_chunk_sets WHERE complete = 0 AND retry_until_ms <= ?
        LIMIT ${SWEEP_CHUNK}`),
      emptySets: p(`DELETE FROM cache_chunk_sets WHERE complete = 1 AND NOT EXISTS (SELECT 1 FROM cache_entries e
        WHERE e.recipient = cache_chunk_sets.recipient AND e.group_id = cache_chunk_sets.group_id)`),
      expiredNonces: p(`DELETE FROM cache_nonce_keys WHERE key IN
        (SELECT key FROM cache_nonce_keys WHERE expires_at_ms <= ? LIMIT ${SWEEP_CHUNK})`),
    };
  }

  /** Records `claim` (a live one → `proof_nonce_replayed`) and deletes the listed live entries of `did`. */
  ack(did: string, messageIds: readonly string[], nowMs: number, claim: NonceClaim): string[] {
    if (!this.claim(claim, nowMs)) throw replayed();
    const seen = new Set<string>();
    const deleted: string[] = [];
    for (const id of messageIds) {
      const key = id.toLowerCase();
      if (seen.has(key)) continue;
      seen.add(key);
      const seq = this.q.ackTarget.get(key, did, nowMs);
      if (seq === undefined) continue;
      this.q.deleteSeq.run(seq);
      deleted.push(id);
    }
    return deleted;
  }

  /** The mailbox file's pages in use, in bytes: pages freed by deletions are reused first and do not count. */
  usedBytes(): number {
    return ((this.q.pageCount.get() ?? 0) - (this.q.freePages.get() ?? 0)) * this.pageBytes;
  }

  claim(claim: NonceClaim, nowMs: number): boolean {
    return this.q.claimNonce.run({ key: nonceKey(claim), expires: claim.expiresAtMs, now: nowMs }).changes > 0;
  }

  release(claim: NonceClaim): void {
    this.q.releaseNonce.run({ key: nonceKey(claim), expires: claim.expiresAtMs });
  }

  /** Deletes an incomplete set past its `retry_until` (entries included); returns whether it did. */
  private purgeIfStale(recipient: string, groupId: string, set: SetRow | undefined, nowMs: number): boolean {
    if (set === undefined || set.complete === 1 || set.retry_until_ms > nowMs) return false;
    this.q.deleteSetEntries.run(recipient, groupId);
    this.q.deleteSet.run(recipient, groupId);
    return true;
  }

  private setState(recipient: string, groupId: string, nowMs: number): ChunkSetState | null {
    const set = this.q.set.get(recipient, groupId);
    if (set === undefined) return null;
    const received = this.q.setCount.get(recipient, groupId, nowMs)?.n ?? 0;
    return chunkSetState(groupId, set.total_chunks, received, set.complete === 1, set.retry_until_ms);
  }

  /** Stores `req.entry` in the spec's order: nonce, duplicate, chunk rules, quota, budget, then the rows. */
  put(req: PutRequest): PutResult {
    const { entry, nowMs } = req;
    if (req.claim !== null && !this.claim(req.claim, nowMs)) throw replayed();
    const key = entry.messageId.toLowerCase();
    const meta = this.liveEntry(key, nowMs);
    if (checkDuplicate(meta, entry) === 'dedupe' && meta !== null) {
      return {
        deduped: true,
        entry: meta,
        chunkSet: meta.chunk === null ? null : this.setState(meta.recipientDid, meta.chunk.groupId, nowMs),
      };
    }
    const set = entry.chunk === null ? undefined : this.admitChunk(entry.recipientDid, entry.chunk, nowMs);
    this.admitSpace(req);
    const seq = this.insertEntry(key, entry, set?.first_seq ?? null);
    const chunkSet = entry.chunk === null ? null : this.settleChunkSet(req, entry.chunk, set, seq);
    const { envelope, ...stored } = entry;
    void envelope;
    return { deduped: false, entry: stored, chunkSet };
  }

  /** The live entry stored under `key`, if any: an expired one, or one of an incomplete set past its retry, is deleted. */
  private liveEntry(key: string, nowMs: number): EntryMeta | null {
    let existing = this.q.byKey.get(key);
    const existingGroup = existing?.[COL.groupId] ?? null;
    if (existing !== undefined && existingGroup !== null) {
      const recipient = existing[COL.recipient];
      const set = this.q.set.get(recipient, existingGroup);
      if (this.purgeIfStale(recipient, existingGroup, set, nowMs)) existing = undefined;
    }
    if (existing !== undefined && existing[COL.expiresAtMs] <= nowMs) {
      this.q.deleteSeq.run(existing[COL.seq]);
      existing = undefined;
    }
    return existing === undefined ? null : toMeta(existing);
  }

  /** The chunk's set (undefined: the set's first chunk), after the §11.3 checks against the set and the chunk held at its place. */
  private admitChunk(recipient: string, chunk: ChunkRef, nowMs: number): SetRow | undefined {
    let set = this.q.set.get(recipient, chunk.groupId);
    if (this.purgeIfStale(recipient, chunk.groupId, set, nowMs)) set = undefined;
    let held = this.q.chunkAt.get(recipient, chunk.groupId, chunk.sequence);
    if (held !== undefined && held.expires_at_ms <= nowMs) {
      this.q.deleteSeq.run(held.seq);
      held = undefined;
    }
    checkChunk(set === undefined ? null : { total: set.total_chunks }, held?.message_id ?? null, chunk);
    return set;
  }

  /** The recipient's quota and the mailbox's budget. */
  private admitSpace(req: PutRequest): void {
    const { entry, nowMs } = req;
    if (req.quotaBytes !== null) {
      const held = () => this.q.heldBytes.get(entry.recipientDid)?.b ?? 0;
      let used = held();
      // Expired copies count until removed: only when they would make the difference are they removed here (and
      // the bytes read again; otherwise the one read stands).
      if (!withinQuota(used, entry.sizeBytes, req.quotaBytes)) {
        this.q.deleteExpiredOf.run(entry.recipientDid, nowMs);
        used = held();
      }
      checkQuota(used, entry.sizeBytes, req.quotaBytes);
    }
    if (req.budgetBytes != null) checkBudget(this.usedBytes(), entry.sizeBytes, req.budgetBytes);
  }

  /** Inserts the entry's row and its envelope's further parts; returns its seq. */
  private insertEntry(key: string, entry: NewEntry, sortKey: number | null): number {
    const chunk = entry.chunk;
    const bytes = Buffer.from(entry.envelope.buffer, entry.envelope.byteOffset, entry.envelope.byteLength);
    const info = this.q.insert.run({
      message_key: key,
      message_id: entry.messageId,
      recipient: entry.recipientDid,
      content_hash: entry.contentHash,
      stored_at_ms: entry.storedAtMs,
      expires_at_ms: entry.expiresAtMs,
      max_ttl_s: entry.maxTtlSeconds,
      applied_ttl_s: entry.appliedTtlSeconds,
      tag: entry.tag,
      application_id: entry.applicationId,
      group_id: chunk?.groupId ?? null,
      sequence_number: chunk?.sequence ?? null,
      total_chunks: chunk?.total ?? null,
      sort_key: sortKey,
      size_bytes: entry.sizeBytes,
      provenance: entry.provenance === null ? null : JSON.stringify(entry.provenance),
      envelope: bytes.subarray(0, ENVELOPE_PART_BYTES),
    });
    const seq = Number(info.lastInsertRowid);
    for (let at = ENVELOPE_PART_BYTES, part = 1; at < bytes.length; at += ENVELOPE_PART_BYTES, part++) {
      this.q.insertPart.run(seq, part, bytes.subarray(at, at + ENVELOPE_PART_BYTES));
    }
    return seq;
  }

  /** Creates the set at its first chunk (entry `seq`), then its state and retry deadline after this chunk. */
  private settleChunkSet(req: PutRequest, chunk: ChunkRef, found: SetRow | undefined, seq: number): ChunkSetState {
    const { entry, nowMs } = req;
    let set = found;
    if (set === undefined) {
      const retry = chunkRetryUntil(nowMs, req.chunkWindowMs, entry.expiresAtMs);
      this.q.insertSet.run(entry.recipientDid, chunk.groupId, chunk.total, nowMs, seq, retry);
      set = { total_chunks: chunk.total, first_at_ms: nowMs, first_seq: seq, retry_until_ms: retry, complete: 0 };
    }
    // an aggregate always answers one row
    const minExpiry = this.q.setMinExpiry.get(entry.recipientDid, chunk.groupId)!.m;
    const received = this.q.setCount.get(entry.recipientDid, chunk.groupId, nowMs)?.n ?? 0;
    const retry = chunkRetryUntil(set.first_at_ms, req.chunkWindowMs, minExpiry);
    const state = chunkSetState(chunk.groupId, chunk.total, received, set.complete === 1, retry);
    this.q.updateSet.run(retry, state.complete ? 1 : 0, entry.recipientDid, chunk.groupId);
    return state;
  }

  sweepStep(nowMs: number): SweepResult & { more: boolean } {
    let purgedChunks = 0;
    const stale = this.q.staleSets.all(nowMs);
    for (const s of stale) {
      purgedChunks += this.q.deleteSetEntries.run(s.recipient, s.group_id).changes;
      this.q.deleteSet.run(s.recipient, s.group_id);
    }
    const expiredEntries = this.q.expiredEntries.run(nowMs).changes;
    this.q.emptySets.run();
    const expiredNonces = this.q.expiredNonces.run(nowMs).changes;
    const more = stale.length === SWEEP_CHUNK || expiredEntries === SWEEP_CHUNK || expiredNonces === SWEEP_CHUNK;
    return { expiredEntries, purgedChunkSets: stale.length, purgedChunks, expiredNonces, more };
  }
}
