/**
 * The verdict of an interleaved A/B run (`bench/ab.ts`): each round measured A and B back to back, so the ratio
 * B ÷ A of one round is taken under the same drift, and the rounds' ratios — not the sides' pooled rates — say
 * which side is faster and how consistently.
 */
import { round } from './proc.js';

/** One side's result in one round. */
export interface SideRun {
  /** Requests answered 2xx per second. */
  rate: number;
  /** CPU of the service per answered request, µs (NaN when not measured). */
  cpuPerRequestUs: number;
}

export interface AbSummary {
  rounds: number;
  medianRateA: number;
  medianRateB: number;
  /** Per-round B ÷ A. */
  ratio: { median: number; min: number; max: number };
  /** Rounds in which B was faster. */
  bFaster: number;
  medianCpuUsA: number;
  medianCpuUsB: number;
}

/** The median (the mean of the two middle values for an even count). */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) throw new Error('median of nothing');
  const s = [...xs].sort((x, y) => x - y);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

/** Summarises rounds `i` of `a` and `b` (same length: A and B were measured in every round). */
export function summariseAb(a: readonly SideRun[], b: readonly SideRun[]): AbSummary {
  if (a.length !== b.length || a.length === 0) throw new Error('A and B need the same, non-zero number of rounds');
  const ratios = a.map((ra, i) => b[i].rate / ra.rate);
  return {
    rounds: a.length,
    medianRateA: Math.round(median(a.map((r) => r.rate))),
    medianRateB: Math.round(median(b.map((r) => r.rate))),
    ratio: { median: round(median(ratios), 3), min: round(Math.min(...ratios), 3), max: round(Math.max(...ratios), 3) },
    bFaster: ratios.filter((x) => x > 1).length,
    medianCpuUsA: Math.round(median(a.map((r) => r.cpuPerRequestUs))),
    medianCpuUsB: Math.round(median(b.map((r) => r.cpuPerRequestUs))),
  };
}
