/** The same-run references every figure is divided by: hello-world HTTP, raw SQLite commits, Ed25519 verifies. */
import { execFile, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { LoadJob, LoadResult } from './jobs.js';
import { cpuMs, machineBusyMs, round } from './proc.js';

const run = promisify(execFile);
const HELLO = fileURLToPath(new URL('./references/hello-server.mjs', import.meta.url));
const MICRO = fileURLToPath(new URL('./references/micro.ts', import.meta.url));

/** A reference server child that prints `{"port":…}` on its first line of output; stopped with SIGTERM. */
export interface PortServer {
  pid: number;
  url: string;
  stop(): void;
}

/** Starts `node <args>` and waits for the port line. */
export async function startPortServer(args: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<PortServer> {
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'], env, cwd: fileURLToPath(new URL('..', import.meta.url)) });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      createInterface({ input: child.stdout! }).once('line', (l) => resolve((JSON.parse(l) as { port: number }).port));
      child.once('exit', (c) => reject(new Error(`${args.join(' ')} exited ${c}`)));
    });
    return { pid: child.pid!, url: `http://127.0.0.1:${port}`, stop: () => child.kill('SIGTERM') };
  } catch (err) {
    child.kill('SIGTERM');
    throw err;
  }
}

/** A node:http hello-world JSON server in its own process, loaded like the service. */
export async function helloWorld(
  load: (job: LoadJob, pids: number) => Promise<LoadResult>,
  connections: number,
  durationS: number,
  warmupS: number,
): Promise<LoadResult> {
  const server = await startPortServer([HELLO]);
  try {
    return await load(
      { name: 'hello-world', url: server.url, connections, durationS, warmupS, request: { kind: 'static', method: 'GET', path: '/' } },
      server.pid,
    );
  } finally {
    server.stop();
  }
}

export interface SqliteReference {
  full: { per_s: number; n: number; synchronous: string; row_bytes: number };
  normal: { per_s: number; n: number; synchronous: string; row_bytes: number };
}

export interface Ed25519Reference {
  per_s: number;
  n: number;
  message_bytes: number;
  key: string;
  /** libsodium's verifications/s over the same message (null where sodium-native does not load). */
  libsodium_per_s: number | null;
}

/** What other work used the machine while a micro reference ran (cores beyond its own CPU). */
export interface Disturbance {
  other_cpu_cores: number;
  attempts?: number;
}

async function micro<T>(which: string, seconds: number, dir: string): Promise<T & Disturbance> {
  const busy0 = machineBusyMs();
  const t0 = performance.now();
  const child = run(process.execPath, ['--import', 'tsx', MICRO, which, String(seconds), dir], {
    cwd: fileURLToPath(new URL('..', import.meta.url)),
  });
  let own = 0;
  // sample the child's CPU just before it ends (its /proc entry goes with it)
  const pid = child.child.pid!;
  const sampler = setInterval(() => {
    try {
      own = cpuMs(pid);
    } catch {
      // exited
    }
  }, 50);
  const { stdout } = await child;
  clearInterval(sampler);
  const other = Math.max(0, (machineBusyMs() - busy0 - own) / (performance.now() - t0));
  return { ...(JSON.parse(stdout.trim().split('\n').pop()!) as T), other_cpu_cores: round(other, 2) };
}

export const sqliteCommits = (seconds: number, dir: string) => micro<SqliteReference>('sqlite', seconds, dir);
export const ed25519Verifies = (seconds: number, dir: string) => micro<Ed25519Reference>('ed25519', seconds, dir);

/** Runs `fn` again (at most `retries` times, after `settle`) while other work disturbed it; keeps the quietest. */
export async function quietest<T extends Disturbance>(fn: () => Promise<T>, retries: number, limit: number, settle: () => Promise<void>): Promise<T> {
  let best: T | undefined;
  for (let attempt = 1; ; attempt++) {
    const r = await fn();
    if (best === undefined || r.other_cpu_cores < best.other_cpu_cores) best = r;
    if (r.other_cpu_cores <= limit || attempt > retries) return { ...best, attempts: attempt };
    await settle();
  }
}
