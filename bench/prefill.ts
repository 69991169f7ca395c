/**
 * Pre-fills a Cache database with `count` stored envelopes before the service starts: direct SQLite inserts in
 * the mailbox's own schema (created by its own migrations), large transactions, one fsync at the end — the
 * figure is the service's throughput on a big store, not how fast we fill it. Entries are unexpired 1 KiB
 * envelopes spread over `recipients` synthetic DIDs (none of them a bench recipient).
 */
import { createHash, randomUUID } from 'node:crypto';
import { closeSync, fsyncSync, openSync, rmSync } from 'node:fs';
import { openSqlite } from '../src/store/sqlite/database.js';
import { MAILBOX_MIGRATIONS } from '../src/store/sqlite/mailbox-store.js';
import { generateDid } from '../src/protocol/did.js';
import { makeProfile } from '../src/protocol/profile.js';
import { envelopeTemplate } from './envelopes.js';

/** Deletes a SQLite database and its WAL files. */
export function removeDatabase(path: string): void {
  for (const f of [path, `${path}-wal`, `${path}-shm`]) rmSync(f, { force: true });
}

export interface PrefillResult {
  rows: number;
  recipients: number;
  envelope_bytes: number;
  seconds: number;
}

export function prefillMailbox(path: string, count: number, profileName: string, recipients = 10_000, envelopeBytes = 1024): PrefillResult {
  const t0 = performance.now();
  const db = openSqlite(path, MAILBOX_MIGRATIONS, 'cache', { synchronous: 'NORMAL' });
  db.pragma('synchronous = OFF');
  const profile = makeProfile(profileName);
  const dids = Array.from({ length: recipients }, () => generateDid(profile));
  const templates = dids.map((d) => envelopeTemplate(d, envelopeBytes));
  const insert = db.prepare(`INSERT INTO cache_entries (message_key, message_id, recipient, content_hash, stored_at_ms,
    expires_at_ms, max_ttl_s, applied_ttl_s, tag, application_id, group_id, sequence_number, total_chunks, sort_key,
    size_bytes, provenance, envelope) VALUES (?, ?, ?, ?, ?, ?, 86400, 86400, 'bench', NULL, NULL, NULL, NULL, NULL, ?, NULL, ?)`);
  const now = Date.now();
  const expires = now + 86_400_000;
  const hash = createHash('sha256').update('bench').digest('hex');
  const batch = db.transaction((from: number, to: number) => {
    for (let i = from; i < to; i++) {
      const k = i % recipients;
      const t = templates[k];
      const id = randomUUID();
      t.buf.write(id, t.idOffset, 'latin1');
      insert.run(id, id, dids[k], hash, now, expires, envelopeBytes, t.buf);
    }
  });
  const BATCH = 20_000;
  for (let i = 0; i < count; i += BATCH) {
    batch(i, Math.min(count, i + BATCH));
    db.pragma('wal_checkpoint(PASSIVE)');
  }
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  // on disk before the service starts: otherwise the kernel writes the pre-fill back during the measurement,
  // and on ext4 each of the service's WAL fsyncs can wait for that other file's pending data
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  return { rows: count, recipients, envelope_bytes: envelopeBytes, seconds: Math.round((performance.now() - t0) / 100) / 10 };
}
