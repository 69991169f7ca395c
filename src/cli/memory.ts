/**
 * A bound on the memory of long transfers. Each chunk a command decrypts passes through a few MiB of buffers
 * outside the JavaScript heap (the HTTP body, Base64 decoding, the plaintext), which V8 reclaims only once ~64 MiB
 * of them accumulated; a full collection every few chunks keeps a receive's peak at a few chunks whatever the
 * file size. The collector is reached through V8's `--expose-gc` set at run time, once, when first needed.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

let gc: (() => void) | null | undefined;

function collector(): (() => void) | null {
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

/** Calls `collect` after every `everyBytes` bytes passed to the returned function. */
export function memoryBound(everyBytes = 2 * 1_048_576): (bytes: number) => void {
  let since = 0;
  return (bytes) => {
    since += bytes;
    if (since < everyBytes) return;
    since = 0;
    collector()?.();
  };
}
