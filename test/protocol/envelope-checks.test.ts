/**
 * The envelope's copy-free checks agree with the reference rules: the streamed content hash with
 * sha256(canonicalJson(...)), and the Base64 check with decode-and-re-encode (parseStdBase64).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseStdBase64 } from '../../src/base/bytes.js';
import { canonicalJson } from '../../src/codec/canonical-json.js';
import { sha256 } from '../../src/crypto/hash.js';
import { isStdBase64, stdBase64DecodedLength } from '../../src/protocol/envelope-base64.js';
import { canonicalJsonSha256Hex } from '../../src/protocol/envelope-hash.js';

const reference = (v: unknown) => Buffer.from(sha256(canonicalJson(v))).toString('hex');

/** A deterministic pseudo-random generator (fixed seed). */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

describe('canonicalJsonSha256Hex', () => {
  it('hashes exactly the canonical JSON text', () => {
    const long = 'QUJD'.repeat(300_000);
    const values: unknown[] = [
      {},
      [],
      null,
      'x',
      { b: 1, a: [1, 'two', null, { d: true, c: false }], '10': 'int-like', '2': 'key' },
      { s: 'quote " backslash \\ newline \n tab \t nul \u0000 emoji 😀 lone \ud800 end', n: -1.5e-7, z: 0 },
      // characters JSON.stringify leaves unescaped: the hasher must not escape them either
      { plain: 'DEL \u007f line \u2028 para \u2029 é ü ~', 'k\u007f': 'v' },
      { payload: { ciphertext_b64: long }, to: 'did:ddn:x', skip: undefined, arr: [undefined, 1] },
      { big: `${'é'.repeat(40_000)}😀${'a'.repeat(40_000)}` },
      { big: `${'a'.repeat(20_000)}"${'b'.repeat(20_000)}` },
      { [long.slice(0, 20_000)]: long.slice(0, 17_000) },
      { nested: Array.from({ length: 2_000 }, (_, i) => ({ i, t: `v${i}😀` })) },
      // small values, as most envelopes: written through one JSON.stringify of a sorted copy where it gives the same text
      { to: 'did:ddn:x', message_id: 'm', payload: { profile: 'p', ciphertext_b64: 'QUJD' }, ttl: '24h', context: { b: [1, { z: 1, y: 2 }], a: 'x' } },
      { nested: { '1': 'index key inside', a: 1 }, '9a': 'digit first', a9: 'x' },
      JSON.parse('{"b":1,"__proto__":{"x":1},"a":2}') as unknown,
      { d: new Date(0), f: () => 1, s: Symbol('s'), m: new Map([[1, 2]]) },
      new Date(0),
      [undefined, { b: undefined, a: null }, 'x'],
      { almostLong: 'a'.repeat(65_530), k: 'vvvvvvv' },
    ];
    for (const v of values) assert.equal(canonicalJsonSha256Hex(v), reference(v));
  });
});

describe('stdBase64DecodedLength', () => {
  it('accepts exactly what decoding and re-encoding accepts, with the decoded length', () => {
    const next = rng(7);
    const samples: string[] = ['', '=', '==', 'A===', 'AA==', 'AB==', 'AAA=', 'AAB=', 'AAAA', 'AA=A', 'A', 'AA', 'AAA', 'AA-_', 'AA==AA==', ' AAA'];
    for (let n = 0; n < 40; n++) {
      const bytes = Buffer.from(Array.from({ length: n }, () => Math.floor(next() * 256)));
      const b64 = bytes.toString('base64');
      samples.push(b64);
      if (b64.length > 0) {
        // flip one character, drop one, and add stray padding
        const i = Math.floor(next() * b64.length);
        const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=';
        samples.push(b64.slice(0, i) + alphabet[Math.floor(next() * alphabet.length)] + b64.slice(i + 1));
        samples.push(b64.slice(0, i) + b64.slice(i + 1));
        samples.push(`${b64}=`);
      }
    }
    for (const s of samples) {
      const decoded = parseStdBase64(s);
      assert.equal(stdBase64DecodedLength(s), decoded?.length, `for ${JSON.stringify(s)}`);
      assert.equal(isStdBase64(s), decoded !== undefined);
    }
  });
});
