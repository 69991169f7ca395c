/**
 * Resolve and registration as the Directory grows (issue 39, item 3): two Directory-only nodes side by side, one on
 * a ledger of 2,000 DIDs and one on a ledger of `bigDids` (1,000,000 is the documented figure; the default run uses
 * fewer, see bench/README.md), both built by bench/bigledger.ts (real keys and signatures, blocks the ledger
 * verified), both in the default configuration (a resolve cache sized by memory), as an operator's would. The
 * figures are the big node's rates divided by the small node's; the phases, in order:
 *
 * 1. resolve just after the start (`resolve_at_scale_cold`, information: most answers rendered for the first time):
 *    `GET /resolve/{did}` of a DID drawn uniformly from the ledger's built DIDs, windows small, big, small, big;
 * 2. registration just after the start (`registration_at_scale_cold`, information): fresh signed `POST
 *    /register-did`, a small window, then a big one — the big node reads the leaves of the indexes a registration
 *    inserts into from the disk;
 * 3. every DID of the big ledger read once (a node that has served its directory for a while; the warm-up's time is
 *    reported), then the resolve windows again: `resolve_at_scale`, target ≥ 0.8, with the big node's memory;
 * 4. the registration path warmed until the big node has accepted enough registrations that its indexes' leaves
 *    are in its cache (bench/figures/registration-scale.ts), the small node started again on a copy of the 2,000
 *    DIDs and warmed by one window of half the length, then a small window and a big one: `registration_at_scale`, target ≥ 0.95 (not lower, the bench's noise) — a node
 *    that has been registering for a while. Last, so that the DIDs it registers change no resolve window.
 *
 * Both registration lines keep, per registration, the event loop's blocked time and the disk's reads and writes for
 * either node. The registrations add DIDs to both ledgers (the resolve windows draw from the built DIDs only).
 * `bigCacheBytes` runs the big node with that resolve budget instead of the default.
 */
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { BIG_DIDS_FILE, buildBigLedger } from '../bigledger.js';
import type { BenchContext, Figure } from '../context.js';
import type { LoadJob, LoadResult } from '../jobs.js';
import { Pool } from 'undici';
import { blockedPerOp, memoryOf, readBlocked, round, type BlockedReading, type ProcessMemory } from '../proc.js';
import { freePort, ServiceProcess } from '../service.js';
import {
  registrationFigures,
  registrationsToSign,
  warmupRegistrations,
  type RegistrationPair,
  type RegistrationWarmup,
  type RegistrationWindow,
} from './registration-scale.js';

const SMALL_DIDS = 2000;
const BLOCK_TIME_MS = 100;
/** The registration warm-up's windows a node at most (a slow machine stops there; the figure says how many ran). */
const MAX_WARMUP_WINDOWS = 8;

export interface ResolveScaleOptions {
  work: string;
  /** DIDs of the big ledger. */
  bigDids: number;
  /** A data directory bench:bigledger already built with at least `bigDids` DIDs (used in place), else one is built. */
  bigDataDir: string | undefined;
  /** The big node's `--directory-resolve-cache-bytes` (undefined: the default, sized by memory). */
  bigCacheBytes?: number | undefined;
}

/** Reads every DID of `didsFile` once, `connections` at a time: the resolve cache's warm-up. */
async function readEveryDid(url: string, didsFile: string, connections: number): Promise<number> {
  const paths = readFileSync(didsFile, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => `/resolve/${encodeURIComponent(l.split('\t', 1)[0]!)}`);
  const pool = new Pool(url, { connections });
  let next = 0;
  const worker = async () => {
    while (next < paths.length) {
      const res = await pool.request({ method: 'GET', path: paths[next++]! });
      await res.body.dump();
      if (res.statusCode !== 200) throw new Error(`warm-up: ${res.statusCode} for ${paths[next - 1]}`);
    }
  };
  try {
    await Promise.all(Array.from({ length: connections }, worker));
  } finally {
    await pool.close();
  }
  return paths.length;
}

function didsIn(dataDir: string): number {
  const file = join(dataDir, BIG_DIDS_FILE);
  if (!existsSync(file)) return 0;
  const text = readFileSync(file, 'utf8');
  let n = 0;
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) n++;
  return n;
}

async function ledgerOf(ctx: BenchContext, dataDir: string, dids: number): Promise<void> {
  if (didsIn(dataDir) >= dids) return;
  mkdirSync(dataDir, { recursive: true });
  ctx.log(`  building a ledger of ${dids.toLocaleString('en')} DIDs in ${dataDir} (bench/bigledger.ts)`);
  const r = await buildBigLedger({ dids, dataDir, log: (m) => ctx.log(`    ${m}`) });
  ctx.log(`  built in ${r.seconds} s (${r.dids_per_s} DIDs/s)`);
}

