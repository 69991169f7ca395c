/**
 * `npx tsx bench/http-write-cpu.ts [--other <built tree>] [--rounds 4] [--seconds 10] [--idle S] [--pg] [--dids 200] [--lone N] [--perf <prefix>] [--cpu-prof <dir>]`:
 * the node's CPU per write over HTTP (issue 39 item 2) — a Directory-only `ddn serve` (this checkout's `dist/`, and
 * with `--other` that tree's beside it) taking 100 signed `UpdateService` writes/s and nothing else, as the
 * writes-alone window of `--only resolve_writes` does, in windows alternating between the two trees (A B B A …).
 * Per window: the process's CPU per accepted write (its idle CPU taken out), its main thread's, and with `--pg`
 * (each side on its own schema of `DDN_BENCH_PG_URL`) the PostgreSQL backends' of that database (both sides
 * share it, so run one side's window at a time: they do). `--lone N`: then N lone writes per tree, each after 1.1 s
 * without writes, alternating between the trees: each one's answer time (ms), the median.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { enc } from './context.js';
import { SteadyWrites } from './figures/resolve-writes.js';
import { registerWriters } from './figures/directory-writes.js';
import { cpuMs, cpuMsBetween, cpuMsByName, round } from './proc.js';
import { freePort, ServiceProcess } from './service.js';
import { readThreadTicks, threadCpu } from './thread-cpu.js';
import { makeProfile } from '../src/protocol/profile.js';

const { values } = parseArgs({
  options: {
    other: { type: 'string' },
    rounds: { type: 'string', default: '4' },
    seconds: { type: 'string', default: '10' },
    pg: { type: 'boolean', default: false },
    'cpu-prof': { type: 'string' },
    perf: { type: 'string' },
    idle: { type: 'string', default: '0' },
    dids: { type: 'string', default: '200' },
    lone: { type: 'string', default: '0' },
  },
});
const WRITERS = 200;
const PER_S = 100;
const seconds = Number(values.seconds);
const pgUrl = process.env.DDN_BENCH_PG_URL;
if (values.pg && pgUrl === undefined) throw new Error('--pg needs DDN_BENCH_PG_URL');
const pgDb = ` ${new URL(pgUrl ?? 'postgres://x/postgres').pathname.slice(1) || 'postgres'} `;

interface Side {
  name: string;
  service: ServiceProcess;
  writes: SteadyWrites;
  schema: string | undefined;
}

const work = mkdtempSync(join(tmpdir(), 'ddn-http-write-cpu-'));

async function start(name: string, root: string | undefined): Promise<Side> {
  const dataDir = join(work, name);
  mkdirSync(dataDir, { recursive: true });
  const schema = values.pg ? `bench_hw_${randomBytes(5).toString('hex')}` : undefined;
  const service = await ServiceProcess.start({
    dataDir,
    roles: ['directory'],
    ports: { directory: await freePort() },
    blockTimeMs: 100,
    logFile: join(work, `${name}.log`),
    ...(root === undefined ? {} : { root: resolve(root) }),
    ...(values['cpu-prof'] === undefined ? {} : { cpuProfDir: resolve(values['cpu-prof'], name) }),
    serveArgs: schema === undefined ? [] : ['--db', pgUrl!, '--db-schema', schema],
  });
  const url = service.urls.directory;
  const profile = makeProfile(((await (await fetch(`${url}/health`)).json()) as { profile: string }).profile);
  // --dids N: N registered (as `--only resolve_writes` registers 2,000), the writes to the first 200
  const writers = (await registerWriters(url, profile, Math.max(WRITERS, Number(values.dids)))).slice(0, WRITERS);
  const nonces = (await (await fetch(`${url}/dids/${enc(writers[0]!.did)}/nonces`)).json()) as { document_nonce: string };
  const writes = new SteadyWrites(url, profile, writers, BigInt(nonces.document_nonce), PER_S);
  return { name, service, writes, schema };
}

interface Window {
  node_us: number;
  main_us: number;
  pg_us?: number;
  rate: number;
  /** With `--pg`: accepted writes per admission statement (`ddn_ledger_view_batches_total`, every outcome). */
  per_batch?: number;
  /** Per thread name, user/system µs per write (the idle CPU not taken out). */
  threads: string;
}

