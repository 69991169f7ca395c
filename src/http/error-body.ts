/** Error responses: the §0.6 body shape and the mapping of any thrown value to a `DdnError`. */
import { DdnError } from '../base/errors.js';
import { insufficientStorage, isStorageFailure } from '../base/storage-errors.js';
import type { ErrorBody } from '../wire/errors.js';

export type { ErrorBody };

/** Builds the §0.6 body for `err`. */
export function errorBody(err: DdnError): ErrorBody {
  const body: ErrorBody = { code: err.code, error: err.code, message: err.message };
  if (err.details !== undefined) body.details = err.details;
  return body;
}

/**
 * `err` itself when it is a `DdnError`; a storage that ran out of space (`src/base/storage-errors.ts`) is 507
 * `insufficient_storage`; anything else a generic `internal_error` that reveals nothing of `err`.
 */
export function toDdnError(err: unknown): DdnError {
  if (err instanceof DdnError) return err;
  return isStorageFailure(err) ? insufficientStorage() : new DdnError('internal_error', 'internal error');
}

/**
 * The `Retry-After` value (whole seconds, at least 1) for a 429/503 error: `details.retry_after_seconds` when
 * it is a positive number, else 1 (http-api.md §0.5).
 */
export function retryAfterSeconds(err: DdnError): number {
  const v = err.details?.retry_after_seconds;
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.ceil(v) : 1;
}

/**
 * The `WWW-Authenticate` challenge of a 401 (RFC 9110 §11.6.1: every 401 carries one): `/metrics` asks for its bearer
 * token, a live session for ddn's live-session proof (docs/public-node.md, "The proof"); undefined for other statuses.
 */
export function authenticateChallenge(err: DdnError): string | undefined {
  if (err.status !== 401) return undefined;
  return err.code === 'live_proof_required' ? 'DDN-Live-Proof realm="ddn"' : 'Bearer realm="ddn"';
}
