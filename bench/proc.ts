/** Linux /proc readings of another process: CPU time, resident memory and its peak (reset through clear_refs). */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { damonSchemes, reclaimLine } from './reclaim.js';
import { parseThreadStat, readThreadTicks, threadCpu, TICKS_PER_SECOND, type ThreadCpu, type ThreadTicks } from './thread-cpu.js';

/**
 * User + system CPU milliseconds used so far by `pid` (its threads included, children not), or with `thread`
 * by that one thread of it (`thread === pid` is its main thread: the event loop of a Node process).
 */
export function cpuMs(pid: number, thread?: number): number {
  const t = parseThreadStat(readFileSync(thread === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${thread}/stat`, 'utf8'));
  return ((t.user + t.system) * 1000) / TICKS_PER_SECOND;
}

function statusKiB(pid: number, key: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (m === null) throw new Error(`no ${key} in /proc/${pid}/status`);
  return Number(m[1]);
}

/** Resident and peak resident memory of a process, MiB. */
export interface ProcessMemory {
  rss_mib: number;
  peak_rss_mib: number;
}

/** {@link ProcessMemory} of `pid` now (Linux /proc). */
export function memoryOf(pid: number): ProcessMemory {
  return { rss_mib: Math.round(statusKiB(pid, 'VmRSS') / 1024), peak_rss_mib: Math.round(statusKiB(pid, 'VmHWM') / 1024) };
}

/** Resident set size now, bytes. */
export function rssBytes(pid: number): number {
  return statusKiB(pid, 'VmRSS') * 1024;
}

/** Peak resident set size since start or since the last {@link resetPeakRss}, bytes. */
export function peakRssBytes(pid: number): number {
  return statusKiB(pid, 'VmHWM') * 1024;
}

/** Resets the peak RSS counter of `pid` to its current RSS (Linux ≥ 4.0); false when not permitted. */
export function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/** Busy CPU milliseconds of the whole machine so far, all cores summed (/proc/stat: all but idle and iowait). */
export function machineBusyMs(): number {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0];
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal (guest time is already inside user)
  const busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
  return (busy * 1000) / TICKS_PER_SECOND;
}

/**
 * CPU milliseconds used so far by every process named `comm` (e.g. `postgres`: the server and its backends), by
 * process id; with `cmdlineHas`, only those whose command line holds it (a PostgreSQL backend's title names its
 * database: `postgres: <user> <db> …`). Empty where there is no /proc; a process that ends meanwhile is left out.
 */
export function cpuMsByName(comm: string, cmdlineHas?: string): Map<number, number> {
  const out = new Map<number, number>();
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return out;
  }
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const t = parseThreadStat(readFileSync(`/proc/${e}/stat`, 'utf8'));
      if (t.name !== comm) continue;
      if (cmdlineHas !== undefined && !readFileSync(`/proc/${e}/cmdline`, 'utf8').includes(cmdlineHas)) continue;
      out.set(Number(e), ((t.user + t.system) * 1000) / TICKS_PER_SECOND);
    } catch {
      // ended meanwhile
    }
  }
  return out;
}

/**
 * CPU milliseconds `after` − `before` of {@link cpuMsByName} readings: a process that started in between counts
 * whole, one that ended in between is missing (PostgreSQL backends live as long as their pooled connections).
 */
export function cpuMsBetween(before: ReadonlyMap<number, number>, after: ReadonlyMap<number, number>): number {
  let sum = 0;
  for (const [pid, ms] of after) sum += ms - (before.get(pid) ?? 0);
  return sum;
}

/**
 * Milliseconds the threads of `pids` have spent so far runnable but waiting for a CPU (/proc/<pid>/task/<tid>/schedstat,
 * second field), summed; threads that ended are left out. 0 where the kernel keeps no schedstat.
 */
export function runQueueMs(pids: readonly number[]): number {
  let ns = 0;
  for (const pid of pids) {
    let tids: string[];
    try {
      tids = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue;
    }
    for (const tid of tids) {
      try {
        ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[1] ?? 0);
      } catch {
        // ended meanwhile
      }
    }
  }
  return ns / 1e6;
}

/**
 * CPU time of processes (summed) over a window, as a share of one core; also of their main threads alone — a
 * Node server whose event loop is near 1.0 is bound by that one thread, whatever the other threads do.
 */
export class CpuWindow {
  private readonly startCpu: number[];
  private readonly startMain: number[];
  private readonly startThreads: Map<number, ThreadTicks>;
  private readonly startWall = performance.now();
  constructor(private readonly pids: readonly number[]) {
    this.startCpu = pids.map((pid) => cpuMs(pid));
    this.startMain = pids.map((pid) => cpuMs(pid, pid));
    this.startThreads = pids.length === 1 ? readThreadTicks(pids[0]!) : new Map();
  }
  /**
   * `{cpu_ms, wall_ms, cores, main_thread_cores}`: cores = CPU time / wall time (1.0 = one core busy all the
   * time); with several processes, also each one's share in `processes` (in the order of the pids given).
   */
  end(): CpuUse {
    const wall = performance.now() - this.startWall;
    const each = this.pids.map((pid, i) => ({ cpu: cpuMs(pid) - this.startCpu[i]!, main: cpuMs(pid, pid) - this.startMain[i]! }));
    const cpu = each.reduce((sum, e) => sum + e.cpu, 0);
    const main = each.reduce((sum, e) => sum + e.main, 0);
    return {
      cpu_ms: Math.round(cpu),
      wall_ms: Math.round(wall),
      cores: round(cpu / wall, 2),
      main_thread_cores: round(main / wall, 2),
      ...(each.length === 1 ? { threads: threadCpu(this.startThreads, readThreadTicks(this.pids[0]!)) } : {}),
      ...(each.length > 1
        ? {
            processes: each.map((e, i) => ({
              pid: this.pids[i]!,
              cpu_ms: Math.round(e.cpu),
              cores: round(e.cpu / wall, 2),
              main_thread_cores: round(e.main / wall, 2),
            })),
          }
        : {}),
    };
  }
}

export interface CpuUse {
  cpu_ms: number;
  wall_ms: number;
  /** CPU time / wall time: 1.0 is one core fully busy. */
  cores: number;
  /** The same for the processes' main threads only (Node: the event loops), summed. */
  main_thread_cores?: number;
  /** With one process: the CPU of each of its threads by name (the event loop is `main`), largest first. */
  threads?: ThreadCpu[];
  /** With several processes: each one's own figures, in the order they were given. */
  processes?: { pid: number; cpu_ms: number; cores: number; main_thread_cores: number }[];
}

/** The machine line of the report. */
export interface MachineInfo {
  cpu_model: string;
  cores: number;
  memory_gib: number;
  node: string;
  platform: string;
  /** Whether a proactive reclaimer (DAMON with a `pageout` scheme) was running; absent without DAMON (bench/reclaim.ts). */
  reclaim?: string;
}

export function machineInfo(): MachineInfo {
  const c = cpus();
  const reclaim = reclaimLine(damonSchemes());
  return {
    cpu_model: c[0]?.model.trim() ?? 'unknown',
    cores: c.length,
    memory_gib: round(totalmem() / 2 ** 30, 1),
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
    ...(reclaim === undefined ? {} : { reclaim }),
  };
}

export function round(x: number, digits = 0): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

export interface Quiet {
  /** Seconds spent waiting for the machine to calm down. */
  waited_s: number;
  /** Cores used by other work than ours over the last sample. */
  busy_cores: number;
  quiet: boolean;
}

/**
 * Waits (at most `maxWaitS`) until work other than our own processes (`ownPids`: the orchestrator, the load
 * generator, the services) keeps the machine busy less than `threshold` cores over `sampleS` seconds — other work
 * on a shared machine skews every figure. Returns what it saw.
 */
export async function waitForQuiet(maxWaitS: number, sampleS: number, ownPids: () => readonly number[], threshold = 0.3): Promise<Quiet> {
  const t0 = performance.now();
  const ownCpu = (pids: readonly number[]) =>
    pids.reduce((sum, pid) => {
      try {
        return sum + cpuMs(pid);
      } catch {
        return sum; // exited meanwhile
      }
    }, 0);
  for (;;) {
    const pids = ownPids();
    const b0 = machineBusyMs();
    const o0 = ownCpu(pids);
    const w0 = performance.now();
    await new Promise((r) => setTimeout(r, sampleS * 1000));
    const busy = (machineBusyMs() - b0 - (ownCpu(pids) - o0)) / (performance.now() - w0);
    const waited = (performance.now() - t0) / 1000 - sampleS;
    if (busy < threshold || waited + sampleS >= maxWaitS) {
      return { waited_s: round(Math.max(0, waited), 1), busy_cores: round(busy, 2), quiet: busy < threshold };
    }
  }
}

/** A process's main thread's time on a CPU and waiting for one, and the process's bytes from and to the disk. */
export interface BlockedReading {
  /** `performance.now()` of the reading. */
  atMs: number;
  /** The main thread's nanoseconds on a CPU and in the run queue (`/proc/<pid>/task/<pid>/schedstat`). */
  onCpuNs: number;
  runQueueNs: number;
  /** `read_bytes` and `write_bytes` of `/proc/<pid>/io`: what the disk read for it and what it dirtied. */
  readBytes: number;
  writeBytes: number;
}

/** A {@link BlockedReading} of `pid` now (Linux). */
export function readBlocked(pid: number): BlockedReading {
  const [onCpuNs, runQueueNs] = readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').trim().split(/\s+/).map(Number);
  const io = readFileSync(`/proc/${pid}/io`, 'utf8');
  const field = (key: string) => Number(new RegExp(`^${key}: (\\d+)`, 'm').exec(io)?.[1] ?? 0);
  return { atMs: performance.now(), onCpuNs: onCpuNs!, runQueueNs: runQueueNs!, readBytes: field('read_bytes'), writeBytes: field('write_bytes') };
}

/**
 * Per operation between two readings: the main thread's time on a CPU, µs, and off a CPU and out of the run queue
 * (blocked in a system call that sleeps — a read from the disk, an `fsync` — or idle), µs, and KiB the disk read
 * and the process dirtied.
 */
/**
 * Per operation: the event loop on a CPU and blocked, µs, KiB the disk read for the process and KiB it dirtied.
 */
export interface BlockedColumns {
  main_cpu_us: number;
  blocked_us: number;
  disk_read_kib: number;
  dirtied_kib: number;
}

export function blockedPerOp(before: BlockedReading, after: BlockedReading, ops: number): BlockedColumns {
  const n = Math.max(1, ops);
  const wallNs = (after.atMs - before.atMs) * 1e6;
  const onCpuNs = after.onCpuNs - before.onCpuNs;
  const blockedNs = Math.max(0, wallNs - onCpuNs - (after.runQueueNs - before.runQueueNs));
  return {
    main_cpu_us: round(onCpuNs / 1000 / n, 1),
    blocked_us: round(blockedNs / 1000 / n, 1),
    disk_read_kib: round((after.readBytes - before.readBytes) / 1024 / n, 2),
    dirtied_kib: round((after.writeBytes - before.writeBytes) / 1024 / n, 1),
  };
}
