/**
 * The Cache's mailbox in its own SQLite file (`<data-dir>/cache.sqlite`, WAL, `synchronous = FULL`): envelopes
 * as received (BLOB, last column so metadata reads never touch it), chunk sets, and proof/node nonces. Every
 * write goes through one {@link GroupCommitWriter}, so concurrent stores share a transaction and an fsync.
 */
import { sweepInBatches } from '../../base/periodic-sweeper.js';
import { DdnError } from '../../base/errors.js';
import { checkChunk, checkDuplicate, chunkRetryUntil, chunkSetState } from '../../cache/admission.js';
import type {
  ChunkSetState,
  ChunkSetView,
  EntryMeta,
  EntryWithEnvelope,
  MailboxStore,
  MessagePage,
  PutRequest,
  PutResult,
  StoredProvenance,
  SweepResult,
} from '../../cache/mailbox-store.js';
import type { NonceClaim } from '../../ports/nonce-registry.js';
import { openSqlite, type Migration, type SqliteDb } from './database.js';
import { GroupCommitWriter, type GroupCommitOptions } from './group-commit.js';

/** Bytes of each stored part of a large envelope. */
export const ENVELOPE_PART_BYTES = 1024 * 1024;

export const MAILBOX_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    sql: `
      CREATE TABLE cache_entries (
        seq INTEGER PRIMARY KEY,
        message_key TEXT NOT NULL UNIQUE,
        message_id TEXT NOT NULL,
        recipient TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        stored_at_ms INTEGER NOT NULL,
        expires_at_ms INTEGER NOT NULL,
        max_ttl_s INTEGER NOT NULL,
        applied_ttl_s INTEGER NOT NULL,
        tag TEXT,
        application_id TEXT,
        group_id TEXT,
        sequence_number INTEGER,
        total_chunks INTEGER,
        sort_key INTEGER,
        size_bytes INTEGER NOT NULL,
        provenance TEXT,
        envelope BLOB NOT NULL);
      CREATE INDEX cache_entries_recipient ON cache_entries (recipient);
      CREATE INDEX cache_entries_expiry ON cache_entries (expires_at_ms);
      CREATE UNIQUE INDEX cache_entries_chunk ON cache_entries (recipient, group_id, sequence_number)
        WHERE group_id IS NOT NULL;
      CREATE TABLE cache_chunk_sets (
        recipient TEXT NOT NULL,
        group_id TEXT NOT NULL,
        total_chunks INTEGER NOT NULL,
        first_at_ms INTEGER NOT NULL,
        first_seq INTEGER NOT NULL,
        retry_until_ms INTEGER NOT NULL,
        complete INTEGER NOT NULL,
        PRIMARY KEY (recipient, group_id)) WITHOUT ROWID;
      CREATE INDEX cache_chunk_sets_retry ON cache_chunk_sets (complete, retry_until_ms);
      CREATE TABLE cache_nonces (
        scope TEXT NOT NULL,
        did TEXT NOT NULL,
        key_id TEXT NOT NULL,
        nonce TEXT NOT NULL,
        expires_at_ms INTEGER NOT NULL,
        PRIMARY KEY (scope, did, key_id, nonce)) WITHOUT ROWID;
      CREATE INDEX cache_nonces_expiry ON cache_nonces (expires_at_ms);
    `,
  },
  {
    // Envelopes above ENVELOPE_PART_BYTES keep their first part in cache_entries.envelope and the rest here, so
    // no statement binds or reads one whole large envelope at once (each would copy it twice in memory).
    version: 2,
    sql: `
      CREATE TABLE cache_envelope_parts (
        seq INTEGER NOT NULL,
        part INTEGER NOT NULL,
        bytes BLOB NOT NULL,
        PRIMARY KEY (seq, part));
      CREATE TRIGGER cache_entries_parts_delete AFTER DELETE ON cache_entries WHEN old.size_bytes > ${ENVELOPE_PART_BYTES}
      BEGIN DELETE FROM cache_envelope_parts WHERE seq = old.seq; END;
    `,
  },
];


