/** The orchestrator's handle on the load-generator child process (bench/loadgen.ts, forked once per run). */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { LoadgenMessage, LoadgenReply, LoadJob, LoadResult } from './jobs.js';
import { CpuWindow, machineBusyMs, round } from './proc.js';

const LOADGEN = fileURLToPath(new URL('./loadgen.ts', import.meta.url));

export class LoadGenerator {
  private constructor(private readonly child: ChildProcess) {}

  /** Forks the load generator (TypeScript through tsx's loader; autocannon does the work). */
  static start(): LoadGenerator {
    const child = fork(LOADGEN, [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    return new LoadGenerator(child);
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  /**
   * Runs one job (warm-up, then the measured window) and returns its result; with `target` (one process id or
   * several), the CPU those processes used during the measured window is added as `target_cpu`.
   * `onMeasuring` is called as the measured window starts (readings to take beside it).
   */
  run(job: LoadJob, target?: number | readonly number[], onMeasuring?: () => void): Promise<LoadResult> {
    const pids = target === undefined ? [] : typeof target === 'number' ? [target] : target;
    return new Promise((resolve, reject) => {
      let window: CpuWindow | undefined;
      let machine0 = 0;
      const onMessage = (msg: LoadgenReply) => {
        if (msg.type === 'measuring') {
          if (pids.length > 0) window = new CpuWindow(pids);
          machine0 = machineBusyMs();
          onMeasuring?.();
          return;
        }
        cleanup();
        if (msg.type === 'error') return reject(new Error(`load generator: ${msg.message}`));
        const r = msg.result;
        if (window === undefined) return resolve(r);
        const target = window.end();
        const machine = machineBusyMs() - machine0;
        const other = (machine - target.cpu_ms - r.loadgen_cpu.cpu_ms) / target.wall_ms;
        resolve({ ...r, target_cpu: target, other_cpu_cores: round(Math.max(0, other), 2), machine_cores: round(machine / target.wall_ms, 2) });
      };
      const onExit = (code: number | null) => {
        cleanup();
        reject(new Error(`load generator exited (${code}) during ${job.name}`));
      };
      const cleanup = () => {
        this.child.off('message', onMessage);
        this.child.off('exit', onExit);
      };
      this.child.on('message', onMessage);
      this.child.on('exit', onExit);
      this.child.send({ type: 'run', job } satisfies LoadgenMessage);
    });
  }

  /** Asks the child to leave and waits for it (killed after 5 s). */
  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.child.send({ type: 'exit' } satisfies LoadgenMessage);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  }
}
