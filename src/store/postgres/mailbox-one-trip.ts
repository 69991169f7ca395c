/**
 * A batch of new plain stores into one recipient in ONE round trip: a stored function (`cache_put_new`, mailbox
 * migrations 5 and 7) called as a statement of its own, so its implicit transaction commits before the answer comes
 * back. It claims the batch's nonces, checks that no message id is held, locks the recipient's row, checks the
 * quota and inserts every entry; the recipient's lock is held for the function's statements and the commit only,
 * never across a round trip to this process (the four-round-trip batch held it across three).
 *
 * It is a fast path with no rules of its own: it takes a batch only when every store is accepted as new — every
 * nonce claimed, no id held (live or expired), within the quota — and otherwise raises {@link NOT_TAKEN}, which
 * undoes whatever it did (the claims); the store then runs the batch as before (`mailbox-bulk-put.ts`, or store
 * by store), where every rule answers with its own error. The storage budget is checked here, before the call,
 * against the same per-process sum the other paths read.
 */
import type pg from 'pg';
import type { PutRequest, PutResult } from '../../cache/mailbox-store.js';
import type { Settled } from './keyed-batches.js';
import { sortedClaims } from './mailbox-bulk-put.js';

/** The SQLSTATE `cache_put_new` raises when the batch is not one it takes (nothing is written). */
export const NOT_TAKEN = 'DDN01';

/** Mailbox migration 5: the function. Every statement of a plpgsql function sees what committed before it. */
export const CACHE_PUT_NEW_SQL = `
  CREATE FUNCTION cache_put_new(p_recipient TEXT, p_keys TEXT[], p_ids TEXT[], p_hashes TEXT[], p_stored BIGINT[],
      p_expires BIGINT[], p_max_ttl BIGINT[], p_applied_ttl BIGINT[], p_tags TEXT[], p_apps TEXT[], p_sizes BIGINT[],
      p_provenance TEXT[], p_envelopes BYTEA, p_lengths INTEGER[], p_quotas BIGINT[],
      p_claim_scopes TEXT[], p_claim_dids TEXT[], p_claim_keys TEXT[], p_claim_nonces TEXT[], p_claim_expires BIGINT[],
      p_now BIGINT) RETURNS BIGINT LANGUAGE plpgsql AS $fn$
  DECLARE
    held BIGINT;
    claimed INTEGER;
  BEGIN
    -- the commit of the statement's own transaction is durable before its answer (SET LOCAL, to its end)
    PERFORM set_config('synchronous_commit', 'on', true);
    IF current_setting('transaction_isolation') <> 'read committed' THEN
      RAISE EXCEPTION 'not read committed' USING ERRCODE = '${NOT_TAKEN}';
    END IF;
    -- the nonces, in the caller's order (sorted: batches sharing nonces lock them in one order)
    IF cardinality(p_claim_nonces) > 0 THEN
      WITH c AS (
        INSERT INTO cache_nonces (scope, did, key_id, nonce, expires_at_ms)
          SELECT * FROM unnest(p_claim_scopes, p_claim_dids, p_claim_keys, p_claim_nonces, p_claim_expires)
        ON CONFLICT (scope, did, key_id, nonce) DO UPDATE SET expires_at_ms = EXCLUDED.expires_at_ms
        WHERE cache_nonces.expires_at_ms <= p_now
        RETURNING 1)
      SELECT count(*) INTO claimed FROM c;
      IF claimed < cardinality(p_claim_nonces) THEN
        RAISE EXCEPTION 'a nonce is taken' USING ERRCODE = '${NOT_TAKEN}';
      END IF;
    END IF;
    -- an id held here, or committed by another batch before the insert (then 23505: the batch runs again), is
    -- for the other paths
    IF EXISTS (SELECT 1 FROM cache_entries WHERE message_key = ANY (p_keys)) THEN
      RAISE EXCEPTION 'an id is held' USING ERRCODE = '${NOT_TAKEN}';
    END IF;
    SELECT bytes INTO held FROM cache_recipient_bytes WHERE recipient = p_recipient FOR UPDATE;
    IF NOT FOUND THEN
      INSERT INTO cache_recipient_bytes (recipient, bytes, entries) VALUES (p_recipient, 0, 0)
        ON CONFLICT (recipient) DO UPDATE SET bytes = cache_recipient_bytes.bytes RETURNING bytes INTO held;
    END IF;
    -- each store within its quota with the ones before it (admission.ts withinQuota)
    IF EXISTS (SELECT 1 FROM (SELECT q, sum(s) OVER (ORDER BY i) AS cum FROM unnest(p_sizes, p_quotas) WITH ORDINALITY AS x(s, q, i)) y
               WHERE y.q IS NOT NULL AND held + y.cum > y.q) THEN
      RAISE EXCEPTION 'over the quota' USING ERRCODE = '${NOT_TAKEN}';
    END IF;
    INSERT INTO cache_entries (message_key, message_id, recipient, content_hash, stored_at_ms, expires_at_ms, max_ttl_s,
        applied_ttl_s, tag, application_id, size_bytes, provenance, envelope)
      SELECT k, id, p_recipient, h, st, ex, mt, att, tg, ap, sz, pv, substring(p_envelopes FROM (e - len + 1)::INTEGER FOR len)
      FROM (SELECT u.*, sum(len) OVER (ORDER BY i) AS e
            FROM unnest(p_keys, p_ids, p_hashes, p_stored, p_expires, p_max_ttl, p_applied_ttl, p_tags, p_apps, p_sizes, p_provenance, p_lengths)
              WITH ORDINALITY AS u(k, id, h, st, ex, mt, att, tg, ap, sz, pv, len, i)) v
      ORDER BY i;
    RETURN held;
  END $fn$;
`;

