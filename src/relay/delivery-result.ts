/**
 * The DeliveryResult (http-api.md §10.5): the body of every Relay response, success and failure alike.
 * `http_status` always equals the HTTP status it is sent with.
 */
import { DdnError, type ErrorCode, type ErrorDetails } from '../base/errors.js';
import type { DeliveryMode, DeliveryResult } from '../wire/relay.js';

export type { DeliveryMode, DeliveryResult } from '../wire/relay.js';

/** The text of each result serialised so far (see {@link deliveryResultText}). */
const texts = new WeakMap<DeliveryResult, string>();

/**
 * The JSON text of `result`, serialised once: an unchunked delivery's result is both answered and remembered
 * (§10.3 step 6), and was stringified for each. The result must not change once its text was taken (nothing
 * changes a result after it was answered or handed to the store).
 */
export function deliveryResultText(result: DeliveryResult): string {
  let text = texts.get(result);
  if (text === undefined) {
    text = JSON.stringify(result);
    texts.set(result, text);
  }
  return text;
}

/** Success codes of the §10.5 table. */
export type SuccessCode = 'delivered' | 'cached' | 'policy_applied' | 'chunk_staged' | 'chunk_set_delivered';

/** What the downstream side of a delivery did (the three attempt fields of §10.5). */
export interface AttemptSummary {
  retryCount: number;
  cacheAttempted: boolean;
  cacheResult: string | null;
}

/** No downstream request was made. */
export const NO_ATTEMPT: Readonly<AttemptSummary> = Object.freeze({ retryCount: 0, cacheAttempted: false, cacheResult: null });

/** A coded failure that also reports the downstream attempts made before it (e.g. 502 after every Cache failed). */
export class DeliveryFailure extends DdnError {
  constructor(
    code: ErrorCode,
    message: string,
    details: ErrorDetails,
    readonly attempts: AttemptSummary,
  ) {
    super(code, message, details);
    this.name = 'DeliveryFailure';
  }
}

/** A successful DeliveryResult (always 202, §10.5 table). */
export function successResult(
  code: SuccessCode,
  mode: Exclude<DeliveryMode, 'failed'>,
  message: string,
  attempts: AttemptSummary,
  details: Record<string, unknown> = {},
): DeliveryResult {
  return {
    success: true,
    delivery_mode: mode,
    http_status: 202,
    code,
    message,
    retry_count: attempts.retryCount,
    cache_attempted: attempts.cacheAttempted,
    cache_result: attempts.cacheResult,
    details,
  };
}

/** The DeliveryResult of a failure: `success: false`, mode `failed`, the code's status, the error's details. */
export function failureResult(err: DdnError): DeliveryResult {
  const attempts = err instanceof DeliveryFailure ? err.attempts : NO_ATTEMPT;
  return {
    success: false,
    delivery_mode: 'failed',
    http_status: err.status,
    code: err.code,
    message: err.message,
    retry_count: attempts.retryCount,
    cache_attempted: attempts.cacheAttempted,
    cache_result: attempts.cacheResult,
    details: { ...(err.details ?? {}) },
  };
}

/**
 * The body of a refusal the Relay's listener makes before any route is known (a connection over a cap,
 * unparseable HTTP, `CONNECT`): the DeliveryResult plus the §0.6 `error` member, so either kind of client reads it.
 */
export function refusalResult(err: DdnError): DeliveryResult & { error: string } {
  return { ...failureResult(err), error: err.code };
}

/** `Retry-After` seconds for a 429/503 result (`details.retry_after_seconds`, at least 1), else undefined. */
export function retryAfterOf(result: DeliveryResult): number | undefined {
  if (result.http_status !== 429 && result.http_status !== 503) return undefined;
  const v = result.details.retry_after_seconds;
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.ceil(v) : 1;
}
