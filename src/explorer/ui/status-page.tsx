/** The node's own health and live charts of its metrics (`GET /health`, `GET /metrics`), polled every 2 s. */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { HealthResponse } from '../../wire/meta.js';
import { getJson, getText, link, reads, str, type Reply } from './api.js';
import { Fields, Layout, Loading, Problem, Section } from './components.js';
import { sumByName } from './prom-text.js';

const POLL_MS = 2000;
/** Points kept per chart (two minutes). */
const WINDOW = 60;

interface Series {
  key: string;
  label: string;
  unit: string;
  /** The value from this sample (and the previous one, for rates). */
  value(now: Map<string, number>, prev: Map<string, number> | undefined, seconds: number): number | undefined;
}

const gauge =
  (name: string, scale = 1) =>
  (m: Map<string, number>) =>
    m.has(name) ? m.get(name)! * scale : undefined;
const rate = (name: string) => (m: Map<string, number>, prev: Map<string, number> | undefined, s: number) =>
  prev === undefined || !m.has(name) || s <= 0 ? undefined : Math.max(0, (m.get(name)! - (prev.get(name) ?? 0)) / s);

const SERIES: Series[] = [
  { key: 'head', label: 'Ledger head block', unit: '', value: gauge('ddn_ledger_head_block') },
  { key: 'pool', label: 'Transactions in the pool', unit: '', value: gauge('ddn_ledger_pool_transactions') },
  { key: 'rps', label: 'HTTP requests per second', unit: '/s', value: rate('ddn_http_requests_total') },
  { key: 'mem', label: 'Resident memory', unit: ' MiB', value: gauge('process_resident_memory_bytes', 1 / 1_048_576) },
  { key: 'lag', label: 'Event loop lag', unit: ' ms', value: gauge('nodejs_eventloop_lag_seconds', 1000) },
];

const fmt = (v: number): string => (Number.isInteger(v) ? String(v) : Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2));

/** One sample: when it was taken (ms, the page's clock) and its value. */
interface Point {
  t: number;
  v: number;
}

/** Ticks of the time axis, seconds before the latest sample, and their labels (none where it would crowd). */
const TICKS: [number, string][] = [
  [120, '2 min ago'],
  [90, ''],
  [60, '1 min ago'],
  [30, '30 s ago'],
  [0, 'now'],
];

function Chart(props: { label: string; unit: string; points: Point[]; now: number; id: string }) {
  const w = 320;
  const h = 130;
  const pad = 6;
  const axis = 18;
  const left = 8;
  const right = w - 26;
  const bottom = h - axis;
  const pts = props.points;
  const last = pts[pts.length - 1];
  const values = pts.map((p) => p.v);
  const min = Math.min(...values, 0);
  const max = Math.max(...values, min + 1e-9);
  const span = WINDOW * POLL_MS;
  const x = (t: number) => left + ((t - (props.now - span)) * (right - left)) / span;
  const y = (v: number) => bottom - pad - ((v - min) * (bottom - 2 * pad)) / (max - min || 1);
  const line = pts.map((p) => `${x(p.t).toFixed(1)},${y(p.v).toFixed(1)}`).join(' ');
  const now = last === undefined ? 'no data yet' : `${fmt(last.v)}${props.unit}`;
  return (
    <figure class="chart" data-series={props.id}>
      <figcaption>
        <span>{props.label}</span> <output aria-live="off">{now}</output>
      </figcaption>
      <svg
        role="img"
        aria-label={`${props.label}: ${now}, over the last ${Math.round(span / 60_000)} minutes (${pts.length} samples)`}
        viewBox={`0 0 ${w} ${h}`}
        width={w}
        height={h}
      >
        <rect x="0" y="0" width={w} height={bottom} class="chart-bg" />
        {pts.length > 1 && <polyline points={line} class="chart-line" fill="none" />}
        {last !== undefined && <circle cx={x(last.t)} cy={y(last.v)} r="3" class="chart-dot" />}
        <text x={right} y="14" text-anchor="end" class="chart-max">
          max {fmt(max)}
        </text>
        <g class="x-axis" aria-hidden="true">
          <line x1={left} x2={right} y1={bottom} y2={bottom} class="chart-axis" />
          {TICKS.map(([s, label]) => {
            const tx = x(props.now - s * 1000);
            return (
              <g key={s}>
                <line x1={tx} x2={tx} y1={bottom} y2={bottom + 4} class="chart-axis" />
                {label !== '' && (
                  <text x={tx} y={h - 3} text-anchor={s === 120 ? 'start' : s === 0 ? 'end' : 'middle'} class="chart-tick">
                    {label}
                  </text>
                )}
              </g>
            );
          })}
        </g>
      </svg>
    </figure>
  );
}

