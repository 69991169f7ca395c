/** The node's own health and live charts of its metrics (`GET /health`, `GET /metrics`), polled every 2 s. */
import { useEffect, useRef, useState } from 'preact/hooks';
import { getJson, getText, link, str, type Json } from './api.js';
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

function Chart(props: { label: string; unit: string; points: number[]; id: string }) {
  const w = 320;
  const h = 110;
  const pad = 6;
  const pts = props.points;
  const last = pts[pts.length - 1];
  const min = Math.min(...pts, 0);
  const max = Math.max(...pts, min + 1e-9);
  const x = (i: number) => pad + (i * (w - 2 * pad)) / Math.max(1, WINDOW - 1);
  const y = (v: number) => h - pad - ((v - min) * (h - 2 * pad)) / (max - min || 1);
  const line = pts.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(' ');
  const now = last === undefined ? 'no data yet' : `${fmt(last)}${props.unit}`;
  return (
    <figure class="chart" data-series={props.id}>
      <figcaption>
        <span>{props.label}</span> <output aria-live="off">{now}</output>
      </figcaption>
      <svg role="img" aria-label={`${props.label}: ${now}, over the last ${pts.length} samples`} viewBox={`0 0 ${w} ${h}`} width={w} height={h}>
        <rect x="0" y="0" width={w} height={h} class="chart-bg" />
        {pts.length > 1 && <polyline points={line} class="chart-line" fill="none" />}
        {last !== undefined && <circle cx={x(pts.length - 1)} cy={y(last)} r="3" class="chart-dot" />}
        <text x={w - pad} y="14" text-anchor="end" class="chart-max">
          max {fmt(max)}
        </text>
      </svg>
    </figure>
  );
}

export function StatusPage() {
  const [health, setHealth] = useState<{ status: number; body: Json } | undefined>(undefined);
  const [metricsStatus, setMetricsStatus] = useState<number | undefined>(undefined);
  const [points, setPoints] = useState<Record<string, number[]>>({});
  const [samples, setSamples] = useState(0);
  const prev = useRef<{ m: Map<string, number>; t: number } | undefined>(undefined);
  useEffect(() => {
    let live = true;
    const tick = async () => {
      const [h, m] = await Promise.all([getJson('/health'), getText('/metrics')]);
      if (!live) return;
      setHealth(h);
      setMetricsStatus(m.status);
      const t = performance.now();
      const now = m.status === 200 ? sumByName(m.text) : new Map<string, number>();
      if (m.status !== 200 && h.status === 200) {
        // without /metrics (a token is set), the head still comes from /health
        const head = (h.body.head as Json | undefined)?.number;
        if (typeof head === 'number') now.set('ddn_ledger_head_block', head);
      }
      const before = prev.current;
      prev.current = { m: now, t };
      setPoints((p) => {
        const next: Record<string, number[]> = {};
        for (const s of SERIES) {
          const v = s.value(now, before?.m, before === undefined ? 0 : (t - before.t) / 1000);
          next[s.key] = v === undefined ? (p[s.key] ?? []) : [...(p[s.key] ?? []), v].slice(-WINDOW);
        }
        return next;
      });
      setSamples((n) => n + 1);
    };
    void tick();
    const timer = setInterval(() => void tick(), POLL_MS);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, []);
  const b = health?.body ?? {};
  const head = (b.head ?? {}) as Json;
  const fin = (b.finalized ?? {}) as Json;
  return (
    <Layout title="Node status">
      <Section title="Health" id="health">
        {health === undefined && <Loading />}
        {health !== undefined && health.status !== 200 && <Problem reply={health} what="GET /health" />}
        {health?.status === 200 && (
          <Fields
            rows={[
              ['Status', str(b.status)],
              ['Roles', Array.isArray(b.roles) ? (b.roles as string[]).join(', ') : ''],
              ['Version', `${str(b.version)} ${str(b.commit)}`.trim()],
              ['Chain', `${str(b.chain_id)} (${str(b.profile)})`],
              ['Head', <a href={link('block', str(head.number))}>#{str(head.number)}</a>],
              ['Finalized', <a href={link('block', str(fin.number))}>#{str(fin.number)}</a>],
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
            <Chart key={s.key} id={s.key} label={s.label} unit={s.unit} points={points[s.key] ?? []} />
          ))}
        </div>
      </Section>
    </Layout>
  );
}
