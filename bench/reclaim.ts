/**
 * Whether the machine runs a proactive reclaimer: the kernel's DAMON (`/sys/kernel/mm/damon/admin/kdamonds`) with a
 * `pageout` scheme drops pages nobody touched for a while, even with free memory — file pages of a ledger a run has
 * not read for a minute then come from the disk again (bench/HISTORY.md, session 30). Read only; nothing is changed.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const KDAMONDS_DIR = '/sys/kernel/mm/damon/admin/kdamonds';

/** One DAMON scheme as sysfs shows it. */
export interface DamonScheme {
  kdamond: string;
  /** The kdamond's `state` (`on`, `off`). */
  state: string;
  /** The context's address space (`paddr`: physical memory, every process's and the OS cache's pages). */
  operations: string;
  action: string;
  /** A region is acted on after this many seconds with at most {@link maxAccesses} accesses per aggregation. */
  minAgeS: number;
  maxAccesses: number;
  aggregationS: number;
}

function read(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return undefined;
  }
}

function numbered(dir: string): string[] {
  try {
    return readdirSync(dir)
      .filter((n) => /^\d+$/.test(n))
      .sort((a, b) => Number(a) - Number(b));
  } catch {
    return [];
  }
}

/** Every DAMON scheme under `root`; undefined when there is no DAMON to read (absent or not readable). */
export function damonSchemes(root = KDAMONDS_DIR): DamonScheme[] | undefined {
  const kdamonds = numbered(root);
  if (kdamonds.length === 0) return undefined;
  const out: DamonScheme[] = [];
  for (const k of kdamonds) {
    const state = read(join(root, k, 'state')) ?? 'unknown';
    for (const c of numbered(join(root, k, 'contexts'))) {
      const ctx = join(root, k, 'contexts', c);
      const aggregationS = Number(read(join(ctx, 'monitoring_attrs/intervals/aggr_us')) ?? 0) / 1e6;
      for (const n of numbered(join(ctx, 'schemes'))) {
        const scheme = join(ctx, 'schemes', n);
        const action = read(join(scheme, 'action'));
        if (action === undefined) continue;
        out.push({
          kdamond: k,
          state,
          operations: read(join(ctx, 'operations')) ?? 'unknown',
          action,
          minAgeS: Number(read(join(scheme, 'access_pattern/age/min')) ?? 0) * aggregationS,
          maxAccesses: Number(read(join(scheme, 'access_pattern/nr_accesses/max')) ?? 0),
          aggregationS,
        });
      }
    }
  }
  return out;
}

/** The report's words for it: undefined without DAMON, else whether a `pageout` scheme was running. */
export function reclaimLine(schemes: readonly DamonScheme[] | undefined): string | undefined {
  if (schemes === undefined) return undefined;
  const running = schemes.filter((x) => x.state === 'on' && x.action === 'pageout');
  if (running.length === 0) return 'DAMON present, no `pageout` scheme running.';
  const what = running.map(
    (x) =>
      `kdamond ${x.kdamond}, ${x.operations}: regions with at most ${x.maxAccesses} access${x.maxAccesses === 1 ? '' : 'es'} per ${x.aggregationS} s for ${x.minAgeS} s or more`,
  );
  return `DAMON \`pageout\` running (${what.join('; ')}): file pages not read for that long leave the OS's page cache.`;
}
