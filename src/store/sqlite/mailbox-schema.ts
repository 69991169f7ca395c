/**
 * The Cache mailbox's SQLite schema (`<data-dir>/cache.sqlite`) and its row shapes, shared by the store's reads
 * (main thread) and its writes (the writer thread, `mailbox-writes.ts`).
 */
import type { ChunkRef, EntryMeta, RetrievedMeta, StoredProvenance, SummaryEntry } from '../../cache/mailbox-store.js';
import { carryNonceClaims } from './nonce-key.js';
import type { Migration } from './database.js';

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
  {
    // Envelope bytes held per recipient, kept by triggers on every insert and delete (store, replace, ack,
    // sweep), so the storage quota is one indexed read.
    version: 3,
    sql: `
      CREATE TABLE cache_recipient_bytes (recipient TEXT PRIMARY KEY, bytes INTEGER NOT NULL) WITHOUT ROWID;
      INSERT INTO cache_recipient_bytes (recipient, bytes) SELECT recipient, SUM(size_bytes) FROM cache_entries GROUP BY recipient;
      CREATE TRIGGER cache_entries_bytes_insert AFTER INSERT ON cache_entries
      BEGIN
        INSERT INTO cache_recipient_bytes (recipient, bytes) VALUES (new.recipient, new.size_bytes)
        ON CONFLICT (recipient) DO UPDATE SET bytes = bytes + excluded.bytes;
      END;
      CREATE TRIGGER cache_entries_bytes_delete AFTER DELETE ON cache_entries
      BEGIN
        UPDATE cache_recipient_bytes SET bytes = bytes - old.size_bytes WHERE recipient = old.recipient;
      END;
    `,
  },
  {
    // Proof and node nonces keyed by 16 bytes (nonceKey) instead of their four texts, ~130 bytes a row: a claim
    // lands on a random page of the table either way, and with rows that long the pages of a few minutes of
    // nonces outgrew the page cache, so every commit of a batch of claims read and rewrote pages (and
    // checkpointed) several times over. Measured: 16 claims a commit into 300,000 held took 1.9 ms (fsync
    // included), 0.55 ms so. The claims held are carried over.
    version: 4,
    sql: `
      CREATE TABLE cache_nonce_keys (key BLOB PRIMARY KEY, expires_at_ms INTEGER NOT NULL) WITHOUT ROWID;
      CREATE INDEX cache_nonce_keys_expiry ON cache_nonce_keys (expires_at_ms);
    `,
    then: (db) => carryNonceClaims(db, 'cache_nonces', 'cache_nonce_keys'),
  },
  {
    // A version per recipient that every change of its entries or chunk sets moves, in the changing transaction
    // (triggers, so every process's writes count): the read cache (cache/read-cache.ts) serves a kept answer only
    // while the version is the one read before it. Rows of cache_recipient_bytes are never deleted, so a
    // version never goes back.
    version: 5,
    sql: `
      ALTER TABLE cache_recipient_bytes ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
      DROP TRIGGER cache_entries_bytes_insert;
      DROP TRIGGER cache_entries_bytes_delete;
      CREATE TRIGGER cache_entries_bytes_insert AFTER INSERT ON cache_entries
      BEGIN
        INSERT INTO cache_recipient_bytes (recipient, bytes) VALUES (new.recipient, new.size_bytes)
        ON CONFLICT (recipient) DO UPDATE SET bytes = bytes + excluded.bytes, version = version + 1;
      END;
      CREATE TRIGGER cache_entries_bytes_delete AFTER DELETE ON cache_entries
      BEGIN
        UPDATE cache_recipient_bytes SET bytes = bytes - old.size_bytes, version = version + 1 WHERE recipient = old.recipient;
      END;
      CREATE TRIGGER cache_chunk_sets_version_insert AFTER INSERT ON cache_chunk_sets
      BEGIN
        UPDATE cache_recipient_bytes SET version = version + 1 WHERE recipient = new.recipient;
      END;
      CREATE TRIGGER cache_chunk_sets_version_update AFTER UPDATE ON cache_chunk_sets
      BEGIN
        UPDATE cache_recipient_bytes SET version = version + 1 WHERE recipient = new.recipient;
      END;
      CREATE TRIGGER cache_chunk_sets_version_delete AFTER DELETE ON cache_chunk_sets
      BEGIN
        UPDATE cache_recipient_bytes SET version = version + 1 WHERE recipient = old.recipient;
      END;
    `,
  },
  {
    // Entries and envelope bytes held by the whole mailbox, kept by triggers in one row, so the metrics read them
    // at scrape time on the main thread without a scan (a COUNT(*) walks the whole table; a sum over
    // cache_recipient_bytes, every recipient ever seen).
    version: 6,
    sql: `
      CREATE TABLE cache_totals (id INTEGER PRIMARY KEY CHECK (id = 1), entries INTEGER NOT NULL, bytes INTEGER NOT NULL);
      INSERT INTO cache_totals (id, entries, bytes) SELECT 1, COUNT(*), COALESCE(SUM(size_bytes), 0) FROM cache_entries;
      CREATE TRIGGER cache_entries_totals_insert AFTER INSERT ON cache_entries
      BEGIN
        UPDATE cache_totals SET entries = entries + 1, bytes = bytes + new.size_bytes WHERE id = 1;
      END;
      CREATE TRIGGER cache_entries_totals_delete AFTER DELETE ON cache_entries
      BEGIN
        UPDATE cache_totals SET entries = entries - 1, bytes = bytes - old.size_bytes WHERE id = 1;
      END;
    `,
  },
];

