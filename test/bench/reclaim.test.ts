/**
 * The machine's proactive reclaimer (bench/reclaim.ts): DAMON's schemes read from a sysfs tree (here a copy of the
 * layout in a temporary directory), and the report's words for them — nothing when there is no DAMON.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { damonSchemes, reclaimLine } from '../../bench/reclaim.js';

const root = mkdtempSync(join(tmpdir(), 'ddn-damon-'));
after(() => rmSync(root, { recursive: true, force: true }));

function tree(dir: string, files: Record<string, string>): string {
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), `${text}\n`);
  }
  return dir;
}

/** The layout of this VM's kernel (6.18): one kdamond, physical memory, a pageout scheme. */
const kdamond = (state: string, action: string) => ({
  '0/state': state,
  '0/contexts/nr_contexts': '1',
  '0/contexts/0/operations': 'paddr',
  '0/contexts/0/monitoring_attrs/intervals/aggr_us': '5000000',
  '0/contexts/0/schemes/nr_schemes': '1',
  '0/contexts/0/schemes/0/action': action,
  '0/contexts/0/schemes/0/access_pattern/age/min': '12',
  '0/contexts/0/schemes/0/access_pattern/nr_accesses/max': '1',
});

describe('damonSchemes and reclaimLine', () => {
  it('say a running pageout scheme and after how long it drops a page', () => {
    const schemes = damonSchemes(tree(join(root, 'on'), kdamond('on', 'pageout')));
    assert.deepEqual(schemes, [{ kdamond: '0', state: 'on', operations: 'paddr', action: 'pageout', minAgeS: 60, maxAccesses: 1, aggregationS: 5 }]);
    assert.equal(
      reclaimLine(schemes),
      "DAMON `pageout` running (kdamond 0, paddr: regions with at most 1 access per 5 s for 60 s or more): file pages not read for that long leave the OS's page cache.",
    );
  });
  it('say that none runs when the kdamond is off or its scheme does something else', () => {
    assert.equal(reclaimLine(damonSchemes(tree(join(root, 'off'), kdamond('off', 'pageout')))), 'DAMON present, no `pageout` scheme running.');
    assert.equal(reclaimLine(damonSchemes(tree(join(root, 'stat'), kdamond('on', 'stat')))), 'DAMON present, no `pageout` scheme running.');
  });
  it('say nothing without DAMON', () => {
    assert.equal(damonSchemes(join(root, 'absent')), undefined);
    assert.equal(reclaimLine(damonSchemes(join(root, 'absent'))), undefined);
  });
});