/** Rows deleted per sweep statement, so a large purge never holds the writer for long. */
const SWEEP_CHUNK = 2_000;

const META_COLUMNS = `e.seq, e.message_id, e.recipient, e.content_hash, e.stored_at_ms, e.expires_at_ms, e.max_ttl_s,
  e.applied_ttl_s, e.tag, e.application_id, e.group_id, e.sequence_number, e.total_chunks, e.size_bytes, e.provenance`;

/** Visible = unexpired and (unchunked or in a complete set), §11.5. */
const VISIBLE = `e.expires_at_ms > @now AND (e.group_id IS NULL OR EXISTS (SELECT 1 FROM cache_chunk_sets s
  WHERE s.recipient = e.recipient AND s.group_id = e.group_id AND s.complete = 1))`;

interface MetaRow {
  seq: number;
  message_id: string;
  recipient: string;
  content_hash: string;
  stored_at_ms: number;
  expires_at_ms: number;
  max_ttl_s: number;
  applied_ttl_s: number;
  tag: string | null;
  application_id: string | null;
  group_id: string | null;
  sequence_number: number | null;
  total_chunks: number | null;
  size_bytes: number;
  provenance: string | null;
}

interface SetRow {
  total_chunks: number;
  first_at_ms: number;
  first_seq: number;
  retry_until_ms: number;
  complete: number;
}

function toMeta(r: MetaRow): EntryMeta {
  return {
    messageId: r.message_id,
    recipientDid: r.recipient,
    contentHash: r.content_hash,
    storedAtMs: r.stored_at_ms,
    expiresAtMs: r.expires_at_ms,
    maxTtlSeconds: r.max_ttl_s,
    appliedTtlSeconds: r.applied_ttl_s,
    tag: r.tag,
    applicationId: r.application_id,
    chunk:
      r.group_id === null
        ? null
        : { groupId: r.group_id, sequence: r.sequence_number ?? 0, total: r.total_chunks ?? 1 },
    sizeBytes: r.size_bytes,
    provenance: r.provenance === null ? null : (JSON.parse(r.provenance) as StoredProvenance),
  };
}

const asBytes = (b: Buffer): Uint8Array => new Uint8Array(b.buffer, b.byteOffset, b.byteLength);

/** Options of {@link SqliteMailboxStore.open}. */
export interface SqliteMailboxOptions {
  writer?: GroupCommitOptions;
}

/** {@link MailboxStore} on SQLite with group commit. */
export class SqliteMailboxStore implements MailboxStore {
  private readonly writer: GroupCommitWriter;
  private readonly q;

  /** Opens (creating and migrating) `path` with WAL and `synchronous = FULL`. */
  static open(path: string, options: SqliteMailboxOptions = {}): SqliteMailboxStore {
    const db = openSqlite(path, MAILBOX_MIGRATIONS, 'cache', { synchronous: 'FULL' });
    return new SqliteMailboxStore(db, options, true);
  }

