/**
 * One process per data directory: `ddn serve` and `ddn mirror` take `<data-dir>/ddn.lock` at start and hold it
 * until they stop. The lock is one the operating system holds for the process (src/store/sqlite/exclusive-lock.ts),
 * so a process killed with `kill -9` leaves nothing that blocks the next start. The holder writes its pid to
 * `<data-dir>/ddn.pid`, so a second process can say which one it met.
 */
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tryExclusiveLock, type ExclusiveFileLock } from '../store/sqlite/exclusive-lock.js';
import { DataDirError } from './node-keys.js';

export const LOCK_FILE = 'ddn.lock';
export const PID_FILE = 'ddn.pid';

/** The data directory's lock, held until released (or the process ends). */
export interface DataDirLock {
  release(): void;
}

/** The pid `ddn.pid` names, when it names a process that is alive. */
function holderPid(dataDir: string): number | undefined {
  let pid: number;
  try {
    pid = Number(readFileSync(join(dataDir, PID_FILE), 'utf8').trim());
  } catch {
    return undefined;
  }
  if (!Number.isSafeInteger(pid) || pid <= 0) return undefined;
  try {
    process.kill(pid, 0);
    return pid;
  } catch (err) {
    // EPERM: alive, but another user's
    return (err as NodeJS.ErrnoException).code === 'EPERM' ? pid : undefined;
  }
}

/**
 * Takes the lock of `dataDir` (created when absent) for this process. Throws {@link DataDirError} naming the
 * directory and the other process when one holds it.
 */
export function lockDataDir(dataDir: string): DataDirLock {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  let lock: ExclusiveFileLock | null;
  try {
    lock = tryExclusiveLock(join(dataDir, LOCK_FILE));
  } catch (err) {
    throw new DataDirError(`cannot lock the data directory ${dataDir} (${join(dataDir, LOCK_FILE)}): ${err instanceof Error ? err.message : String(err)}`);
  }
  if (lock === null) {
    const pid = holderPid(dataDir);
    const who = pid === undefined ? 'another ddn process' : `another ddn process (pid ${pid})`;
    throw new DataDirError(`the data directory ${dataDir} is in use by ${who}; stop it, or give this one its own --data-dir`);
  }
  const pidPath = join(dataDir, PID_FILE);
  const tmp = `${pidPath}.${process.pid}.tmp`;
  try {
    writeFileSync(tmp, `${process.pid}\n`, { mode: 0o644 });
    renameSync(tmp, pidPath);
  } catch {
    // only a name for a second process's message (a full disk may refuse it): the lock holds without it
    rmSync(tmp, { force: true });
    rmSync(pidPath, { force: true });
  }
  let held = true;
  return {
    release() {
      if (!held) return;
      held = false;
      // only while the lock is held is ddn.pid ours to remove
      rmSync(pidPath, { force: true });
      lock.release();
    },
  };
}
