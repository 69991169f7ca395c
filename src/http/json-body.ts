/** Request body decoding (http-api.md §0.3): JSON objects only, `application/json` only, UTF-8 only. */
import { asBuffer } from '../base/bytes.js';
import { isJsonObject } from '../base/guards.js';
import { DdnError } from '../base/errors.js';
import { exceedsJsonDepth, MAX_JSON_DEPTH } from './json-depth.js';
import { elideLongStrings } from './large-json.js';

/** A parsed JSON object body. */
export type JsonObject = Record<string, unknown>;

/**
 * A JSON object whose fields `K` a parser reads, each `unknown` until it checks it. Every named field is a member of
 * the type (`unknown` also stands for absent), so an object that lacks one of `K` in its type is not a `Reads<K>`:
 * a route's body typed by its schema (src/http/route.ts `Unchecked`) passes only where the schema declares `K`.
 */
export type Reads<K extends string> = { readonly [F in K]: unknown };

const fatalUtf8 = new TextDecoder('utf-8', { fatal: true });
const SUSPICIOUS_RE = /__proto__|constructor|\\u/;
/** Bodies from this size on are parsed with their long Base64-like values read from the bytes (`large-json.ts`). */
const LARGE_BODY_BYTES = 1024 * 1024;

/** True iff the media type of a `Content-Type` value is `application/json` (parameters allowed). */
export function isJsonContentType(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const semi = contentType.indexOf(';');
  const mediaType = (semi < 0 ? contentType : contentType.slice(0, semi)).trim().toLowerCase();
  return mediaType === 'application/json';
}

/**
 * Rejects what would poison prototypes if the object were later merged with `Object.assign`: a `__proto__`
 * key anywhere, or a `constructor` object with a `prototype` key (the rules of fastify's secure-json-parse).
 */
function assertNoPoison(root: unknown): void {
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const v = stack.pop();
    if (Array.isArray(v)) {
      for (const item of v) stack.push(item);
      continue;
    }
    if (!isJsonObject(v)) continue;
    const obj = v;
    for (const key of Object.keys(obj)) {
      const child = obj[key];
      if (key === '__proto__') throw new DdnError('invalid_json', 'body contains a forbidden "__proto__" key');
      if (key === 'constructor' && typeof child === 'object' && child !== null && Object.hasOwn(child, 'prototype')) {
        throw new DdnError('invalid_json', 'body contains a forbidden "constructor.prototype" key');
      }
      stack.push(child);
    }
  }
}

/** The 400 of a JSON text nested deeper than {@link MAX_JSON_DEPTH}. */
export function tooDeepError(): DdnError {
  return new DdnError('invalid_json', `JSON nests deeper than ${MAX_JSON_DEPTH} levels`, { reason: 'too_deep', max_depth: MAX_JSON_DEPTH });
}

/**
 * Decodes a request body. No body (absent or zero bytes) → `undefined`. Otherwise the media type must be
 * `application/json` (415 `unsupported_media_type`) and the bytes a UTF-8 JSON object (400 `invalid_json`) nested
 * at most {@link MAX_JSON_DEPTH} deep (400 `invalid_json`, `details.reason` `too_deep`), checked before parsing.
 */
export function parseJsonBody(rawBody: Uint8Array | undefined, contentType: string | undefined): JsonObject | undefined {
  if (rawBody === undefined || rawBody.length === 0) return undefined;
  if (!isJsonContentType(contentType)) {
    throw new DdnError('unsupported_media_type', 'request body must be sent as Content-Type: application/json');
  }
  if (exceedsJsonDepth(rawBody)) throw tooDeepError();
  let value: unknown;
  try {
    const elided = rawBody.length >= LARGE_BODY_BYTES ? elideLongStrings(asBuffer(rawBody)) : undefined;
    const text = fatalUtf8.decode(elided?.text ?? rawBody);
    value = JSON.parse(text);
    if (typeof value === 'object' && value !== null && SUSPICIOUS_RE.test(text)) assertNoPoison(value);
    if (elided !== undefined) value = elided.restore(value);
  } catch (err) {
    if (err instanceof DdnError) throw err;
    throw new DdnError('invalid_json', 'request body is not valid UTF-8 JSON');
  }
  if (!isJsonObject(value)) throw new DdnError('invalid_json', 'request body must be a JSON object');
  return value;
}
