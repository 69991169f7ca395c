/**
 * `npx tsx bench/resolve-writes-account.ts [--rounds 3] [--seconds 10] [--pg | --backends sqlite,pg] [--tree <built tree>]`: where resolve's loss under writes
 * goes (issue 39 item 2). One Directory-only `ddn serve` (2,000 DIDs, blocks every 100 ms, as `--only
 * resolve_writes`), `GET /resolve` from the load generator (autocannon, 32 connections) in windows alternating
 * alone / with 100 signed `UpdateService` writes/s (sent from this process, pre-signed). Per window: resolves/s;
 * the node's CPU per thread (cores), its context switches and read/write system calls; the load generator's and
 * this process's (the write generator's) CPU; the machine's user/system/softirq cores and idle; the node's GC time
 * (`nodejs_gc_duration_seconds`). The last lines account the loss: the main thread's CPU per resolve alone against
 * with writes (writes taken out at the writes-alone cost, measured in a last window). `--tree` runs A on another built tree than this checkout. With `--other <built tree>`
 * and/or `--node-options` / `--other-node-options` (the service's `NODE_OPTIONS`), two nodes side by side, their
 * windows alternating (A B B A …), one at a time. `--backends sqlite,pg` (PostgreSQL needs `DDN_BENCH_PG_URL`) runs A on
 * the embedded SQLite ledger and B on PostgreSQL (`--pg`: A alone, on PostgreSQL), the same tree unless `--other`;
 * with a PostgreSQL side every window also prints the CPU of that database's backends (cores). Every window prints
 * the share of resolves the node rendered rather than answered from its resolve cache
 * (`ddn_directory_resolve_answers_total`).
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { enc } from './context.js';
import { SteadyWrites } from './figures/resolve-writes.js';
import { registerWriters } from './figures/directory-writes.js';
import type { LoadJob } from './jobs.js';
import { LoadGenerator } from './loadgen-client.js';
import { cpuMsBetween, cpuMsByName, round } from './proc.js';
import { freePort, ServiceProcess } from './service.js';
import { readThreadTicks, threadCpu } from './thread-cpu.js';
import { makeProfile } from '../src/protocol/profile.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '10' },
    pg: { type: 'boolean', default: false },
    backends: { type: 'string' },
    other: { type: 'string' },
    tree: { type: 'string' },
    'node-options': { type: 'string' },
    'other-node-options': { type: 'string' },
  },
});
const seconds = Number(values.seconds);
const pgUrl = process.env.DDN_BENCH_PG_URL;
/** Each side's ledger: `--backends sqlite,pg` puts A on SQLite and B on PostgreSQL (same tree unless `--other`). */
const backends = (values.backends ?? (values.pg ? 'pg' : 'sqlite')).split(',');
if (backends.some((b) => b !== 'sqlite' && b !== 'pg')) throw new Error('--backends takes sqlite and pg, comma-separated');
const anyPg = backends.includes('pg');
if (anyPg && pgUrl === undefined) throw new Error('PostgreSQL needs DDN_BENCH_PG_URL');
const pgDb = ` ${new URL(pgUrl ?? 'postgres://x/postgres').pathname.slice(1) || 'postgres'} `;

/** /proc/stat's first line: user, nice, system, idle, iowait, irq, softirq, steal (ticks). */
function machine(): number[] {
  return readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).slice(1, 9).map(Number);
}
function status(pid: number, key: string): number {
  return Number(new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
}
function io(pid: number, key: string): number {
  return Number(new RegExp(`^${key}: (\\d+)`, 'm').exec(readFileSync(`/proc/${pid}/io`, 'utf8'))?.[1] ?? 0);
}
/** GC seconds and counts so far by kind (`nodejs_gc_duration_seconds{kind}`). */
async function gcByKind(url: string): Promise<Map<string, { s: number; n: number }>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const out = new Map<string, { s: number; n: number }>();
  for (const l of text.split('\n')) {
    const answers = /^ddn_directory_resolve_answers_total\{source="([a-z]+)"\} (\S+)/.exec(l);
    if (answers !== null) out.set(`answers:${answers[1]}`, { s: 0, n: Number(answers[2]) });
    const m = /^nodejs_gc_duration_seconds_(sum|count)\{kind="([a-z]+)"\} (\S+)/.exec(l);
    if (m === null) continue;
    const e = out.get(m[2]!) ?? { s: 0, n: 0 };
    if (m[1] === 'sum') e.s = Number(m[3]);
    else e.n = Number(m[3]);
    out.set(m[2]!, e);
  }
  return out;
}

const work = mkdtempSync(join(tmpdir(), 'ddn-rw-account-'));

interface Side {
  name: string;
  service: ServiceProcess;
  writes: SteadyWrites;
  job: LoadJob;
  schema: string | undefined;
}
interface Row {
  side: string;
  label: string;
  resolves: number;
  writes: number;
  mainUs: number;
  nodeUs: number;
  wallS: number;
}

