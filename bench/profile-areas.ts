/**
 * The Directory processes' CPU profiles of a `bench/pg-write-cpu.ts` run, window by window, summed by area and
 * divided by the writes each window accepted: where a shape's CPU per write goes, and (with two shapes) what one
 * adds over the other — a differential profile.
 *
 *   DDN_BENCH_CPU_PROF_DIR=<dir> npx tsx bench/pg-write-cpu.ts --shapes one,split --windows <w.json>
 *   npx tsx bench/profile-areas.ts <dir> <w.json> [--fns area,area] [--top 15]
 *
 * Each sample is charged to one area: a ledger step when one is on its stack, the innermost (a block copied from
 * another process, another's rows run again, a block produced, an admission batch checked, a catch-up's rows
 * decoded, a notification heard, the poll), else the
 * innermost frame of a package or of ddn's own code (so a socket write is charged to the pg driver or to the HTTP
 * server that asked for it), else the leaf's (timers, GC, V8's `(program)`). V8 samples by wall clock: a thread
 * waiting for a core is charged to what it was doing, so read the shares beside /proc's CPU (`--threads`).
 * A shape of several processes also gets each process's largest areas (`--top` of them), per write of the shape.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
}
interface Window {
  shape: string;
  round: number;
  pids: number[];
  startUs: number;
  endUs: number;
  accepted: number;
}

const { values, positionals } = parseArgs({
  options: { fns: { type: 'string' }, top: { type: 'string', default: '15' } },
  allowPositionals: true,
});
if (positionals.length !== 2) throw new Error('usage: npx tsx bench/profile-areas.ts <profile dir> <windows.json> [--fns area,area] [--top 15]');
const [dir, windowsFile] = positionals as [string, string];
const windows = JSON.parse(readFileSync(windowsFile, 'utf8')) as Window[];

/** Ledger steps, by a function on the stack (the innermost of them wins: another's rows adopted while a block is produced are adoption). */
const STEPS: Record<string, string> = {
  applyReplicatedBlock: 'ledger: block copied (replica)',
  adoptPending: "ledger: other's rows run again",
  adoptBatch: "ledger: other's rows run again",
  produceBlock: 'ledger: block produced',
  commitBuilt: 'ledger: block produced',
  checkBatch: 'ledger: admission checks',
  readCatchUp: 'ledger: catch-up rows decoded',
  admitOnView: 'ledger: admission statement',
  admitUnderLock: 'ledger: admission statement',
  _handleNotification: 'ledger: notifications heard',
  tick: 'ledger: poll',
  lookForOthers: 'ledger: poll',
  compete: 'ledger: poll',
};

/** The area of a frame of a package or of ddn's own code; undefined for node's internals and natives. */
function ownedArea(f: CallFrame): string | undefined {
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(f.url);
  if (pkg !== null) {
    const name = pkg[1]!;
    if (/^(pg|pg-protocol|pg-pool|pg-types|postgres-.*|pg-connection-string)$/.test(name)) return 'pg driver';
    if (/^(fastify|find-my-way|avvio|light-my-request|@fastify\/.*|fast-json-stringify|undici|safe-regex2|fast-querystring)$/.test(name))
      return 'HTTP (fastify)';
    if (name === 'better-sqlite3') return 'SQLite (better-sqlite3)';
    if (name === 'pino' || name.startsWith('pino-') || name === 'sonic-boom') return 'logging';
    return `pkg ${name}`;
  }
  const own = /\/dist\/([^/]+(?:\/[^/]+)?)\//.exec(f.url) ?? /\/src\/([^/]+(?:\/[^/]+)?)\//.exec(f.url);
  if (own !== null) return own[1] === 'http' ? 'HTTP (ddn http)' : `ddn ${own[1]}`;
  return undefined;
}

/** The leaf's area when no owned frame is on the stack. */
function leafArea(f: CallFrame): string {
  if (f.url === '') return f.functionName.startsWith('(') ? f.functionName : '(native)';
  if (/^node:(internal\/)?timers/.test(f.url)) return 'timers';
  if (/^node:(internal\/)?(http|_http|net|stream|streams|dns|tls|https)/.test(f.url) || f.url.startsWith('node:internal/stream_base')) return 'HTTP/net (node)';
  if (f.url.startsWith('node:internal/process/task_queues')) return 'microtasks (node)';
  const m = /^node:(internal\/[^/]+|[^/]+)/.exec(f.url);
  return m !== null ? `node:${m[1]}` : f.url;
}

function loadProfile(pid: number): { byId: Map<number, ProfileNode>; parent: Map<number, number>; times: number[]; p: Profile } | undefined {
  // the event loop's profile (thread 0): `CPU.<date>.<time>.<pid>.0.<seq>.cpuprofile`
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile') && f.includes(`.${pid}.0.`));
  if (file === undefined) return undefined;
  const p = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const times: number[] = [];
  let at = p.startTime;
  for (const d of p.timeDeltas) times.push((at += d));
  return { byId, parent, times, p };
}

