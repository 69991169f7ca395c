/**
 * Starts a worker thread on a module beside the caller's: the compiled one under `dist/`, or, when running from
 * TypeScript sources (tests, `tsx`), the `.ts` one behind the TypeScript loader its parent runs with.
 */
import { writeFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';

/** A new thread running `./<name>.ts|js` next to `callerUrl` (the caller's `import.meta.url`) with `workerData`. */
export function startModuleWorker(callerUrl: string, name: string, workerData: unknown): Worker {
  const fromSource = callerUrl.endsWith('.ts');
  const url = new URL(`./${name}.${fromSource ? 'ts' : 'js'}`, callerUrl);
  if (!fromSource) return new Worker(url, { workerData });
  // from sources the thread first registers the TypeScript loader
  return new Worker(`import('tsx/esm/api').then((m) => { m.register(); return import(${JSON.stringify(url.href)}); })`, {
    eval: true,
    workerData,
  });
}

/**
 * Names the calling thread (at most 15 characters) as `top -H`, `perf` and `/proc/<pid>/task/<tid>/comm` show it, so
 * the CPU of each of the service's threads can be told apart. Linux only; elsewhere it does nothing.
 */
export function nameThisThread(name: string): void {
  try {
    writeFileSync('/proc/thread-self/comm', name.slice(0, 15));
  } catch {
    // no /proc (not Linux): threads keep the process's name
  }
}
