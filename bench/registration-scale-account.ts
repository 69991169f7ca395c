/**
 * `npx tsx bench/registration-scale-account.ts --side NAME:DIR:DIDS[:RESOLVE_CACHE_BYTES[:LEDGER_CACHE_BYTES[:TREE]]] …
 * [--rounds 2] [--seconds 10] [--fresh] [--resolve-phase] [--tree <built tree>] [--perf DIR]`
 *
 * Where the registration rate of `--only resolve_scale` (`registration_at_scale`, issue 39 item 3) goes, over HTTP:
 * one Directory-only `ddn serve` per `--side` (a ledger built by bench/bigledger.ts, used in place: the
 * registrations add to it — give copies), blocks every 100 ms as the figure runs them, and registration windows of
 * fresh client-signed `POST /register-did` from the load generator (32 connections), the sides alternating
 * (A B … B A). `--fresh` takes windows just after the start; `--resolve-phase` then runs the figure's cold resolve
 * windows (uniform over each side's DIDs, twice each, in order) and takes the windows again, as the figure does.
 *
 * Per window and per registration: each thread's user + system CPU (`main`, `node`: V8's and libuv's helpers,
 * `ddn-checkpoint`); the main thread's time on a CPU, waiting for one (run queue) and off both (blocked: a system
 * call that sleeps, or nothing to do), from schedstat; where the main thread and the checkpointer were, sampled
 * every 2 ms (`R` running, else the state and the system call it sleeps in: `D:pread64` a read from the disk,
 * `D:fsync`, `S:futex`, `S:epoll_pwait` idle); the process's reads and writes through the OS (`/proc/<pid>/io`:
 * `rchar` counts the checkpointer's WAL reads too, `read_bytes` what came from the disk, `write_bytes` what was
 * dirtied for it); GC time by kind; the load generator's CPU; the other processes' cores (a disturbed window) and the
 * load. The machine being shared, read CPU and blocked time per registration and the windows least disturbed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { BIG_DIDS_FILE } from './bigledger.js';
import type { LoadJob } from './jobs.js';
import { LoadGenerator } from './loadgen-client.js';
import { round } from './proc.js';
import { freePort, ServiceProcess } from './service.js';
import { readThreadTicks, threadCpu } from './thread-cpu.js';

const { values } = parseArgs({
  options: {
    side: { type: 'string', multiple: true },
    rounds: { type: 'string', default: '2' },
    seconds: { type: 'string', default: '10' },
    fresh: { type: 'boolean', default: false },
    'resolve-phase': { type: 'boolean', default: false },
    tree: { type: 'string' },
    perf: { type: 'string' },
  },
});
const seconds = Number(values.seconds);

/** x86-64 system call numbers the node sleeps in. */
const SYSCALLS: Record<number, string> = {
  0: 'read',
  1: 'write',
  7: 'poll',
  17: 'pread64',
  18: 'pwrite64',
  20: 'writev',
  72: 'fcntl',
  74: 'fsync',
  75: 'fdatasync',
  77: 'ftruncate',
  202: 'futex',
  232: 'epoll_wait',
  281: 'epoll_pwait',
  441: 'epoll_pwait2',
};

/** The main thread's nanoseconds on a CPU and waiting for one (`/proc/<pid>/task/<pid>/schedstat`). */
function schedstat(pid: number): [number, number] {
  const [onCpu, wait] = readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').trim().split(/\s+/).map(Number);
  return [onCpu!, wait!];
}

function io(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const l of readFileSync(`/proc/${pid}/io`, 'utf8').split('\n')) {
    const m = /^(\w+): (\d+)/.exec(l);
    if (m) out.set(m[1]!, Number(m[2]));
  }
  return out;
}

/** GC seconds so far by kind (`nodejs_gc_duration_seconds_sum{kind}`). */
async function gcSeconds(url: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const out = new Map<string, number>();
  for (const l of text.split('\n')) {
    const m = /^nodejs_gc_duration_seconds_sum\{kind="(\w+)"\} (\S+)/.exec(l);
    if (m) out.set(m[1]!, Number(m[2]));
  }
  return out;
}