  constructor(
    private readonly db: SqliteDb,
    options: SqliteMailboxOptions = {},
    private readonly ownsDb = false,
  ) {
    this.writer = new GroupCommitWriter(db, options.writer);
    const p = (sql: string) => db.prepare(sql);
    this.q = {
      byKey: p(`SELECT ${META_COLUMNS} FROM cache_entries e WHERE e.message_key = ?`),
      deleteSeq: p('DELETE FROM cache_entries WHERE seq = ?'),
      chunkAt: p(`SELECT e.seq, e.message_id, e.expires_at_ms FROM cache_entries e
        WHERE e.recipient = ? AND e.group_id = ? AND e.sequence_number = ?`),
      set: p('SELECT total_chunks, first_at_ms, first_seq, retry_until_ms, complete FROM cache_chunk_sets WHERE recipient = ? AND group_id = ?'),
      setCount: p('SELECT COUNT(*) AS n FROM cache_entries WHERE recipient = ? AND group_id = ? AND expires_at_ms > ?'),
      setMinExpiry: p('SELECT MIN(expires_at_ms) AS m FROM cache_entries WHERE recipient = ? AND group_id = ?'),
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
      nonceLive: p('SELECT 1 FROM cache_nonces WHERE scope = ? AND did = ? AND key_id = ? AND nonce = ? AND expires_at_ms > ?'),
      claimNonce: p(`INSERT INTO cache_nonces (scope, did, key_id, nonce, expires_at_ms) VALUES (@scope, @did, @key_id, @nonce, @expires)
        ON CONFLICT (scope, did, key_id, nonce) DO UPDATE SET expires_at_ms = excluded.expires_at_ms
        WHERE cache_nonces.expires_at_ms <= @now`),
      visibleMeta: p(`SELECT ${META_COLUMNS} FROM cache_entries e WHERE e.recipient = @did AND ${VISIBLE}
        ORDER BY COALESCE(e.sort_key, e.seq), e.sequence_number, e.seq`),
      envelopeOf: p('SELECT envelope FROM cache_entries WHERE seq = ?').pluck(),
      partsOf: p('SELECT bytes FROM cache_envelope_parts WHERE seq = ? ORDER BY part').pluck(),
      insertPart: p('INSERT INTO cache_envelope_parts (seq, part, bytes) VALUES (?, ?, ?)'),
      visibleByKey: p(`SELECT ${META_COLUMNS}, e.envelope FROM cache_entries e
        WHERE e.message_key = @key AND e.recipient = @did AND ${VISIBLE}`),
      setEntries: p(`SELECT ${META_COLUMNS}, e.envelope FROM cache_entries e
        WHERE e.recipient = ? AND e.group_id = ? AND e.expires_at_ms > ? ORDER BY e.sequence_number`),
      ackTarget: p('SELECT seq FROM cache_entries WHERE message_key = ? AND recipient = ? AND expires_at_ms > ?').pluck(),
      expiredEntries: p(`DELETE FROM cache_entries WHERE seq IN
        (SELECT seq FROM cache_entries WHERE expires_at_ms <= ? LIMIT ${SWEEP_CHUNK})`),
      staleSets: p(`SELECT recipient, group_id FROM cache_chunk_sets WHERE complete = 0 AND retry_until_ms <= ?
        LIMIT ${SWEEP_CHUNK}`),
      emptySets: p(`DELETE FROM cache_chunk_sets WHERE complete = 1 AND NOT EXISTS (SELECT 1 FROM cache_entries e
        WHERE e.recipient = cache_chunk_sets.recipient AND e.group_id = cache_chunk_sets.group_id)`),
      expiredNonces: p(`DELETE FROM cache_nonces WHERE (scope, did, key_id, nonce) IN
        (SELECT scope, did, key_id, nonce FROM cache_nonces WHERE expires_at_ms <= ? LIMIT ${SWEEP_CHUNK})`),
    };
  }

  /** Committed write transactions and the operations they carried. */
  get writeStats(): { readonly commits: number; readonly operations: number } {
    return this.writer.stats;
  }

  // ------------------------------------------------------------------ writes

  put(req: PutRequest): Promise<PutResult> {
    return this.writer.submit(() => this.putNow(req), req.entry.envelope.byteLength);
  }

  claimNonce(claim: NonceClaim, nowMs: number): Promise<boolean> {
    return this.writer.submit(() => this.claimNow(claim, nowMs));
  }

  ack(did: string, messageIds: readonly string[], nowMs: number, claim: NonceClaim): Promise<string[]> {
    return this.writer.submit(() => {
      if (!this.claimNow(claim, nowMs)) throw replayed();
      const seen = new Set<string>();
      const deleted: string[] = [];
      for (const id of messageIds) {
        const key = id.toLowerCase();
        if (seen.has(key)) continue;
        seen.add(key);
        const seq = this.q.ackTarget.get(key, did, nowMs) as number | undefined;
        if (seq === undefined) continue;
        this.q.deleteSeq.run(seq);
        deleted.push(id);
      }
      return deleted;
    });
  }

