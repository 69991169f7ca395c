/**
 * A bound on the memory of long transfers. Each chunk a command decrypts passes through a few MiB of buffers
 * outside the JavaScript heap (the HTTP body, Base64 decoding, the plaintext), which V8 reclaims only once ~64 MiB
 * of them accumulated; a full collection every few chunks keeps a receive's peak at a few chunks whatever the
 * file size (src/base/collector.ts).
 */
import { collector } from '../base/collector.js';

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
