/**
 * Single-use nonces of signed requests: Cache retrieval proofs (http-api.md §11.4 step 9) and node-to-node
 * requests (§10.6). A nonce is refused for as long as the request carrying it could still be valid.
 */

/** One nonce use. `scope` separates the kinds (`proof:<operation>`, `node-request`). */
export interface NonceClaim {
  scope: string;
  did: string;
  keyId: string;
  nonce: string;
  /** Remembered until this instant (epoch ms). */
  expiresAtMs: number;
}

/** Read access to recorded nonces; recording is part of the role's own durable write. */
export interface NonceRegistry {
  /** True iff `claim`'s (scope, did, key id, nonce) is recorded and not yet expired at `nowMs`. */
  isNonceClaimed(claim: NonceClaim, nowMs: number): boolean | Promise<boolean>;
}
