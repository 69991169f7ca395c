/** The Relay's SQLite file (`<data-dir>/relay.sqlite`): staged chunk sets, remembered results, node nonces. */
import type { Migration } from './database.js';
import { carryNonceClaims } from './nonce-key.js';

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
  {
    // Node-request nonces keyed by 16 bytes (`nonce-key.ts`), as the Cache's since its migration 4; the claims held
    // are carried over.
    version: 2,
    sql: `
      CREATE TABLE relay_nonce_keys (key BLOB PRIMARY KEY, expires_at_ms INTEGER NOT NULL) WITHOUT ROWID;
      CREATE INDEX relay_nonce_keys_expiry ON relay_nonce_keys (expires_at_ms);
    `,
    then: (db) => carryNonceClaims(db, 'relay_nonces', 'relay_nonce_keys'),
  },
  {
    // The recipient of a remembered unchunked delivery: the same message_id re-sent to it with other content is a
    // duplicate, not a conflict (null: a chunk of a delivered set, or a result remembered before).
    version: 3,
    sql: 'ALTER TABLE relay_results ADD COLUMN recipient TEXT;',
  },
  {
    // Staging caps per set, recipient and owner, and idle sets dropped under pressure (docs/public-node.md): each
    // set's bytes, whose bytes they count as (`did:<sender DID>`, else `address:<client address>`; sets staged
    // before: their sender's, else none) and when it last grew (sets staged before: their creation).
    version: 4,
    sql: `
      ALTER TABLE relay_chunk_sets ADD COLUMN owner TEXT;
      ALTER TABLE relay_chunk_sets ADD COLUMN staged_bytes INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE relay_chunk_sets ADD COLUMN last_chunk_ms INTEGER NOT NULL DEFAULT 0;
      UPDATE relay_chunk_sets SET owner = CASE WHEN sender IS NULL THEN NULL ELSE 'did:' || sender END, last_chunk_ms = created_at_ms, staged_bytes =
        (SELECT COALESCE(SUM(size_bytes), 0) FROM relay_chunks c WHERE c.recipient = relay_chunk_sets.recipient AND c.group_id = relay_chunk_sets.group_id);
      CREATE INDEX relay_chunk_sets_owner ON relay_chunk_sets (owner) WHERE owner IS NOT NULL;
      CREATE INDEX relay_chunk_sets_last_chunk ON relay_chunk_sets (last_chunk_ms);
    `,
  },
  {
    // Remembered results in the order they were written (a rowid table) with their message key in an index of its
    // own, instead of a table keyed by the random message key holding the whole result text: each new result then
    // lands on the table's last page beside the batch's others and adds only a short entry to the key index, where a
    // B-tree of ~500-byte rows keyed at random split a page every few inserts (the Relay's writer thread, its WAL
    // pages and checkpoints, bench/HISTORY.md session 30). The rows are carried over.
    version: 5,
    sql: `
      CREATE TABLE relay_results_v5 (
        seq INTEGER PRIMARY KEY,
        message_key TEXT NOT NULL UNIQUE,
        content_hash TEXT NOT NULL,
        result TEXT NOT NULL,
        created_at_ms INTEGER NOT NULL,
        recipient TEXT);
      INSERT INTO relay_results_v5 (message_key, content_hash, result, created_at_ms, recipient)
        SELECT message_key, content_hash, result, created_at_ms, recipient FROM relay_results ORDER BY created_at_ms;
      DROP TABLE relay_results;
      ALTER TABLE relay_results_v5 RENAME TO relay_results;
      CREATE INDEX relay_results_created ON relay_results (created_at_ms);
    `,
  },
];
