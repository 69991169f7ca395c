/**
 * The directories of a test run (scripts/run-dirs.mjs): named with the run's pid, and removed by the next run once
 * that process is gone — also those a killed run left — while a live run's stay, as do other names.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { processAlive, removeStaleRunDirs, runDir } from '../../scripts/run-dirs.mjs';

const root = mkdtempSync(join(tmpdir(), 'ddn-run-dirs-'));
after(() => rmSync(root, { recursive: true, force: true }));

describe('a test run’s directories', () => {
  it("are named with the run's pid", () => {
    const dir = runDir(root, 'ddn-answered-codes-', 4242);
    assert.match(basename(dir), /^ddn-answered-codes-pid4242-[A-Za-z0-9]{6}$/);
    assert.ok(existsSync(dir));
  });

  it('are removed once their run is gone, also those left without a pid for over a day; the others stay', () => {
    const parent = mkdtempSync(join(root, 'stale-'));
    const NOW = Date.UTC(2026, 10, 30, 12);
    const live = runDir(parent, 'ddn-answered-codes-', 100);
    const dead = runDir(parent, 'ddn-answered-codes-', 200);
    const deadBench = `${runDir(parent, '.test-js-', 200)}-bench`;
    mkdirSync(deadBench);
    const oldUnnamed = mkdtempSync(join(parent, 'ddn-answered-codes-'));
    utimesSync(oldUnnamed, (NOW - 25 * 3600_000) / 1000, (NOW - 25 * 3600_000) / 1000);
    const freshUnnamed = mkdtempSync(join(parent, 'ddn-answered-codes-'));
    utimesSync(freshUnnamed, (NOW - 3600_000) / 1000, (NOW - 3600_000) / 1000);
    const other = mkdtempSync(join(parent, 'ddn-other-pid200-'));
    const alive = (pid: number) => pid === 100;

    assert.deepEqual(removeStaleRunDirs(parent, 'ddn-answered-codes-', { alive, nowMs: NOW }), [basename(dead), basename(oldUnnamed)].sort());
    assert.deepEqual(removeStaleRunDirs(parent, '.test-js-', { alive, nowMs: NOW }), [basename(deadBench).replace(/-bench$/, ''), basename(deadBench)].sort());
    const left = readdirSync(parent);
    for (const d of [live, freshUnnamed, other]) assert.ok(left.includes(basename(d)), `${basename(d)} stays`);
    for (const d of [dead, oldUnnamed, deadBench]) assert.ok(!left.includes(basename(d)), `${basename(d)} removed`);
  });

  it('tells a live process from a gone one', () => {
    assert.equal(processAlive(process.pid), true);
    assert.equal(processAlive(2 ** 22 + 1), false, 'above the largest pid Linux gives');
  });
});
