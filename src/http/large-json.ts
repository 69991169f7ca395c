/**
 * Parsing a large JSON body without holding its text twice. `JSON.parse` needs the whole body as one string and
 * copies every string value out of it, so a 25 MiB envelope would be in memory three times (bytes, text,
 * values). Here long string values made only of printable ASCII without escapes (Base64 payloads) are cut out
 * of the text before parsing, replaced by short placeholders, and put back as strings read straight from the
 * bytes: the body is then held as its bytes plus its values. The result is the object `JSON.parse` gives.
 */
import { isJsonObject } from '../base/guards.js';
import { randomBytes } from 'node:crypto';

/** String values at least this long are read from the bytes directly. */
const ELIDE_MIN_BYTES = 64 * 1024;
/** Printable ASCII but `"` and `\`: a JSON string made of these means exactly its bytes. */
const PLAIN_ASCII_RE = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

function isJsonSpace(b: number | undefined): boolean {
  return b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d;
}

/** A long plain string value of the body: its content's byte range. */
interface Elided {
  start: number;
  end: number;
  value: string;
}

/** The long plain string values of `raw` (never object keys), in order; `undefined` when there are none. */
function findLongValues(raw: Buffer): Elided[] | undefined {
  const found: Elided[] = [];
  // the next backslash at or after the scan position (-1: none left); the scan only moves forward
  let backslash = raw.indexOf(BACKSLASH);
  let i = raw.indexOf(QUOTE);
  while (i >= 0) {
    // i is an opening quote outside any string: find its closing quote, stepping over escapes
    let j = i + 1;
    let escaped = false;
    for (;;) {
      const q = raw.indexOf(QUOTE, j);
      if (q < 0) return found.length > 0 ? found : undefined; // unterminated: JSON.parse reports it
      if (backslash >= 0 && backslash < j) backslash = raw.indexOf(BACKSLASH, j);
      if (backslash >= 0 && backslash < q) {
        escaped = true;
        j = backslash + 2;
        continue;
      }
      j = q;
      break;
    }
    if (!escaped && j - i - 1 >= ELIDE_MIN_BYTES) {
      let k = j + 1;
      while (isJsonSpace(raw[k])) k++;
      if (raw[k] !== 0x3a) {
        const value = raw.toString('latin1', i + 1, j);
        if (PLAIN_ASCII_RE.test(value)) found.push({ start: i + 1, end: j, value });
      }
    }
    i = raw.indexOf(QUOTE, j + 1);
  }
  return found.length > 0 ? found : undefined;
}

/**
 * The body's text with each long plain value replaced by a placeholder, and a function putting the values back
 * into the parsed result. `undefined` when the body has no such value (parse it whole).
 */
export function elideLongStrings(raw: Buffer): { text: Buffer; restore: (parsed: unknown) => unknown } | undefined {
  const values = findLongValues(raw);
  if (values === undefined) return undefined;
  const marker = `\u{E000}ddn-elided-${randomBytes(12).toString('hex')}-`;
  const parts: Buffer[] = [];
  let at = 0;
  values.forEach((v, n) => {
    parts.push(raw.subarray(at, v.start), Buffer.from(`${marker}${n}`, 'utf8'));
    at = v.end;
  });
  parts.push(raw.subarray(at));
  const byMarker = new Map(values.map((v, n) => [`${marker}${n}`, v.value]));
  const restore = (node: unknown): unknown => {
    if (typeof node === 'string') return byMarker.get(node) ?? node;
    if (Array.isArray(node)) {
      for (let n = 0; n < node.length; n++) node[n] = restore(node[n]);
    } else if (isJsonObject(node)) {
      const o = node;
      for (const k of Object.keys(o)) {
        const v = restore(o[k]);
        if (v !== o[k]) o[k] = v;
      }
    }
    return node;
  };
  return { text: Buffer.concat(parts), restore };
}
