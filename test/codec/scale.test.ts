/** SCALE primitives (ledger-rules.md §1.3) and strict decoding (§1.4). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { toHex } from '../../src/base/bytes.js';
import { ScaleDecodeError, ScaleReader, ScaleWriter, decodeStrict, encodeCompact, tryDecodeStrict } from '../../src/codec/scale.js';
import { hex } from '../vectors/ledger-vectors.js';

const compactOf = (n: number | bigint): string => toHex(encodeCompact(n));
const readCompact = (h: string): number => {
  const r = new ScaleReader(hex(h));
  const v = r.compact();
  r.end();
  return v;
};

test('compact: the examples of §1.3', () => {
  const examples: [number, string][] = [
    [4, '10'],
    [7, '1c'],
    [23, '5c'],
    [26, '68'],
    [29, '74'],
    [31, '7c'],
    [32, '80'],
    [34, '88'],
    [35, '8c'],
    [63, 'fc'],
    [64, '0101'],
    [300, 'b104'],
  ];
  for (const [n, h] of examples) {
    assert.equal(compactOf(n), h, `encode ${n}`);
    assert.equal(readCompact(h), n, `decode ${h}`);
  }
});

test('compact: mode boundaries 2^6, 2^14, 2^30 and the big-integer mode', () => {
  const cases: [number | bigint, string][] = [
    [0, '00'],
    [1, '04'],
    [(1 << 14) - 1, 'fdff'],
    [1 << 14, '02000100'],
    [(1 << 30) - 1, 'feffffff'],
    [2 ** 30, '0300000040'],
    [2 ** 32 - 1, '03ffffffff'],
    [2 ** 32, '070000000001'],
    [Number.MAX_SAFE_INTEGER, '0fffffffffffff1f'],
  ];
  for (const [n, h] of cases) {
    assert.equal(compactOf(n), h, `encode ${n}`);
    assert.equal(readCompact(h), Number(n), `decode ${h}`);
  }
  assert.equal(compactOf(1n << 64n), '17' + '00'.repeat(8) + '01', 'k = 9');
  assert.equal(compactOf((1n << 536n) - 1n), 'ff' + 'ff'.repeat(67), 'k = 67 is the largest');
  assert.throws(() => encodeCompact(1n << 536n), RangeError);
  assert.throws(() => encodeCompact(-1), RangeError);
});

test('compact: non-minimal encodings are rejected', () => {
  for (const h of [
    '0100', // 0 in two-byte mode
    'fd00', // 63 in two-byte mode
    '02000000', // 0 in four-byte mode
    'feff0000', // 2^14 - 1 in four-byte mode
    '03ffffff3f', // 2^30 - 1 in big mode
    '0700000040' + '00', // 2^30 with a superfluous zero byte
  ]) {
    assert.throws(() => readCompact(h), ScaleDecodeError, h);
  }
  // beyond safe integers (lengths never need that much)
  assert.throws(() => readCompact('0f' + '00'.repeat(6) + '20'), /too large/, '2^53');
  assert.throws(() => readCompact('01'), ScaleDecodeError, 'truncated two-byte compact');
});

test('fixed-width integers are little-endian; writers refuse out-of-range values', () => {
  const w = new ScaleWriter().u8(0xab).u16(0x1234).u32(0xdeadbeef).u64(0x0102030405060708n).bool(true).bool(false);
  assert.equal(toHex(w.finish()), 'ab' + '3412' + 'efbeadde' + '0807060504030201' + '01' + '00');
  assert.equal(w.length, 1 + 2 + 4 + 8 + 2);
  const r = new ScaleReader(w.finish());
  assert.equal(r.u8(), 0xab);
  assert.equal(r.u16(), 0x1234);
  assert.equal(r.u32(), 0xdeadbeef);
  assert.equal(r.u64(), 0x0102030405060708n);
  assert.equal(r.bool(), true);
  assert.equal(r.bool(), false);
  r.end();
  assert.throws(() => new ScaleWriter().u8(256), RangeError);
  assert.throws(() => new ScaleWriter().u16(-1), RangeError);
  assert.throws(() => new ScaleWriter().u32(2 ** 32), RangeError);
  assert.throws(() => new ScaleWriter().u64(-1n), RangeError);
  assert.throws(() => new ScaleWriter().u64(1n << 64n), RangeError);
  assert.equal(toHex(new ScaleWriter().u64((1n << 64n) - 1n).finish()), 'ff'.repeat(8));
});

test('Bytes, Option, Vec and strings encode as §1.3 says', () => {
  const w = new ScaleWriter()
    .str('root')
    .option(null, (x, v: string) => x.str(v))
    .option('ab', (x, v) => x.str(v))
    .vec([1, 2], (x, v) => x.u16(v))
    .bytes(new Uint8Array(64));
  assert.equal(toHex(w.finish()), '10726f6f74' + '00' + '01' + '086162' + '08' + '0100' + '0200' + '0101' + '00'.repeat(64));
});

test('strict decode: a Bytes≤N longer than N fails, N itself passes', () => {
  const ok = new ScaleWriter().bytes(new Uint8Array(4)).finish();
  assert.deepEqual(new ScaleReader(ok).bytes(4), new Uint8Array(4));
  assert.throws(() => new ScaleReader(ok).bytes(3), ScaleDecodeError);
  assert.throws(() => new ScaleReader(ok).str(3), ScaleDecodeError);
  const vec = new ScaleWriter().vec([1, 2, 3], (x, v) => x.u8(v)).finish();
  assert.deepEqual(
    new ScaleReader(vec).vec(3, (r) => r.u8()),
    [1, 2, 3],
  );
  assert.throws(() => new ScaleReader(vec).vec(2, (r) => r.u8()), ScaleDecodeError);
});

test('strict decode: enum index out of range, bool/option tag 2, invalid UTF-8, truncation', () => {
  assert.equal(new ScaleReader(Uint8Array.of(2)).variant(3), 2);
  assert.throws(() => new ScaleReader(Uint8Array.of(3)).variant(3), ScaleDecodeError);
  assert.throws(() => new ScaleReader(Uint8Array.of(2)).bool(), ScaleDecodeError);
  assert.throws(() => new ScaleReader(Uint8Array.of(2, 0)).option((r) => r.u8()), ScaleDecodeError);
  assert.equal(
    new ScaleReader(Uint8Array.of(0)).option((r) => r.u8()),
    null,
  );
  assert.equal(
    new ScaleReader(Uint8Array.of(1, 9)).option((r) => r.u8()),
    9,
  );
  assert.throws(() => new ScaleReader(hex('08c328')).str(), ScaleDecodeError, 'invalid UTF-8');
  assert.throws(() => new ScaleReader(hex('10aabb')).bytes(), ScaleDecodeError, 'length beyond input');
  assert.throws(() => new ScaleReader(hex('aabbcc')).u32(), ScaleDecodeError);
});

test('strict decode: text keeps a leading byte-order mark (byte-for-byte text, §1.2)', () => {
  const bytes = new ScaleWriter().bytes(hex('efbbbf726f6f74')).finish();
  const s = new ScaleReader(bytes).str();
  assert.equal(s, '\ufeffroot');
  assert.notEqual(s, 'root');
  assert.deepEqual(new ScaleWriter().str(s).finish(), bytes);
});

test('decodeStrict: trailing bytes and non-canonical re-encoding fail; tryDecodeStrict returns undefined', () => {
  const read = (r: ScaleReader) => ({ a: r.u8(), b: r.bytes(8) });
  const write = (v: { a: number; b: Uint8Array }) => new ScaleWriter().u8(v.a).bytes(v.b).finish();
  const good = hex('07' + '08' + 'aabb');
  assert.deepEqual(decodeStrict(good, read, write), { a: 7, b: hex('aabb') });
  assert.throws(() => decodeStrict(hex('07' + '08' + 'aabb' + '00'), read, write), ScaleDecodeError);
  assert.equal(tryDecodeStrict(hex('07' + '08' + 'aabb' + '00'), read, write), undefined);
  // a reader that accepts a lax form is caught by the re-encode comparison
  const laxRead = (r: ScaleReader) => ({ a: r.u8() & 1, b: r.bytes(8) });
  assert.throws(() => decodeStrict(hex('03' + '08' + 'aabb'), laxRead, write), /non-canonical/);
  assert.equal(tryDecodeStrict(hex('07' + '0100'), read, write), undefined, 'non-minimal compact');
  assert.equal(
    tryDecodeStrict(hex('07' + '0c' + 'aabbccdd'), read, (v) => write(v)),
    undefined,
    'trailing byte after a 3-byte vec',
  );
  // errors other than decode errors propagate
  assert.throws(
    () =>
      tryDecodeStrict(
        good,
        () => {
          throw new TypeError('boom');
        },
        write,
      ),
    TypeError,
  );
});

test('the writer writes in place what the primitives encode: lengths at every mode boundary, text, growth, a copy out', () => {
  // the writer's own length and text paths against encodeCompact and TextEncoder, the reference bytes
  const lengths = [0, 1, 63, 64, 16383, 16384, 2 ** 30 - 1, 2 ** 30, 2 ** 32 + 5, 2n ** 40n];
  for (const n of lengths) assert.equal(toHex(new ScaleWriter().compact(n).finish()), compactOf(n), `compact ${n}`);
  const texts = ['', 'did:ddn:abc#root', 'https://w1.example/', 'é', 'naïve', '日本', '\u{1F600}', 'a\uD800b', '\uFEFFx', 'x'.repeat(300)];
  for (const s of texts) {
    const expected = toHex(new Uint8Array([...encodeCompact(new TextEncoder().encode(s).length), ...new TextEncoder().encode(s)]));
    assert.equal(toHex(new ScaleWriter().str(s).finish()), expected, JSON.stringify(s.slice(0, 20)));
  }
  // past the first buffer: every byte kept, in order
  const w = new ScaleWriter();
  for (let i = 0; i < 200; i++)
    w.u8(i)
      .u16(i * 257)
      .u32(i * 16_843_009)
      .u64(BigInt(i) * 72_340_172_838_076_673n);
  const out = w.finish();
  assert.equal(out.length, 200 * 15);
  const r = new ScaleReader(out);
  for (let i = 0; i < 200; i++) {
    assert.equal(r.u8(), i);
    assert.equal(r.u16(), i * 257);
    assert.equal(r.u32(), i * 16_843_009);
    assert.equal(r.u64(), BigInt(i) * 72_340_172_838_076_673n);
  }
  assert.equal(toHex(new ScaleWriter().u64(2n ** 64n - 1n).finish()), 'ff'.repeat(8));
  // finish gives a copy: writing on does not change what was handed out
  const w2 = new ScaleWriter().u8(1);
  const first = w2.finish();
  w2.u8(2);
  assert.equal(toHex(first), '01');
  assert.equal(toHex(w2.finish()), '0102');
});