/** With `--pg`: the admission batches the node checked so far (`ddn_ledger_view_batches_total`, summed). */
async function batches(side: Side): Promise<number> {
  const text = await (await fetch(`${side.service.urls.directory}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith('ddn_ledger_view_batches_total{'))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

async function window(side: Side): Promise<Window> {
  const pid = side.service.pid;
  side.writes.presign(Math.ceil((seconds + 2) * PER_S * 1.2));
  await new Promise((r) => setTimeout(r, 1500 + Number(values.idle) * 1000));
  const idle0 = cpuMs(pid);
  const it0 = performance.now();
  await new Promise((r) => setTimeout(r, 2000));
  const idleCores = (cpuMs(pid) - idle0) / (performance.now() - it0);
  const pg0 = values.pg ? cpuMsByName('postgres', pgDb) : undefined;
  const cpu0 = cpuMs(pid);
  const main0 = cpuMs(pid, pid);
  const ticks0 = readThreadTicks(pid);
  // --perf <prefix>: Linux perf of the window's node (CPU samples, not wall clock; NODE_OPTIONS=--perf-basic-prof names frames)
  const perf =
    values.perf === undefined
      ? undefined
      : spawn('perf', ['record', '-e', 'cpu-clock', '-F', '4000', '-g', '-p', String(pid), '-o', `${values.perf}-${side.name}-${Date.now()}.data`], {
          stdio: 'ignore',
        });
  const batches0 = values.pg ? await batches(side) : 0;
  const t0 = performance.now();
  side.writes.start();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  await side.writes.stop();
  if (perf !== undefined) {
    perf.kill('SIGINT');
    await new Promise((r) => perf.once('exit', r));
  }
  const wall = performance.now() - t0;
  const n = Math.max(1, side.writes.accepted);
  const cpu = cpuMs(pid) - cpu0 - idleCores * wall;
  const main = cpuMs(pid, pid) - main0;
  const threads = threadCpu(ticks0, readThreadTicks(pid))
    .filter((t) => t.user_ms + t.system_ms > 0)
    .map((t) => `${t.name} ${round((t.user_ms * 1000) / n)}+${round((t.system_ms * 1000) / n)}`)
    .join(', ');
  const out: Window = { node_us: round((cpu * 1000) / n), main_us: round((main * 1000) / n), rate: side.writes.rate, threads };
  if (pg0 !== undefined) out.pg_us = round((cpuMsBetween(pg0, cpuMsByName('postgres', pgDb)) * 1000) / n);
  if (values.pg) out.per_batch = round(n / Math.max(1, (await batches(side)) - batches0), 2);
  return out;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const sides: Side[] = [await start('A-this', undefined)];
if (values.other !== undefined) sides.push(await start('B-other', values.other));
const results = new Map<string, Window[]>(sides.map((s) => [s.name, []]));
try {
  for (let r = 0; r < Number(values.rounds); r++) {
    const order = r % 2 === 0 ? sides : [...sides].reverse();
    for (const side of order) {
      const w = await window(side);
      results.get(side.name)!.push(w);
      console.log(
        `round ${r + 1} ${side.name}: node ${w.node_us} µs/write, main ${w.main_us}${w.pg_us === undefined ? '' : `, pg ${w.pg_us}, ${w.per_batch} writes/statement`}; ${w.rate} writes/s [${w.threads}], load ${loadavg()[0].toFixed(1)}`,
      );
    }
  }
  const lone = new Map<string, number[]>(sides.map((s) => [s.name, []]));
  for (const s of sides) s.writes.presign(Number(values.lone));
  for (let k = 0; k < Number(values.lone); k++) {
    for (const side of k % 2 === 0 ? sides : [...sides].reverse()) {
      await new Promise((r) => setTimeout(r, 1100));
      lone.get(side.name)!.push(await side.writes.one());
    }
  }
  for (const [name, ms] of lone) {
    if (ms.length > 0) console.log(`${name} lone writes after 1.1 s idle: median ${round(median(ms), 2)} ms [${ms.map((m) => round(m, 1)).join(', ')}]`);
  }
} finally {
  for (const s of sides) {
    s.writes.close();
    await s.service.stop();
  }
  if (pgUrl !== undefined && values.pg) {
    const admin = new pg.Client({ connectionString: pgUrl });
    await admin.connect();
    for (const s of sides) if (s.schema !== undefined) await admin.query(`DROP SCHEMA IF EXISTS "${s.schema}" CASCADE`);
    await admin.end();
  }
  rmSync(work, { recursive: true, force: true });
}
for (const [name, ws] of results) {
  console.log(
    `${name} median: node ${median(ws.map((w) => w.node_us))} µs/write, main ${median(ws.map((w) => w.main_us))}${values.pg ? `, pg ${median(ws.map((w) => w.pg_us ?? 0))}` : ''}`,
  );
}
