/**
 * CPU per write with two processes (issue 39, item 5): the server CPU one accepted Directory write cost with two
 * PostgreSQL Directory processes of one ledger, ÷ the same with one, both from the write figures of this run
 * (`dir_writes_pg1`, `dir_writes_pg2`: the Directory processes' CPU over the measured window, read from /proc, ÷
 * their 202s). ≤ 1.2: a second process costs each write little more than one process does. The two processes are
 * the default shape since session 39, the leader shape (the one that does not produce hands its writes to the one
 * that does); the same ratio with `--ledger-hand-over off` (`dir_writes_pg2_off`: every process admits, the design
 * before) is given beside it as information (`vs_one_with_hand_over_off`).
 */
import type { Figure } from '../context.js';
import { round } from '../proc.js';

/** Server CPU µs per accepted write of a write figure, when it was measured. */
function cpuPerWrite(f: Figure | undefined): number | undefined {
  const l = f?.load;
  if (l?.target_cpu === undefined || l.ok === 0) return undefined;
  return (l.target_cpu.cpu_ms * 1000) / l.ok;
}

export function cpuPerWriteFigure(writes: readonly Figure[]): Figure {
  const head = {
    id: 'dir_writes_cpu_two_vs_one',
    title: 'CPU per write with two PostgreSQL Directory processes (leader shape, hand-over on) ÷ with one',
    unit: '×',
  };
  const one = cpuPerWrite(writes.find((f) => f.id === 'dir_writes_pg1'));
  const two = cpuPerWrite(writes.find((f) => f.id === 'dir_writes_pg2'));
  const off = cpuPerWrite(writes.find((f) => f.id === 'dir_writes_pg2_off'));
  if (one === undefined || two === undefined) return { ...head, value: null, unavailable: 'needs both PostgreSQL write figures (DDN_BENCH_PG_URL)' };
  return {
    ...head,
    value: round(two / one, 3),
    reference: 'same_run_line',
    referenceValue: 1,
    target: { op: '<=', ratio: 1.2 },
    extra: {
      shape: 'leader (--ledger-hand-over on)',
      cpu_us_per_write_one: Math.round(one),
      cpu_us_per_write_two: Math.round(two),
      ...(off === undefined ? {} : { cpu_us_per_write_two_off: Math.round(off), vs_one_with_hand_over_off: round(off / one, 3) }),
    },
  };
}
