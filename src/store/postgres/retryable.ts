/**
 * Which PostgreSQL failures of a write transaction are cured by running it again: it lost a race and wrote
 * nothing. 40001 `serialization_failure` (a SERIALIZABLE conflict), 40P01 `deadlock_detected`, and 23505
 * `unique_violation` (two transactions inserted the same key; the retry sees the other's row and takes the
 * "already there" path). Lost connections and pool timeouts are not retried: they are storage failures.
 * The stores run the attempts with {@link retry} (src/base/retry.ts).
 */
export const RETRYABLE_SQLSTATES: ReadonlySet<string> = new Set(['40001', '40P01', '23505']);

/** The SQLSTATE (or node error code) `err` carries, if any. */
export function pgErrorCode(err: unknown): string | undefined {
  const code = err instanceof Error ? (err as { code?: unknown }).code : undefined;
  return typeof code === 'string' ? code : undefined;
}

/** True when `err` is a lost race ({@link RETRYABLE_SQLSTATES}) after which the transaction is run again. */
export function isRetryablePgError(err: unknown): boolean {
  const code = pgErrorCode(err);
  return code !== undefined && RETRYABLE_SQLSTATES.has(code);
}
