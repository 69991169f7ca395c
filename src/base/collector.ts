/**
 * V8's full garbage collection, on demand. Buffers outside the JavaScript heap (request bodies, decrypted chunks)
 * are freed only when the objects holding them are collected, and V8 collects when JavaScript allocates — an idle
 * process keeps what a burst left behind. The collector is reached through V8's `--expose-gc`, set at run time,
 * once, when first needed; null where that is refused.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

let gc: (() => void) | null | undefined;

/** The full collection, or null when it cannot be reached. */
export function collector(): (() => void) | null {
  if (gc !== undefined) return gc;
  try {
    setFlagsFromString('--expose-gc');
    const fn = runInNewContext('gc') as unknown;
    gc = typeof fn === 'function' ? (fn as () => void) : null;
  } catch {
    gc = null;
  }
  return gc;
}
