/** Payload templates (ledger-rules.md §7.6) and the strict JSON parser they rely on. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { utf8 } from '../../src/base/bytes.js';
import { JsonSyntaxError, parseStrictJson } from '../../src/codec/strict-json.js';
import { isValidPayloadTemplate } from '../../src/ledger/runtime/templates.js';

const ok = (t: string) => isValidPayloadTemplate(utf8(t));
const nest = (depth: number, leaf = '1') => '{"a":'.repeat(depth) + leaf + '}'.repeat(depth);

test('strict JSON: RFC 8259 grammar only, member order and duplicates kept', () => {
  assert.deepEqual(parseStrictJson(' {"b":1,"a":[true,null,"x\\u0041"],"b":-0.5e+3} '), {
    type: 'object',
    members: [
      ['b', { type: 'number', text: '1' }],
      ['a', { type: 'array', items: [{ type: 'boolean', value: true }, { type: 'null' }, { type: 'string', value: 'xA' }] }],
      ['b', { type: 'number', text: '-0.5e+3' }],
    ],
  });
  for (const bad of ['', '{', '{"a":1,}', '[1,]', '01', '1.', '.5', '+1', 'NaN', "{'a':1}", '{"a":1}x', '"\t"', '"\\x"', '\u00a0{}', '{"a" 1}', 'tru']) {
    assert.throws(() => parseStrictJson(bad), JsonSyntaxError, JSON.stringify(bad));
  }
  assert.throws(() => parseStrictJson(nest(5), 4), JsonSyntaxError);
  assert.doesNotThrow(() => parseStrictJson(nest(4), 4));
});

test('templates: a top-level object of strict JSON in UTF-8', () => {
  assert.ok(ok('{}'));
  assert.ok(ok('{"text":"hi","n":-1.5e3,"ok":false,"none":null,"list":[1,[2]]}'));
  for (const bad of ['[]', '"x"', '1', 'null', '{"a":1,}', '{"a":01}', '']) assert.ok(!ok(bad), bad);
  assert.ok(!isValidPayloadTemplate(Uint8Array.of(0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d)), 'invalid UTF-8');
  assert.ok(!isValidPayloadTemplate(utf8(`{"a":"${'x'.repeat(4090)}"}`)), 'more than 4096 bytes');
});

test('templates: depth 16 passes, 17 fails; 256 nodes pass, 257 fail', () => {
  assert.ok(ok(nest(16)), 'leaf at depth 16');
  assert.ok(!ok(nest(17)), 'leaf at depth 17');
  assert.ok(!ok(nest(40)));
  const items = (n: number) => `{"a":[${Array.from({ length: n }, () => '0').join(',')}]}`;
  assert.ok(ok(items(254)), 'root + array + 254 = 256 nodes');
  assert.ok(!ok(items(255)), '257 nodes');
});

test('templates: $from references', () => {
  for (const p of ['/envelope/message_id', '/event/type', '/policy/rule_id', '/node/did']) assert.ok(ok(`{"v":{"$from":"${p}"}}`), p);
  assert.ok(ok('{"$from":"/event/type"}'), 'the root may itself be a reference');
  assert.ok(ok(`{"v":{"$from":"/node/${'x'.repeat(250)}"}}`), '256-byte pointer');
  assert.ok(!ok(`{"v":{"$from":"/node/${'x'.repeat(251)}"}}`), '257-byte pointer');
  for (const bad of [
    '{"v":{"$from":"/payload/x"}}',
    '{"v":{"$from":"envelope/x"}}',
    '{"v":{"$from":1}}',
    '{"v":{"$from":"/event/x","y":1}}',
    '{"v":{"$from":"/event/x","$from":"/event/y"}}',
  ]) {
    assert.ok(!ok(bad), bad);
  }
  // A reference counts as one node (its pointer string is not walked): root + array + 253 numbers + 1 reference.
  const mixed = (n: number) => `{"a":[${[...Array.from({ length: n }, () => '0'), '{"$from":"/node/x"}'].join(',')}]}`;
  assert.ok(ok(mixed(253)), '256 nodes');
  assert.ok(!ok(mixed(254)), '257 nodes');
});

test('templates: keys ≤ 128 bytes, strings ≤ 2048 bytes (UTF-8)', () => {
  assert.ok(ok(`{"${'k'.repeat(128)}":1}`));
  assert.ok(!ok(`{"${'k'.repeat(129)}":1}`));
  assert.ok(ok(`{"s":"${'é'.repeat(1024)}"}`));
  assert.ok(!ok(`{"s":"${'é'.repeat(1024)}x"}`));
  assert.ok(ok(`{"s":["${'x'.repeat(2048)}"]}`));
  assert.ok(!ok(`{"s":["${'x'.repeat(2049)}"]}`));
});
