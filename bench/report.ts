/** Ratios against the same-run references, and the report files: bench/results/latest.json and latest.md. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Figure, ReferenceId, RepeatedRuns, Settings } from './context.js';
import { hotMailboxRows } from './figures/hot-mailbox.js';
import type { LoadResult } from './jobs.js';
import { round, type MachineInfo, type Quiet } from './proc.js';
import type { Disturbance, Ed25519Reference, SqliteReference } from './references.js';

export interface References {
  hello_world: { start: LoadResult; end: LoadResult | null; rps: number; drift_pct: number | null };
  sqlite: SqliteReference & Disturbance;
  ed25519: Ed25519Reference & Disturbance;
}

export interface Report {
  generated_at: string;
  source: { commit: string; uncommitted_files: number };
  mode: 'full' | 'quick';
  machine: MachineInfo;
  commands: Record<string, string>;
  settings: Settings;
  references: References;
  figures: Figure[];
  summary: { met: string[]; missed: string[]; unavailable: string[] };
  notes: string[];
  /** Per measurement: how busy the machine was before it (other work), and how long we waited for quiet. */
  quiet: Record<string, Quiet>;
  duration_s: number;
}

/** Server CPU microseconds per 2xx answer of a measured window. */
function cpuPerRequest(l: LoadResult): string {
  return l.target_cpu === undefined || l.ok === 0 ? '—' : `${num(Math.round((l.target_cpu.cpu_ms * 1000) / l.ok))} µs`;
}

/** The mean of a figure's reference measured right before and right after it, when it was. */
export function pairedMean(f: Figure): number | undefined {
  return f.paired === undefined ? undefined : (f.paired.before + f.paired.after) / 2;
}

export function referenceValue(refs: References, id: ReferenceId, f: Figure): number | undefined {
  const beside = pairedMean(f);
  if (beside !== undefined) return beside;
  switch (id) {
    case 'hello_world_rps':
      return refs.hello_world.rps;
    case 'sqlite_commits_per_s':
      return refs.sqlite.full.per_s;
    case 'ed25519_verifies_per_s':
      return refs.ed25519.per_s;
    case 'envelope_bytes':
    case 'empty_store':
    case 'same_run_line':
      return f.referenceValue;
  }
}

/** Fills `ratio` and `pass` of every figure that has a reference. */
export function applyRatios(refs: References, figures: Figure[]): void {
  for (const f of figures) {
    if (f.value === null || f.reference === undefined) continue;
    const ref = referenceValue(refs, f.reference, f);
    if (ref === undefined || ref === 0) continue;
    f.ratio = round(f.value / ref, 3);
    if (f.target) f.pass = f.target.op === '>=' ? f.ratio >= f.target.ratio : f.ratio <= f.target.ratio;
    // the hot mailbox's lines (bench/figures/hot-mailbox.ts): a 429 or 502 with rate limits off misses the target
    if (f.pass === true && typeof f.extra?.refused_429_502 === 'number' && f.extra.refused_429_502 > 0) f.pass = false;
  }
}

export function summarize(figures: Figure[]): Report['summary'] {
  return {
    met: figures.filter((f) => f.pass === true).map((f) => f.id),
    missed: figures.filter((f) => f.pass === false).map((f) => f.id),
    unavailable: figures.filter((f) => f.value === null).map((f) => f.id),
  };
}

const REF_LABEL: Record<ReferenceId, string> = {
  hello_world_rps: 'hello-world req/s',
  sqlite_commits_per_s: 'SQLite commits/s',
  ed25519_verifies_per_s: 'Ed25519 verifies/s',
  envelope_bytes: 'envelope size, MiB',
  empty_store: 'same on an empty store, req/s',
  same_run_line: 'the line it is measured against, req/s',
};

const num = (x: number): string => (Number.isInteger(x) ? x.toLocaleString('en') : x.toLocaleString('en', { maximumFractionDigits: 2 }));

/** The libsodium rate beside node:crypto's: the service verifies with libsodium, the targets divide by node:crypto. */
function libsodiumNote(e: Ed25519Reference): string {
  if (e.libsodium_per_s === null) return '; libsodium not loaded';
  return `; libsodium, which the service verifies with: ${num(e.libsodium_per_s)} /s (${(e.libsodium_per_s / e.per_s).toFixed(2)} ×)`;
}

