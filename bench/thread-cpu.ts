/**
 * CPU per thread of a process, from `/proc/<pid>/task/<tid>/stat` (Linux): user and system time apart, per named
 * thread (the service names its worker threads, `nameThisThread`). A V8 profile is sampled by wall clock and
 * blames whatever a thread was doing when it was preempted; these counters are the CPU each thread used.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ; 100 on every Linux build we run on). */
export const TICKS_PER_SECOND = 100;

/** One thread's counters, in clock ticks. */
export interface ThreadTicks {
  name: string;
  user: number;
  system: number;
}

/** The name and counters of one `stat` line; the name may hold spaces and parentheses. */
export function parseThreadStat(stat: string): ThreadTicks {
  const open = stat.indexOf('(');
  const close = stat.lastIndexOf(')');
  if (open < 0 || close < open) throw new Error(`not a stat line: ${stat.slice(0, 80)}`);
  // after ") ": state(3) … utime is field 14 and stime field 15, i.e. the 12th and 13th after the state
  const fields = stat.slice(close + 2).split(' ');
  return { name: stat.slice(open + 1, close), user: Number(fields[11]), system: Number(fields[12]) };
}

/** Every thread of `pid` by thread id; the main thread (id = pid) is named `main`. Empty where there is no /proc. */
export function readThreadTicks(pid: number): Map<number, ThreadTicks> {
  const out = new Map<number, ThreadTicks>();
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    try {
      const t = parseThreadStat(readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8'));
      out.set(Number(tid), Number(tid) === pid ? { ...t, name: 'main' } : t);
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return out;
}

/** One thread name's CPU between two readings, ms. */
export interface ThreadCpu {
  name: string;
  user_ms: number;
  system_ms: number;
}

/**
 * CPU of each thread name between `before` and `after` (threads of one name summed; threads that started in
 * between count from zero), largest first.
 */
export function threadCpu(before: Map<number, ThreadTicks>, after: Map<number, ThreadTicks>): ThreadCpu[] {
  const perName = new Map<string, { user: number; system: number }>();
  for (const [tid, t] of after) {
    const b = before.get(tid);
    const sum = perName.get(t.name) ?? { user: 0, system: 0 };
    sum.user += t.user - (b?.user ?? 0);
    sum.system += t.system - (b?.system ?? 0);
    perName.set(t.name, sum);
  }
  const msPerTick = 1000 / TICKS_PER_SECOND;
  return [...perName]
    .map(([name, s]) => ({ name, user_ms: s.user * msPerTick, system_ms: s.system * msPerTick }))
    .sort((x, y) => y.user_ms + y.system_ms - (x.user_ms + x.system_ms));
}
