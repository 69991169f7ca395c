/**
 * Linux `perf` CPU samples of one thread, summed by area: where a process's CPU goes with the kernel's and the
 * native libraries' share in it (SQLite, libsodium, the system calls a V8 profile only shows as time spent in the
 * JavaScript that made them). V8's CPU profiles (`bench/profile-areas.ts`) sample wall-clock time; these are CPU
 * samples.
 *
 *   perf record -e cpu-clock -F 2000 -g -p <pid> -o run.data -- sleep 8     (the service started with
 *   NODE_OPTIONS=--perf-basic-prof, so that JavaScript frames have names)
 *   perf script -i run.data -F tid,ip,sym,dso > run.txt
 *   npx tsx bench/perf-stacks.ts run.txt --tid <pid> --areas 'replica=commitBlock;hop=undici;http=_http' \
 *     [--callers better_sqlite3] [--leaves commitBlock] [--top 15]
 *
 * A sample is charged to the first area whose pattern a frame of its stack contains, frames read from the leaf
 * outwards (so `sqlite=better_sqlite3;replica=commitBlock` charges SQLite's own frames under a block's commit to
 * `sqlite`); a sample no pattern matches is `other`. Each area lists the shared objects its samples' leaves are in
 * (`JIT` is V8's compiled code). `--callers P`: the JavaScript frames above the outermost frame containing P, by
 * share (who calls it); `--leaves P`: the leaf functions of the samples with P on their stack (what it costs in).
 * The main thread's id is the process id.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

/** One sample: its thread id and its frames, leaf first (each `symbol (object)` as `perf script` prints it). */
export interface Sample {
  tid: string;
  frames: string[];
}

/**
 * Parses `perf script -F tid,ip,sym,dso`: a line with the thread id (right-aligned: a short id has spaces before
 * it), then one tab-indented line per frame.
 */
export function parsePerfScript(text: string): Sample[] {
  const samples: Sample[] = [];
  let current: Sample | undefined;
  for (const line of text.split('\n')) {
    if (line.trim() === '') {
      current = undefined;
      continue;
    }
    if (!line.startsWith('\t')) {
      current = { tid: line.trim().split(/\s+/)[0]!, frames: [] };
      samples.push(current);
      continue;
    }
    // "\t    7fd0ae960799 JS:^ file:///x.js:80:12 (/tmp/perf-1.map)": the address, then the symbol and its object
    const frame = line.trim().replace(/^[0-9a-f]+\s*/, '');
    current?.frames.push(frame);
  }
  return samples;
}

/** The object a frame is in (`JIT` for V8's perf map, `?` when perf did not know). */
export function objectOf(frame: string): string {
  const m = /\(([^()]*)\)$/.exec(frame);
  if (m === null) return '?';
  const name = m[1]!.split('/').pop()!;
  return name.startsWith('perf-') && name.endsWith('.map') ? 'JIT' : name === '' ? '?' : name;
}

/** `name=pattern;name=pattern` as pairs, in order. */
export function parseAreas(spec: string): [string, string][] {
  return spec
    .split(';')
    .filter((s) => s !== '')
    .map((s) => {
      const at = s.indexOf('=');
      if (at <= 0 || at === s.length - 1) throw new Error(`an area is name=pattern: ${s}`);
      return [s.slice(0, at), s.slice(at + 1)];
    });
}

export interface AreaShare {
  area: string;
  share: number;
  /** The objects of its samples' leaves, by share of all samples, largest first. */
  objects: [string, number][];
}

/** Counts as shares of `total` samples, largest first. */
const sharesOf = <K>(m: Map<K, number>, total: number): [K, number][] => [...m].sort((a, b) => b[1] - a[1]).map(([k, c]) => [k, c / Math.max(1, total)]);

