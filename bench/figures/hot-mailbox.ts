/**
 * A hot mailbox (issue 39, item 1): fresh 1 KiB envelopes into ONE recipient at 32 connections, on a Cache in
 * its own process (`--roles cache --directory-url <the node's Directory>`), with SQLite and with PostgreSQL:
 *
 * - `hot_mailbox_sqlite`: one SQLite Cache process (the base of the next line);
 * - `hot_mailbox_pg1`: one PostgreSQL Cache process; target ≥ 0.5 × the SQLite line;
 * - `hot_mailbox_pg2`: two PostgreSQL Cache processes on one schema, the load split between them (the second
 *   answers under the first's public URL, as two Caches behind one address); target ≥ 1.0 × one process;
 * - `hot_mailbox_relay_sqlite`: a Relay process (SQLite) storing into the SQLite Cache process, two hops;
 * - `hot_mailbox_relay_pg`: a Relay process on PostgreSQL storing into the PostgreSQL Cache process; target
 *   ≥ 0.5 × the SQLite Relay line.
 *
 * Rate limits are off (as everywhere in the bench), so any `429` (the Cache) or `502` (the Relay passing a Cache
 * failure on) is the store's own: a line with either misses its target whatever its rate.
 * The PostgreSQL lines need `DDN_BENCH_PG_URL`; they use a schema of their own, dropped afterwards.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import type { BenchContext, Figure, Target } from '../context.js';
import { registerRecipients } from '../fixtures.js';
import { envelopeTemplate, freshEnvelope } from '../envelopes.js';
import type { LoadJob, LoadResult } from '../jobs.js';
import { cpuMsBetween, cpuMsByName, round } from '../proc.js';
import { ServiceProcess } from '../service.js';

export interface HotMailboxOptions {
  /** Where the processes keep their data directories and logs. */
  work: string;
  /** `DDN_BENCH_PG_URL`, when set. */
  pgUrl: string | undefined;
}

type LineId = 'sqlite' | 'pg1' | 'pg2' | 'relay_sqlite' | 'relay_pg';

const TITLES: Record<LineId, string> = {
  sqlite: 'Hot mailbox: 1 KiB stores into one recipient, SQLite Cache process',
  pg1: 'Hot mailbox: 1 KiB stores into one recipient, PostgreSQL, one Cache process',
  pg2: 'Hot mailbox: 1 KiB stores into one recipient, PostgreSQL, two Cache processes',
  relay_sqlite: 'Hot mailbox: Relay → Cache sends into one recipient, SQLite',
  relay_pg: 'Hot mailbox: Relay → Cache sends into one recipient, PostgreSQL',
};

/** Each line's target: a share of the line named (measured in the same run). */
const TARGETS: Partial<Record<LineId, { of: LineId; target: Target }>> = {
  pg1: { of: 'sqlite', target: { op: '>=', ratio: 0.5 } },
  pg2: { of: 'pg1', target: { op: '>=', ratio: 1 } },
  relay_pg: { of: 'relay_sqlite', target: { op: '>=', ratio: 0.5 } },
};

/** What a line measured, with PostgreSQL's CPU over its warm-up and window (0 on SQLite). */
interface Measured {
  load: LoadResult;
  postgresCpuMs: number;
}

/**
 * CPU microseconds per answered store: the service processes' over the window; PostgreSQL's (the backends of the
 * bench's database, not the server's shared writer processes) over warm-up and window.
 */
function cpuPerStore(m: Measured, warmupS: number): { service: number | null; postgres: number | null } {
  const { load } = m;
  if (load.ok === 0) return { service: null, postgres: null };
  const service = load.target_cpu === undefined ? null : round((load.target_cpu.cpu_ms * 1000) / load.ok);
  // the warm-up's stores are not in `ok`: count them at the window's rate
  const stores = load.ok * ((warmupS + load.duration_s) / load.duration_s);
  return { service, postgres: m.postgresCpuMs > 0 ? round((m.postgresCpuMs * 1000) / stores) : null };
}

