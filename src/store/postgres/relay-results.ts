/**
 * The Relay's per-send statements on PostgreSQL, one statement for many sends: every unchunked send reads its
 * message id's earlier use (§10.3 step 6) before delivering and remembers its result after. The store
 * (`relay-staging-store.ts`) gathers the sends of one event-loop turn — and those arriving while the previous
 * statement runs — with {@link KeyedBatches}, so a Relay under load pays one round trip (and, for the results,
 * one commit) per batch instead of one per send.
 */
import type { DeliveryResult } from '../../relay/delivery-result.js';
import { RESULT_RETENTION_MS, type PriorUse } from '../../relay/staging-store.js';
import type pg from 'pg';

/** Where a statement runs: the pool (each statement below is atomic on its own). */
type Queryable = Pick<pg.Pool, 'query'>;

/** One `findPrior` of a batch. */
export interface PriorAsk {
  messageKey: string;
  nowMs: number;
  /** Look for a live staged chunk when there is no result. */
  staged: boolean;
}

/** One `saveResult` of a batch. */
export interface ResultRow {
  messageKey: string;
  contentHash: string;
  /** Null for a chunk of a delivered set. */
  recipient: string | null;
  /** The DeliveryResult's JSON text. */
  text: string;
  nowMs: number;
}

/** A row of {@link findPriors}: the ask's index, a result's columns, then a staged chunk's (null when absent). */
interface PriorRow {
  i: string;
  content_hash: string | null;
  recipient: string | null;
  result: string | null;
  created_at_ms: string | null;
  chunk_recipient: string | null;
  group_id: string | null;
  sequence_number: number | null;
  chunk_hash: string | null;
}

const NONE: PriorUse = Object.freeze({ result: null, staged: null });

/**
 * Every ask's live result, else (when asked) its live staged chunk, in one statement (one snapshot), in the
 * order of `asks`.
 */
export async function findPriors(db: Queryable, asks: readonly PriorAsk[]): Promise<PriorUse[]> {
  // not a named statement: planned at every call on the tables' current sizes (a plan cached while the tables
  // were small hash-joins them after a sequential scan, and keeps doing so as they grow — tried in session 33)
  const r = await db.query<PriorRow>({
    text: `SELECT k.i, r.content_hash, r.recipient, r.result, r.created_at_ms, c.recipient AS chunk_recipient, c.group_id,
            c.sequence_number, c.content_hash AS chunk_hash
       FROM unnest($1::text[], $2::bigint[], $3::bool[]) WITH ORDINALITY AS k(message_key, now_ms, staged, i)
       LEFT JOIN relay_results r ON r.message_key = k.message_key
       LEFT JOIN LATERAL (
         SELECT c.recipient, c.group_id, c.sequence_number, c.content_hash FROM relay_chunks c
           JOIN relay_chunk_sets s ON s.recipient = c.recipient AND s.group_id = c.group_id
          WHERE k.staged AND c.message_key = k.message_key AND s.retry_until_ms > k.now_ms LIMIT 1) c ON true`,
    values: [asks.map((a) => a.messageKey), asks.map((a) => a.nowMs), asks.map((a) => a.staged)],
  });
  const out: PriorUse[] = asks.map(() => NONE);
  for (const row of r.rows) {
    const i = Number(row.i) - 1;
    const nowMs = asks[i]!.nowMs;
    if (row.result !== null && Number(row.created_at_ms) + RESULT_RETENTION_MS > nowMs) {
      out[i] = { result: { contentHash: row.content_hash!, recipientDid: row.recipient, result: JSON.parse(row.result) as DeliveryResult }, staged: null };
    } else if (row.group_id !== null) {
      out[i] = {
        result: null,
        staged: { recipientDid: row.chunk_recipient!, groupId: row.group_id, sequence: row.sequence_number!, contentHash: row.chunk_hash! },
      };
    }
  }
  return out;
}

/**
 * `relay_save_results(…)` (the Relay's migration 4): the upsert of {@link saveResults}, committed without waiting
 * for its WAL flush. A remembered result is bookkeeping — the send was answered before it was written, and a
 * result lost to a crash only means an identical retry delivers again (the Cache keeps one copy per message id) —
 * so, like the SQLite Relay's result commits (`synchronous = NORMAL` for them), it pays no flush of its own: the
 * row is visible to every process once the call returns, durable within the WAL writer's next flush
 * (`wal_writer_delay`). `SET LOCAL` inside the function: the setting ends with the statement's transaction.
 */
export const SAVE_RESULTS_FUNCTION_SQL = `
  CREATE FUNCTION relay_save_results(p_keys text[], p_hashes text[], p_recipients text[], p_results text[], p_created bigint[])
  RETURNS void LANGUAGE plpgsql AS $fn$
  BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    INSERT INTO relay_results (message_key, content_hash, recipient, result, created_at_ms)
      SELECT * FROM unnest(p_keys, p_hashes, p_recipients, p_results, p_created)
      ON CONFLICT (message_key) DO UPDATE SET content_hash = EXCLUDED.content_hash, recipient = EXCLUDED.recipient,
        result = EXCLUDED.result, created_at_ms = EXCLUDED.created_at_ms;
  END $fn$;
`;

/**
 * Remembers every row in one upsert (one call of `relay_save_results`, committed without a flush of its own). A
 * message id given twice keeps its last row (as two upserts one after the other would); rows go in key order, so
 * two processes' batches lock shared keys in one order.
 */
export async function saveResults(db: Queryable, rows: readonly ResultRow[]): Promise<void> {
  const last = new Map<string, ResultRow>();
  for (const row of rows) last.set(row.messageKey, row);
  const sorted = [...last.values()].sort((a, b) => (a.messageKey < b.messageKey ? -1 : a.messageKey > b.messageKey ? 1 : 0));
  await db.query({
    name: 'ddn_relay_save_results',
    text: 'SELECT relay_save_results($1, $2, $3, $4, $5)',
    values: [
      sorted.map((x) => x.messageKey),
      sorted.map((x) => x.contentHash),
      sorted.map((x) => x.recipient),
      sorted.map((x) => x.text),
      sorted.map((x) => x.nowMs),
    ],
  });
}
