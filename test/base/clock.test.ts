import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isoMs, isoSeconds } from '../../src/base/clock.js';

describe('isoMs', () => {
  it('writes what Date.prototype.toISOString writes, in and across minutes', () => {
    const start = Date.UTC(2026, 10, 24, 23, 58, 59, 990);
    // every millisecond over two minute and a day boundary, then back in time (the reused minute must not stick)
    for (let ms = start; ms < start + 62_000; ms += 7) assert.equal(isoMs(ms), new Date(ms).toISOString());
    for (const ms of [start + 61_999, start, 0, -1, -60_001, 951_782_400_000, Date.UTC(2024, 1, 29, 12, 0, 0, 5)]) {
      assert.equal(isoMs(ms), new Date(ms).toISOString());
    }
  });

  it('handles years outside 0000–9999 and fractional milliseconds as Date does', () => {
    for (const ms of [8.64e15, -8.64e15, Date.UTC(10000, 0, 1), Date.UTC(-1, 0, 1), 1_795_542_843_155.7]) {
      assert.equal(isoMs(ms), new Date(ms).toISOString());
      assert.equal(isoMs(ms), new Date(ms).toISOString(), 'a second call answers the same');
    }
  });

  it('refuses what Date refuses', () => {
    assert.throws(() => isoMs(Number.NaN), RangeError);
    assert.throws(() => isoMs(8.64e15 + 1), RangeError);
  });

  it('isoSeconds drops the milliseconds', () => {
    assert.equal(isoSeconds(Date.UTC(2026, 10, 24, 1, 2, 3, 999)), '2026-11-24T01:02:03Z');
  });
});
