/**
 * The replay check of node requests (http-api.md §10.6) on PostgreSQL, many in one statement: every request
 * reaching a Cache's `/cache/store` or a Relay's `/relay` with a node signature first asks whether its nonce is
 * already claimed (src/shared/node-auth.ts), a read of its own before the request's durable write. Under load that
 * was one autocommit read — one round trip, one parse and plan — per request; here the reads of one event-loop
 * turn (and those arriving while the previous read runs) go as one statement. Not a named one: it is planned at
 * every call on the table's current size, since a plan cached while the table was small joins it by a sequential
 * scan and keeps doing so as it grows (as the findPrior read's did, tried in session 33). The answer is the same
 * as the single read's: a claim is seen once committed, expired claims are not.
 */
import type { NonceClaim } from '../../ports/nonce-registry.js';
import type pg from 'pg';
import { KeyedBatches, settledAll, type BatchLimits } from './keyed-batches.js';

/** The tables holding claimed nonces, each with the primary key (scope, did, key_id, nonce). */
export type NonceTable = 'cache_nonces' | 'relay_nonces';

/** Reads asked together at most (more wait for the next statement). */
const LIMITS: BatchLimits = { maxOps: 256, maxBytes: 1024 * 1024 };

interface Ask {
  claim: NonceClaim;
  nowMs: number;
}

/** The indexes (1-based) of the asks whose nonce is claimed and unexpired at their `nowMs`. */
function statementOf(table: NonceTable): string {
  return `SELECT k.i FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[]) WITH ORDINALITY AS k(scope, did, key_id, nonce, now_ms, i)
            JOIN ${table} n ON n.scope = k.scope AND n.did = k.did AND n.key_id = k.key_id AND n.nonce = k.nonce
           WHERE n.expires_at_ms > k.now_ms`;
}

const STATEMENTS: Record<NonceTable, string> = {
  cache_nonces: statementOf('cache_nonces'),
  relay_nonces: statementOf('relay_nonces'),
};

/** `isNonceClaimed` of a PostgreSQL store, gathered into one statement per batch. */
export class NonceReads {
  private readonly batches: KeyedBatches<Ask, boolean>;

  constructor(db: Pick<pg.Pool, 'query'>, table: NonceTable) {
    const text = STATEMENTS[table];
    this.batches = new KeyedBatches<Ask, boolean>(async (_, asks) => {
      const r = await db.query<{ i: string }>(text, [
        asks.map((a) => a.claim.scope),
        asks.map((a) => a.claim.did),
        asks.map((a) => a.claim.keyId),
        asks.map((a) => a.claim.nonce),
        asks.map((a) => a.nowMs),
      ]);
      const claimed = asks.map(() => false);
      for (const row of r.rows) claimed[Number(row.i) - 1] = true;
      return settledAll(claimed);
    }, LIMITS);
  }

  /** Whether `claim`'s nonce is claimed and unexpired at `nowMs`. */
  isClaimed(claim: NonceClaim, nowMs: number): Promise<boolean> {
    return this.batches.submit('', { claim, nowMs }, claim.nonce.length + claim.did.length);
  }
}