/** Every run's ratio, or for a figure without one, every run's value. */
function repeatedRuns(r: RepeatedRuns, unit: string): string {
  if (r.ratios.some((x) => x !== null)) return r.ratios.map((x) => x ?? '—').join(', ');
  return r.values.map((v) => (v === null ? '—' : `${num(v)} ${unit}`)).join(', ');
}

function cell(s: string): string {
  return s.replace(/\|/g, '\\|');
}

export function toMarkdown(r: Report): string {
  const m = r.machine;
  const refs = r.references;
  const out: string[] = [];
  out.push(`# ddn benchmark (${r.mode}${r.mode === 'quick' ? ' mode' : ''})`, '');
  out.push(
    `Generated ${r.generated_at} in ${Math.round(r.duration_s)} s, at commit ${r.source.commit}` +
      `${r.source.uncommitted_files > 0 ? ` with ${r.source.uncommitted_files} uncommitted files` : ''}.`,
    '',
  );
  out.push(
    `**Machine:** ${m.cpu_model}, ${m.cores} cores, ${m.memory_gib} GiB memory, ${m.platform}. **Node** ${m.node}.` +
      (m.reclaim === undefined ? '' : ` **Proactive reclaim:** ${m.reclaim}`),
    '',
  );
  out.push(
    'Every figure is divided by a reference measured in the same run on the same machine; the ratios are what',
    'to compare between runs and machines, the absolute numbers drift.',
    '',
  );
  const withTarget = r.figures.filter((f) => f.target !== undefined);
  out.push(
    `**Targets met: ${r.summary.met.length} of ${withTarget.length}**` +
      (r.summary.missed.length > 0 ? ` — missed: ${r.summary.missed.join(', ')}` : '') +
      (r.summary.unavailable.length > 0 ? ` — unavailable: ${r.summary.unavailable.join(', ')}` : '') +
      '.',
    '',
  );
  out.push('## Figures', '');
  out.push(
    'A ratio is taken against its reference measured right before and right after the figure (the mean of the two,',
    '"beside it"): on a shared machine the speed drifts within minutes, so the run-wide references below are',
    'for orientation only.',
    '',
  );
  out.push('| Figure | Value | Reference (beside it) | Ratio | Target | Result |', '|---|---:|---|---:|---:|---|');
  for (const f of r.figures) {
    const refVal = f.reference === undefined ? undefined : referenceValue(refs, f.reference, f);
    const value = f.value === null ? `unavailable: ${f.unavailable ?? ''}` : `${num(f.value)} ${f.unit}`;
    const extra = f.extra
      ? Object.entries(f.extra)
          .filter(([k]) => k.startsWith('p50') || k.startsWith('p99') || k.startsWith('vs_') || k === 'req_per_s')
          .map(([k, v]) => `${k.replace(/_ms$/, '').replace('_per_s', '/s')} ${typeof v === 'number' ? num(v) : v}${k.endsWith('_ms') ? ' ms' : ''}`)
          .join(', ')
      : '';
    const paired = f.paired === undefined ? '' : `<br>beside it: before ${num(f.paired.before)}, after ${num(f.paired.after)}`;
    const ref = f.reference === undefined ? '—' : `${REF_LABEL[f.reference]}: ${refVal === undefined ? '?' : num(round(refVal, 1))}${paired}`;
    const target = f.target ? `${f.target.op} ${f.target.ratio}` : '—';
    const result = f.value === null ? 'unavailable' : f.pass === undefined ? 'info' : f.pass ? 'met' : '**missed**';
    const runs = f.repeats === undefined ? '' : `<br>median of ${f.repeats.ratios.length}: ${repeatedRuns(f.repeats, f.unit)}`;
    out.push(`| ${cell(f.title)} | ${cell(value)}${extra ? `<br>${extra}` : ''} | ${ref} | ${f.ratio ?? '—'}${runs} | ${target} | ${result} |`);
  }
  out.push('');
  out.push(...writeBoundsTable(r.figures));
  out.push(...hotMailboxRows(r.figures));
  const floored = r.figures.filter((f) => f.floor !== undefined && f.value !== null);
  if (floored.length > 0) {
    out.push('## Floors', '');
    out.push(
      'A floor is the same load against a server that does only the work the figure cannot skip (below), measured',
      'right after the figure. Its own ratio is the most any server doing that work reaches on this machine; the',
      'share is how much of that the service keeps.',
      '',
      '| Figure | Floor | Floor ratio | Target | Share of floor | Floor server CPU per request | What the floor does |',
      '|---|---:|---:|---:|---:|---:|---|',
    );
    for (const f of floored) {
      const fl = f.floor!;
      const refVal = f.reference === undefined ? undefined : referenceValue(refs, f.reference, f);
      const floorRatio = refVal === undefined || refVal === 0 ? '—' : String(round(fl.rate / refVal, 3));
      const target = f.target ? `${f.target.op} ${f.target.ratio}` : '—';
      const share = fl.rate === 0 ? '—' : `${Math.round(((f.value as number) / fl.rate) * 100)} %`;
      out.push(`| ${cell(f.title)} | ${num(fl.rate)} req/s | ${floorRatio} | ${target} | ${share} | ${cpuPerRequest(fl.load)} | ${cell(fl.what)} |`);
    }
    out.push('');
  }
  out.push('## References', '');
  const h = refs.hello_world;
  out.push('| Reference | Value | How |', '|---|---:|---|');
  out.push(
    `| hello-world HTTP | ${num(h.rps)} req/s | node:http JSON server in its own process, ${h.start.connections} connections; runs at the start (${num(h.start.rate)}) and at the end (${h.end ? num(h.end.rate) : 'not run'})${h.drift_pct === null ? '' : `, drift ${h.drift_pct} %`}; figures use the runs beside them |`,
  );
  out.push(
    `| SQLite commits | ${num(refs.sqlite.full.per_s)} /s | raw better-sqlite3, WAL, synchronous=FULL (as the Cache), one 1 KiB row per transaction; synchronous=NORMAL: ${num(refs.sqlite.normal.per_s)} /s; other CPU ${refs.sqlite.other_cpu_cores} |`,
  );
  out.push(
    `| Ed25519 verifications | ${num(refs.ed25519.per_s)} /s | node:crypto verify, parsed KeyObject, ${refs.ed25519.message_bytes}-byte message, one thread; other CPU ${refs.ed25519.other_cpu_cores}; figures use the runs beside them${libsodiumNote(refs.ed25519)} |`,
  );
  out.push('');
  out.push('## Load details', '');
  out.push(
    '| Run | Conns | Seconds | 2xx | non-2xx / errors | p50 ms | p90 ms | p99 ms | Load generator CPU | Server CPU | Server main thread | Server CPU per request | Other CPU | Runs |',
    '|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  );
  const loads: LoadResult[] = [h.start, ...(h.end ? [h.end] : [])];
  const pairedSeen = new Set<LoadResult[]>();
  for (const f of r.figures) {
    if (f.paired?.loads !== undefined && !pairedSeen.has(f.paired.loads)) {
      pairedSeen.add(f.paired.loads);
      // a run after one figure is the run before the next when nothing came between: listed once
      for (const l of f.paired.loads) if (!loads.includes(l)) loads.push(l);
    }
    if (f.load) loads.push(f.load);
    if (f.floor !== undefined && !loads.includes(f.floor.load)) loads.push(f.floor.load);
    const empty = (f.details?.empty as LoadResult | undefined) ?? undefined;
    if (empty) loads.push(empty);
  }
  for (const l of loads) {
    const bad = Object.entries(l.statuses)
      .filter(([c]) => !c.startsWith('2'))
      .map(([c, n]) => `${c}×${n}`)
      .join(' ');
    out.push(
      `| ${l.name} | ${l.connections} | ${l.duration_s} | ${num(l.ok)} | ${bad || '0'} / ${l.errors + l.timeouts} | ${l.latency_ms.p50} | ${l.latency_ms.p90} | ${l.latency_ms.p99} | ${l.loadgen_cpu.cores} cores | ${l.target_cpu ? `${l.target_cpu.cores} cores` : '—'} | ${l.target_cpu?.main_thread_cores === undefined ? '—' : `${l.target_cpu.main_thread_cores} cores`} | ${cpuPerRequest(l)} | ${l.other_cpu_cores ?? '—'} | ${l.attempts ?? 1} |`,
    );
  }
  out.push(
    '',
    'CPU is CPU time ÷ wall time of the measured window (1.0 = one core busy); the machine has',
    `${m.cores} cores shared by the server and the load generator. "Other CPU" is what everything else on the`,
    'machine used meanwhile: well above 0 means the run shared the machine and its figures are skewed. In full',
    'mode a run disturbed by more than 0.3 cores is repeated (up to twice) and the quietest run is kept ("Runs").',
    '"Server main thread" is the CPU of the server processes\' main threads (their event loops) alone: near 1.0',
    'per process, that thread is the bound. "Server CPU per request" is the server CPU time of the window ÷ its 2xx.',
    '',
  );
  out.push('## Commands', '');
  for (const [k, v] of Object.entries(r.commands)) out.push(`- ${k}: \`${v}\``);
  out.push('');
  if (r.notes.length > 0) {
    out.push('## Notes', '');
    for (const n of r.notes) out.push(`- ${n}`);
    out.push('');
  }
  return out.join('\n');
}

/**
 * The Directory write figures beside what bounds them: the servers' and the machine's CPU, PostgreSQL's, and the
 * shared ledger's admission lock (bench/figures/write-bounds.ts). Empty when the run has no write figures.
 */
function writeBoundsTable(figures: readonly Figure[]): string[] {
  const writes = figures.filter((f) => f.id.startsWith('dir_writes_') && f.value !== null && f.extra !== undefined);
  if (writes.length === 0) return [];
  const x = (f: Figure, k: string): string => {
    const v = f.extra?.[k];
    return typeof v === 'number' ? num(v) : '—';
  };
  const pct = (f: Figure, k: string): string => {
    const v = f.extra?.[k];
    return typeof v === 'number' ? `${Math.round(v * 100)} %` : '—';
  };
  const perTurn = (f: Figure): string =>
    typeof f.extra?.lock_held_ms_per_batch === 'number' ? `${x(f, 'lock_held_ms_per_batch')} / ${x(f, 'lock_held_ms_per_block')} ms` : '—';
  const batches = (f: Figure): string => {
    const n = f.extra?.admission_batches;
    return typeof n === 'number' && n > 0 && f.load !== undefined ? `${num(n)} (${num(round(f.load.ok / n, 1))})` : '—';
  };
  return [
    '## Directory writes: what bounds them',
    '',
    '| Deployment | Writes/s | Server CPU per write | Servers, cores | Servers waiting for a core, cores | Machine, cores | PostgreSQL, cores | Admission time waiting for the lock | Lock held, share of the window | Lock held per batch / per block | Batches (writes per batch) | Batches stored on their own view | Load average (1 min) |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...writes.map(
      (f) =>
        `| ${cell(f.title)} | ${num(f.value as number)} | ${f.load === undefined ? '—' : cpuPerRequest(f.load)} | ${x(f, 'service_cpu_cores')} | ${x(f, 'servers_run_queue_cores')} | ${x(f, 'machine_cores')} | ${x(f, 'postgres_cores')} | ${pct(f, 'lock_wait_share')} | ${pct(f, 'lock_busy')} | ${perTurn(f)} | ${batches(f)} | ${pct(f, 'view_stored_share')} | ${x(f, 'load_avg_1m')} |`,
    ),
    '',
    'Machine: every core of the machine busy during the window, everything on it (the servers, PostgreSQL, the load',
    "generator, other work). The lock columns come from the Directory processes' `ddn_ledger_lock_*_total` counters:",
    "the share of admission batches' time (asking for the lock to commit) spent waiting for it, and the time the lock",
    "was held by any process (admissions and blocks, on PostgreSQL's clock) ÷ the window — near 100 %, admissions",
    'queue behind it. "Waiting for a core" is the time the Directory processes\' threads were runnable but not running',
    "(`/proc/<pid>/task/*/schedstat`), in cores: well above 0, the machine's cores are short, and a process holding",
    'the lock waits for one too, which lengthens every turn. "Stored on their own view": admission batches checked on',
    "their process's view of the pool and stored by one statement that holds the lock only while PostgreSQL works;",
    'the others found a newer block or a conflicting row and took the turn under the lock.',
    '',
  ];
}

/** Writes `<base>.json` and `<base>.md` (`latest` for a whole run). */
export function writeReport(dir: string, r: Report, base = 'latest'): { json: string; md: string } {
  mkdirSync(dir, { recursive: true });
  const json = join(dir, `${base}.json`);
  const md = join(dir, `${base}.md`);
  writeFileSync(json, `${JSON.stringify(r, null, 2)}\n`);
  writeFileSync(md, toMarkdown(r));
  return { json, md };
}
