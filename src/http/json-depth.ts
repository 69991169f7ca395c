/**
 * The nesting bound of every JSON text the node accepts (request bodies, envelopes a Relay stores in its own
 * Cache): checked over the bytes, iteratively, before `JSON.parse` or any recursive code (canonical JSON,
 * hashing, validation walks) sees the value. An envelope 5,000 objects deep would otherwise overflow the stack
 * of those recursive walks and answer 500.
 */
import { asBuffer } from '../base/bytes.js';

/** Deepest accepted nesting of objects and arrays; `{}` is depth 1, `{"a":[{}]}` depth 3. */
export const MAX_JSON_DEPTH = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;

/**
 * True iff `raw` nests objects and arrays deeper than `maxDepth`. Brackets inside strings do not count; string
 * contents are skipped with `indexOf` (a Base64 payload costs no per-byte work). Malformed text is left to the
 * parser: the scan only answers "deeper than the bound" for what it reads as brackets.
 */
export function exceedsJsonDepth(raw: Uint8Array, maxDepth: number = MAX_JSON_DEPTH): boolean {
  const bytes = asBuffer(raw);
  let depth = 0;
  const n = bytes.length;
  for (let i = 0; i < n; i++) {
    const b = bytes[i];
    if (b === QUOTE) {
      // the closing quote: the next one not preceded by an odd run of backslashes
      let q = bytes.indexOf(QUOTE, i + 1);
      while (q >= 0) {
        let k = q - 1;
        while (bytes[k] === BACKSLASH) k--;
        if ((q - 1 - k) % 2 === 0) break;
        q = bytes.indexOf(QUOTE, q + 1);
      }
      if (q < 0) return false;
      i = q;
    } else if (b === OPEN_OBJECT || b === OPEN_ARRAY) {
      if (++depth > maxDepth) return true;
    } else if (b === CLOSE_OBJECT || b === CLOSE_ARRAY) {
      depth--;
    }
  }
  return false;
}