/** Samples where the main thread and the checkpointer thread of `pid` are, every 2 ms, until stopped. */
class StateSampler {
  private readonly counts = new Map<string, Map<string, number>>();
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly pid: number) {
    const threads = new Map<number, string>();
    for (const tid of readThreadTicks(pid).keys()) {
      const name = tid === pid ? 'main' : readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      if (name === 'main' || name === 'ddn-checkpoint') threads.set(tid, name);
    }
    this.timer = setInterval(() => {
      for (const [tid, name] of threads) this.sample(tid, name);
    }, 2);
  }

  private sample(tid: number, name: string): void {
    let state: string;
    try {
      const stat = readFileSync(`/proc/${this.pid}/task/${tid}/stat`, 'utf8');
      state = stat[stat.lastIndexOf(')') + 2]!;
      if (state !== 'R') {
        const call = readFileSync(`/proc/${this.pid}/task/${tid}/syscall`, 'utf8').trim().split(' ', 1)[0]!;
        state = call === 'running' ? 'R' : `${state}:${SYSCALLS[Number(call)] ?? call}`;
      }
    } catch {
      return; // the thread ended
    }
    const c = this.counts.get(name) ?? new Map<string, number>();
    c.set(state, (c.get(state) ?? 0) + 1);
    this.counts.set(name, c);
  }

  /** Stops and describes each thread's states, most frequent first, in % of its samples. */
  stop(): string[] {
    clearInterval(this.timer);
    return [...this.counts].map(([name, c]) => {
      const total = [...c.values()].reduce((a, b) => a + b, 0);
      const parts = [...c]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 7)
        .map(([s, n]) => `${s} ${round((100 * n) / total, 1)}%`);
      return `  ${name}: ${parts.join(', ')}`;
    });
  }
}

interface Side {
  name: string;
  dir: string;
  dids: number;
  svc: ServiceProcess;
  profile: string;
}

async function startSide(spec: string): Promise<Side> {
  const [name, dir, dids, resolveCache, ledgerCache, tree] = spec.split(':');
  if (name === undefined || dir === undefined || dids === undefined) throw new Error(`--side NAME:DIR:DIDS[:RESOLVE_CACHE[:LEDGER_CACHE[:TREE]]], not ${spec}`);
  const root = tree !== undefined && tree !== '' ? tree : values.tree;
  const serveArgs: string[] = [];
  if (resolveCache !== undefined && resolveCache !== '') serveArgs.push('--directory-resolve-cache-bytes', resolveCache);
  if (ledgerCache !== undefined && ledgerCache !== '') serveArgs.push('--ledger-cache-bytes', ledgerCache);
  const svc = await ServiceProcess.start({
    dataDir: dir,
    roles: ['directory'],
    ports: { directory: await freePort() },
    blockTimeMs: 100,
    logFile: join(dir, `account-${name}.log`),
    ...(root === undefined ? {} : { root: resolve(root) }),
    serveArgs,
  });
  const health = (await (await fetch(`${svc.urls.directory}/health`)).json()) as { profile: string };
  return { name, dir, dids: Number(dids), svc, profile: health.profile };
}

/** With `--perf DIR`: `perf record` of the node's threads for the window, into DIR/NAME.data (read with `perf report`). */
function startPerf(pid: number, name: string): ChildProcess | undefined {
  if (values.perf === undefined) return undefined;
  const out = join(resolve(values.perf), `${name}.data`);
  return spawn('perf', ['record', '-q', '-F', '499', '-g', '-p', String(pid), '-o', out, '--', 'sleep', String(seconds)], { stdio: 'ignore' });
}

async function perfDone(p: ChildProcess | undefined): Promise<void> {
  if (p === undefined || p.exitCode !== null) return;
  await new Promise((r) => p.once('exit', r));
}

