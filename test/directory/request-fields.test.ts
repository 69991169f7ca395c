import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DdnError } from '../../src/base/errors.js';
import {
  U64_MAX,
  optionalString,
  parseCanonicalPayload,
  parseSignature,
  parseU64Field,
  parseValidUntil,
  requireString,
} from '../../src/directory/request-fields.js';

function throwsCode(fn: () => unknown, code: string, field?: string): void {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof DdnError, `expected DdnError ${code}, got ${String(caught)}`);
  assert.equal(caught.code, code);
  if (field !== undefined) assert.equal(caught.details?.field, field);
}

describe('requireString / optionalString', () => {
  it('returns present strings (including empty)', () => {
    assert.equal(requireString({ did: 'did:a:b' }, 'did'), 'did:a:b');
    assert.equal(requireString({ did: '' }, 'did'), '');
    assert.equal(optionalString({ note: 'x' }, 'note'), 'x');
  });

  it('missing or not a string → invalid_request with details.field', () => {
    throwsCode(() => requireString({}, 'did'), 'invalid_request', 'did');
    throwsCode(() => requireString({ did: 5 }, 'did'), 'invalid_request', 'did');
    throwsCode(() => requireString({ did: null }, 'did'), 'invalid_request', 'did');
    throwsCode(() => requireString(undefined, 'did'), 'invalid_request', 'did');
    throwsCode(() => requireString(['did'], '0'), 'invalid_request', '0');
  });

  it('does not read inherited properties', () => {
    throwsCode(() => requireString({}, 'toString'), 'invalid_request', 'toString');
    assert.equal(optionalString({}, 'constructor'), undefined);
  });

  it('optionalString: missing or null → undefined, other types → invalid_request', () => {
    assert.equal(optionalString({}, 'note'), undefined);
    assert.equal(optionalString({ note: null }, 'note'), undefined);
    assert.equal(optionalString(undefined, 'note'), undefined);
    throwsCode(() => optionalString({ note: 1 }, 'note'), 'invalid_request', 'note');
    throwsCode(() => optionalString({ note: {} }, 'note'), 'invalid_request', 'note');
  });
});

describe('parseU64Field', () => {
  it('accepts decimal strings and safe non-negative integers', () => {
    assert.equal(parseU64Field('0', 'nonce'), 0n);
    assert.equal(parseU64Field('42', 'nonce'), 42n);
    assert.equal(parseU64Field('007', 'nonce'), 7n);
    assert.equal(parseU64Field('18446744073709551615', 'nonce'), U64_MAX);
    assert.equal(parseU64Field(5, 'nonce'), 5n);
    assert.equal(parseU64Field(Number.MAX_SAFE_INTEGER, 'nonce'), 9007199254740991n);
  });

  for (const bad of ['', '-1', '+1', ' 1', '1 ', '1.0', '1e3', '0x10', '18446744073709551616', '99999999999999999999999']) {
    it(`rejects the string ${JSON.stringify(bad)} with invalid_nonce`, () => {
      throwsCode(() => parseU64Field(bad, 'alias_nonce'), 'invalid_nonce', 'alias_nonce');
    });
  }

  for (const bad of [-1, 1.5, Number.MAX_SAFE_INTEGER + 1, Number.NaN, Infinity, null, undefined, true, {}, 1n]) {
    it(`rejects ${String(bad)} (${typeof bad}) with invalid_nonce`, () => {
      throwsCode(() => parseU64Field(bad, 'nonce'), 'invalid_nonce', 'nonce');
    });
  }

  it('uses the given code', () => {
    throwsCode(() => parseU64Field('x', 'revision', 'invalid_request'), 'invalid_request', 'revision');
  });
});