export async function resolveScaleFigures(ctx: BenchContext, o: ResolveScaleOptions): Promise<Figure[]> {
  const { settings: s } = ctx;
  const smallDir = join(o.work, 'scale-small');
  const bigDir = o.bigDataDir ?? join(o.work, 'scale-big');
  await ledgerOf(ctx, smallDir, SMALL_DIDS);
  await ledgerOf(ctx, bigDir, o.bigDids);
  // the reference of the warm registration pair starts again on the 2,000 DIDs (the cold windows grow this one's)
  const smallAgainDir = join(o.work, 'scale-small-again');
  rmSync(smallAgainDir, { recursive: true, force: true });
  cpSync(smallDir, smallAgainDir, { recursive: true });
  const start = async (dataDir: string, name: string, serveArgs?: string[]) =>
    ServiceProcess.start({
      dataDir,
      roles: ['directory'],
      ports: { directory: await freePort() },
      blockTimeMs: BLOCK_TIME_MS,
      logFile: join(o.work, `scale-${name}.log`),
      ...(serveArgs === undefined ? {} : { serveArgs }),
    });
  let small = await start(smallDir, 'small');
  // the default configuration (its resolve cache sized by memory), unless --big-cache-bytes says otherwise
  const big = await start(bigDir, 'big', o.bigCacheBytes === undefined ? undefined : ['--directory-resolve-cache-bytes', String(o.bigCacheBytes)]);
  const label = o.bigDids >= 1_000_000 ? `${o.bigDids / 1_000_000}M` : `${Math.round(o.bigDids / 1000)}k`;
  try {
    const run = async (svc: ServiceProcess, dataDir: string, dids: number, name: string): Promise<LoadResult> => {
      const job: LoadJob = {
        name,
        url: svc.urls.directory,
        connections: s.connections,
        durationS: s.durationS,
        warmupS: s.warmupS,
        request: { kind: 'random-did', pathPrefix: '/resolve/', didsFile: join(dataDir, BIG_DIDS_FILE), count: dids },
      };
      await ctx.settle(name);
      return ctx.gen.run(job, svc.pid);
    };
    /** Windows alternating small, big, small, big. */
    const alternate = async (phase: string): Promise<ResolveWindows> => {
      const out: ResolveWindows = { small: [], big: [] };
      for (let i = 0; i < 2; i++) {
        out.small.push(await run(small, smallDir, SMALL_DIDS, `resolve-2k-${phase}-${i + 1}`));
        out.big.push(await run(big, bigDir, o.bigDids, `resolve-${label}-${phase}-${i + 1}`));
      }
      return out;
    };
    // a node just started: most answers are read for the first time (information, no target)
    const cold = await alternate('cold');
    /** One registration window (signing its own registrations first, enough for it), with the node's blocked time. */
    const register = async (svc: ServiceProcess, name: string, window: { durationS: number; warmupS: number } = s): Promise<RegistrationWindow> => {
      const count = registrationsToSign(window.warmupS, window.durationS);
      let before: BlockedReading | undefined;
      const load = await ctx.gen.run(
        { name, url: svc.urls.directory, connections: s.connections, durationS: window.durationS, warmupS: window.warmupS, request: { kind: 'registration', profile: ctx.profile, count } },
        svc.pid,
        () => (before = readBlocked(svc.pid)),
      );
      return { load, blocked: blockedPerOp(before ?? readBlocked(svc.pid), readBlocked(svc.pid), load.ok) };
    };
    const measuredPair = async (phase: string): Promise<RegistrationPair> => {
      await ctx.settle(`register-2k-${phase}`);
      const pairSmall = await register(small, `register-2k-${phase}`);
      await ctx.settle(`register-${label}-${phase}`);
      return { small: pairSmall, big: await register(big, `register-${label}-${phase}`) };
    };
    // the first registrations after the start (information): the big node reads its indexes' leaves from the disk
    const regCold = await measuredPair('cold');
    const memCold = memoryOf(big.pid);
    // a node that has served its directory for a while: every DID read once (the small node's 2,000 are read many
    // times over by its cold windows already)
    const t0 = performance.now();
    const warmed = await readEveryDid(big.urls.directory, join(bigDir, BIG_DIDS_FILE), s.connections);
    const warmupS = round((performance.now() - t0) / 1000, 1);
    ctx.log(`  warm-up: ${warmed.toLocaleString('en')} DIDs read once in ${warmupS} s`);
    const warm = await alternate('warm');
    const memBig = memoryOf(big.pid);
    const memSmall = memoryOf(small.pid);
    // Last, after every resolve window (the DIDs registered here change nothing measured before): the registration
    // path warmed until the big node has accepted enough registrations that its SQLite cache holds the leaves of the
    // indexes a registration inserts into (the resolve warm-up's misses pushed the cold windows' out). The reference
    // is a small node started again on a copy of the 2,000 DIDs: the cold windows grew the first one's ledger by
    // ~20,000, and a registration costs more on a larger ledger (bench/HISTORY.md, session 31, hG). Its ledger is in
    // its cache after one short window, so it gets only that one (half a measured window, for its JIT): its ledger
    // stays a small one.
    await small.stop();
    small = await start(smallAgainDir, 'small-again');
    const target = warmupRegistrations(o.bigDids);
    const w = { target, windows: 0, big: 0, small: 0, bigRates: [] as number[], smallRates: [] as number[] };
    while (w.windows < MAX_WARMUP_WINDOWS && (w.windows === 0 || w.big < target)) {
      w.windows++;
      if (w.windows === 1) {
        // half a window: enough for its JIT and its cache, little for its ledger (~10,000 DIDs more)
        const ws = (await register(small, `register-2k-warmup`, { durationS: s.durationS / 2, warmupS: s.warmupS })).load;
        w.small += ws.ok;
        w.smallRates.push(ws.rate);
      }
      const wb = (await register(big, `register-${label}-warmup-${w.windows}`)).load;
      w.big += wb.ok;
      w.bigRates.push(wb.rate);
    }
    const warmup: RegistrationWarmup = {
      ...w,
      bigDids: o.bigDids + regCold.big.load.ok + w.big,
      smallDids: SMALL_DIDS + w.small,
    };
    ctx.log(`  registration warm-up: ${w.windows} windows a node, ${w.big.toLocaleString('en')} registrations at ${label} (target ${target.toLocaleString('en')}; ${w.bigRates.join(' / ')}/s), ${w.small.toLocaleString('en')} at 2k (${w.smallRates.join(' / ')}/s)`);
    const regWarm = await measuredPair('warm');
    const memReg = memoryOf(big.pid);
    const line = (l: LoadResult[]) => l.map((r) => r.rate).join(' / ');
    const regLine = (p: RegistrationPair) =>
      `2k ${p.small.load.rate}/s, ${label} ${p.big.load.rate}/s; per registration, event loop on a CPU 2k ${p.small.blocked.main_cpu_us} µs, ${label} ${p.big.blocked.main_cpu_us} µs, blocked 2k ${p.small.blocked.blocked_us} µs, ${label} ${p.big.blocked.blocked_us} µs; read from the disk 2k ${p.small.blocked.disk_read_kib} KiB, ${label} ${p.big.blocked.disk_read_kib} KiB`;
    ctx.log(`  resolve, cold: 2k ${line(cold.small)}, ${label} ${line(cold.big)} req/s; RSS ${label} ${memCold.rss_mib} MiB`);
    ctx.log(`  resolve, warm: 2k ${line(warm.small)}, ${label} ${line(warm.big)} req/s; RSS ${label} ${memBig.rss_mib} MiB (peak ${memBig.peak_rss_mib})`);
    ctx.log(`  register, cold: ${regLine(regCold)}`);
    ctx.log(`  register, warm: ${regLine(regWarm)}`);
    return [
      ...resolveFigures({ label, dids: o.bigDids, cacheBytes: o.bigCacheBytes, cold, warm, warmed, warmupS, memCold, memWarm: memBig, smallRssMib: memSmall.rss_mib }),
      ...registrationFigures({ label, cold: regCold, warm: regWarm, warmup, memCold, memWarm: memReg }),
    ];
  } finally {
    await Promise.allSettled([small.stop(), big.stop()]);
  }
}

