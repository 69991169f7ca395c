/** Linux process helpers for tests that check no process is left behind: descendants, groups, liveness (/proc). */
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';

interface ProcStat {
  state: string;
  ppid: number;
  pgrp: number;
}

/** The state, parent and process group of `pid` from /proc/<pid>/stat, or undefined once it is gone. */
function procStat(pid: number | string): ProcStat | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // the command name may hold spaces and parentheses: the fields after it follow the last ')'
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: rest[0]!, ppid: Number(rest[1]), pgrp: Number(rest[2]) };
  } catch {
    return undefined;
  }
}

/** pid → stat of every live (not zombie) process. */
function processTable(): Map<number, ProcStat> {
  const table = new Map<number, ProcStat>();
  for (const name of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(name)) continue;
    const s = procStat(name);
    if (s !== undefined && s.state !== 'Z') table.set(Number(name), s);
  }
  return table;
}

/** Every live descendant of `pid` (children, their children, …). */
export function descendants(pid: number): number[] {
  const table = processTable();
  const out: number[] = [];
  const walk = (parent: number): void => {
    for (const [p, { ppid }] of table) {
      if (ppid === parent && !out.includes(p)) {
        out.push(p);
        walk(p);
      }
    }
  };
  walk(pid);
  return out;
}

/** Every live process of the process group `pgid`. */
export function groupMembers(pgid: number): number[] {
  return [...processTable()].filter(([, s]) => s.pgrp === pgid).map(([pid]) => pid);
}

/** True while `pid` runs (a zombie waiting to be reaped counts as gone). */
export function isRunning(pid: number): boolean {
  const s = procStat(pid);
  return s !== undefined && s.state !== 'Z';
}

/** Sends `signal` to `pid` if it still exists. */
export function signalIfRunning(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}

/** True when nothing listens on 127.0.0.1:`port` (this process can bind it). */
export function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}
