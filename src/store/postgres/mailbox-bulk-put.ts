/**
 * A batch of plain stores into one recipient in a handful of statements, whatever its size: one read of the
 * message ids already held, one claim of every nonce, the rules applied in turn in memory, one insert of every
 * accepted entry, one release of the claims of refused stores. It runs under the recipient's lock
 * (`mailbox-store.ts`), so what it read stays true until it commits.
 *
 * It takes only batches whose every store is unchunked, with distinct message ids and distinct nonces
 * ({@link bulkShaped}), and whose held ids are live unchunked entries; anything else (`null`, nothing written: the
 * claims it made are undone) goes store by store. The claims are one statement without parameters
 * ({@link bulkClaimSql}) that the store sends with the transaction's BEGIN and the recipient's lock, one round
 * trip for the three. Nonces are claimed against the earliest `nowMs` of the batch (its stores arrived within one
 * batch's time of each other): a claim that expired after that instant still counts as live, so a nonce is never
 * accepted twice.
 */
import pg from 'pg';
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

/** True when the batch is one {@link bulkPut} may take by its shape: unchunked stores, distinct message ids and nonces. */
export function bulkShaped(reqs: readonly PutRequest[]): boolean {
  if (reqs.some((r) => r.entry.chunk !== null)) return false;
  const claims = reqs.flatMap((r) => (r.claim === null ? [] : [r.claim]));
  return distinct(reqs.map((r) => r.entry.messageId.toLowerCase())) && distinct(claims.map(nonceKey));
}

/** A JavaScript number as an SQL integer literal (a claim's expiry, an instant in ms). */
function intLiteral(n: number): string {
  if (!Number.isSafeInteger(n)) throw new TypeError(`not an integer: ${n}`);
  return String(n);
}

/** The nonce claims of a batch in one order, so two batches claiming shared nonces take their locks in that order. */
export function sortedClaims(reqs: readonly PutRequest[]): NonceClaim[] {
  return reqs.flatMap((r) => (r.claim === null ? [] : [r.claim])).sort((a, b) => (nonceKey(a) < nonceKey(b) ? -1 : 1));
}

/**
 * Claims every nonce of a {@link bulkShaped} batch not live at its earliest `nowMs`, as one statement without
 * parameters (each value a literal: `pg.escapeLiteral`), answering the claimed ones; null when it claims nothing.
 */
export function bulkClaimSql(reqs: readonly PutRequest[]): string | null {
  const claims = sortedClaims(reqs);
  if (claims.length === 0) return null;
  const lit = pg.escapeLiteral;
  const rows = claims.map((x) => `(${lit(x.scope)}, ${lit(x.did)}, ${lit(x.keyId)}, ${lit(x.nonce)}, ${intLiteral(x.expiresAtMs)})`);
  return `INSERT INTO cache_nonces (scope, did, key_id, nonce, expires_at_ms) VALUES ${rows.join(', ')}
     ON CONFLICT (scope, did, key_id, nonce) DO UPDATE SET expires_at_ms = EXCLUDED.expires_at_ms
     WHERE cache_nonces.expires_at_ms <= ${intLiteral(Math.min(...reqs.map((r) => r.nowMs)))}
     RETURNING scope, did, key_id, nonce, expires_at_ms`;
}

/** The claims {@link bulkClaimSql} made, from its answer (null: it was not sent). */
function claimedOf(answer: pg.QueryResult | null): NonceClaim[] {
  const rows = (answer?.rows ?? []) as { scope: string; did: string; key_id: string; nonce: string; expires_at_ms: Num }[];
  return rows.map((x) => ({ scope: x.scope, did: x.did, keyId: x.key_id, nonce: x.nonce, expiresAtMs: Number(x.expires_at_ms) }));
}

/**
 * The answers of a {@link bulkShaped} batch, or `null` when its held ids make it one this path does not take
 * (nothing written then: the claims of `claimAnswer`, the answer of {@link bulkClaimSql}, are undone).
 */
export async function bulkPut(
  c: pg.PoolClient,
  recipient: string,
  reqs: readonly PutRequest[],
  ctx: BulkPutContext,
  claimAnswer: pg.QueryResult | null,
): Promise<Settled<PutResult>[] | null> {
  const keys = reqs.map((r) => r.entry.messageId.toLowerCase());
  const made = claimedOf(claimAnswer);
  const held = new Map<string, MetaRow>();
  for (const row of (await c.query<MetaRow>(`SELECT ${META_COLUMNS} FROM cache_entries e WHERE e.message_key = ANY($1)`, [keys])).rows) {
    held.set(row.message_id.toLowerCase(), row);
  }
  for (const [i, r] of reqs.entries()) {
    const row = held.get(keys[i]!);
    if (row !== undefined && (row.group_id !== null || Number(row.expires_at_ms) <= r.nowMs)) {
      await release(c, made);
      return null;
    }
  }

  const claimed = new Set(made.map(nonceKey));
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
          // and the quota leases' unspent bytes, folded back (`mailbox-leases.ts`)
          const r = await c.query<{ b: Num }>('SELECT cache_fold_leases($1, NULL) AS b', [recipient]);
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
  await release(c, refused);
  return out;
}

/** Deletes the claims `claims` this transaction made (a claim one replaced had expired, so none is lost). */
async function release(c: pg.PoolClient, claims: readonly NonceClaim[]): Promise<void> {
  if (claims.length === 0) return;
  await c.query(
    `DELETE FROM cache_nonces WHERE (scope, did, key_id, nonce, expires_at_ms) IN
       (SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[]))`,
    columns(claims),
  );
}

/** The claims as five arrays (scope, did, key, nonce, expiry), for `unnest`. */
function columns(claims: readonly NonceClaim[]): [string[], string[], string[], string[], number[]] {
  return [claims.map((x) => x.scope), claims.map((x) => x.did), claims.map((x) => x.keyId), claims.map((x) => x.nonce), claims.map((x) => x.expiresAtMs)];
}
