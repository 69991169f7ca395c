/**
 * The `relay_chunk_sets` row as both Relay stores (SQLite and PostgreSQL) read it: one column list, one conversion
 * to the values a staged set fixes. BIGINT columns arrive from PostgreSQL as strings, hence the `number | string`s.
 */
import type { ChunkSetKeyValues } from '../relay/staging-store.js';

export interface RelaySetRow {
  total_chunks: number;
  to_value: string;
  tag: string | null;
  application_id: string | null;
  sender: string | null;
  retry_until_ms: number | string;
  /** Envelope bytes of the set's staged chunks. */
  staged_bytes: number | string;
}

/** The values a set fixes (http-api.md §10.4.3), as the staging rules compare them. */
export const setValuesOf = (s: RelaySetRow): ChunkSetKeyValues => ({
  total: s.total_chunks,
  to: s.to_value,
  tag: s.tag,
  applicationId: s.application_id,
  sender: s.sender,
});