describe('parseValidUntil', () => {
  it('accepts decimal milliseconds and safe integers', () => {
    assert.equal(parseValidUntil('1784203200000', true), 1784203200000n);
    assert.equal(parseValidUntil(1784203200000, true), 1784203200000n);
    assert.equal(parseValidUntil('18446744073709551615', true), U64_MAX);
  });

  it('accepts decimal milliseconds in both modes; ISO-8601 only where deployed-client forms are accepted', () => {
    assert.equal(parseValidUntil('1784203200000', false), 1784203200000n);
    assert.equal(parseValidUntil(1784203200000, false), 1784203200000n);
    for (const iso of ['2026-07-16T12:00:00Z', '2026-07-16T14:00:00+02:00']) {
      throwsCode(() => parseValidUntil(iso, false), 'invalid_valid_until', 'valid_until');
    }
  });

  it('accepts ISO-8601 with Z or an offset, truncating to milliseconds', () => {
    const base = BigInt(Date.UTC(2026, 6, 16, 12, 0, 0));
    assert.equal(parseValidUntil('2026-07-16T12:00:00Z', true), base);
    assert.equal(parseValidUntil('2026-07-16T12:00:00.000Z', true), base);
    assert.equal(parseValidUntil('2026-07-16T12:00:00.5Z', true), base + 500n);
    assert.equal(parseValidUntil('2026-07-16T12:00:00.123999Z', true), base + 123n);
    assert.equal(parseValidUntil('2026-07-16T14:00:00+02:00', true), base);
    assert.equal(parseValidUntil('2026-07-16T07:30:00-04:30', true), base);
    assert.equal(parseValidUntil('2026-07-16T12:00:00.250+00:00', true), base + 250n);
    assert.equal(parseValidUntil('2026-07-16T12:00:00+0000', true), base);
    assert.equal(parseValidUntil('2028-02-29T00:00:00Z', true), BigInt(Date.UTC(2028, 1, 29)));
    assert.equal(parseValidUntil('1970-01-01T00:00:00Z', true), 0n);
  });

  for (const bad of [
    '',
    '-1',
    '+5',
    '1.5',
    '2026-07-16T12:00:00',
    '2026-07-16 12:00:00Z',
    '2026-07-16',
    '2026-07-16T12:00Z',
    '2026-13-01T00:00:00Z',
    '2026-02-29T00:00:00Z',
    '2026-04-31T00:00:00Z',
    '2026-07-16T24:00:00Z',
    '2026-07-16T12:60:00Z',
    '2026-07-16T12:00:60Z',
    '2026-07-16T12:00:00+24:00',
    '2026-07-16T12:00:00.Z',
    '1969-12-31T23:59:59Z',
    'tomorrow',
    '18446744073709551616',
  ]) {
    it(`rejects ${JSON.stringify(bad)} with invalid_valid_until`, () => {
      throwsCode(() => parseValidUntil(bad, true), 'invalid_valid_until', 'valid_until');
    });
  }

  for (const bad of [-1, 0.5, Number.MAX_SAFE_INTEGER + 1, null, undefined, {}]) {
    it(`rejects ${String(bad)} with invalid_valid_until`, () => {
      throwsCode(() => parseValidUntil(bad, true), 'invalid_valid_until', 'valid_until');
    });
  }
});

describe('parseSignature', () => {
  const sig = new Uint8Array(64).map((_, i) => (i * 7 + 250) & 0xff);
  const hex = '0x' + Buffer.from(sig).toString('hex');
  const b64 = Buffer.from(sig).toString('base64');
  const b64url = Buffer.from(sig).toString('base64url');

  it('accepts 0x-hex, standard Base64 and URL-safe Base64 (padding optional)', () => {
    assert.deepEqual(parseSignature(hex), sig);
    assert.deepEqual(parseSignature(b64), sig);
    assert.deepEqual(parseSignature(b64.replace(/=+$/, '')), sig);
    assert.deepEqual(parseSignature(b64url), sig);
    assert.ok(b64.includes('+') || b64.includes('/'), 'fixture exercises the alphabets');
  });

  for (const [name, bad] of [
    ['63 bytes hex', '0x' + 'ab'.repeat(63)],
    ['65 bytes hex', '0x' + 'ab'.repeat(65)],
    ['63 bytes base64', Buffer.alloc(63).toString('base64')],
    ['not base64', '!!!!'],
    ['empty', ''],
    ['number', 5],
    ['null', null],
  ] as const) {
    it(`rejects ${name} with invalid_signature_encoding`, () => {
      throwsCode(() => parseSignature(bad), 'invalid_signature_encoding', 'signature');
    });
  }

  it('names a custom field', () => {
    throwsCode(() => parseSignature('', 'controller_signature'), 'invalid_signature_encoding', 'controller_signature');
  });
});

describe('parseCanonicalPayload', () => {
  it('accepts 0x-hex and Base64', () => {
    assert.deepEqual(parseCanonicalPayload('0x0102ff'), new Uint8Array([1, 2, 255]));
    assert.deepEqual(parseCanonicalPayload('AQL/'), new Uint8Array([1, 2, 255]));
    assert.deepEqual(parseCanonicalPayload('AQL_'), new Uint8Array([1, 2, 255]));
    assert.deepEqual(parseCanonicalPayload('AQI'), new Uint8Array([1, 2]));
  });

  for (const [name, bad] of [
    ['empty', ''],
    ['not base64', 'a*b'],
    ['bad length', 'A'],
    ['number', 12],
    ['missing', undefined],
  ] as const) {
    it(`rejects ${name} with invalid_canonical_payload`, () => {
      throwsCode(() => parseCanonicalPayload(bad), 'invalid_canonical_payload', 'canonical_payload');
    });
  }
});