/**
 * Mailbox migration 6: every statement of `cache_put_new` planned for its call's values. PL/pgSQL caches each
 * statement's plan per session and after five calls may keep a *generic* plan, costed on the tables as they were
 * then: a session whose first calls met a near-empty `cache_entries` kept a sequential scan for the held-id check,
 * which read the whole table on every batch as the mailbox grew (session 25: ~1,445 µs of PostgreSQL CPU per
 * store after ten seconds, against ~46 for the four-round-trip batch). A custom plan per call sees the table's
 * current size and its indexes; planning the function's few statements costs far less than one scan.
 */
export const CACHE_PUT_NEW_CUSTOM_PLANS_SQL = 'ALTER FUNCTION cache_put_new SET plan_cache_mode = force_custom_plan';

/**
 * Mailbox migration 7: `cache_put_new` without a table read whose plan could go wrong, so its plans are cached
 * again (migration 6's planning of every statement on every call cost ~0.3 ms a call, paid per store by small
 * batches: a Relay's sends, two processes' half-size batches). The held-id check is gone: the insert skips a held
 * id (`ON CONFLICT (message_key) DO NOTHING`, the unique index's own probe) and the batch is not taken when a row
 * was skipped; the recipient's row is locked by the upsert that used to create it only when absent (its unique
 * index again). Every remaining statement reads a table through a conflict arbiter or reads none, so no plan
 * chooses between a scan and an index. The setting of migration 6 is reset (CREATE OR REPLACE keeps none; the
 * RESET says so).
 *
 * The trigger removing deleted entries' bytes (migration 4) updated each recipient's row in a loop, a statement
 * whose generic plan, made while `cache_recipient_bytes` had a row or two (and was analyzed so), scans it
 * sequentially: it is now the added trigger's mirror, one upsert from the transition table in recipient order
 * (rows of `cache_recipient_bytes` are never deleted, so the insert branch never runs for a removed entry).
 */