  sweep(nowMs: number): Promise<SweepResult> {
    return sweepInBatches(() => this.writer.submit(() => this.sweepStep(nowMs)), { expiredEntries: 0, purgedChunkSets: 0, purgedChunks: 0, expiredNonces: 0 });
  }

  settle(): Promise<void> {
    return this.writer.settle();
  }

  async close(): Promise<void> {
    await this.writer.close();
    if (this.ownsDb && this.db.open) this.db.close();
  }

  // ------------------------------------------------------------------ reads

  isNonceClaimed(claim: NonceClaim, nowMs: number): boolean {
    return this.q.nonceLive.get(claim.scope, claim.did, claim.keyId, claim.nonce, nowMs) !== undefined;
  }

  async listMessages(did: string, nowMs: number, maxEnvelopeBytes: number): Promise<MessagePage> {
    const rows = this.q.visibleMeta.all({ did, now: nowMs }) as MetaRow[];
    const entries: EntryWithEnvelope[] = [];
    let bytes = 0;
    for (const r of rows) {
      if (entries.length > 0 && bytes + r.size_bytes > maxEnvelopeBytes) return { entries, truncated: true };
      bytes += r.size_bytes;
      entries.push({ meta: toMeta(r), envelope: this.envelopeBytes(r, this.q.envelopeOf.get(r.seq) as Buffer) });
    }
    return { entries, truncated: false };
  }

  async listSummary(did: string, nowMs: number): Promise<EntryMeta[]> {
    return (this.q.visibleMeta.all({ did, now: nowMs }) as MetaRow[]).map(toMeta);
  }

  async getChunkSet(did: string, groupId: string, nowMs: number): Promise<ChunkSetView | null> {
    const key = groupId.toLowerCase();
    const set = this.q.set.get(did, key) as SetRow | undefined;
    if (set === undefined || set.complete !== 1) return null;
    const rows = this.q.setEntries.all(did, key, nowMs) as (MetaRow & { envelope: Buffer })[];
    if (rows.length === 0) return null;
    return { total: set.total_chunks, entries: rows.map((r) => ({ meta: toMeta(r), envelope: this.envelopeBytes(r, r.envelope) })) };
  }

  async getMessage(did: string, messageId: string, nowMs: number): Promise<EntryWithEnvelope | null> {
    const r = this.q.visibleByKey.get({ key: messageId.toLowerCase(), did, now: nowMs }) as
      | (MetaRow & { envelope: Buffer })
      | undefined;
    return r === undefined ? null : { meta: toMeta(r), envelope: this.envelopeBytes(r, r.envelope) };
  }

