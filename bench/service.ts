/**
 * The service under test as its own child process: the compiled `ddn serve` (dist/, not tsx) on fixed loopback
 * ports, so a restart on the same data directory keeps the URLs the registered DID documents publish.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, closeSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** How long a service child may take to listen (a machine shared by many builds can take over 30 s). */
const START_TIMEOUT_S = 120;

export interface Ports {
  directory: number;
  relay: number;
  cache: number;
}

export interface ServiceUrls {
  directory: string;
  relay: string;
  cache: string;
}

const ROLE_ORDER: readonly (keyof Ports)[] = ['directory', 'relay', 'cache'];

export interface ServiceOptions {
  dataDir: string;
  /** Ports of the roles this process runs (all three by default). */
  ports: Partial<Ports>;
  /** `--roles` (default: all three, the combined node). */
  roles?: (keyof Ports)[];
  /** `--directory-url`: the Directory a process without that role asks. */
  directoryUrl?: string;
  blockTimeMs: number;
  /** Service stderr (its warn/error logs) is appended here. */
  logFile: string;
  /** Write a V8 CPU profile of the whole service life into this directory (`node --cpu-prof`). */
  cpuProfDir?: string;
  /** The built tree whose `bin/ddn.js` runs (default: this checkout; `bench/ab.ts` starts another one beside it). */
  root?: string;
  /** More `ddn serve` flags. */
  serveArgs?: readonly string[];
}

/** A free loopback TCP port (the OS picks; released before use, so a tiny race is possible). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      s.close(() => (typeof addr === 'object' && addr !== null ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

export async function freePorts(): Promise<Ports> {
  return { directory: await freePort(), relay: await freePort(), cache: await freePort() };
}

/**
 * The environment every service child starts with: request rate limits off (`DDN_RATE_LIMIT=off`, the
 * `--rate-limit off` flag's variable), since the load generator is one loopback client sending thousands of
 * requests a second to one recipient, which is exactly what the limits refuse. An environment variable rather
 * than the flag, so that `bench/ab.ts` can still start a tree from before the flag existed.
 */
export const SERVICE_ENV: Readonly<Record<string, string>> = Object.freeze({ DDN_RATE_LIMIT: 'off' });

/** The command line used to start the service, with its environment (for the report). */
export function serviceCommandLine(o: ServiceOptions): string {
  return [...Object.entries(SERVICE_ENV).map(([k, v]) => `${k}=${v}`), ...serviceCommand(o)].join(' ');
}

/** The command used to start the service (without its environment, {@link SERVICE_ENV}). */
export function serviceCommand(o: ServiceOptions): string[] {
  return [
    'node',
    // extra V8/Node flags for the service alone (e.g. `--log-deopt --logfile=…`), not the load generator's
    ...(process.env.DDN_BENCH_NODE_ARGS?.split(' ').filter((a) => a !== '') ?? []),
    ...(o.cpuProfDir === undefined ? [] : ['--cpu-prof', '--cpu-prof-dir', o.cpuProfDir]),
    'bin/ddn.js',
    'serve',
    '--data-dir',
    o.dataDir,
    ...(o.roles === undefined ? [] : ['--roles', o.roles.join(',')]),
    ...ROLE_ORDER.flatMap((r) => (o.ports[r] === undefined ? [] : [`--${r}-port`, String(o.ports[r])])),
    ...(o.directoryUrl === undefined ? [] : ['--directory-url', o.directoryUrl]),
    '--block-time-ms',
    String(o.blockTimeMs),
    '--allow-private-endpoints',
    // A full run sends one recipient more than the default 1 GiB quota; the quota check still runs on every store.
    '--cache-max-bytes-per-recipient',
    String(2 ** 40),
    '--log-level',
    'warn',
    ...(o.serveArgs ?? []),
  ];
}

export class ServiceProcess {
  /** Every service child still running, so an interrupted run can stop them all. */
  private static readonly running = new Set<ServiceProcess>();

  /** Process ids of the service children running now. */
  static pids(): number[] {
    return [...ServiceProcess.running].map((s) => s.pid);
  }

  /** Stops every service child still running. */
  static async stopAll(): Promise<void> {
    await Promise.allSettled([...ServiceProcess.running].map((s) => s.stop()));
  }

  private constructor(
    private readonly child: ChildProcess,
    readonly urls: ServiceUrls,
  ) {}

  get pid(): number {
    return this.child.pid ?? -1;
  }

  /**
   * Starts `ddn serve` and resolves once it printed its listening line (rejects after 120 s or on exit: a start
   * takes a few seconds, but over a minute on a machine loaded many times over).
   */
  static async start(options: ServiceOptions): Promise<ServiceProcess> {
    // DDN_BENCH_CPU_PROF_DIR profiles every service child (the figures that start their own processes too)
    const profDir = options.cpuProfDir ?? process.env.DDN_BENCH_CPU_PROF_DIR;
    const o = profDir === undefined ? options : { ...options, cpuProfDir: profDir };
    const [, ...args] = serviceCommand(o);
    const root = o.root ?? ROOT;
    args[args.indexOf('bin/ddn.js')] = join(root, 'bin', 'ddn.js');
    const log = openSync(o.logFile, 'a');
    const child = spawn(process.execPath, args, { cwd: root, stdio: ['ignore', 'pipe', log], env: { ...process.env, ...SERVICE_ENV } });
    closeSync(log);
    const urls = await new Promise<ServiceUrls>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`service did not start within ${START_TIMEOUT_S} s (see ${o.logFile})`));
      }, START_TIMEOUT_S * 1000);
      const lines = createInterface({ input: child.stdout! });
      lines.once('line', (line) => {
        clearTimeout(timer);
        try {
          const j = JSON.parse(line) as { directory_url?: string; relay_url?: string; cache_url?: string };
          resolve({ directory: j.directory_url ?? '', relay: j.relay_url ?? '', cache: j.cache_url ?? '' });
        } catch {
          reject(new Error(`unexpected service output: ${line}`));
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`service exited with ${code} before listening (see ${o.logFile})`));
      });
    });
    const svc = new ServiceProcess(child, urls);
    ServiceProcess.running.add(svc);
    child.once('exit', () => ServiceProcess.running.delete(svc));
    return svc;
  }

  /** SIGTERM (clean shutdown: in-flight requests finish, databases close); SIGKILL after 30 s. */
  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 30_000);
    await exited;
    clearTimeout(timer);
  }
}