export const CACHE_PUT_NEW_CACHED_PLANS_SQL = `
  CREATE OR REPLACE FUNCTION cache_put_new(p_recipient TEXT, p_keys TEXT[], p_ids TEXT[], p_hashes TEXT[], p_stored BIGINT[],
      p_expires BIGINT[], p_max_ttl BIGINT[], p_applied_ttl BIGINT[], p_tags TEXT[], p_apps TEXT[], p_sizes BIGINT[],
      p_provenance TEXT[], p_envelopes BYTEA, p_lengths INTEGER[], p_quotas BIGINT[],
      p_claim_scopes TEXT[], p_claim_dids TEXT[], p_claim_keys TEXT[], p_claim_nonces TEXT[], p_claim_expires BIGINT[],
      p_now BIGINT) RETURNS BIGINT LANGUAGE plpgsql AS $fn$
  DECLARE
    held BIGINT;
    done INTEGER;
  BEGIN
    -- the commit of the statement's own transaction is durable before its answer (SET LOCAL, to its end)
    PERFORM set_config('synchronous_commit', 'on', true);
    IF current_setting('transaction_isolation') <> 'read committed' THEN
      RAISE EXCEPTION 'not read committed' USING ERRCODE = '${NOT_TAKEN}';
    END IF;
    -- the nonces, in the caller's order (sorted: batches sharing nonces lock them in one order)
    IF cardinality(p_claim_nonces) > 0 THEN
      WITH c AS (
        INSERT INTO cache_nonces (scope, did, key_id, nonce, expires_at_ms)
          SELECT * FROM unnest(p_claim_scopes, p_claim_dids, p_claim_keys, p_claim_nonces, p_claim_expires)
        ON CONFLICT (scope, did, key_id, nonce) DO UPDATE SET expires_at_ms = EXCLUDED.expires_at_ms
        WHERE cache_nonces.expires_at_ms <= p_now
        RETURNING 1)
      SELECT count(*) INTO done FROM c;
      IF done < cardinality(p_claim_nonces) THEN
        RAISE EXCEPTION 'a nonce is taken' USING ERRCODE = '${NOT_TAKEN}';
      END IF;
    END IF;
    -- the recipient's row, created if absent, locked to the commit
    INSERT INTO cache_recipient_bytes (recipient, bytes, entries) VALUES (p_recipient, 0, 0)
      ON CONFLICT (recipient) DO UPDATE SET bytes = cache_recipient_bytes.bytes RETURNING bytes INTO held;
    -- each store within its quota with the ones before it (admission.ts withinQuota)
    IF EXISTS (SELECT 1 FROM (SELECT q, sum(s) OVER (ORDER BY i) AS cum FROM unnest(p_sizes, p_quotas) WITH ORDINALITY AS x(s, q, i)) y
               WHERE y.q IS NOT NULL AND held + y.cum > y.q) THEN
      RAISE EXCEPTION 'over the quota' USING ERRCODE = '${NOT_TAKEN}';
    END IF;
    -- an id held here (live or expired), committed meanwhile by another batch, or twice in the batch is skipped,
    -- and the batch is then for the other paths
    WITH ins AS (
      INSERT INTO cache_entries (message_key, message_id, recipient, content_hash, stored_at_ms, expires_at_ms, max_ttl_s,
          applied_ttl_s, tag, application_id, size_bytes, provenance, envelope)
        SELECT k, id, p_recipient, h, st, ex, mt, att, tg, ap, sz, pv, substring(p_envelopes FROM (e - len + 1)::INTEGER FOR len)
        FROM (SELECT u.*, sum(len) OVER (ORDER BY i) AS e
              FROM unnest(p_keys, p_ids, p_hashes, p_stored, p_expires, p_max_ttl, p_applied_ttl, p_tags, p_apps, p_sizes, p_provenance, p_lengths)
                WITH ORDINALITY AS u(k, id, h, st, ex, mt, att, tg, ap, sz, pv, len, i)) v
        ORDER BY i
      ON CONFLICT (message_key) DO NOTHING
      RETURNING 1)
    SELECT count(*) INTO done FROM ins;
    IF done < cardinality(p_keys) THEN
      RAISE EXCEPTION 'an id is held' USING ERRCODE = '${NOT_TAKEN}';
    END IF;
    RETURN held;
  END $fn$;
  ALTER FUNCTION cache_put_new RESET plan_cache_mode;
  CREATE OR REPLACE FUNCTION cache_recipient_bytes_removed() RETURNS trigger LANGUAGE plpgsql AS $fn$
  BEGIN
    INSERT INTO cache_recipient_bytes (recipient, bytes, entries)
      SELECT recipient, -SUM(size_bytes), -COUNT(*) FROM cache_removed GROUP BY recipient ORDER BY recipient
    ON CONFLICT (recipient) DO UPDATE SET bytes = cache_recipient_bytes.bytes + EXCLUDED.bytes,
      entries = cache_recipient_bytes.entries + EXCLUDED.entries;
    RETURN NULL;
  END $fn$;
`;

/** A named statement, as mailbox-leases.ts's `CALL_LEASED`: parsed once per connection, not at every batch. */
const CALL = `SELECT cache_put_new(${Array.from({ length: 21 }, (_, i) => `$${i + 1}`).join(', ')})`;

/** The parameters of {@link CALL} for a batch into `recipient` (also those of the leased call after its holder). */
export function callValues(recipient: string, reqs: readonly PutRequest[]): unknown[] {
  const e = reqs.map((r) => r.entry);
  const claims = sortedClaims(reqs);
  return [
    recipient,
    e.map((x) => x.messageId.toLowerCase()),
    e.map((x) => x.messageId),
    e.map((x) => x.contentHash),
    e.map((x) => x.storedAtMs),
    e.map((x) => x.expiresAtMs),
    e.map((x) => x.maxTtlSeconds),
    e.map((x) => x.appliedTtlSeconds),
    e.map((x) => x.tag),
    e.map((x) => x.applicationId),
    e.map((x) => x.sizeBytes),
    e.map((x) => (x.provenance === null ? null : JSON.stringify(x.provenance))),
    // one binary parameter (sent as it is), cut into the envelopes by the function
    Buffer.concat(e.map((x) => x.envelope)),
    e.map((x) => x.envelope.byteLength),
    reqs.map((r) => r.quotaBytes),
    claims.map((x) => x.scope),
    claims.map((x) => x.did),
    claims.map((x) => x.keyId),
    claims.map((x) => x.nonce),
    claims.map((x) => x.expiresAtMs),
    Math.min(...reqs.map((r) => r.nowMs)),
  ];
}

/**
 * Runs a batch of {@link bulkShaped} stores into `recipient` in one statement on `c` (outside any transaction
 * block), answering every store as stored; null when the function did not take it (nothing written).
 */
export async function putNewInOneTrip(c: pg.ClientBase, recipient: string, reqs: readonly PutRequest[]): Promise<Settled<PutResult>[] | null> {
  try {
    await c.query({ name: 'ddn_cache_put_new', text: CALL, values: callValues(recipient, reqs) });
  } catch (error) {
    if ((error as { code?: unknown }).code === NOT_TAKEN) return null;
    throw error;
  }
  return storedAll(reqs);
}

/** Every store of a batch answered as stored new. */
export function storedAll(reqs: readonly PutRequest[]): Settled<PutResult>[] {
  return reqs.map((r) => {
    const { envelope, ...stored } = r.entry;
    void envelope;
    return { ok: true, value: { deduped: false, entry: stored, chunkSet: null } };
  });
}
