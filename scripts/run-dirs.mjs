// The directories a run of scripts/run-tests.mjs makes — the compiled sources and tests in the repository root
// (`.test-src-…`, `.test-js-…`) and the answered-codes directory in the temp dir (`ddn-answered-codes-…`) — are
// named with the run's pid: `<prefix>pid<pid>-XXXXXX`. The run removes them when it exits; one that was killed
// (SIGKILL, or Ctrl-C while its test processes ran) leaves them, and the next run removes those whose process is
// gone (and those of the version before, named without a pid, once older than a day: no run lasts that long).
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** Unnamed leftovers (no pid) older than this are removed. */
const UNNAMED_STALE_MS = 24 * 3600 * 1000;

/** A fresh directory `<parent>/<prefix>pid<pid>-XXXXXX` of this run. */
export function runDir(parent, prefix, pid = process.pid) {
  return mkdtempSync(join(parent, `${prefix}pid${pid}-`));
}

/** True while process `pid` exists (another user's too: EPERM). */
export function processAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e?.code === 'EPERM';
  }
}

/**
 * Removes the directories of `parent` named `<prefix>pid<pid>-…` whose process is gone, and those named
 * `<prefix>…` without a pid last changed more than a day before `nowMs`; returns the names removed.
 */
export function removeStaleRunDirs(parent, prefix, { alive = processAlive, nowMs = Date.now() } = {}) {
  const removed = [];
  let names;
  try {
    names = readdirSync(parent);
  } catch {
    return removed;
  }
  for (const name of names) {
    if (!name.startsWith(prefix)) continue;
    const path = join(parent, name);
    const pid = /^pid(\d+)-/.exec(name.slice(prefix.length))?.[1];
    let stale;
    try {
      stale = pid !== undefined ? !alive(Number(pid)) : nowMs - statSync(path).mtimeMs > UNNAMED_STALE_MS;
    } catch {
      stale = false; // gone meanwhile
    }
    if (!stale) continue;
    rmSync(path, { recursive: true, force: true });
    removed.push(name);
  }
  return removed.sort();
}