/** Rows deleted per sweep statement, so a large purge never holds the writer for long. */
export const SWEEP_CHUNK = 2_000;

/** The metadata columns of an entry, read as a {@link MetaRow} (statements using them run in `.raw()` mode). */
export const META_COLUMNS = `e.seq, e.message_id, e.recipient, e.content_hash, e.stored_at_ms, e.expires_at_ms, e.max_ttl_s,
  e.applied_ttl_s, e.tag, e.application_id, e.group_id, e.sequence_number, e.total_chunks, e.size_bytes, e.provenance`;

/**
 * The columns a summary item shows (§11.5), read as a {@link SummaryRow}: a summary reads no more, since building
 * each value of a row is most of the read (the recipient and content hash alone were a quarter of it).
 */
export const SUMMARY_COLUMNS = `e.message_id, e.stored_at_ms, e.expires_at_ms, e.tag, e.application_id, e.group_id,
  e.sequence_number, e.total_chunks, e.size_bytes`;

/** Visible = unexpired and (unchunked or in a complete set), §11.5. */
export const VISIBLE = `e.expires_at_ms > @now AND (e.group_id IS NULL OR EXISTS (SELECT 1 FROM cache_chunk_sets s
  WHERE s.recipient = e.recipient AND s.group_id = e.group_id AND s.complete = 1))`;

/** The run of columns a {@link MetaRow} and a {@link SummaryRow} share, in this order. */
type ItemColumns = [
  tag: string | null,
  application_id: string | null,
  group_id: string | null,
  sequence_number: number | null,
  total_chunks: number | null,
  size_bytes: number,
];

/** Store order of a recipient's entries: a chunk set together (at its first chunk), by sequence within it. */
export const STORE_ORDER = 'ORDER BY COALESCE(e.sort_key, e.seq), e.sequence_number, e.seq';

/**
 * A {@link META_COLUMNS} row as read with better-sqlite3's `.raw()`: the columns in that order, as an array. Keyed
 * row objects cost a property-name lookup per column and row, which made up most of a summary's read.
 */
export type MetaRow = readonly [
  seq: number,
  message_id: string,
  recipient: string,
  content_hash: string,
  stored_at_ms: number,
  expires_at_ms: number,
  max_ttl_s: number,
  applied_ttl_s: number,
  ...ItemColumns,
  provenance: string | null,
];

