/**
 * What bounds the Directory write figures on PostgreSQL, read beside their measured window: the CPU PostgreSQL's
 * processes used (server and backends, from /proc), and each Directory process's use of the shared ledger's
 * admission lock (its `/metrics` counters `ddn_ledger_lock_*_total`, by work: admission batches, blocks).
 *
 * - `lock_wait_share`: of the time admission batches spent from asking for the lock to their commit, the share
 *   spent waiting for it (all processes summed). Near 0: the lock does not hold admissions back.
 * - `lock_busy`: the time the lock was held (admissions and blocks, every process, from taking it to the end of
 *   its transaction on PostgreSQL's clock), ÷ the window. Near 1: the lock is the bound — every admission runs
 *   through it one after another.
 */
import { cpuMsBetween, cpuMsByName, round, runQueueMs } from '../proc.js';

type Work = 'admission' | 'block';
interface LockReading {
  transactions: number;
  waitS: number;
  totalS: number;
  heldS: number;
}
type ViewOutcome = 'stored' | 'stale' | 'conflict' | 'full';
type Locks = Record<Work, LockReading> & { view: Record<ViewOutcome, number> };

const FAMILIES = {
  transactions: 'ddn_ledger_lock_transactions_total',
  waitS: 'ddn_ledger_lock_wait_seconds_total',
  totalS: 'ddn_ledger_lock_transaction_seconds_total',
  heldS: 'ddn_ledger_lock_held_seconds_total',
} as const;

/** The lock counters of one `/metrics` text (zero where a series is absent: nothing counted yet). */
export function parseLockMetrics(text: string): Locks {
  const zero = (): LockReading => ({ transactions: 0, waitS: 0, totalS: 0, heldS: 0 });
  const out: Locks = { admission: zero(), block: zero(), view: { stored: 0, stale: 0, conflict: 0, full: 0 } };
  for (const line of text.split('\n')) {
    const v = /^ddn_ledger_view_batches_total\{outcome="(stored|stale|conflict|full)"\}\s+(\S+)/.exec(line);
    if (v !== null) out.view[v[1] as ViewOutcome] = Number(v[2]);
    for (const [key, name] of Object.entries(FAMILIES) as [keyof LockReading, string][]) {
      if (!line.startsWith(`${name}{`)) continue;
      const m = /work="(admission|block)"\}\s+(\S+)/.exec(line);
      if (m !== null) out[m[1] as Work][key] = Number(m[2]);
    }
  }
  return out;
}

async function readLocks(url: string): Promise<Locks> {
  const res = await fetch(`${url}/metrics`);
  if (!res.ok) throw new Error(`${url}/metrics answered ${res.status}`);
  return parseLockMetrics(await res.text());
}

export interface WriteBounds {
  /** PostgreSQL's processes, in cores over the window. */
  postgres_cores: number;
  /** Admission batches: waiting for the lock ÷ asking-to-commit time, all processes. */
  lock_wait_share: number;
  /** Lock held (admissions and blocks, all processes, as PostgreSQL measured it) ÷ window. */
  lock_busy: number;
  /** Admission batches (transactions) in the window, all processes. */
  admission_batches: number;
  /** Blocks produced (transactions under the lock) in the window. */
  block_transactions: number;
  /**
   * Admission batches checked on their process's own view and stored by one statement (ledger-admission.ts) ÷ all
   * batches checked on a view; the others (a block or a conflicting row came) took the turn under the lock.
   */
  view_stored_share: number;
  /** Mean time one admission batch held the lock, ms. */
  lock_held_ms_per_batch: number;
  /** Mean time one block's transaction held the lock, ms. */
  lock_held_ms_per_block: number;
  /**
   * The Directory processes' threads runnable but waiting for a CPU, in cores over the window: well above 0, the
   * machine's cores are the bound (a process holding the lock waits for a core too).
   */
  servers_run_queue_cores: number;
}

/** Readings taken at the start of a measured window; `end` reads again and gives the window's figures. */
export class WriteBoundsWindow {
  private readonly t0 = performance.now();
  private readonly pg0 = cpuMsByName('postgres');
  private readonly locks0: Promise<Locks[]>;
  private readonly queued0: number;
  constructor(
    private readonly urls: readonly string[],
    private readonly pids: readonly number[],
  ) {
    this.queued0 = runQueueMs(pids);
    this.locks0 = Promise.all(urls.map(readLocks));
  }

  async end(): Promise<WriteBounds> {
    const wallS = (performance.now() - this.t0) / 1000;
    const pgMs = cpuMsBetween(this.pg0, cpuMsByName('postgres'));
    const queuedMs = runQueueMs(this.pids) - this.queued0;
    const [before, after] = await Promise.all([this.locks0, Promise.all(this.urls.map(readLocks))]);
    const diff = (work: Work, key: keyof LockReading) => after.reduce((sum, a, i) => sum + a[work][key] - before[i]![work][key], 0);
    const admissionTotal = diff('admission', 'totalS');
    const held = diff('admission', 'heldS') + diff('block', 'heldS');
    return {
      postgres_cores: round(pgMs / 1000 / wallS, 2),
      lock_wait_share: admissionTotal > 0 ? round(diff('admission', 'waitS') / admissionTotal, 3) : 0,
      lock_busy: round(held / wallS, 3),
      admission_batches: Math.round(diff('admission', 'transactions')),
      block_transactions: Math.round(diff('block', 'transactions')),
      view_stored_share: viewShare(before, after),
      lock_held_ms_per_batch: diff('admission', 'transactions') > 0 ? round((diff('admission', 'heldS') * 1000) / diff('admission', 'transactions'), 2) : 0,
      lock_held_ms_per_block: diff('block', 'transactions') > 0 ? round((diff('block', 'heldS') * 1000) / diff('block', 'transactions'), 2) : 0,
      servers_run_queue_cores: round(queuedMs / 1000 / wallS, 2),
    };
  }
}

function viewShare(before: readonly Locks[], after: readonly Locks[]): number {
  const sum = (o: ViewOutcome | 'all') =>
    after.reduce((acc, a, i) => {
      const b = before[i]!;
      const outcomes: ViewOutcome[] = o === 'all' ? ['stored', 'stale', 'conflict', 'full'] : [o];
      return acc + outcomes.reduce((x, k) => x + a.view[k] - b.view[k], 0);
    }, 0);
  const all = sum('all');
  return all > 0 ? round(sum('stored') / all, 3) : 0;
}
