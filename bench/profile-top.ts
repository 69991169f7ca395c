/**
 * Summarises a V8 CPU profile (`.cpuprofile`, e.g. from `npm run bench:ab -- --cpu-prof <dir>`): the busiest
 * functions by self time, and self time per package or source folder, as shares of the non-idle samples.
 *
 *   npx tsx bench/profile-top.ts <file.cpuprofile> [--top 30] [--from S] [--to S] [--inclusive name,name]
 *
 * `--from`/`--to` keep only the samples taken that many seconds after the profile started (a window of a longer
 * run); `--inclusive` also prints the time spent in and under each named function (e.g. a block's production
 * against a request's handling).
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const { values, positionals } = parseArgs({
  options: { top: { type: 'string', default: '30' }, from: { type: 'string' }, to: { type: 'string' }, inclusive: { type: 'string' } },
  allowPositionals: true,
});
if (positionals.length !== 1) throw new Error('usage: npx tsx bench/profile-top.ts <file.cpuprofile> [--top 30] [--from S] [--to S] [--inclusive a,b]');
const profile = JSON.parse(readFileSync(positionals[0], 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const IDLE = new Set(['(idle)', '(program)', '(garbage collector)']);

/** Where a frame's code lives: `fastify`, `src/http`, `node:internal/http`… */
function area(url: string, name: string): string {
  if (url === '') return name.startsWith('(') ? name : '(native)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg !== null) return pkg[1];
  const own = /\/dist\/([^/]+(?:\/[^/]+)?)\//.exec(url) ?? /\/src\/([^/]+)\//.exec(url);
  if (own !== null) return `ddn ${own[1]}`;
  const node = /^node:(internal\/[^/]+|[^/]+)/.exec(url);
  return node !== null ? `node:${node[1]}` : url;
}

const fromUs = values.from === undefined ? 0 : Number(values.from) * 1e6;
const toUs = values.to === undefined ? Infinity : Number(values.to) * 1e6;
const selfUs = new Map<number, number>();
let at = 0;
profile.samples.forEach((id, i) => {
  at += profile.timeDeltas[i] ?? 0;
  if (at >= fromUs && at < toUs) selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
});
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

/** Time of the samples with a frame named `name` on their stack (each sample once). */
function inclusiveUs(name: string): number {
  let sum = 0;
  for (const [id, us] of selfUs) {
    for (let n: number | undefined = id; n !== undefined; n = parent.get(n)) {
      if (byId.get(n)?.callFrame.functionName === name) {
        sum += us;
        break;
      }
    }
  }
  return sum;
}
const fns = new Map<string, number>();
const areas = new Map<string, number>();
let busy = 0;
let idle = 0;
for (const [id, us] of selfUs) {
  const f = byId.get(id)?.callFrame;
  if (f === undefined) continue;
  if (f.functionName === '(idle)') {
    idle += us;
    continue;
  }
  busy += us;
  const where = area(f.url, f.functionName);
  const key = `${f.functionName || '(anonymous)'} ${where}:${f.lineNumber + 1}`;
  fns.set(key, (fns.get(key) ?? 0) + us);
  if (!IDLE.has(f.functionName)) areas.set(where, (areas.get(where) ?? 0) + us);
}
const pct = (us: number): string => `${((100 * us) / busy).toFixed(1).padStart(5)} %`;
const top = (m: Map<string, number>, n: number) => [...m].sort((x, y) => y[1] - x[1]).slice(0, n);
console.log(`busy ${(busy / 1e6).toFixed(2)} s, idle ${(idle / 1e6).toFixed(2)} s`);
console.log('\nself time by area:');
for (const [k, us] of top(areas, 25)) console.log(`${pct(us)}  ${k}`);
console.log('\nself time by function:');
for (const [k, us] of top(fns, Number(values.top))) console.log(`${pct(us)}  ${k}`);
if (values.inclusive !== undefined) {
  console.log('\nin and under (inclusive):');
  for (const name of values.inclusive.split(',')) {
    const us = inclusiveUs(name);
    console.log(`${pct(us)}  ${(us / 1000).toFixed(0).padStart(7)} ms  ${name}`);
  }
}
