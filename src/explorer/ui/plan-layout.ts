/**
 * Layout of a delivery plan (http-api.md §8.1 `DeliveryPlan/v1`) as a graph: steps in columns by their distance
 * from the entry step, transitions as curves between them (ones that go back or sideways loop under the steps).
 * Pure geometry; the explorer's policy page draws it as SVG.
 */

export interface PlanStep {
  id: string;
  operation: string;
  /** A short second line (targets, recipient…). */
  detail: string;
}

export interface PlanTransition {
  from: string;
  to: string;
  trigger: string;
  mode: string;
}

export interface PlacedStep extends PlanStep {
  x: number;
  y: number;
  column: number;
  entry: boolean;
}

export interface PlacedTransition extends PlanTransition {
  /** SVG path data. */
  path: string;
  labelX: number;
  labelY: number;
}

export interface PlanLayout {
  steps: PlacedStep[];
  transitions: PlacedTransition[];
  width: number;
  height: number;
}

export const STEP_WIDTH = 176;
export const STEP_HEIGHT = 58;
const GAP_X = 84;
const GAP_Y = 26;
const MARGIN = 24;
const LOOP_DEPTH = 46;

/** Columns by breadth-first distance from the entry step; steps it never reaches go in a last column. */
function columnsOf(entry: string, steps: readonly PlanStep[], transitions: readonly PlanTransition[]): Map<string, number> {
  const known = new Set(steps.map((s) => s.id));
  const column = new Map<string, number>();
  if (known.has(entry)) column.set(entry, 0);
  const queue = known.has(entry) ? [entry] : [];
  while (queue.length > 0) {
    const id = queue.shift()!;
    for (const t of transitions) {
      if (t.from === id && known.has(t.to) && !column.has(t.to)) {
        column.set(t.to, column.get(id)! + 1);
        queue.push(t.to);
      }
    }
  }
  const last = Math.max(-1, ...column.values()) + 1;
  for (const s of steps) if (!column.has(s.id)) column.set(s.id, last);
  return column;
}

export function layoutPlan(entry: string, steps: readonly PlanStep[], transitions: readonly PlanTransition[]): PlanLayout {
  const column = columnsOf(entry, steps, transitions);
  const rows = new Map<number, number>();
  const placed: PlacedStep[] = steps.map((s) => {
    const c = column.get(s.id)!;
    const r = rows.get(c) ?? 0;
    rows.set(c, r + 1);
    return { ...s, column: c, entry: s.id === entry, x: MARGIN + c * (STEP_WIDTH + GAP_X), y: MARGIN + r * (STEP_HEIGHT + GAP_Y) };
  });
  const byId = new Map(placed.map((s) => [s.id, s]));
  const bottom = Math.max(MARGIN, ...placed.map((s) => s.y + STEP_HEIGHT));
  let loops = 0;
  const placedTransitions: PlacedTransition[] = [];
  for (const t of transitions) {
    const a = byId.get(t.from);
    const b = byId.get(t.to);
    if (a === undefined || b === undefined) continue;
    if (b.column > a.column) {
      const x1 = a.x + STEP_WIDTH;
      const y1 = a.y + STEP_HEIGHT / 2;
      const x2 = b.x;
      const y2 = b.y + STEP_HEIGHT / 2;
      const mid = (x1 + x2) / 2;
      placedTransitions.push({ ...t, path: `M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2},${y2}`, labelX: mid, labelY: (y1 + y2) / 2 - 6 });
    } else {
      loops++;
      const depth = bottom + LOOP_DEPTH * loops;
      const x1 = a.x + STEP_WIDTH / 2 + 12;
      const x2 = b.x + STEP_WIDTH / 2 - 12;
      const y1 = a.y + STEP_HEIGHT;
      const y2 = b.y + STEP_HEIGHT;
      placedTransitions.push({ ...t, path: `M${x1},${y1} C${x1},${depth} ${x2},${depth} ${x2},${y2}`, labelX: (x1 + x2) / 2, labelY: depth - 8 });
    }
  }
  const columns = Math.max(0, ...placed.map((s) => s.column)) + 1;
  return {
    steps: placed,
    transitions: placedTransitions,
    width: MARGIN * 2 + columns * STEP_WIDTH + (columns - 1) * GAP_X,
    height: bottom + MARGIN + LOOP_DEPTH * loops,
  };
}
