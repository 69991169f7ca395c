/**
 * A batch of plain stores into one recipient in a handful of statements, whatever its size: one read of the
 * message ids already held, one claim of every nonce, the rules applied in turn in memory, one insert of every
 * accepted entry, one release of the claims of refused stores. It runs under the recipient's lock
 * (`mailbox-store.ts`), so what it read stays true until it commits.
 *
 * It takes only batches whose every store is unchunked, with distinct message ids and distinct nonces, and whose
 * held ids are live unchunked entries; anything else (`null`, nothing written) goes store by store. Nonces are
 * claimed against the earliest `nowMs` of the batch (its stores arrived within one batch's time of each other): a
 * claim that expired after that instant still counts as live, so a nonce is never accepted twice.
 */
import type pg from 'pg';
import { DdnError } from '../../base/errors.js';
import { checkBudget, checkDuplicate, checkQuota, withinQuota } from '../../cache/admission.js';
import type { PutRequest, PutResult } from '../../cache/mailbox-store.js';
import type { NonceClaim } from '../../ports/nonce-registry.js';
import type { Settled } from './keyed-batches.js';
import { entryValues, INSERT_COLUMNS, META_COLUMNS, placeholders, toMeta, type MetaRow, type Num } from './mailbox-rows.js';

/** What a bulk batch asks of its store. */
export interface BulkPutContext {
  /** The recipient's envelope bytes, read under its lock. */
  heldBytes: number;
  /** The whole mailbox's envelope bytes, for the storage budget. */
  heldTotal(): Promise<number>;
  /** Counts `bytes` just stored in the budget's view. */
  stored(bytes: number): void;
}

const nonceKey = (n: NonceClaim): string => JSON.stringify([n.scope, n.did, n.keyId, n.nonce]);

const distinct = (xs: readonly string[]): boolean => new Set(xs).size === xs.length;

/** The batch's answers, or `null` when it is not one this path takes (nothing written then). */
export async function bulkPut(c: pg.PoolClient, recipient: string, reqs: readonly PutRequest[], ctx: BulkPutContext): Promise<Settled<PutResult>[] | null> {
  if (reqs.some((r) => r.entry.chunk !== null)) return null;
  const keys = reqs.map((r) => r.entry.messageId.toLowerCase());
  const claims = reqs.flatMap((r) => (r.claim === null ? [] : [r.claim]));
  if (!distinct(keys) || !distinct(claims.map(nonceKey))) return null;

  const held = new Map<string, MetaRow>();
  for (const row of (await c.query<MetaRow>(`SELECT ${META_COLUMNS} FROM cache_entries e WHERE e.message_key = ANY($1)`, [keys])).rows) {
    held.set(row.message_id.toLowerCase(), row);
  }
  for (const [i, r] of reqs.entries()) {
    const row = held.get(keys[i]!);
    if (row !== undefined && (row.group_id !== null || Number(row.expires_at_ms) <= r.nowMs)) return null;
  }

  const claimed = await claimAll(c, claims, Math.min(...reqs.map((r) => r.nowMs)));
  const out: Settled<PutResult>[] = [];
  const accepted: unknown[][] = [];
  const refused: NonceClaim[] = [];
  let bytes = ctx.heldBytes;
  let purged = false;
  for (const [i, req] of reqs.entries()) {
    const { entry } = req;
    try {
      if (req.claim !== null && !claimed.has(nonceKey(req.claim))) throw new DdnError('proof_nonce_replayed', 'this nonce was already used');
      const row = held.get(keys[i]!);
      const meta = row === undefined ? null : toMeta(row);
      if (checkDuplicate(meta, entry) === 'dedupe' && meta !== null) {
        out.push({ ok: true, value: { deduped: true, entry: meta, chunkSet: null } });
        continue;
      }
      if (req.quotaBytes !== null) {
        // Expired copies count until removed: only when they would make the difference are they removed here
        // (never the entries this batch answers as deduplicated).
        if (!purged && !withinQuota(bytes, entry.sizeBytes, req.quotaBytes)) {
          purged = true;
          await c.query('DELETE FROM cache_entries WHERE recipient = $1 AND expires_at_ms <= $2 AND NOT (message_key = ANY($3))', [recipient, req.nowMs, keys]);
          const r = await c.query<{ b: Num }>('SELECT bytes AS b FROM cache_recipient_bytes WHERE recipient = $1', [recipient]);
          bytes = Number(r.rows[0]?.b ?? 0) + accepted.reduce((n, v) => n + Number(v[14]), 0);
        }
        checkQuota(bytes, entry.sizeBytes, req.quotaBytes);
      }
      if (req.budgetBytes != null) checkBudget(await ctx.heldTotal(), entry.sizeBytes, req.budgetBytes);
      accepted.push(entryValues(entry, null));
      bytes += entry.sizeBytes;
      ctx.stored(entry.sizeBytes);
      const { envelope, ...stored } = entry;
      void envelope;
      out.push({ ok: true, value: { deduped: false, entry: stored, chunkSet: null } });
    } catch (error) {
      if (!(error instanceof DdnError)) throw error;
      if (req.claim !== null && claimed.has(nonceKey(req.claim))) refused.push(req.claim);
      out.push({ ok: false, error });
    }
  }
  if (accepted.length > 0) {
    await c.query(`INSERT INTO cache_entries (${INSERT_COLUMNS}) VALUES ${accepted.map((_, i) => `(${placeholders(i)})`).join(', ')}`, accepted.flat());
  }
  // a refused store's claim goes with it (a claim it replaced had expired, so none is lost)
  if (refused.length > 0) {
    await c.query(
      `DELETE FROM cache_nonces WHERE (scope, did, key_id, nonce, expires_at_ms) IN
         (SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[]))`,
      columns(refused),
    );
  }
  return out;
}

/** Claims every nonce of `claims` not live at `nowMs` by one statement; returns the keys of those it claimed. */
async function claimAll(c: pg.PoolClient, claims: readonly NonceClaim[], nowMs: number): Promise<Set<string>> {
  if (claims.length === 0) return new Set();
  const r = await c.query<{ scope: string; did: string; key_id: string; nonce: string }>(
    `INSERT INTO cache_nonces (scope, did, key_id, nonce, expires_at_ms)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[])
     ON CONFLICT (scope, did, key_id, nonce) DO UPDATE SET expires_at_ms = EXCLUDED.expires_at_ms
     WHERE cache_nonces.expires_at_ms <= $6
     RETURNING scope, did, key_id, nonce`,
    [...columns(claims), nowMs],
  );
  return new Set(r.rows.map((x) => nonceKey({ scope: x.scope, did: x.did, keyId: x.key_id, nonce: x.nonce, expiresAtMs: 0 })));
}

/** The claims as five arrays (scope, did, key, nonce, expiry), for `unnest`. */
function columns(claims: readonly NonceClaim[]): [string[], string[], string[], string[], number[]] {
  return [claims.map((x) => x.scope), claims.map((x) => x.did), claims.map((x) => x.keyId), claims.map((x) => x.nonce), claims.map((x) => x.expiresAtMs)];
}