async function startSide(name: string, root: string | undefined, nodeOptions: string | undefined, backend: string): Promise<Side> {
  const dataDir = join(work, name);
  mkdirSync(dataDir, { recursive: true });
  const schema = backend === 'pg' ? `bench_rwa_${randomBytes(5).toString('hex')}` : undefined;
  const saved = process.env.NODE_OPTIONS;
  if (nodeOptions !== undefined) process.env.NODE_OPTIONS = nodeOptions;
  const service = await ServiceProcess.start({
    dataDir,
    roles: ['directory'],
    ports: { directory: await freePort() },
    blockTimeMs: 100,
    logFile: join(work, `${name}.log`),
    ...(root === undefined ? {} : { root: resolve(root) }),
    serveArgs: schema === undefined ? [] : ['--db', pgUrl!, '--db-schema', schema],
  }).finally(() => {
    if (saved === undefined) delete process.env.NODE_OPTIONS;
    else process.env.NODE_OPTIONS = saved;
  });
  const url = service.urls.directory;
  const profile = makeProfile(((await (await fetch(`${url}/health`)).json()) as { profile: string }).profile);
  const dids = await registerWriters(url, profile, 2000);
  const didsFile = join(work, `${name}.dids`);
  writeFileSync(didsFile, dids.map((d) => `${d.did}\n`).join(''));
  const nonces = (await (await fetch(`${url}/dids/${enc(dids[0]!.did)}/nonces`)).json()) as { document_nonce: string };
  const writes = new SteadyWrites(url, profile, dids.slice(0, 200), BigInt(nonces.document_nonce), 100);
  const job: LoadJob = {
    name,
    url,
    connections: 32,
    durationS: seconds,
    warmupS: 2,
    request: { kind: 'random-did', pathPrefix: '/resolve/', didsFile, count: 2000 },
  };
  return { name, service, writes, job, schema };
}

const sides: Side[] = [];
const gen = LoadGenerator.start();
const rows: Row[] = [];

async function measureWindow(side: Side, label: string, withWrites: boolean, withResolves: boolean): Promise<void> {
  const { writes, service } = side;
  const pid = service.pid;
  const url = service.urls.directory;
  await new Promise((r) => setTimeout(r, 1500));
  if (withWrites) writes.presign(Math.ceil((seconds + 4) * 100 * 1.2));
  if (withWrites) writes.start();
  let m0: number[] = [];
  let t0 = 0;
  let ticks0 = readThreadTicks(pid);
  let cs0 = [0, 0];
  let sys0 = [0, 0];
  let me0 = process.cpuUsage();
  let acc0 = 0;
  let pg0 = new Map<number, number>();
  const begin = () => {
    if (anyPg) pg0 = cpuMsByName('postgres', pgDb);
    m0 = machine();
    t0 = performance.now();
    ticks0 = readThreadTicks(pid);
    cs0 = [status(pid, 'voluntary_ctxt_switches'), status(pid, 'nonvoluntary_ctxt_switches')];
    sys0 = [io(pid, 'syscr'), io(pid, 'syscw')];
    me0 = process.cpuUsage();
    acc0 = writes.accepted;
  };
  let resolves = 0;
  let loadgenMs = 0;
  const gc0 = await gcByKind(url);
  if (withResolves) {
    const r = await gen.run({ ...side.job, name: `${side.name}-${label}` }, pid, begin);
    resolves = r.rate;
    loadgenMs = r.loadgen_cpu.cpu_ms;
  } else {
    await new Promise((r) => setTimeout(r, 2000));
    begin();
    await new Promise((r) => setTimeout(r, seconds * 1000));
  }
  const wall = performance.now() - t0;
  const pgMs = anyPg ? cpuMsBetween(pg0, cpuMsByName('postgres', pgDb)) : 0;
  const m1 = machine();
  const ticks = threadCpu(ticks0, readThreadTicks(pid));
  const cs = [status(pid, 'voluntary_ctxt_switches') - cs0[0]!, status(pid, 'nonvoluntary_ctxt_switches') - cs0[1]!];
  const sys = [io(pid, 'syscr') - sys0[0]!, io(pid, 'syscw') - sys0[1]!];
  const me = process.cpuUsage(me0);
  const wAcc = writes.accepted - acc0;
  if (withWrites) await writes.stop();
  const gc1 = await gcByKind(url);
  const gc = [...gc1]
    .map(([k, v]) => ({ k, s: v.s - (gc0.get(k)?.s ?? 0), n: v.n - (gc0.get(k)?.n ?? 0) }))
    .filter((g) => g.n > 0 && !g.k.startsWith('answers:'))
    .map((g) => `${g.k} ${round((g.s * 1e6) / wall, 1)} ms/s (${round((g.n * 1000) / wall, 1)}/s)`)
    .join(', ');
  // the resolve cache's answers in the window (its counters, ddn_directory_resolve_answers_total)
  const answered = (source: string) => (gc1.get(`answers:${source}`)?.n ?? 0) - (gc0.get(`answers:${source}`)?.n ?? 0);
  const rendered = answered('rendered');
  const renderShare = rendered + answered('cached') > 0 ? `${round((100 * rendered) / (rendered + answered('cached')), 2)} %` : '—';
  const d = m1.map((v, i) => ((v - m0[i]!) * 10) / wall); // ticks of 10 ms → cores
  const cores = (ms: number) => round(ms / wall, 3);
  const main = ticks.find((t) => t.name === 'main');
  const mainMs = (main?.user_ms ?? 0) + (main?.system_ms ?? 0);
  const nodeMs = ticks.reduce((s, t) => s + t.user_ms + t.system_ms, 0);
  const wps = (wAcc * 1000) / wall;
  const others = ticks
    .filter((t) => t.name !== 'main' && t.user_ms + t.system_ms > 0)
    .map((t) => `${t.name} ${cores(t.user_ms + t.system_ms)}`)
    .join(', ');
  const ops = ((resolves + wps) * wall) / 1000;
  console.log(
    `${side.name} ${label}: resolve ${round(resolves)}/s, writes ${round(wps, 1)}/s | node main ${cores(mainMs)} (usr ${cores(main?.user_ms ?? 0)} sys ${cores(main?.system_ms ?? 0)}), ` +
      `other threads ${cores(nodeMs - mainMs)} [${others}] | ${anyPg ? `postgres ${cores(pgMs)} | ` : ''}loadgen ${cores(loadgenMs)} | writer ${cores((me.user + me.system) / 1000)} | ` +
      `machine usr ${round(d[0]! + d[1]!, 2)} sys ${round(d[2]!, 2)} irq+softirq ${round(d[5]! + d[6]!, 2)} idle ${round(d[3]! + d[4]!, 2)} | ` +
      `ctxsw vol ${round((cs[0]! * 1000) / wall)}/s invol ${round((cs[1]! * 1000) / wall)}/s; syscalls r ${round(ops > 0 ? sys[0]! / ops : 0, 2)} w ${round(ops > 0 ? sys[1]! / ops : 0, 2)} per op | ` +
      `GC ${gc} | resolves rendered ${renderShare} | load ${loadavg()[0].toFixed(2)}`,
  );
  rows.push({ side: side.name, label, resolves, writes: wps, mainUs: mainMs * 1000, nodeUs: nodeMs * 1000, wallS: wall / 1000 });
}

