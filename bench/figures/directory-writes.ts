/**
 * Directory writes (issue 27): signed DID updates accepted per second, and how long a write takes to become
 * visible in resolve, on a Directory-only node with its embedded SQLite ledger, on PostgreSQL with one Directory
 * process, and on PostgreSQL with two Directory processes of one ledger — the leader shape, the default since session 39
 * (the process that does not produce hands its writes to the one that does), and beside it, as information,
 * `--ledger-hand-over off` (every process admits: the design before). Each deployment is fresh: it registers
 * its DIDs through the SDK, then the load generator sends pre-signed `UpdateService` changes (the next document
 * nonce of each DID, round after round) at 32 connections, split between the processes.
 *
 * Write→visible: from sending an update of a probe DID to the first resolve that shows it, read from the last
 * process (with two, the write goes to one and is read at the other); measured idle (one after another, each
 * more than a block interval after the last block, nothing else running) and busy (during the load).
 *
 * The PostgreSQL deployments need `DDN_BENCH_PG_URL` (e.g. `postgres://postgres@127.0.0.1:5432/postgres`); each
 * uses a schema of its own, dropped afterwards. Without it those figures are reported unavailable.
 */
import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdirSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { ATTESTOR_KEY_FILE, GENESIS_FILE } from '../../src/app/node-keys.js';
import { to0x } from '../../src/base/bytes.js';
import { submitRoute } from '../../src/client/actions.js';
import { DirectoryClient } from '../../src/client/directory-client.js';
import { didDocumentFor, generateKeyPair, type GeneratedKeyPair } from '../../src/client/keys.js';
import { buildMutationRequest } from '../../src/client/payloads.js';
import { generateDid } from '../../src/protocol/did.js';
import { makeProfile, type Profile } from '../../src/protocol/profile.js';
import { enc, type BenchContext, type Figure } from '../context.js';
import type { LatencyMs, UpdatedDid } from '../jobs.js';
import { round } from '../proc.js';
import { freePort, ServiceProcess } from '../service.js';
import { WriteBoundsWindow } from './write-bounds.js';

/** Block interval of the write deployments (the issue's second row). */
const BLOCK_TIME_MS = 100;
export const SERVICE_TYPE = 'BenchService';

export interface Deployment {
  /** `pg2`: two processes of one ledger as `ddn serve` starts them (hand-over on); `pg2_off`: the same with `--ledger-hand-over off`. */
  id: 'sqlite' | 'pg1' | 'pg2' | 'pg2_off';
  processes: ServiceProcess[];
  close(): Promise<void>;
}

export interface WriterDid {
  did: string;
  key: GeneratedKeyPair;
  serviceId: string;
}

/** Runs `fn` over `items` with at most `n` at a time. */
async function bounded<T, R>(items: readonly T[], n: number, fn: (t: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!);
      }
    }),
  );
  return out;
}

/** `count` DIDs registered through `url` (20 at a time) and final. */
export async function registerWriters(url: string, profile: Profile, count: number): Promise<WriterDid[]> {
  const client = new DirectoryClient(url, { profile });
  const made = Array.from({ length: count }, () => {
    const key = generateKeyPair();
    const did = generateDid(profile);
    return { did, key, serviceId: `${did}#svc` };
  });
  await bounded(made, 20, (m) =>
    client.register({
      did: m.did,
      key: m.key,
      didDocument: didDocumentFor(m.did, m.key.publicKey, { services: [{ id: m.serviceId, type: SERVICE_TYPE, serviceEndpoint: ['https://r.bench.example/'] }] }),
    }),
  );
  await bounded(made, 20, (m) => client.waitForRegistration(m.did, { timeoutMs: 120_000, intervalMs: 50 }));
  return made;
}

/** Exact percentiles of a few samples (ms). */
function summary(samples: number[]): LatencyMs {
  const s = [...samples].sort((a, b) => a - b);
  const at = (q: number) => (s.length === 0 ? 0 : round(s[Math.min(s.length - 1, Math.floor(q * s.length))]!, 1));
  return { mean: s.length === 0 ? 0 : round(s.reduce((a, b) => a + b, 0) / s.length, 1), p50: at(0.5), p90: at(0.9), p99: at(0.99), max: at(1) };
}

/** Updates of one DID, each sent to `writeUrl` and timed until `readUrl` resolves it. */
class VisibilityProbe {
  private nonce: bigint;
  private n = 0;
  readonly samples: number[] = [];
  constructor(
    private readonly profile: Profile,
    private readonly writer: WriterDid,
    firstNonce: bigint,
    private readonly writeUrl: string,
    private readonly readUrl: string,
  ) {
    this.nonce = firstNonce;
  }

