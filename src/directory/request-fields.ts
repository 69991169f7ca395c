/**
 * Field parsers for Directory request bodies (http-api.md §0.3, §1.2). Each takes an untrusted JSON value and
 * returns the typed value or throws a `DdnError` with the exact code; `details.field` names the field.
 */
import { parseBinary } from '../base/bytes.js';
import { DdnError, type ErrorCode } from '../base/errors.js';
import { isJsonObject } from '../base/guards.js';

/** Largest `u64`, 2^64 - 1. */
export const U64_MAX = (1n << 64n) - 1n;

const DECIMAL_RE = /^[0-9]+$/;
const ISO_RE = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:[Zz]|([+-])(\d{2}):?(\d{2}))$/;

function fieldOf(body: unknown, field: string): unknown {
  return isJsonObject(body) && Object.hasOwn(body, field) ? body[field] : undefined;
}

/** The string `body[field]`; missing or not a string → `invalid_request`. */
export function requireString(body: unknown, field: string): string {
  const v = fieldOf(body, field);
  if (typeof v === 'string') return v;
  throw new DdnError('invalid_request', v === undefined ? `missing field "${field}"` : `field "${field}" must be a string`, { field });
}

/** The string `body[field]`, or `undefined` when missing or `null`; any other type → `invalid_request`. */
export function optionalString(body: unknown, field: string): string | undefined {
  const v = fieldOf(body, field);
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'string') return v;
  throw new DdnError('invalid_request', `field "${field}" must be a string`, { field });
}

/** A decimal string (digits only) or a safe non-negative JSON integer within `u64`; else `undefined`. */
function toU64(value: unknown): bigint | undefined {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 0 ? BigInt(value) : undefined;
  if (typeof value !== 'string' || !DECIMAL_RE.test(value)) return undefined;
  const digits = value.replace(/^0+(?=.)/, '');
  if (digits.length > 20) return undefined;
  const n = BigInt(digits);
  return n <= U64_MAX ? n : undefined;
}

/**
 * A `u64` carried as a decimal string (no sign) or a safe JSON integer (§0.3), e.g. a nonce. Failure → `code`
 * (default `invalid_nonce`).
 */
export function parseU64Field(value: unknown, field: string, code: ErrorCode = 'invalid_nonce'): bigint {
  const n = toU64(value);
  if (n !== undefined) return n;
  throw new DdnError(code, `"${field}" must be a decimal u64 string`, { field });
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** ISO-8601 with `Z` or an offset → Unix ms (fraction truncated to ms); `undefined` when malformed. */
function isoToMs(s: string): bigint | undefined {
  const m = ISO_RE.exec(s);
  if (m === null) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  const millis = m[7] === undefined ? 0 : Number(m[7].slice(0, 3).padEnd(3, '0'));
  let offsetMinutes = 0;
  if (m[8] !== undefined) {
    const oh = Number(m[9]);
    const om = Number(m[10]);
    if (oh > 23 || om > 59) return undefined;
    offsetMinutes = (m[8] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day);
  d.setUTCHours(hour, minute, second, millis);
  const ms = d.getTime() - offsetMinutes * 60_000;
  return ms >= 0 ? BigInt(ms) : undefined;
}

/**
 * `valid_until`: the product spec's u64 of Unix ms, as a decimal string or a safe JSON integer (§0.3). With
 * `acceptIso` (profile `openpayload`, whose deployed persona client sends ISO) also an ISO-8601 timestamp with `Z` or
 * an offset (fractional seconds truncated to ms). Failure → `invalid_valid_until`.
 */
export function parseValidUntil(value: unknown, acceptIso: boolean): bigint {
  const n = toU64(value) ?? (acceptIso && typeof value === 'string' ? isoToMs(value) : undefined);
  if (n !== undefined) return n;
  const forms = acceptIso ? 'decimal milliseconds or ISO-8601' : 'decimal milliseconds (a u64)';
  throw new DdnError('invalid_valid_until', `"valid_until" must be ${forms}`, { field: 'valid_until' });
}

/**
 * A signature (§0.3): `0x`-hex, standard or URL-safe Base64, decoding to exactly 64 bytes. Failure →
 * `invalid_signature_encoding`.
 */
export function parseSignature(value: unknown, field = 'signature'): Uint8Array {
  const bytes = typeof value === 'string' ? parseBinary(value) : undefined;
  if (bytes !== undefined && bytes.length === 64) return bytes;
  throw new DdnError('invalid_signature_encoding', `"${field}" must be 64 bytes as 0x-hex or Base64`, { field });
}

/**
 * A `canonical_payload` (§0.3): non-empty `0x`-hex, standard or URL-safe Base64 → its bytes. Failure →
 * `invalid_canonical_payload`. Strict decoding as the route's payload type is the caller's job.
 */
export function parseCanonicalPayload(value: unknown, field = 'canonical_payload'): Uint8Array {
  const bytes = typeof value === 'string' ? parseBinary(value) : undefined;
  if (bytes !== undefined && bytes.length > 0) return bytes;
  throw new DdnError('invalid_canonical_payload', `"${field}" must be 0x-hex or Base64`, { field });
}
