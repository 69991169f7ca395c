/**
 * Nonce claims keyed by 16 bytes in the SQLite stores (the Cache's `cache_nonce_keys`, the Relay's
 * `relay_nonce_keys`) instead of their four texts, ~130 bytes a row: a claim lands on a random page of the table
 * either way, and with rows that long the pages of a few minutes of nonces outgrow the page cache, so every commit
 * of a batch of claims reads and rewrites pages several times over.
 */
import { createHash } from 'node:crypto';
import type { NonceClaim } from '../../ports/nonce-registry.js';
import type { SqliteDb } from './database.js';

/**
 * The stored key of a nonce claim: the first 16 bytes of SHA-256 over its scope, DID, key id and nonce (as a JSON
 * array, so no two claims share a text). A replay has the same four and so the same key; two different claims
 * sharing a key (a collision, 2^64 work to find on purpose) would only refuse the second as replayed.
 */
export function nonceKey(c: Pick<NonceClaim, 'scope' | 'did' | 'keyId' | 'nonce'>): Buffer {
  return createHash('sha256')
    .update(JSON.stringify([c.scope, c.did, c.keyId, c.nonce]))
    .digest()
    .subarray(0, 16);
}

/**
 * A migration step: the claims of `from` (columns scope, did, key_id, nonce, expires_at_ms) move to `to` (key,
 * expires_at_ms) under their {@link nonceKey}, and `from` is dropped — so an upgrade opens no replay window.
 */
export function carryNonceClaims(db: SqliteDb, from: string, to: string): void {
  db.function('ddn_nonce_key', { deterministic: true }, (scope, did, keyId, nonce) =>
    nonceKey({ scope: String(scope), did: String(did), keyId: String(keyId), nonce: String(nonce) }),
  );
  db.exec(`INSERT INTO ${to} (key, expires_at_ms)
    SELECT ddn_nonce_key(scope, did, key_id, nonce), expires_at_ms FROM ${from} WHERE true
    ON CONFLICT (key) DO UPDATE SET expires_at_ms = max(expires_at_ms, excluded.expires_at_ms);
    DROP TABLE ${from};`);
}
