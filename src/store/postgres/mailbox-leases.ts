/**
 * Quota leases: stores into one recipient from several batches at once (two lanes of a process, several Cache
 * processes) without a lock of the recipient held through each commit's WAL flush (mailbox migration 8).
 *
 * A batch of new plain stores (`mailbox-one-trip.ts`'s shape) locked the recipient's row of
 * `cache_recipient_bytes` to check the quota and add its bytes, and held the lock through its commit's flush: two
 * processes' batches into one recipient ran one after the other and never shared a flush. Now a *lane* (one batch
 * at a time of one process, `KeyedBatches`' lanes) takes a slice of the recipient's quota in a short transaction
 * of its own — the slice added to the recipient's `bytes` at once, a row of `cache_quota_leases` recording it — and
 * spends it in batches that lock only that lease row (no other lane ever touches it), so batches of different
 * lanes and processes commit side by side and share their flushes.
 *
 * What holds (the invariant every write keeps): a recipient's `bytes` = the bytes of its entries + the unspent part
 * (`granted - spent`) of its leases; its `entries` + its leases' `spent_entries` = its entries. So every reader of
 * `bytes` (the stores that take the recipient's lock, an older process) sees at least the entries' bytes — a quota
 * is never exceeded — and a lease is granted only within the quota: `bytes + grant <= quota`. A store that would
 * be refused for the quota first folds the recipient's leases back (`cache_fold_leases`: each lease's unspent part
 * returned, its spent entries counted in the row, the lease row deleted; a lane whose lease went so takes another
 * or stores under the lock), so no store is refused while a lease holds the room it needs.
 *
 * How much a lease holds back: at most half the recipient's room when taken (`LEASE_WANT_BYTES` at most), for
 * `LEASE_MS` (a lane takes a new one, folding its old one, once it has spent it or it is half-way to its expiry;
 * the sweep folds expired ones, a stopped process's). Held back from what: only from the `bytes` an older process
 * reads (it may refuse a store early by that much); this version folds before refusing.
 *
 * Durability: a lease is taken with `synchronous_commit` off — its commit record precedes, in the WAL, the commit
 * of every batch that spends it, and that batch's commit is flushed before it is answered; a crash that loses the
 * lease loses no spending of it. Store order: `seq` is taken at insert time, so stores that do not overlap in time
 * are in order; overlapping ones (which no client can order) may commit out of `seq` order. Every read of the
 * mailbox starts at its first visible entry (there is no cursor to move past a `seq`), so an entry committed after
 * a later one was read is shown by the next read, never skipped.
 */
import type pg from 'pg';
import type { PutRequest, PutResult } from '../../cache/mailbox-store.js';
import type { Settled } from './keyed-batches.js';
import { callValues, CACHE_PUT_NEW_CACHED_PLANS_SQL, NOT_TAKEN, storedAll } from './mailbox-one-trip.js';

/** The most a lease asks for (it gets at most half the recipient's room when it has a quota). */
export const LEASE_WANT_BYTES = 4 * 1024 * 1024;

/** How long a lease lasts; its lane takes a new one half-way. */
export const LEASE_MS = 30_000;

/**
 * Leases a process remembers at most (its lanes' leases of the recipients it stored into lately). A lease is
 * forgotten once it is due for renewal (half-way to its expiry: its lane would take a new one anyway) or, beyond
 * this many, oldest first: a lane whose lease was forgotten takes a new one, which folds the old. Without it a
 * Cache process kept an entry for every recipient it ever stored into, for as long as it ran.
 */
export const MAX_HELD_LEASES = 100_000;

/** The bytes every lease holds back unspent (counted in its recipient's `bytes`, held by no entry), as SQL. */
export const LEASES_UNSPENT_SQL = '(SELECT COALESCE(SUM(granted - spent), 0) FROM cache_quota_leases)';

/** Migration 7's `cache_put_new`, the part of it named by the marks `from` (inclusive) and `to` (exclusive). */
function cut(from: string, to: string): string {
  const a = CACHE_PUT_NEW_CACHED_PLANS_SQL.indexOf(from);
  const b = CACHE_PUT_NEW_CACHED_PLANS_SQL.indexOf(to, a);
  if (a < 0 || b < 0) throw new Error(`cache_put_new has no ${from} … ${to}`);
  return CACHE_PUT_NEW_CACHED_PLANS_SQL.slice(a, b);
}

