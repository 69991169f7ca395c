/** DID grammar (ledger-rules.md §3.1) and alias normalisation (§3.6). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { didGrammarError, didOfUrl, generateDid, isDid, MAX_DID_BYTES } from '../../src/protocol/did.js';
import { normalizeAlias } from '../../src/protocol/alias.js';
import { makeProfile, PLATFORM } from '../../src/protocol/profile.js';

const B58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
const addr = (n: number): string => Array.from({ length: n }, (_v, i) => B58[i % B58.length]).join('');

test('DID grammar: accepted examples', () => {
  const ok = [
    'did:platform:entity1111111111',
    'did:platform:8DfbjXLth7APvt3qQPgtf',
    'did:openpayload:1111111111111111',
    'did:x:' + addr(16),
    'did:p:' + addr(96),
    'did:' + 'a'.repeat(32) + ':' + addr(91), // exactly 128 bytes
    'did:0:' + B58.slice(0, 16),
    'did:abc123:' + B58,
  ];
  for (const d of ok) {
    assert.equal(didGrammarError(d), null, d);
    assert.ok(isDid(d), d);
  }
  assert.equal(('did:' + 'a'.repeat(32) + ':' + addr(91)).length, MAX_DID_BYTES);
});

test('DID grammar: rejected examples of §3.1 and their error names', () => {
  const bad: [string, 'InvalidDidFormat' | 'DidTooLong'][] = [
    ['did:Platform:' + addr(20), 'InvalidDidFormat'], // uppercase platform
    ['did:platform:device:' + addr(20), 'InvalidDidFormat'], // three segments
    ['did:platform:' + addr(15) + '0', 'InvalidDidFormat'], // address containing 0
    ['did:platform:' + addr(15) + 'O', 'InvalidDidFormat'],
    ['did:platform:' + addr(15) + 'I', 'InvalidDidFormat'],
    ['did:platform:' + addr(15) + 'l', 'InvalidDidFormat'],
    ['did:platform:short', 'InvalidDidFormat'],
    ['did:platform:' + addr(15), 'InvalidDidFormat'], // 15 characters
    ['did:' + 'a'.repeat(33) + ':' + addr(16), 'InvalidDidFormat'], // 33-character platform
    ['did:p:' + addr(97), 'InvalidDidFormat'], // 97-character address, 103 bytes
    ['did::' + addr(16), 'InvalidDidFormat'],
    ['DID:platform:' + addr(16), 'InvalidDidFormat'],
    ['did:platform:' + addr(16) + '\n', 'InvalidDidFormat'],
    [' did:platform:' + addr(16), 'InvalidDidFormat'],
    ['did:plat_form:' + addr(16), 'InvalidDidFormat'],
    ['did:platform:' + addr(16) + '#root', 'InvalidDidFormat'],
    ['did:' + 'a'.repeat(32) + ':' + addr(92), 'DidTooLong'], // 129 bytes, otherwise well-formed
    ['x'.repeat(129), 'DidTooLong'],
    ['did:platform:' + 'é'.repeat(58), 'DidTooLong'], // 129 bytes in UTF-8, 71 characters
  ];
  for (const [d, err] of bad) {
    assert.equal(didGrammarError(d), err, d);
    assert.equal(isDid(d), false, d);
  }
});

test('generated DIDs: did:<p>: + base58 of 16 bytes, 33–35 bytes, valid grammar', () => {
  const zero = generateDid(PLATFORM, new Uint8Array(16));
  assert.equal(zero, 'did:platform:' + '1'.repeat(16), 'each leading zero byte is a 1');
  const max = generateDid(PLATFORM, new Uint8Array(16).fill(0xff));
  assert.equal(max.length, 13 + 22);
  assert.ok(isDid(max));
  const op = generateDid(makeProfile('openpayload'));
  assert.ok(op.startsWith('did:openpayload:'));
  assert.ok(isDid(op));
  assert.notEqual(generateDid(PLATFORM), generateDid(PLATFORM));
  assert.equal(didOfUrl('did:platform:x#root'), 'did:platform:x');
  assert.equal(didOfUrl('did:platform:x'), 'did:platform:x');
});

test('alias normalisation: trimming and lowercasing (§3.6)', () => {
  const ok: [string, string][] = [
    [' SalesGroup ', 'salesgroup'],
    ['\t\n\f\rMiXeD_1.2-3\r\n', 'mixed_1.2-3'],
    ['a', 'a'],
    ['_', '_'],
    ['  ' + 'A'.repeat(64) + '  ', 'a'.repeat(64)],
  ];
  for (const [raw, norm] of ok) assert.deepEqual(normalizeAlias(raw), { ok: true, alias: norm }, JSON.stringify(raw));
});

test('alias normalisation: InvalidAlias and AliasTooLong', () => {
  const invalid = [
    '',
    '   ',
    '\t\r\n\f',
    'a b', // space inside
    'sales@group',
    'sales#group',
    'café', // non-ASCII
    '\u212A', // Kelvin sign: lowercases to ASCII "k" but is not ASCII
    '\u0130', // İ
    '\vabc', // vertical tab is not trimmed
    'abc\u00a0', // NBSP is not ASCII whitespace
    'a/b',
    'a+b',
    '\x00',
  ];
  for (const raw of invalid) assert.deepEqual(normalizeAlias(raw), { ok: false, error: 'InvalidAlias' }, JSON.stringify(raw));
  assert.deepEqual(normalizeAlias('a'.repeat(65)), { ok: false, error: 'AliasTooLong' });
  assert.deepEqual(normalizeAlias(' ' + 'B'.repeat(65) + ' '), { ok: false, error: 'AliasTooLong' });
  // the character check comes before the length check
  assert.deepEqual(normalizeAlias('a'.repeat(65) + '@'), { ok: false, error: 'InvalidAlias' });
});