/** The windows of a resolve_scale run: small and big, alternated. */
export interface ResolveWindows {
  small: LoadResult[];
  big: LoadResult[];
}

/**
 * The resolve figures of a run: `resolve_at_scale` (the target line) from the windows after the warm-up, big ÷ small
 * with the memory it took, and `resolve_at_scale_cold` (information, no target) from the windows after the start.
 */
export function resolveFigures(r: {
  label: string;
  dids: number;
  cacheBytes: number | undefined;
  cold: ResolveWindows;
  warm: ResolveWindows;
  warmed: number;
  warmupS: number;
  memCold: ProcessMemory;
  memWarm: ProcessMemory;
  smallRssMib: number;
}): Figure[] {
  const mean = (l: LoadResult[]) => round(l.reduce((a, w) => a + w.rate, 0) / l.length, 1);
  const budget = r.cacheBytes ?? 'default';
  const { cold, warm } = r;
  return [
    {
      id: 'resolve_at_scale',
      title: `Resolve, uniform random over ${r.label} DIDs, default resolve cache, every DID read once before (reference: over 2,000)`,
      value: mean(warm.big),
      unit: 'req/s',
      reference: 'same_run_line',
      referenceValue: mean(warm.small),
      target: { op: '>=', ratio: 0.8 },
      extra: {
        small_req_per_s: mean(warm.small),
        dids: r.dids,
        cache_bytes: budget,
        warmed: r.warmed,
        warmup_s: r.warmupS,
        p99_ms: warm.big[1]!.latency_ms.p99,
        small_p99_ms: warm.small[1]!.latency_ms.p99,
        ...r.memWarm,
        small_rss_mib: r.smallRssMib,
      },
      load: warm.big[1]!,
      details: { small: warm.small, big: warm.big },
    },
    {
      id: 'resolve_at_scale_cold',
      title: `Resolve, uniform random over ${r.label} DIDs, a node just started (reference: over 2,000; information)`,
      value: mean(cold.big),
      unit: 'req/s',
      reference: 'same_run_line',
      referenceValue: mean(cold.small),
      extra: { small_req_per_s: mean(cold.small), dids: r.dids, cache_bytes: budget, p99_ms: cold.big[1]!.latency_ms.p99, ...r.memCold },
      load: cold.big[1]!,
      details: { small: cold.small, big: cold.big },
    },
  ];
}