export function StatusPage() {
  const [health, setHealth] = useState<Reply<HealthResponse> | undefined>(undefined);
  const [metricsStatus, setMetricsStatus] = useState<number | undefined>(undefined);
  const [points, setPoints] = useState<Record<string, Point[]>>({});
  const [lastAt, setLastAt] = useState(0);
  const [samples, setSamples] = useState(0);
  const prev = useRef<{ m: Map<string, number>; t: number } | undefined>(undefined);
  useEffect(() => {
    let live = true;
    const tick = async () => {
      const [h, m] = await Promise.all([getJson(reads.health()), getText('/metrics')]);
      if (!live) return;
      setHealth(h);
      setMetricsStatus(m.status);
      const t = performance.now();
      const now = m.status === 200 ? sumByName(m.text) : new Map<string, number>();
      if (m.status !== 200 && h.ok) {
        // without /metrics (a token is set), the head still comes from /health
        const head = h.body.head?.number;
        if (typeof head === 'number') now.set('ddn_ledger_head_block', head);
      }
      const before = prev.current;
      prev.current = { m: now, t };
      setPoints((p) => {
        const next: Record<string, Point[]> = {};
        for (const s of SERIES) {
          const v = s.value(now, before?.m, before === undefined ? 0 : (t - before.t) / 1000);
          const kept = (p[s.key] ?? []).filter((q) => q.t > t - WINDOW * POLL_MS);
          next[s.key] = v === undefined ? kept : [...kept, { t, v }];
        }
        return next;
      });
      setLastAt(t);
      setSamples((n) => n + 1);
    };
    void tick();
    const timer = setInterval(() => void tick(), POLL_MS);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, []);
  const b = health?.ok === true ? health.body : undefined;
  return (
    <Layout title="Node status">
      <Section title="Health" id="health">
        {health === undefined && <Loading />}
        {health !== undefined && <Problem reply={health} what="GET /health" />}
        {b !== undefined && (
          <Fields
            rows={[
              ['Status', b.status],
              ['Roles', b.roles.join(', ')],
              ['Version', `${str(b.version)} ${str(b.commit)}`.trim()],
              ['Chain', `${b.chain_id} (${b.profile})`],
              ['Head', <a href={link('block', str(b.head?.number))}>#{str(b.head?.number)}</a>],
              ['Finalized', <a href={link('block', str(b.finalized?.number))}>#{str(b.finalized?.number)}</a>],
            ]}
          />
        )}
      </Section>
      <Section title="Live metrics" id="metrics">
        <p class="muted" role="status" data-samples={samples}>
          {metricsStatus === undefined
            ? 'Waiting for the first sample…'
            : metricsStatus === 200
              ? `Sampled every ${POLL_MS / 1000} s from GET /metrics (${samples} samples).`
              : `GET /metrics answered ${metricsStatus} (it needs --metrics-token off loopback): only the head block is charted, from /health.`}
        </p>
        <div class="charts">
          {SERIES.map((s) => (
            <Chart key={s.key} id={s.key} label={s.label} unit={s.unit} points={points[s.key] ?? []} now={lastAt} />
          ))}
        </div>
      </Section>
    </Layout>
  );
}
