/**
 * Starts a worker thread whose module sits beside this file: the compiled one under `dist/`, or, when running from
 * TypeScript sources (tests, `tsx`), the `.ts` one behind the TypeScript loader its parent runs with.
 */
import { Worker } from 'node:worker_threads';

/** Running from TypeScript sources rather than compiled `dist/`. */
const FROM_SOURCE = import.meta.url.endsWith('.ts');

/** A new thread running `./<name>.ts|js` with `workerData`. */
export function startSiblingWorker(name: string, workerData: unknown): Worker {
  const url = new URL(`./${name}.${FROM_SOURCE ? 'ts' : 'js'}`, import.meta.url);
  if (!FROM_SOURCE) return new Worker(url, { workerData });
  // from sources the thread first registers the TypeScript loader
  return new Worker(`import('tsx/esm/api').then((m) => { m.register(); return import(${JSON.stringify(url.href)}); })`, {
    eval: true,
    workerData,
  });
}