/** A {@link SUMMARY_COLUMNS} row, read with `.raw()`. */
export type SummaryRow = readonly [message_id: string, stored_at_ms: number, expires_at_ms: number, ...ItemColumns];

/**
 * An envelope read with its metadata: as text when it is stored whole (a string costs far less to make than a
 * buffer: a pull of ten 1 KiB envelopes read 25 µs as buffers, 11 µs as text), nothing for a large one, whose
 * parts are read as bytes on their own (a part may end inside a character).
 */
export const ENVELOPE_TEXT = `CASE WHEN e.size_bytes <= ${ENVELOPE_PART_BYTES} THEN CAST(e.envelope AS TEXT) END`;

/** A {@link MetaRow} followed by {@link ENVELOPE_TEXT}. */
export type MetaEnvelopeRow = readonly [...MetaRow, envelopeText: string | null];

/**
 * The columns of a retrieved item (§11.5) and its envelope, read as a {@link RetrievedRow}: a page of ten entries
 * read in 17 µs so, against 27 µs with all of {@link META_COLUMNS}.
 */
export const RETRIEVED_COLUMNS = `e.seq, e.message_id, e.recipient, e.expires_at_ms, e.group_id, e.sequence_number, e.total_chunks,
  e.size_bytes, ${ENVELOPE_TEXT}`;

/** A {@link RETRIEVED_COLUMNS} row, read with `.raw()`. */
export type RetrievedRow = readonly [
  seq: number,
  message_id: string,
  recipient: string,
  expires_at_ms: number,
  group_id: string | null,
  sequence_number: number | null,
  total_chunks: number | null,
  size_bytes: number,
  envelopeText: string | null,
];

/** Positions in a {@link RetrievedRow} read by name. */
export const RETRIEVED_COL = { seq: 0, sizeBytes: 7, envelope: 8 } as const;

/** Positions in a {@link MetaRow} read by name. */
export const COL = { seq: 0, recipient: 2, expiresAtMs: 5, groupId: 10, sizeBytes: 13, envelope: 15 } as const;

export interface SetRow {
  total_chunks: number;
  first_at_ms: number;
  first_seq: number;
  retry_until_ms: number;
  complete: number;
}

/** An entry's chunk position from its three columns (none without a group). */
function chunkOf(groupId: string | null, sequence: number | null, total: number | null): ChunkRef | null {
  return groupId === null ? null : { groupId, sequence: sequence ?? 0, total: total ?? 1 };
}

/** An entry's metadata from its {@link MetaRow} (or one with its envelope after it). */
export function toMeta(r: MetaRow | MetaEnvelopeRow): EntryMeta {
  const provenance = r[14];
  return {
    messageId: r[1],
    recipientDid: r[2],
    contentHash: r[3],
    storedAtMs: r[4],
    expiresAtMs: r[5],
    maxTtlSeconds: r[6],
    appliedTtlSeconds: r[7],
    tag: r[8],
    applicationId: r[9],
    chunk: chunkOf(r[10], r[11], r[12]),
    sizeBytes: r[13],
    provenance: provenance === null ? null : (JSON.parse(provenance) as StoredProvenance),
  };
}

/** A retrieved item's metadata from its {@link RetrievedRow}. */
export function toRetrieved(r: RetrievedRow): RetrievedMeta {
  return { messageId: r[1], recipientDid: r[2], expiresAtMs: r[3], chunk: chunkOf(r[4], r[5], r[6]) };
}

/** A summary item's entry from its {@link SummaryRow}. */
export function toSummary(r: SummaryRow): SummaryEntry {
  return {
    messageId: r[0],
    storedAtMs: r[1],
    expiresAtMs: r[2],
    tag: r[3],
    applicationId: r[4],
    chunk: chunkOf(r[5], r[6], r[7]),
    sizeBytes: r[8],
  };
}

export const asBytes = (b: Buffer): Uint8Array => new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
