/**
 * The timing checks every signed proof shares (http-api.md §11.4 steps 2–3): Cache retrieval proofs and live-session
 * proofs at the Relay. Pure: `now` and the skew are parameters.
 */
import { DdnError } from '../base/errors.js';
import { parseTimestampMs } from '../codec/timestamp.js';

const NONCE_RE = /^[\x20-\x7e]{1,128}$/;

/**
 * `X-Timestamp` parses (`invalid_proof_header`) and lies within ± skew of now (403 `proof_timestamp_out_of_window`);
 * `X-Nonce` is 1–128 printable ASCII characters. Returns the timestamp in ms.
 */
export function checkProofTiming(proof: { timestamp: string; nonce: string }, nowMs: number, skewSeconds: number): number {
  const tsMs = parseTimestampMs(proof.timestamp);
  if (tsMs === undefined) {
    throw new DdnError('invalid_proof_header', 'X-Timestamp is not ISO-8601, epoch ms or epoch s', { header: 'X-Timestamp' });
  }
  if (Math.abs(tsMs - nowMs) > skewSeconds * 1000) {
    throw new DdnError('proof_timestamp_out_of_window', `proof timestamp is more than ${skewSeconds} s from now`, {
      header: 'X-Timestamp',
    });
  }
  if (!NONCE_RE.test(proof.nonce)) {
    throw new DdnError('invalid_proof_header', 'X-Nonce must be 1 to 128 printable ASCII characters', { header: 'X-Nonce' });
  }
  return tsMs;
}