/** `cache_put_new`'s parameters, its nonce claims and its insert of the entries (counted into `done`). */
const PUT_PARAMS = cut('p_recipient TEXT,', ') RETURNS BIGINT');
const CLAIM_NONCES = cut('IF cardinality(p_claim_nonces) > 0 THEN', '-- the recipient');
const INSERT_ENTRIES = cut('WITH ins AS (', 'IF done < cardinality(p_keys)');

/** Migration 7's quota check of `cache_put_new`, and the same check after the recipient's leases are folded. */
const QUOTA_CHECK = cut('IF EXISTS (SELECT 1 FROM (SELECT q, sum(s)', 'RAISE EXCEPTION');
const OVER_QUOTA = `RAISE EXCEPTION 'over the quota' USING ERRCODE = '${NOT_TAKEN}';`;
const PUT_NEW_FOLDING = (() => {
  const fn = cut('CREATE OR REPLACE FUNCTION cache_put_new', 'ALTER FUNCTION cache_put_new RESET');
  const check = QUOTA_CHECK + OVER_QUOTA;
  if (!fn.includes(check)) throw new Error('cache_put_new: the quota check was not found');
  return fn.replace(check, `${QUOTA_CHECK}held := cache_fold_leases(p_recipient, NULL);\n      ${check}\n      END IF;`);
})();

/** The SQLSTATE of a spend beyond its lease (the row's CHECK), and of a spend of a lease that is gone. */
const LEASE_WITHIN = '23514';
const LEASE_GONE = 'DDN02';

/**
 * Mailbox migration 8: the lease table, the insert trigger that leaves a leased batch's bytes alone, the functions
 * that take, fold and spend leases, and `cache_put_new` folding leases before it declines for the quota.
 * Every statement reads a table through a conflict arbiter or by the recipient's rows of the lease table (a lane
 * or two per process for a hot recipient), as migration 7's rule for cached plans asks.
 */
