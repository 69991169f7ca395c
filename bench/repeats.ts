/**
 * `--repeat N`: every figure is measured N times (each run with its own references beside it and its own floor),
 * and the run with the median ratio is the one reported. On a shared machine one 10-second run can land on a
 * slow or a fast minute; the median of several is what a met or missed target should rest on.
 */
import type { Figure, RepeatedRuns } from './context.js';
import { round } from './proc.js';
import { pairedMean } from './report.js';

/** A run's ratio as far as it is known beside it: against its paired reference or its own reference value. */
export function runRatio(f: Figure): number | null {
  if (f.value === null) return null;
  const ref = pairedMean(f) ?? f.referenceValue;
  return ref === undefined || ref === 0 ? null : round(f.value / ref, 3);
}

/**
 * For each figure id of the runs (every run lists the same figures in the same order), the run whose ratio —
 * or, for a figure without one, whose value — is the median (the lower middle for an even count), carrying the
 * values and ratios of all the runs.
 */
export function medianRuns(runs: readonly (readonly Figure[])[]): Figure[] {
  if (runs.length === 1) return [...runs[0]];
  return runs[0].map((_, k) => {
    const same = runs.map((run) => run[k]);
    const ids = new Set(same.map((f) => f.id));
    if (ids.size !== 1) throw new Error(`repeated runs disagree on figure ${k}: ${[...ids].join(', ')}`);
    const key = (f: Figure) => runRatio(f) ?? f.value ?? Number.NEGATIVE_INFINITY;
    const sorted = [...same].sort((a, b) => key(a) - key(b));
    const chosen = sorted[Math.floor((sorted.length - 1) / 2)];
    const repeats: RepeatedRuns = { values: same.map((f) => f.value), ratios: same.map(runRatio) };
    return { ...chosen, repeats };
  });
}
