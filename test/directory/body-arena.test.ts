/**
 * The resolve cache's store (src/directory/body-arena.ts) and its index (src/directory/hash-slots.ts): records kept
 * off the heap in a ring of segments, evicted a segment at a time, oldest first, with a second chance for the records
 * read since; deletion; keys whose hashes collide; a record larger than a segment; memory within the budget.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { BodyArena, segmentBytesFor } from '../../src/directory/body-arena.js';
import { HashSlots } from '../../src/directory/hash-slots.js';

/** The value of `key` (with `suffix`), or undefined when it is not held. */
function read(arena: BodyArena, key: string, suffix = '', stamp = 0): string | undefined {
  const id = arena.find(key);
  return id < 0 ? undefined : arena.textWith(id, suffix, stamp);
}

/** Values of 88 bytes (with the 12-byte header and a 4-character key: 104 bytes a record). */
const value = (key: string) => `${key}:`.padEnd(88, '.');

describe('BodyArena', () => {
  it('keeps values under their keys and answers them with a suffix; text and bytes alike, UTF-8 kept', () => {
    const arena = new BodyArena(64 * 1024);
    assert.ok(arena.set('k1', '{"a":"é€"') >= 0);
    assert.ok(arena.set('k2', Buffer.from('{"b":2')) >= 0);
    assert.equal(read(arena, 'k1', '}'), '{"a":"é€"}');
    assert.equal(read(arena, 'k2', '}'), '{"b":2}');
    assert.equal(read(arena, 'k3'), undefined);
    assert.ok(arena.set('k1', 'again') >= 0, 'set replaces');
    assert.equal(read(arena, 'k1'), 'again');
    assert.equal(arena.size, 2);
    assert.equal(arena.set('ké', 'x'), -1, 'a key that is not ASCII is not kept');
    assert.equal(read(arena, 'ké'), undefined);
  });

  it('writes a suffix into the room after the value once per stamp, and joins one that does not fit', () => {
    const arena = new BodyArena(64 * 1024, undefined, undefined, 8);
    arena.set('a', '{"v":"é"');
    arena.set('b', '{"v":1');
    assert.equal(read(arena, 'a', '}', 1), '{"v":"é"}');
    assert.equal(read(arena, 'b', ',"n":1}', 1), '{"v":1,"n":1}');
    assert.equal(read(arena, 'b', ',"n":1}', 1), '{"v":1,"n":1}');
    assert.equal(read(arena, 'b', ',"n":22}', 2), '{"v":1,"n":22}', 'a new stamp: the new suffix');
    assert.equal(read(arena, 'b', ',"n":333333}', 3), '{"v":1,"n":333333}', 'longer than the room: joined');
    assert.equal(read(arena, 'b', ',"n":4}', 4), '{"v":1,"n":4}');
    assert.equal(read(arena, 'a', '}', 1), '{"v":"é"}');
  });

  it('evicts the oldest segment first, keeping the records read since (second chance) until they go unread', () => {
    // 1 KiB segments of 9 records; a budget of four segments besides the index
    const arena = new BodyArena(7500, undefined, 1024);
    const keys = Array.from({ length: 36 }, (_, i) => `k${String(i).padStart(3, '0')}`);
    for (const k of keys) assert.ok(arena.set(k, value(k)) >= 0);
    assert.equal(arena.size, 36, 'four segments of nine');
    read(arena, 'k000');
    read(arena, 'k004');
    arena.set('new1', value('new1')); // the first segment compacted: the two read records stay, seven go
    const held = keys.filter((k) => arena.peek(k) >= 0);
    assert.deepEqual(held, ['k000', 'k004', ...keys.slice(9)]);
    assert.equal(read(arena, 'k004'), value('k004'));
    assert.equal(read(arena, 'new1'), value('new1'));
    // the next turn of the ring: k000, unread since, goes; k004, read again (above), stays once more
    for (let i = 0; i < 40; i++) arena.set(`n${String(i).padStart(3, '0')}`, value('n'));
    assert.equal(arena.peek('k000'), -1);
    assert.ok(arena.peek('k004') >= 0);
    assert.equal(arena.peek('k009'), -1);
    assert.ok(arena.bytes <= 7500);
  });

  it('when every record was read, a turn of the ring clears their marks and the oldest still goes', () => {
    const arena = new BodyArena(4000, undefined, 1024);
    const keys = Array.from({ length: 18 }, (_, i) => `k${String(i).padStart(3, '0')}`);
    for (const k of keys) arena.set(k, value(k));
    for (const k of keys) assert.ok(arena.find(k) >= 0);
    assert.ok(arena.set('last', value('last')) >= 0);
    assert.equal(read(arena, 'last'), value('last'));
    assert.ok(arena.size <= 18);
  });

  it('deletes a record; a deleted record is not found and its id is reused', () => {
    const dropped: number[] = [];
    const arena = new BodyArena(64 * 1024, (id) => dropped.push(id));
    const a = arena.set('a', 'A');
    arena.set('b', 'B');
    assert.equal(arena.delete('a'), true);
    assert.equal(arena.delete('a'), false);
    assert.deepEqual(dropped, [a]);
    assert.equal(read(arena, 'a'), undefined);
    assert.equal(read(arena, 'b'), 'B');
    assert.equal(arena.set('c', 'C'), a);
    assert.equal(read(arena, 'c'), 'C');
    arena.clear();
    assert.equal(arena.size, 0);
    assert.equal(read(arena, 'b'), undefined);
    assert.deepEqual(dropped.sort(), [0, 0, 1].sort(), 'clear drops every record held');
  });

  it('keeps keys whose hashes collide apart, and finds the others after one of them is deleted', () => {
    const arena = new BodyArena(64 * 1024, undefined, undefined, 0, () => 7);
    for (const k of ['x1', 'x2', 'x3', 'x4']) arena.set(k, `v${k}`);
    for (const k of ['x1', 'x2', 'x3', 'x4']) assert.equal(read(arena, k), `v${k}`);
    arena.delete('x2');
    assert.equal(read(arena, 'x2'), undefined);
    for (const k of ['x1', 'x3', 'x4']) assert.equal(read(arena, k), `v${k}`);
    arena.set('x2', 'again');
    assert.equal(read(arena, 'x2'), 'again');
  });

  it('does not keep a record larger than a segment, nor replace the one it had', () => {
    const arena = new BodyArena(64 * 1024, undefined, 1024);
    arena.set('big', 'small');
    assert.equal(arena.set('big', 'x'.repeat(1024)), -1);
    assert.equal(read(arena, 'big'), undefined, 'the older value is dropped: it is no longer the answer');
    assert.equal(arena.fits(3, 1024), false);
    assert.equal(arena.fits(3, 100), true);
  });

  it('takes at most its budget, segments and index together, and keeps nothing when no segment fits', () => {
    const budget = 16 * 1024;
    const arena = new BodyArena(budget, undefined, 1024);
    for (let i = 0; i < 2000; i++) {
      arena.set(`key${i}`, value('v'));
      assert.ok(arena.bytes <= budget, `${arena.bytes} bytes after ${i + 1}`);
    }
    assert.ok(arena.size > 50, `${arena.size} held`);
    assert.equal(read(arena, 'key1999'), value('v'));
    const none = new BodyArena(1024);
    assert.equal(none.set('a', 'A'), -1);
    assert.equal(none.size, 0);
    assert.equal(segmentBytesFor(2072 * 1024 * 1024), 8 * 1024 * 1024);
    assert.equal(segmentBytesFor(64 * 1024), 4 * 1024);
  });
});