  /** One update, sent and awaited until visible; its time is kept. */
  async once(): Promise<void> {
    const endpoint = `https://probe-${this.n++}.bench.example/`;
    const { did, key, serviceId } = this.writer;
    const fields = { service: { id: serviceId, type: SERVICE_TYPE, serviceEndpoint: [endpoint] } };
    const built = buildMutationRequest(this.profile, did, 'UpdateService', fields, {
      nonce: this.nonce,
      validUntil: BigInt(Date.now() + 600_000),
      signerKeyId: 'root',
    });
    const route = submitRoute(did, 'UpdateService', built.request);
    const body = JSON.stringify({ ...built.request, signature: to0x(key.sign(built.payload)) });
    const t0 = performance.now();
    const res = await fetch(`${this.writeUrl}${route.path}`, { method: route.method, headers: { 'content-type': 'application/json' }, body });
    const answer = await res.text();
    if (res.status !== 202) throw new Error(`probe update answered ${res.status}: ${answer.slice(0, 300)}`);
    this.nonce++;
    const deadline = t0 + 30_000;
    for (;;) {
      const r = await fetch(`${this.readUrl}/resolve/${enc(did)}`);
      if ((await r.text()).includes(endpoint)) break;
      if (performance.now() > deadline) throw new Error('a probe update was not visible within 30 s');
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    this.samples.push(performance.now() - t0);
  }
}

export interface WriteFigureOptions {
  /** Where the deployments keep their data directories and logs. */
  work: string;
  /** `DDN_BENCH_PG_URL`, when set. */
  pgUrl: string | undefined;
  /** `--cpu-prof`: a V8 CPU profile of each Directory process into `<dir>/writes-<deployment>-<i>`. */
  cpuProfDir?: string;
  /**
   * `--ledger-hand-over` of the PostgreSQL processes (issue 39 item 5); unset: `ddn serve`'s default (`on`), except
   * for `pg2_off`, which is always `off`.
   */
  handOver?: 'on' | 'off';
  /** `--ledger-hand-over-max` of the `pg2` processes (hand-overs in flight at most); unset: `ddn serve`'s default (16). */
  handOverMax?: number;
  /** The built tree the processes run (default: this checkout; `bench/pg-write-cpu.ts --other`). */
  root?: string;
}

/** The three deployments one after another, each measured and stopped before the next starts. */
export async function directoryWriteFigures(ctx: BenchContext, o: WriteFigureOptions): Promise<Figure[]> {
  const figures: Figure[] = [];
  const rates = new Map<string, number>();
  for (const id of ['sqlite', 'pg1', 'pg2', 'pg2_off'] as const) {
    if (id !== 'sqlite' && o.pgUrl === undefined) {
      figures.push({ ...figureHead(id), value: null, unit: 'writes/s', unavailable: 'DDN_BENCH_PG_URL is not set' });
      continue;
    }
    const d = await deploy(id, o);
    try {
      const f = await measure(ctx, d);
      if (f.value !== null) rates.set(id, f.value);
      figures.push(f);
    } finally {
      await d.close();
    }
  }
  const sqlite = rates.get('sqlite');
  const pg1 = rates.get('pg1');
  for (const f of figures) {
    if (f.value === null || f.extra === undefined) continue;
    if (f.id === 'dir_writes_pg1' && sqlite) f.extra.vs_sqlite = round(f.value / sqlite, 3);
    if ((f.id === 'dir_writes_pg2' || f.id === 'dir_writes_pg2_off') && pg1) f.extra.vs_pg1 = round(f.value / pg1, 3);
  }
  return figures;
}

function figureHead(id: Deployment['id']): Pick<Figure, 'id' | 'title'> {
  const title = {
    sqlite: 'Directory writes, SQLite (embedded ledger)',
    pg1: 'Directory writes, PostgreSQL, one Directory process',
    pg2: 'Directory writes, PostgreSQL, two Directory processes (leader shape: writes handed to the producer)',
    pg2_off: 'Directory writes, PostgreSQL, two Directory processes, --ledger-hand-over off (every process admits)',
  }[id];
  return { id: `dir_writes_${id}`, title };
}

/** A fresh deployment `id` (its own schema on PostgreSQL, dropped by `close`). */
export async function deploy(id: Deployment['id'], o: WriteFigureOptions): Promise<Deployment> {
  const schema = `bench_w_${randomBytes(5).toString('hex')}`;
  const handOver = id === 'pg2_off' ? 'off' : o.handOver;
  const max = id === 'pg2' && o.handOverMax !== undefined ? ['--ledger-hand-over-max', String(o.handOverMax)] : [];
  const db =
    id === 'sqlite' ? [] : ['--db', o.pgUrl!, '--db-schema', schema, ...(handOver === undefined ? [] : ['--ledger-hand-over', handOver]), ...max];
  // a deployment with its own --ledger-hand-over-max has its own directories (a bench may start several)
  const dir = `writes-${id}${max.length > 0 ? `-max${o.handOverMax}` : ''}${o.root === undefined ? '' : '-other'}`;
  const start = async (i: number) => {
    const dataDir = join(o.work, `${dir}-${i}`);
    mkdirSync(dataDir, { recursive: true });
    return ServiceProcess.start({
      dataDir,
      roles: ['directory'],
      ports: { directory: await freePort() },
      blockTimeMs: BLOCK_TIME_MS,
      logFile: join(o.work, `${dir}-${i}.log`),
      serveArgs: db,
      ...(o.root === undefined ? {} : { root: o.root }),
      ...(o.cpuProfDir === undefined ? {} : { cpuProfDir: join(o.cpuProfDir, `${dir}-${i}`) }),
    });
  };
  const processes = [await start(0)];
  if (id === 'pg2' || id === 'pg2_off') {
    // the second process of one chain gets the first one's genesis and attestor key, as an operator copies them
    const second = join(o.work, `${dir}-1`);
    mkdirSync(second, { recursive: true });
    for (const f of [GENESIS_FILE, ATTESTOR_KEY_FILE]) copyFileSync(join(o.work, `${dir}-0`, f), join(second, f));
    processes.push(await start(1));
  }
  return {
    id,
    processes,
    async close() {
      await Promise.allSettled(processes.map((p) => p.stop()));
      if (id === 'sqlite') return;
      const admin = new pg.Client({ connectionString: o.pgUrl });
      await admin.connect();
      await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await admin.end();
    },
  };
}

async function measure(ctx: BenchContext, d: Deployment): Promise<Figure> {
  const { settings: s } = ctx;
  const urls = d.processes.map((p) => p.urls.directory);
  const health = (await (await fetch(`${urls[0]!}/health`)).json()) as { profile: string };
  const profile = makeProfile(health.profile);
  const count = s.quick ? 300 : 2000;
  ctx.log(`  ${d.id}: registering ${count + 1} DIDs`);
  const [probeDid, ...writers] = await registerWriters(urls[0]!, profile, count + 1);
  const nonces = (await (await fetch(`${urls[0]!}/dids/${enc(probeDid!.did)}/nonces`)).json()) as { document_nonce: string };
  const first = BigInt(nonces.document_nonce);
  const probe = new VisibilityProbe(profile, probeDid!, first, urls[0]!, urls[urls.length - 1]!);
  for (let i = 0; i < (s.quick ? 10 : 30); i++) {
    // idle: no block in the last interval, so the write's block is made at once (closer probes would wait for it)
    await new Promise((resolve) => setTimeout(resolve, BLOCK_TIME_MS + 20));
    await probe.once();
  }
  const idle = summary(probe.samples);
  probe.samples.length = 0;

  const dids: UpdatedDid[] = writers.map((w) => ({
    did: w.did,
    seedHex: Buffer.from(w.key.seed).toString('hex'),
    serviceId: w.serviceId,
    serviceType: SERVICE_TYPE,
    nonce: first.toString(),
  }));
  // enough rounds for 2,000 writes/s over the warm-up and the window (the issue's SQLite node: 684)
  const rounds = Math.ceil((2000 * (s.durationS + s.warmupS)) / count);
  let loading = true;
  const busyProbe = (async () => {
    while (loading) await probe.once();
  })();
  await ctx.settle(`dir-writes-${d.id}`);
  let window: WriteBoundsWindow | undefined;
  // once, not again when other work disturbed it (ctx.load would): a second run would send nonces already used
  const load = await ctx.gen
    .run(
      {
        name: `dir-writes-${d.id}`,
        url: urls[0]!,
        connections: s.connections,
        durationS: s.durationS,
        warmupS: s.warmupS,
        request: { kind: 'did-update', profile: health.profile, dids, rounds, ...(urls.length > 1 ? { moreUrls: urls.slice(1) } : {}) },
      },
      d.processes.map((p) => p.pid),
      // on PostgreSQL: what bounds it (PostgreSQL's CPU, the admission lock), read beside the window
      d.id === 'sqlite' ? undefined : () => (window = new WriteBoundsWindow(urls, d.processes.map((p) => p.pid))),
    )
    .finally(() => (loading = false));
  const bounds = await window?.end();
  await busyProbe;
  const busy = summary(probe.samples);
  return {
    ...figureHead(d.id),
    value: load.rate,
    unit: 'writes/s',
    reference: 'hello_world_rps',
    extra: {
      p50_ms: load.latency_ms.p50,
      p99_ms: load.latency_ms.p99,
      p50_visible_idle_ms: idle.p50,
      p90_visible_idle_ms: idle.p90,
      p50_visible_busy_ms: busy.p50,
      p90_visible_busy_ms: busy.p90,
      service_cpu_cores: load.target_cpu?.cores ?? 0,
      machine_cores: load.machine_cores ?? 0,
      // the machine's 1-minute load average as the window ended (others' work on a shared machine shows here)
      load_avg_1m: round(loadavg()[0] ?? 0, 2),
      ...(bounds === undefined ? {} : bounds),
    },
    load,
    details: { block_time_ms: BLOCK_TIME_MS, dids: count, processes: d.processes.length, visible_idle_ms: idle, visible_busy_ms: busy },
  };
}
