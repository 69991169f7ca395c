/** Linux process-tree helpers for tests that check no process is left behind: descendants and liveness via /proc. */
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** pid → [parent pid, state] of every process, from /proc/<pid>/stat. */
function processTable(): Map<number, { ppid: number; state: string }> {
  const table = new Map<number, { ppid: number; state: string }>();
  for (const name of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // the command name may hold spaces and parentheses: the fields after it follow the last ')'
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      table.set(Number(name), { state: rest[0]!, ppid: Number(rest[1]) });
    } catch {
      // exited meanwhile
    }
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

/** True while `pid` runs (a zombie waiting to be reaped counts as gone). */
export function isRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
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