export const CACHE_QUOTA_LEASES_SQL = `
  CREATE TABLE cache_quota_leases (
    recipient TEXT NOT NULL,
    holder TEXT NOT NULL,
    granted BIGINT NOT NULL,
    spent BIGINT NOT NULL,
    spent_entries BIGINT NOT NULL,
    quota BIGINT,
    expires_at_ms BIGINT NOT NULL,
    PRIMARY KEY (recipient, holder),
    CONSTRAINT cache_quota_leases_within CHECK (spent <= granted));
  CREATE INDEX cache_quota_leases_expiry ON cache_quota_leases (expires_at_ms);
  -- what each recipient holds: its row without its leases' unspent bytes, with their spent entries
  CREATE VIEW cache_recipient_totals AS
    SELECT r.recipient, r.bytes - COALESCE(l.unspent, 0) AS bytes, r.entries + COALESCE(l.spent_entries, 0) AS entries
    FROM cache_recipient_bytes r LEFT JOIN (
      SELECT recipient, SUM(granted - spent) AS unspent, SUM(spent_entries) AS spent_entries FROM cache_quota_leases GROUP BY recipient
    ) l ON l.recipient = r.recipient;

  -- a leased batch's bytes were added when its lease was granted: the statement that inserts it says so
  CREATE OR REPLACE FUNCTION cache_recipient_bytes_added() RETURNS trigger LANGUAGE plpgsql AS $fn$
  BEGIN
    IF current_setting('ddn.cache_leased', true) = 'on' THEN
      RETURN NULL;
    END IF;
    INSERT INTO cache_recipient_bytes (recipient, bytes, entries)
      SELECT recipient, SUM(size_bytes), COUNT(*) FROM cache_added GROUP BY recipient ORDER BY recipient
    ON CONFLICT (recipient) DO UPDATE SET bytes = cache_recipient_bytes.bytes + EXCLUDED.bytes,
      entries = cache_recipient_bytes.entries + EXCLUDED.entries;
    RETURN NULL;
  END $fn$;

  -- every lease of the recipient (or only those expired at p_expired_at), folded back into its row; its bytes after
  CREATE FUNCTION cache_fold_leases(p_recipient TEXT, p_expired_at BIGINT) RETURNS BIGINT LANGUAGE plpgsql AS $fn$
  DECLARE
    held BIGINT;
  BEGIN
    WITH f AS (
      DELETE FROM cache_quota_leases WHERE recipient = p_recipient AND (p_expired_at IS NULL OR expires_at_ms <= p_expired_at)
      RETURNING granted - spent AS unspent, spent_entries)
    INSERT INTO cache_recipient_bytes (recipient, bytes, entries)
      SELECT p_recipient, COALESCE(SUM(unspent), 0), COALESCE(SUM(spent_entries), 0) FROM f
    ON CONFLICT (recipient) DO UPDATE SET bytes = cache_recipient_bytes.bytes - EXCLUDED.bytes,
      entries = cache_recipient_bytes.entries + EXCLUDED.entries
    RETURNING bytes INTO held;
    RETURN held;
  END $fn$;

  -- a new lease of p_holder (its old one folded), at most p_want and half the room under p_quota; 0 when less than
  -- p_least fits. Committed without waiting for its flush: the batches spending it flush it.
  CREATE FUNCTION cache_take_lease(p_recipient TEXT, p_holder TEXT, p_want BIGINT, p_least BIGINT, p_quota BIGINT,
      p_expires BIGINT) RETURNS BIGINT LANGUAGE plpgsql AS $fn$
  DECLARE
    held BIGINT;
    grant_ BIGINT;
    old_unspent BIGINT;
    old_entries BIGINT;
  BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    INSERT INTO cache_recipient_bytes (recipient, bytes, entries) VALUES (p_recipient, 0, 0)
      ON CONFLICT (recipient) DO UPDATE SET bytes = cache_recipient_bytes.bytes RETURNING bytes INTO held;
    DELETE FROM cache_quota_leases WHERE recipient = p_recipient AND holder = p_holder
      RETURNING granted - spent, spent_entries INTO old_unspent, old_entries;
    IF FOUND THEN
      INSERT INTO cache_recipient_bytes (recipient, bytes, entries) VALUES (p_recipient, old_unspent, old_entries)
      ON CONFLICT (recipient) DO UPDATE SET bytes = cache_recipient_bytes.bytes - EXCLUDED.bytes,
        entries = cache_recipient_bytes.entries + EXCLUDED.entries
      RETURNING bytes INTO held;
    END IF;
    grant_ := p_want;
    IF p_quota IS NOT NULL THEN
      grant_ := LEAST(grant_, (p_quota - held) / 2);
    END IF;
    IF grant_ < p_least THEN
      RETURN 0;
    END IF;
    INSERT INTO cache_quota_leases (recipient, holder, granted, spent, spent_entries, quota, expires_at_ms)
      VALUES (p_recipient, p_holder, grant_, 0, 0, p_quota, p_expires);
    INSERT INTO cache_recipient_bytes (recipient, bytes, entries) VALUES (p_recipient, grant_, 0)
      ON CONFLICT (recipient) DO UPDATE SET bytes = cache_recipient_bytes.bytes + EXCLUDED.bytes;
    RETURN grant_;
  END $fn$;

  -- cache_put_new's batch spent from p_holder's lease instead of under the recipient's lock: the lease row (gone,
  -- or for another quota: DDN02; too little left: its CHECK, 23514) and the entries, whose bytes the lease added
  CREATE FUNCTION cache_put_leased(p_holder TEXT, ${PUT_PARAMS}) RETURNS VOID LANGUAGE plpgsql AS $fn$
  DECLARE
    done INTEGER;
    fresh BOOLEAN;
  BEGIN
    PERFORM set_config('synchronous_commit', 'on', true);
    IF current_setting('transaction_isolation') <> 'read committed' THEN
      RAISE EXCEPTION 'not read committed' USING ERRCODE = '${NOT_TAKEN}';
    END IF;
    ${CLAIM_NONCES}
    INSERT INTO cache_quota_leases (recipient, holder, granted, spent, spent_entries, quota, expires_at_ms)
      VALUES (p_recipient, p_holder, 0, 0, 0, NULL, 0)
    ON CONFLICT (recipient, holder) DO UPDATE
      SET spent = cache_quota_leases.spent + (SELECT COALESCE(sum(s), 0) FROM unnest(p_sizes) AS s),
        spent_entries = cache_quota_leases.spent_entries + cardinality(p_keys)
      WHERE cache_quota_leases.quota IS NOT DISTINCT FROM p_quotas[1]
    RETURNING (xmax = 0) INTO fresh;
    IF fresh IS NULL OR fresh THEN
      RAISE EXCEPTION 'no lease of this quota' USING ERRCODE = '${LEASE_GONE}';
    END IF;
    PERFORM set_config('ddn.cache_leased', 'on', true);
    ${INSERT_ENTRIES}
    PERFORM set_config('ddn.cache_leased', 'off', true);
    IF done < cardinality(p_keys) THEN
      RAISE EXCEPTION 'an id is held' USING ERRCODE = '${NOT_TAKEN}';
    END IF;
  END $fn$;

  ${PUT_NEW_FOLDING}
`;

