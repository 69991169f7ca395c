/** The PostgreSQL mailbox's entry rows: the columns read, their JavaScript shape, and the values an insert writes. */
import type { EntryMeta, NewEntry, StoredProvenance } from '../../cache/mailbox-store.js';

export const META_COLUMNS = `e.seq, e.message_id, e.recipient, e.content_hash, e.stored_at_ms, e.expires_at_ms, e.max_ttl_s,
  e.applied_ttl_s, e.tag, e.application_id, e.group_id, e.sequence_number, e.total_chunks, e.size_bytes, e.provenance`;

/** BIGINT columns arrive as strings (pg does not narrow them); every value here fits a JS number. */
export type Num = string | number;

export interface MetaRow {
  seq: Num;
  message_id: string;
  recipient: string;
  content_hash: string;
  stored_at_ms: Num;
  expires_at_ms: Num;
  max_ttl_s: Num;
  applied_ttl_s: Num;
  tag: string | null;
  application_id: string | null;
  group_id: string | null;
  sequence_number: number | null;
  total_chunks: number | null;
  size_bytes: Num;
  provenance: string | null;
}

export function toMeta(r: MetaRow): EntryMeta {
  return {
    messageId: r.message_id,
    recipientDid: r.recipient,
    contentHash: r.content_hash,
    storedAtMs: Number(r.stored_at_ms),
    expiresAtMs: Number(r.expires_at_ms),
    maxTtlSeconds: Number(r.max_ttl_s),
    appliedTtlSeconds: Number(r.applied_ttl_s),
    tag: r.tag,
    applicationId: r.application_id,
    chunk: r.group_id === null ? null : { groupId: r.group_id, sequence: r.sequence_number ?? 0, total: r.total_chunks ?? 1 },
    sizeBytes: Number(r.size_bytes),
    provenance: r.provenance === null ? null : (JSON.parse(r.provenance) as StoredProvenance),
  };
}

/** The columns an insert writes, in the order of {@link entryValues}. */
export const INSERT_COLUMNS = `message_key, message_id, recipient, content_hash, stored_at_ms, expires_at_ms, max_ttl_s, applied_ttl_s, tag,
  application_id, group_id, sequence_number, total_chunks, sort_key, size_bytes, provenance, envelope`;

/** The values of {@link INSERT_COLUMNS} for `entry` (its set's `sortKey` when it is a chunk of a known set). */
export function entryValues(entry: NewEntry, sortKey: number | null): unknown[] {
  const chunk = entry.chunk;
  return [
    entry.messageId.toLowerCase(),
    entry.messageId,
    entry.recipientDid,
    entry.contentHash,
    entry.storedAtMs,
    entry.expiresAtMs,
    entry.maxTtlSeconds,
    entry.appliedTtlSeconds,
    entry.tag,
    entry.applicationId,
    chunk?.groupId ?? null,
    chunk?.sequence ?? null,
    chunk?.total ?? null,
    sortKey,
    entry.sizeBytes,
    entry.provenance === null ? null : JSON.stringify(entry.provenance),
    Buffer.from(entry.envelope.buffer, entry.envelope.byteOffset, entry.envelope.byteLength),
  ];
}

/** `$n+1, …, $n+17`: the placeholders of the `row`-th row (from 0) of a multi-row insert. */
export function placeholders(row: number): string {
  const base = row * 17;
  return Array.from({ length: 17 }, (_, i) => `$${base + i + 1}`).join(', ');
}