try {
  sides.push(await startSide('A', values.tree, values['node-options'], backends[0]!));
  if (values.other !== undefined || values['other-node-options'] !== undefined || backends.length > 1) {
    sides.push(await startSide('B', values.other ?? values.tree, values['other-node-options'], backends[1] ?? backends[0]!));
  }
  // warm the write path first (the first writes of a node are dear: tier-up)
  for (const side of sides) await measureWindow(side, 'warm-writes', true, false);
  for (let r = 0; r < Number(values.rounds); r++) {
    for (const side of r % 2 === 0 ? sides : [...sides].reverse()) {
      await measureWindow(side, `r${r + 1} alone`, false, true);
      await measureWindow(side, `r${r + 1} with`, true, true);
    }
  }
  for (const side of sides) {
    await measureWindow(side, 'writes alone', true, false);
    const wa = rows[rows.length - 1]!;
    const mainPerWriteUs = wa.mainUs / (wa.writes * wa.wallS);
    console.log(`${side.name} writes alone: main ${round(mainPerWriteUs)} µs/write, node ${round(wa.nodeUs / (wa.writes * wa.wallS))} µs/write`);
    const mine = rows.filter((x) => x.side === side.name && x.resolves > 0);
    for (const row of mine) {
      const forResolves = row.mainUs - row.writes * row.wallS * mainPerWriteUs;
      console.log(
        `${side.name} ${row.label}: main µs per resolve ${round(forResolves / (row.resolves * row.wallS), 2)} (writes at their alone cost taken out)`,
      );
    }
    const ratios: number[] = [];
    for (let r = 1; r <= Number(values.rounds); r++) {
      const a = mine.find((x) => x.label === `r${r} alone`)!;
      const w = mine.find((x) => x.label === `r${r} with`)!;
      ratios.push(round(w.resolves / a.resolves, 3));
    }
    console.log(`${side.name} with ÷ alone per round: ${ratios.join(', ')}`);
  }
} finally {
  await gen.stop();
  for (const side of sides) {
    side.writes.close();
    await side.service.stop();
  }
  if (pgUrl !== undefined && anyPg) {
    const admin = new pg.Client({ connectionString: pgUrl });
    await admin.connect();
    for (const side of sides) if (side.schema !== undefined) await admin.query(`DROP SCHEMA IF EXISTS "${side.schema}" CASCADE`);
    await admin.end();
  }
  rmSync(work, { recursive: true, force: true });
}
