/**
 * The verdict of an interleaved A/B run (`bench/ab.ts`): each round measured A and B back to back, so the ratio
 * B ÷ A of one round is taken under the same drift, and the rounds' ratios — not the sides' pooled rates — say
 * which side is faster and how consistently.
 */
import { round } from './proc.js';
import type { ThreadCpu } from './thread-cpu.js';

/** One side's result in one round. */
export interface SideRun {
  /** Requests answered 2xx per second. */
  rate: number;
  /** CPU of the service per answered request, µs (NaN when not measured). */
  cpuPerRequestUs: number;
  /** The same per thread name, user and system apart (empty where there is no /proc). */
  threads?: readonly ThreadPerRequest[];
}

/** One thread name's CPU per answered request, µs. */
export interface ThreadPerRequest {
  name: string;
  userUs: number;
  systemUs: number;
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

/** A round's thread CPU per answered request (`requests` 2xx answers in the window). */
export function threadsPerRequest(threads: readonly ThreadCpu[], requests: number): ThreadPerRequest[] {
  return threads.map((t) => ({ name: t.name, userUs: (t.user_ms * 1000) / requests, systemUs: (t.system_ms * 1000) / requests }));
}

/**
 * Each thread name's median CPU per request over one side's rounds (a round without the name counts as 0),
 * largest first, names under 0.5 µs left out, rounded to 0.1 µs.
 */
export function medianThreads(runs: readonly SideRun[]): ThreadPerRequest[] {
  const names = new Set(runs.flatMap((r) => (r.threads ?? []).map((t) => t.name)));
  const of = (r: SideRun, name: string) => r.threads?.find((t) => t.name === name);
  return [...names]
    .map((name) => ({
      name,
      userUs: round(median(runs.map((r) => of(r, name)?.userUs ?? 0)), 1),
      systemUs: round(median(runs.map((r) => of(r, name)?.systemUs ?? 0)), 1),
    }))
    .filter((t) => t.userUs + t.systemUs >= 0.5)
    .sort((x, y) => y.userUs + y.systemUs - (x.userUs + x.systemUs));
}