/** shape → process index → area → µs (self time of samples in the shape's windows), and the writes accepted. */
const sums = new Map<string, { accepted: number; procs: Map<string, number>[]; fns: Map<string, Map<string, number>> }>();
const profiles = new Map<number, ReturnType<typeof loadProfile>>();
for (const w of windows) {
  const s = sums.get(w.shape) ?? { accepted: 0, procs: [], fns: new Map() };
  sums.set(w.shape, s);
  s.accepted += w.accepted;
  w.pids.forEach((pid, i) => {
    if (!profiles.has(pid)) profiles.set(pid, loadProfile(pid));
    const prof = profiles.get(pid);
    if (prof === undefined) return;
    const areas = (s.procs[i] ??= new Map());
    const stackArea = new Map<number, string>();
    const areaOf = (leaf: number): string => {
      const known = stackArea.get(leaf);
      if (known !== undefined) return known;
      const stack: CallFrame[] = [];
      for (let n: number | undefined = leaf; n !== undefined; n = prof.parent.get(n)) stack.push(prof.byId.get(n)!.callFrame);
      let area: string | undefined;
      for (let k = 0; k < stack.length && area === undefined; k++)
        area = Object.hasOwn(STEPS, stack[k]!.functionName) ? STEPS[stack[k]!.functionName] : undefined;
      for (let k = 0; k < stack.length && area === undefined; k++) area = ownedArea(stack[k]!);
      area ??= leafArea(stack[0]!);
      stackArea.set(leaf, area);
      return area;
    };
    prof.p.samples.forEach((id, k) => {
      const t = prof.times[k]!;
      if (t < w.startUs || t >= w.endUs) return;
      const f = prof.byId.get(id)!.callFrame;
      if (f.functionName === '(idle)') return;
      const us = prof.p.timeDeltas[k + 1] ?? prof.p.timeDeltas[k] ?? 0;
      const area = areaOf(id);
      areas.set(area, (areas.get(area) ?? 0) + us);
      const fn = `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(node_modules|dist)\//, '')}:${f.lineNumber + 1}`;
      const byFn = s.fns.get(area) ?? new Map<string, number>();
      s.fns.set(area, byFn);
      byFn.set(fn, (byFn.get(fn) ?? 0) + us);
    });
  });
}

const shapes = [...sums.keys()];
const allAreas = new Set<string>();
for (const s of sums.values()) for (const m of s.procs) for (const a of m.keys()) allAreas.add(a);
const perWrite = (shape: string, area: string): number => {
  const s = sums.get(shape)!;
  return s.procs.reduce((acc, m) => acc + (m.get(area) ?? 0), 0) / Math.max(1, s.accepted);
};
const rows = [...allAreas].sort((a, b) => perWrite(shapes[shapes.length - 1]!, b) - perWrite(shapes[shapes.length - 1]!, a));
const head = shapes.map((s) => `${s} (${sums.get(s)!.accepted} writes, ${sums.get(s)!.procs.length} proc.)`.padStart(28)).join('');
console.log(`µs of samples per accepted write, all Directory processes${''.padEnd(6)}${head}${shapes.length === 2 ? '     diff' : ''}`);
const total = (shape: string) => rows.reduce((acc, a) => acc + perWrite(shape, a), 0);
for (const area of [...rows, 'TOTAL']) {
  const v = shapes.map((s) => (area === 'TOTAL' ? total(s) : perWrite(s, area)));
  const diff = shapes.length === 2 ? (v[1]! - v[0]!).toFixed(1).padStart(9) : '';
  console.log(`${area.padEnd(62)}${v.map((x) => x.toFixed(1).padStart(28)).join('')}${diff}`);
}
for (const shape of shapes) {
  const s = sums.get(shape)!;
  console.log(
    `\n${shape}, per process (µs per write of the shape): ${s.procs.map((m, i) => `${i}: ${([...m.values()].reduce((a, b) => a + b, 0) / Math.max(1, s.accepted)).toFixed(0)}`).join(', ')}`,
  );
  // with several processes, each one's largest areas (the one that produces is not always the first)
  if (s.procs.length > 1) {
    s.procs.forEach((m, i) => {
      const top = [...m].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top));
      console.log(`  process ${i}: ${top.map(([a, us]) => `${a} ${(us / Math.max(1, s.accepted)).toFixed(0)}`).join(', ')}`);
    });
  }
}
for (const area of values.fns?.split(',') ?? []) {
  for (const shape of shapes) {
    const byFn = sums.get(shape)!.fns.get(area);
    if (byFn === undefined) continue;
    console.log(`\n${area} — ${shape}, self µs per write:`);
    for (const [fn, us] of [...byFn].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top))) {
      console.log(`${(us / sums.get(shape)!.accepted).toFixed(1).padStart(8)}  ${fn}`);
    }
  }
}