async function registrationWindow(gen: LoadGenerator, side: Side, label: string): Promise<void> {
  const { pid } = side.svc;
  const url = side.svc.urls.directory;
  await new Promise((r) => setTimeout(r, 1500));
  let t0 = 0;
  let ticks0 = readThreadTicks(pid);
  let sched0 = schedstat(pid);
  let io0 = io(pid);
  let sampler: StateSampler | undefined;
  let perf: ChildProcess | undefined;
  const gc0 = await gcSeconds(url);
  const job: LoadJob = {
    name: `${side.name}-${label}`,
    url,
    connections: 32,
    durationS: seconds,
    warmupS: 2,
    // as the figure: enough for warm-up and window
    request: { kind: 'registration', profile: side.profile, count: 60_000 },
  };
  const r = await gen.run(job, pid, () => {
    t0 = performance.now();
    ticks0 = readThreadTicks(pid);
    sched0 = schedstat(pid);
    io0 = io(pid);
    sampler = new StateSampler(pid);
    perf = startPerf(pid, `${side.name}-${label}`);
  });
  const states = sampler?.stop() ?? [];
  const wallMs = performance.now() - t0;
  const ticks = threadCpu(ticks0, readThreadTicks(pid));
  const sched = schedstat(pid);
  const io1 = io(pid);
  const gc1 = await gcSeconds(url);
  await perfDone(perf);
  const n = Math.max(1, r.ok);
  const us = (ms: number) => round((ms * 1000) / n, 1);
  const onCpuMs = (sched[0] - sched0[0]) / 1e6;
  const waitMs = (sched[1] - sched0[1]) / 1e6;
  const kib = (key: string) => round(((io1.get(key) ?? 0) - (io0.get(key) ?? 0)) / 1024 / n, 2);
  const threads = ticks
    .filter((t) => t.user_ms + t.system_ms > 0)
    .map((t) => `${t.name} ${us(t.user_ms)}+${us(t.system_ms)}`)
    .join(', ');
  const gc = [...gc1].map(([kind, s]) => `${kind} ${us((s - (gc0.get(kind) ?? 0)) * 1000)}`).join(', ');
  const wal = statSync(join(side.dir, 'ledger.sqlite-wal'), { throwIfNoEntry: false })?.size ?? 0;
  console.log(
    `${side.name} ${label}: ${r.rate}/s (${r.ok} answered, ${r.non2xx} not 2xx), p50 ${r.latency_ms.p50} p99 ${r.latency_ms.p99} ms | ` +
      `main thread µs/reg: on a CPU ${us(onCpuMs)}, run queue ${us(waitMs)}, blocked ${us(wallMs - onCpuMs - waitMs)} | ` +
      `threads user+system µs/reg: ${threads} | GC µs/reg: ${gc} | ` +
      `KiB/reg: rchar ${kib('rchar')}, wchar ${kib('wchar')}, read_bytes ${kib('read_bytes')}, write_bytes ${kib('write_bytes')} | ` +
      `load generator ${us(r.loadgen_cpu.cpu_ms)} µs/reg | others ${r.other_cpu_cores} cores, load ${loadavg()[0].toFixed(2)} | WAL ${round(wal / 2 ** 20, 1)} MiB`,
  );
  for (const s of states) console.log(s);
}

async function resolveWindow(gen: LoadGenerator, side: Side, label: string): Promise<void> {
  const job: LoadJob = {
    name: `${side.name}-${label}`,
    url: side.svc.urls.directory,
    connections: 32,
    durationS: seconds,
    warmupS: 2,
    request: { kind: 'random-did', pathPrefix: '/resolve/', didsFile: join(side.dir, BIG_DIDS_FILE), count: side.dids },
  };
  const r = await gen.run(job, side.svc.pid);
  console.log(`${side.name} ${label}: resolve ${r.rate}/s | others ${r.other_cpu_cores} cores, load ${loadavg()[0].toFixed(2)}`);
}

const gen = LoadGenerator.start();
const sides: Side[] = [];
try {
  for (const spec of values.side ?? []) sides.push(await startSide(spec));
  if (sides.length === 0) throw new Error('no --side');
  const rounds = Number(values.rounds);
  const order = (i: number) => (i % 2 === 0 ? sides : [...sides].reverse());
  if (values.fresh) for (let i = 0; i < rounds; i++) for (const s of order(i)) await registrationWindow(gen, s, `fresh-r${i + 1}`);
  if (values['resolve-phase']) {
    for (let i = 0; i < 2; i++) for (const s of sides) await resolveWindow(gen, s, `resolve-cold-${i + 1}`);
    for (let i = 0; i < rounds; i++) for (const s of order(i)) await registrationWindow(gen, s, `after-r${i + 1}`);
  }
} finally {
  await gen.stop();
  for (const s of sides) await s.svc.stop();
}