function line(id: LineId, measured: Measured | string, warmupS: number): Figure {
  const f: Figure = { id: `hot_mailbox_${id}`, title: TITLES[id], value: null, unit: 'req/s' };
  if (typeof measured === 'string') return { ...f, unavailable: measured };
  const { load } = measured;
  const refused = (load.statuses['429'] ?? 0) + (load.statuses['502'] ?? 0);
  const cpu = cpuPerStore(measured, warmupS);
  return {
    ...f,
    value: load.ok === 0 ? null : load.rate,
    ...(load.ok === 0 ? { unavailable: `no request succeeded (${JSON.stringify(load.statuses)})` } : {}),
    extra: {
      p50_ms: load.latency_ms.p50,
      p99_ms: load.latency_ms.p99,
      status_429: load.statuses['429'] ?? 0,
      status_502: load.statuses['502'] ?? 0,
      refused_429_502: refused,
      other_failures: load.non2xx - refused + load.errors + load.timeouts,
      service_cpu_us_per_store: cpu.service ?? '—',
      postgres_cpu_us_per_store: cpu.postgres ?? '—',
    },
    load,
  };
}

/** The five lines, their targets as ratios to the lines they are measured against. */
export async function hotMailboxFigures(ctx: BenchContext, o: HotMailboxOptions): Promise<Figure[]> {
  const out = new Map<LineId, Figure>();
  const measured = await measureAll(ctx, o);
  for (const [id, m] of measured) out.set(id, line(id, m, ctx.settings.warmupS));
  for (const [id, t] of Object.entries(TARGETS) as [LineId, { of: LineId; target: Target }][]) {
    const f = out.get(id);
    const base = out.get(t.of)?.value;
    if (f === undefined) continue;
    f.target = t.target;
    f.reference = 'same_run_line';
    if (typeof base === 'number' && base > 0) f.referenceValue = base;
    if (f.extra !== undefined) f.extra.target_of = `hot_mailbox_${t.of}`;
  }
  return [...out.values()];
}

async function measureAll(ctx: BenchContext, o: HotMailboxOptions): Promise<Map<LineId, Measured | string>> {
  const got = new Map<LineId, Measured | string>();
  // the backends of the bench's database only (other databases on the server are other work)
  const dbName = o.pgUrl === undefined ? undefined : ` ${new URL(o.pgUrl).pathname.slice(1) || 'postgres'} `;
  const measure = async (j: LoadJob, pids: number | number[]): Promise<Measured> => {
    // PostgreSQL's CPU read around each run of the job: a run repeated because other work disturbed it must not
    // add its CPU to the kept run's stores (it did until session 33, by up to the number of runs made)
    let pgAt = cpuMsByName('postgres', dbName);
    let pgTotal = 0;
    const probe = () => {
      const now = cpuMsByName('postgres', dbName);
      const grew = cpuMsBetween(pgAt, now);
      pgAt = now;
      pgTotal += grew;
      return pgTotal;
    };
    const load = await ctx.load(j, pids, probe);
    return { load, postgresCpuMs: load.probe_delta ?? 0 };
  };
  const directoryUrl = ctx.service.urls.directory;
  let n = 0;
  const start = async (roles: ('cache' | 'relay')[], serveArgs: string[] = []) => {
    const name = `hot-${roles.join('-')}-${n++}`;
    const dataDir = join(o.work, name);
    mkdirSync(dataDir, { recursive: true });
    return ServiceProcess.start({
      dataDir,
      roles,
      ports: roles[0] === 'cache' ? { cache: 0 } : { relay: 0 },
      directoryUrl,
      blockTimeMs: 50,
      logFile: join(o.work, `${name}.log`),
      serveArgs,
    });
  };
  const job = (name: string, url: string, path: '/cache/store' | '/relay', to: string, moreUrls: string[] = []): LoadJob => ({
    name,
    url,
    connections: ctx.settings.connections,
    durationS: ctx.settings.durationS,
    warmupS: ctx.settings.warmupS,
    request: { kind: 'envelope', path, to, bodyBytes: ctx.settings.envelopeBytes, ...(moreUrls.length > 0 ? { moreUrls } : {}) },
  });
  /** One deployment: its Cache process(es) first, a recipient publishing the first, the lines measured on it. */
  const deployment = async (db: string[], ids: { cache: LineId; relay: LineId; two?: LineId }) => {
    const cache = await start(['cache'], db);
    const running: ServiceProcess[] = [cache];
    try {
      const [r] = await registerRecipients(directoryUrl, cache.urls.cache, ctx.profile, 1);
      const to = r!.did;
      await ctx.settle(`hot-${ids.cache}`);
      got.set(ids.cache, await measure(job(`hot-mailbox-${ids.cache}`, cache.urls.cache, '/cache/store', to), cache.pid));
      const relay = await start(['relay'], db);
      running.push(relay);
      if (await relayReady(relay.urls.relay, to)) {
        await ctx.settle(`hot-${ids.relay}`);
        got.set(ids.relay, await measure(job(`hot-mailbox-${ids.relay}`, relay.urls.relay, '/relay', to), [relay.pid, cache.pid]));
      } else got.set(ids.relay, 'the Relay process did not deliver a probe envelope within 20 s');
      await relay.stop();
      if (ids.two !== undefined) {
        const second = await start(['cache'], [...db, '--public-cache-url', cache.urls.cache]);
        running.push(second);
        await ctx.settle(`hot-${ids.two}`);
        got.set(ids.two, await measure(job(`hot-mailbox-${ids.two}`, cache.urls.cache, '/cache/store', to, [second.urls.cache]), [cache.pid, second.pid]));
      }
    } finally {
      await Promise.allSettled(running.map((p) => p.stop()));
    }
  };

  await deployment([], { cache: 'sqlite', relay: 'relay_sqlite' });
  if (o.pgUrl === undefined) {
    for (const id of ['pg1', 'pg2', 'relay_pg'] as const) got.set(id, 'DDN_BENCH_PG_URL is not set');
    return got;
  }
  const schema = `bench_hot_${randomBytes(5).toString('hex')}`;
  try {
    await deployment(['--db', o.pgUrl, '--db-schema', schema], { cache: 'pg1', relay: 'relay_pg', two: 'pg2' });
  } finally {
    const admin = new pg.Client({ connectionString: o.pgUrl });
    await admin.connect();
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
  }
  return got;
}