/** The samples charged to each area (shares of all `samples`), largest first. */
export function areaShares(samples: readonly Sample[], areas: readonly [string, string][]): AreaShare[] {
  const counts = new Map<string, Map<string, number>>();
  for (const s of samples) {
    let area = 'other';
    for (const frame of s.frames) {
      const hit = areas.find(([, pattern]) => frame.includes(pattern));
      if (hit !== undefined) {
        area = hit[0];
        break;
      }
    }
    const objects = counts.get(area) ?? new Map<string, number>();
    const leaf = s.frames[0] === undefined ? '?' : objectOf(s.frames[0]);
    objects.set(leaf, (objects.get(leaf) ?? 0) + 1);
    counts.set(area, objects);
  }
  return [...counts]
    .map(([area, objects]) => ({
      area,
      share: [...objects.values()].reduce((a, b) => a + b, 0) / Math.max(1, samples.length),
      objects: sharesOf(objects, samples.length),
    }))
    .sort((a, b) => b.share - a.share);
}

const symbolOf = (frame: string): string => frame.replace(/\s*\([^()]*\)$/, '');

/**
 * Who calls `pattern`: the JavaScript frames from the outermost frame that contains it outwards (up to `depth`; that
 * frame itself when it is JavaScript), by share of all samples.
 */
export function callersOf(samples: readonly Sample[], pattern: string, depth = 3): [string, number][] {
  const counts = new Map<string, number>();
  for (const s of samples) {
    const outermost = s.frames.findLastIndex((f) => f.includes(pattern));
    if (outermost < 0) continue;
    const above = s.frames
      .slice(outermost)
      .filter((f) => f.startsWith('JS:'))
      .slice(0, depth)
      .map(symbolOf);
    const key = above.length > 0 ? above.join(' < ') : '(no JavaScript frame)';
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return sharesOf(counts, samples.length);
}

/** What the samples with `pattern` on their stack cost in: their leaf functions, by share of all samples. */
export function leavesUnder(samples: readonly Sample[], pattern: string): [string, number][] {
  const counts = new Map<string, number>();
  for (const s of samples) {
    if (s.frames[0] === undefined || !s.frames.some((f) => f.includes(pattern))) continue;
    const leaf = symbolOf(s.frames[0]);
    counts.set(leaf, (counts.get(leaf) ?? 0) + 1);
  }
  return sharesOf(counts, samples.length);
}

const pct = (x: number): string => `${(100 * x).toFixed(1)} %`;

function main(): void {
  const { values, positionals } = parseArgs({
    options: {
      tid: { type: 'string' },
      areas: { type: 'string', default: '' },
      callers: { type: 'string' },
      leaves: { type: 'string' },
      top: { type: 'string', default: '15' },
    },
    allowPositionals: true,
  });
  if (positionals.length !== 1)
    throw new Error('usage: npx tsx bench/perf-stacks.ts <perf script output> [--tid N] [--areas a=p;b=q] [--callers P] [--leaves P] [--top N]');
  const all = parsePerfScript(readFileSync(positionals[0]!, 'utf8'));
  const samples = values.tid === undefined ? all : all.filter((s) => s.tid === values.tid);
  const top = Number(values.top);
  console.log(`${samples.length} samples${values.tid === undefined ? '' : ` of thread ${values.tid}`} (of ${all.length})`);
  for (const a of areaShares(samples, parseAreas(values.areas))) {
    const objects = a.objects.slice(0, 4).map(([o, s]) => `${o} ${pct(s)}`);
    console.log(`${a.area.padEnd(16)} ${pct(a.share).padStart(7)}   ${objects.join(', ')}`);
  }
  const list = (title: string, rows: [string, number][]) => {
    console.log(`\n${title}`);
    for (const [k, s] of rows.slice(0, top)) console.log(`${pct(s).padStart(7)}  ${k}`);
  };
  if (values.callers !== undefined) list(`callers of ${values.callers}:`, callersOf(samples, values.callers));
  if (values.leaves !== undefined) list(`leaves under ${values.leaves}:`, leavesUnder(samples, values.leaves));
}

// run as a command (the test imports the functions)
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) main();