describe('HashSlots', () => {
  it('finds ids by hash through collisions, wrap-around and deletions, and grows', () => {
    const slots = new HashSlots(4);
    const mask = 63; // the first table has 64 slots
    const entries: [number, number][] = [];
    // ids 0–9 under hashes at the table's end (wrapping round), several on one home
    for (let id = 0; id < 10; id++) entries.push([mask - (id % 3), id]);
    for (const [h, id] of entries) slots.add(h, id);
    const idsOf = (h: number) => {
      const out: number[] = [];
      for (let s = slots.first(h); s >= 0; s = slots.next(s, h)) out.push(slots.idAt(s));
      return out.sort((a, b) => a - b);
    };
    assert.deepEqual(idsOf(mask), [0, 3, 6, 9]);
    assert.equal(slots.remove(mask, 3), true);
    assert.equal(slots.remove(mask, 3), false);
    assert.deepEqual(idsOf(mask), [0, 6, 9]);
    assert.deepEqual(idsOf(mask - 1), [1, 4, 7]);
    assert.deepEqual(idsOf(mask - 2), [2, 5, 8]);
    for (let id = 10; id < 200; id++) slots.add(id * 7919, id);
    assert.equal(slots.size, 199);
    assert.deepEqual(idsOf(mask - 1), [1, 4, 7]);
    assert.deepEqual(idsOf(150 * 7919), [150]);
  });
});
