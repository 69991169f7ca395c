/**
 * JSON object texts handled as bytes: request bodies are stored and forwarded as received — never
 * re-serialised — so a 25 MiB payload is not parsed into a response object again (http-api.md §10.8, §11.5).
 */

function isJsonSpace(b: number): boolean {
  return b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d;
}

/**
 * The JSON object text of a parsed request body, without a UTF-8 BOM or surrounding whitespace: a view of
 * `raw`, not a copy. `raw` must hold one JSON object (the body parser accepted it).
 */
export function trimJsonObject(raw: Buffer): Buffer {
  let start = raw.length >= 3 && raw[0] === 0xef && raw[1] === 0xbb && raw[2] === 0xbf ? 3 : 0;
  let end = raw.length;
  while (start < end && isJsonSpace(raw[start])) start++;
  while (end > start && isJsonSpace(raw[end - 1])) end--;
  if (end - start < 2 || raw[start] !== 0x7b || raw[end - 1] !== 0x7d) throw new TypeError('not a JSON object text');
  return raw.subarray(start, end);
}