  /** The whole envelope of a row: its first part, plus the stored parts of a large one. */
  private envelopeBytes(r: MetaRow, first: Buffer): Uint8Array {
    if (r.size_bytes <= first.length) return asBytes(first);
    const out = Buffer.allocUnsafe(r.size_bytes);
    let at = first.copy(out, 0);
    for (const part of this.q.partsOf.all(r.seq) as Buffer[]) at += part.copy(out, at);
    if (at !== r.size_bytes) throw new Error(`stored envelope ${r.seq} is ${at} bytes, expected ${r.size_bytes}`);
    return asBytes(out);
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

  /** Deletes an incomplete set past its `retry_until` (entries included); returns whether it did. */
  private purgeIfStale(recipient: string, groupId: string, set: SetRow | undefined, nowMs: number): boolean {
    if (set === undefined || set.complete === 1 || set.retry_until_ms > nowMs) return false;
    this.q.deleteSetEntries.run(recipient, groupId);
    this.q.deleteSet.run(recipient, groupId);
    return true;
  }

  private setState(recipient: string, groupId: string, nowMs: number): ChunkSetState | null {
    const set = this.q.set.get(recipient, groupId) as SetRow | undefined;
    if (set === undefined) return null;
    const received = (this.q.setCount.get(recipient, groupId, nowMs) as { n: number }).n;
    return chunkSetState(groupId, set.total_chunks, received, set.complete === 1, set.retry_until_ms);
  }

  private putNow(req: PutRequest): PutResult {
    const { entry, nowMs } = req;
    if (req.claim !== null && !this.claimNow(req.claim, nowMs)) throw replayed();
    const key = entry.messageId.toLowerCase();
    const chunk = entry.chunk;

    let existing = this.q.byKey.get(key) as MetaRow | undefined;
    if (existing !== undefined && existing.group_id !== null) {
      const set = this.q.set.get(existing.recipient, existing.group_id) as SetRow | undefined;
      if (this.purgeIfStale(existing.recipient, existing.group_id, set, nowMs)) existing = undefined;
    }
    if (existing !== undefined && existing.expires_at_ms <= nowMs) {
      this.q.deleteSeq.run(existing.seq);
      existing = undefined;
    }
    const meta = existing === undefined ? null : toMeta(existing);
    if (checkDuplicate(meta, entry.contentHash) === 'dedupe' && meta !== null) {
      return {
        deduped: true,
        entry: meta,
        chunkSet: meta.chunk === null ? null : this.setState(meta.recipientDid, meta.chunk.groupId, nowMs),
      };
    }

    let sortKey: number | null = null;
    let set: SetRow | undefined;
    if (chunk !== null) {
      set = this.q.set.get(entry.recipientDid, chunk.groupId) as SetRow | undefined;
      if (this.purgeIfStale(entry.recipientDid, chunk.groupId, set, nowMs)) set = undefined;
      let held = this.q.chunkAt.get(entry.recipientDid, chunk.groupId, chunk.sequence) as
        | { seq: number; message_id: string; expires_at_ms: number }
        | undefined;
      if (held !== undefined && held.expires_at_ms <= nowMs) {
        this.q.deleteSeq.run(held.seq);
        held = undefined;
      }
      checkChunk(set === undefined ? null : { total: set.total_chunks }, held?.message_id ?? null, chunk);
      if (set !== undefined) sortKey = set.first_seq;
    }

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

    let chunkSet: ChunkSetState | null = null;
    if (chunk !== null) {
      if (set === undefined) {
        const retry = chunkRetryUntil(nowMs, req.chunkWindowMs, entry.expiresAtMs);
        this.q.insertSet.run(entry.recipientDid, chunk.groupId, chunk.total, nowMs, seq, retry);
        set = { total_chunks: chunk.total, first_at_ms: nowMs, first_seq: seq, retry_until_ms: retry, complete: 0 };
      }
      const minExpiry = (this.q.setMinExpiry.get(entry.recipientDid, chunk.groupId) as { m: number }).m;
      const received = (this.q.setCount.get(entry.recipientDid, chunk.groupId, nowMs) as { n: number }).n;
      const retry = chunkRetryUntil(set.first_at_ms, req.chunkWindowMs, minExpiry);
      chunkSet = chunkSetState(chunk.groupId, chunk.total, received, set.complete === 1, retry);
      this.q.updateSet.run(retry, chunkSet.complete ? 1 : 0, entry.recipientDid, chunk.groupId);
    }
    const { envelope, ...stored } = entry;
    void envelope;
    return { deduped: false, entry: stored, chunkSet };
  }

  private sweepStep(nowMs: number): SweepResult & { more: boolean } {
    let purgedChunks = 0;
    const stale = this.q.staleSets.all(nowMs) as { recipient: string; group_id: string }[];
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

function replayed(): DdnError {
  return new DdnError('proof_nonce_replayed', 'this nonce was already used');
}
