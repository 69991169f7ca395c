/**
 * Field readers for the JSON forms of http-api.md §8.1. Every failure is a DdnError with the form's code and
 * `details: {reason, field}` where `field` is a path such as `policy.ruleset[0].action.steps[1].targets`.
 */
import { DdnError, type ErrorCode } from '../../base/errors.js';
import { utf8Length } from '../../base/bytes.js';

export type JsonRecord = Record<string, unknown>;

export class FieldReader {
  constructor(private readonly code: ErrorCode) {}

  fail(field: string, reason: string, message?: string): never {
    throw new DdnError(this.code, message ?? `${field}: ${reason.replace(/_/g, ' ')}`, { reason, field });
  }

  /** A JSON object whose keys are all in `allowed` (when given); an unknown key fails with `unknown_key`. */
  object(v: unknown, field: string, allowed?: readonly string[]): JsonRecord {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) this.fail(field, 'invalid_field', `${field} must be an object`);
    const o = v as JsonRecord;
    if (allowed) {
      for (const k of Object.keys(o)) if (!allowed.includes(k)) this.fail(join(field, k), 'unknown_key', `unknown key ${join(field, k)}`);
    }
    return o;
  }

  array(v: unknown, field: string, max: number, reason = 'invalid_field'): unknown[] {
    if (!Array.isArray(v)) this.fail(field, 'invalid_field', `${field} must be an array`);
    if (v.length > max) this.fail(field, reason, `${field} holds at most ${max} items`);
    return v;
  }

  /** A string of at most `maxBytes` UTF-8 bytes. */
  string(v: unknown, field: string, maxBytes: number, reason = 'invalid_field'): string {
    if (typeof v !== 'string') this.fail(field, 'invalid_field', `${field} must be a string`);
    if (utf8Length(v) > maxBytes) this.fail(field, reason, `${field} is longer than ${maxBytes} bytes`);
    return v;
  }

  /** An integer in `[min, max]`. */
  integer(v: unknown, field: string, min: number, max: number, reason = 'invalid_field'): number {
    if (typeof v !== 'number' || !Number.isInteger(v)) this.fail(field, 'invalid_field', `${field} must be an integer`);
    if (v < min || v > max) this.fail(field, reason, `${field} must be between ${min} and ${max}`);
    return v;
  }

  /** A u64 given as a JSON safe integer or a decimal string. */
  u64(v: unknown, field: string): bigint {
    if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return BigInt(v);
    if (typeof v === 'string' && /^(0|[1-9][0-9]{0,19})$/.test(v) && BigInt(v) < 1n << 64n) return BigInt(v);
    return this.fail(field, 'invalid_field', `${field} must be a u64 (decimal string or integer)`);
  }

  /** One of the listed names. */
  oneOf<T extends string>(v: unknown, field: string, names: readonly T[]): T {
    if (typeof v !== 'string' || !(names as readonly string[]).includes(v)) {
      this.fail(field, 'invalid_field', `${field} must be one of ${names.join(', ')}`);
    }
    return v as T;
  }
}

export function join(field: string, key: string | number): string {
  return typeof key === 'number' ? `${field}[${key}]` : field ? `${field}.${key}` : key;
}

/** `undefined` for an absent key, `null` kept distinct. */
export function has(o: JsonRecord, key: string): boolean {
  return Object.hasOwn(o, key) && o[key] !== undefined;
}
