/** Large JSON bodies (src/http/large-json.ts through parseJsonBody): the same result as JSON.parse, the same refusals. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DdnError } from '../../src/base/errors.js';
import { parseJsonBody } from '../../src/http/json-body.js';
import { elideLongStrings } from '../../src/http/large-json.js';

const CT = 'application/json';
const b64 = (n: number, fill = 7) => Buffer.alloc(n, fill).toString('base64');
const big = b64(1_200_000);

describe('parseJsonBody on large bodies', () => {
  it('gives exactly what JSON.parse gives', () => {
    const bodies = [
      { payload: { ciphertext_b64: big, other: b64(100_000, 1) }, to: 'did:x:y', list: [big.slice(0, 70_000), 1, null] },
      { [big.slice(0, 80_000)]: 'a long key stays a key', v: big },
      { escaped: `${'a'.repeat(70_000)}\\"quoted\\"${'b'.repeat(70_000)}`, unicode: `${'é'.repeat(40_000)}`, v: big },
      { nested: { deeper: [{ x: big }] }, s: 'short "with quotes" and \\ backslash', n: 1.5 },
    ];
    for (const body of bodies) {
      const raw = Buffer.from(`\ufeff ${JSON.stringify(body, null, 1)} `);
      assert.deepEqual(parseJsonBody(raw, CT), JSON.parse(raw.toString('utf8').replace(/^\ufeff/, '')));
    }
  });

  it('cuts out only long plain values, never keys or escaped strings', () => {
    const raw = Buffer.from(JSON.stringify({ [big.slice(0, 70_000)]: 1, a: big, b: `${big.slice(0, 70_000)}\n`, c: 'x' }));
    const e = elideLongStrings(raw);
    assert.ok(e !== undefined);
    assert.ok(e.text.length < 70_000 * 3 + 1_000 && e.text.length > 140_000, 'the key and the escaped value stay in the text');
  });

  it('refuses the same bodies: bad JSON, non-objects, poisoned keys, bad UTF-8', () => {
    const bad = [
      `{"a":"${big}"`,
      `["${big}"]`,
      `{"__proto__":{"x":1},"a":"${big}"}`,
      `{"constructor":{"prototype":{}},"a":"${big}"}`,
      Buffer.concat([Buffer.from(`{"a":"${big}","b":"`), Buffer.from([0xc3, 0x28]), Buffer.from('"}')]),
    ];
    for (const body of bad) {
      assert.throws(
        () => parseJsonBody(Buffer.from(body), CT),
        (err: unknown) => err instanceof DdnError && err.code === 'invalid_json',
      );
    }
  });
});