/** Posts probe envelopes until one is delivered (the Relay registers its node DID in the background first). */
async function relayReady(relayUrl: string, to: string): Promise<boolean> {
  const until = Date.now() + 20_000;
  for (;;) {
    const { body } = freshEnvelope(envelopeTemplate(to, 1024));
    const res = await fetch(`${relayUrl}/relay`, { method: 'POST', headers: { 'content-type': 'application/json' }, body }).catch(() => undefined);
    await res?.text();
    if (res?.status === 202) return true;
    if (Date.now() > until) return false;
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** The rows of the report's hot-mailbox table (empty when the run has no such figures). */
export function hotMailboxRows(figures: readonly Figure[]): string[] {
  const lines = figures.filter((f) => f.id.startsWith('hot_mailbox_'));
  if (lines.length === 0) return [];
  const v = (f: Figure, k: string) => (typeof f.extra?.[k] === 'number' ? String(f.extra[k]) : '—');
  return [
    '## Hot mailbox: one recipient, SQLite and PostgreSQL',
    '',
    '| Line | Rate | 429 | 502 | CPU per store: services / PostgreSQL | Ratio | Target | Result |',
    '|---|---:|---:|---:|---:|---:|---:|---|',
    ...lines.map((f) => {
      const target = f.target === undefined ? '—' : `${f.target.op} ${f.target.ratio} × ${String(f.extra?.target_of ?? '')}, no 429/502`;
      const result = f.pass === undefined ? '—' : f.pass ? 'met' : 'missed';
      const rate = f.value === null ? `unavailable: ${f.unavailable ?? ''}` : `${f.value} req/s`;
      return `| ${f.title.replace(/^Hot mailbox: /, '')} | ${rate} | ${v(f, 'status_429')} | ${v(f, 'status_502')} | ${v(f, 'service_cpu_us_per_store')} / ${v(f, 'postgres_cpu_us_per_store')} µs | ${f.ratio === undefined ? '—' : round(f.ratio, 3)} | ${target} | ${result} |`;
    }),
    '',
  ];
}