/** The lease a lane holds, as this process last left it. */
interface Held {
  remaining: number;
  quota: number | null;
  renewAtMs: number;
}

/**
 * The leases of this process's lanes, and the batches they take: {@link put} answers a batch of new plain stores
 * spent from its lane's lease (taken first when it has none that fits), or null when the lease path does not
 * take it (nothing written) and the batch goes the locked way.
 */
export class QuotaLeases {
  /** By lane and recipient, in the order they were taken (so the first are the first due for renewal). */
  private readonly held = new Map<string, Held>();

  /** `holder`: this process's name in lease rows (unique per store instance), with the lane appended. */
  constructor(
    private readonly holder: string,
    private readonly maxHeld = MAX_HELD_LEASES,
  ) {}

  /** Leases remembered now (tests). */
  get size(): number {
    return this.held.size;
  }

  async put(c: pg.ClientBase, recipient: string, lane: number, reqs: readonly PutRequest[]): Promise<Settled<PutResult>[] | null> {
    const quota = reqs[0]!.quotaBytes;
    if (reqs.some((r) => r.quotaBytes !== quota)) return null;
    const bytes = reqs.reduce((n, r) => n + r.entry.sizeBytes, 0);
    const nowMs = Math.min(...reqs.map((r) => r.nowMs));
    const key = `${lane}\u0000${recipient}`;
    const holder = `${this.holder}/${lane}`;
    let lease = this.held.get(key);
    if (lease === undefined || lease.remaining < bytes || lease.quota !== quota || nowMs >= lease.renewAtMs) {
      this.held.delete(key);
      const r = await c.query<{ g: string }>('SELECT cache_take_lease($1, $2, $3, $4, $5, $6) AS g', [
        recipient,
        holder,
        Math.max(LEASE_WANT_BYTES, bytes),
        bytes,
        quota,
        nowMs + LEASE_MS,
      ]);
      const granted = Number(r.rows[0]?.g ?? 0);
      if (granted < bytes) return null;
      lease = { remaining: granted, quota, renewAtMs: nowMs + LEASE_MS / 2 };
      this.held.set(key, lease);
      this.forgetOld(key, nowMs);
    }
    try {
      await c.query({ name: 'ddn_cache_put_leased', text: CALL_LEASED, values: [holder, ...callValues(recipient, reqs)] });
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      // not this batch's shape (a nonce taken, an id held): nothing was spent, the lease stays
      if (code === NOT_TAKEN) return null;
      // gone (folded by a store short of room, or the sweep), or an outcome not known: a new one next time
      this.held.delete(key);
      if (code === LEASE_WITHIN || code === LEASE_GONE) return null;
      throw error;
    }
    lease.remaining -= bytes;
    return storedAll(reqs);
  }

  /**
   * Forgets the leases due for renewal at `nowMs` and the oldest beyond {@link MAX_HELD_LEASES}, all taken before
   * `taken` (just taken, last in the map). Only when a lease is taken (a round trip already): the batches that
   * spend one do no more work than before.
   */
  private forgetOld(taken: string, nowMs: number): void {
    for (const [key, lease] of this.held) {
      if (key === taken || (lease.renewAtMs > nowMs && this.held.size <= this.maxHeld)) break;
      this.held.delete(key);
    }
  }
}

/** A named statement: each connection parses it once, not at every batch (a call: its plan is the same for any batch). */
const CALL_LEASED = `SELECT cache_put_leased(${Array.from({ length: 22 }, (_, i) => `$${i + 1}`).join(', ')})`;
