/**
 * Resolve as the Directory grows (issue 39, item 3): two Directory-only nodes side by side, one on a ledger of
 * 2,000 DIDs and one on a ledger of `bigDids` (1,000,000 is the documented figure; the default run uses fewer, see
 * bench/README.md), both built by bench/bigledger.ts (real keys and signatures, blocks the ledger verified). Each is
 * measured with `GET /resolve/{did}` of a DID drawn uniformly from all of its DIDs — windows alternate small, big,
 * small, big — and with the registration rate (fresh signed registrations, `POST /register-did`). The figures are
 * the big node's rates divided by the small node's: resolve (target ≥ 0.8) and registration (not lower: ≥ 0.95,
 * the bench's noise); the big node's resident memory is reported beside them.
 *
 * With `bigCacheBytes` a third line measures the big ledger again with a resolve cache of that many bytes, warmed by
 * one read of every DID (a node that has served its directory for a while): what keeping resolve flat as the
 * Directory grows takes in memory (`--directory-resolve-cache-bytes`, about 1.3 KiB per DID).
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIG_DIDS_FILE, buildBigLedger } from '../bigledger.js';
import type { BenchContext, Figure } from '../context.js';
import type { LoadJob, LoadResult } from '../jobs.js';
import { Pool } from 'undici';
import { round } from '../proc.js';
import { freePort, ServiceProcess } from '../service.js';

const SMALL_DIDS = 2000;
const BLOCK_TIME_MS = 100;

export interface ResolveScaleOptions {
  work: string;
  /** DIDs of the big ledger. */
  bigDids: number;
  /** A data directory bench:bigledger already built with at least `bigDids` DIDs (used in place), else one is built. */
  bigDataDir: string | undefined;
  /** Also measure the big ledger with a resolve cache of this many bytes, warmed (undefined: not measured). */
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

/** Resident and peak resident memory of a process, MiB (Linux /proc). */
function memoryOf(pid: number): { rss_mib: number; peak_rss_mib: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
  return { rss_mib: Math.round(kib('VmRSS') / 1024), peak_rss_mib: Math.round(kib('VmHWM') / 1024) };
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
  const start = async (dataDir: string, name: string, serveArgs?: string[]) =>
    ServiceProcess.start({
      dataDir,
      roles: ['directory'],
      ports: { directory: await freePort() },
      blockTimeMs: BLOCK_TIME_MS,
      logFile: join(o.work, `scale-${name}.log`),
      ...(serveArgs === undefined ? {} : { serveArgs }),
    });
  const small = await start(smallDir, 'small');
  let big = await start(bigDir, 'big');
  const mean = (l: LoadResult[]) => round(l.reduce((a, r) => a + r.rate, 0) / l.length, 1);
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
    /** The big ledger again, its node with a resolve cache of `bytes`, warmed by one read of every DID. */
    const cachedLine = async (bytes: number): Promise<Figure[]> => {
      await big.stop();
      big = await start(bigDir, 'big-cached', ['--directory-resolve-cache-bytes', String(bytes)]);
      const t0 = performance.now();
      const warmed = await readEveryDid(big.urls.directory, join(bigDir, BIG_DIDS_FILE), s.connections);
      ctx.log(`  cached: ${warmed.toLocaleString('en')} DIDs read once in ${round((performance.now() - t0) / 1000, 1)} s`);
      const windows = [await run(big, bigDir, o.bigDids, `resolve-${label}-cached-1`), await run(big, bigDir, o.bigDids, `resolve-${label}-cached-2`)];
      const smallAgain = await run(small, smallDir, SMALL_DIDS, 'resolve-2k-3');
      const mem = memoryOf(big.pid);
      const reference = mean([...resolves.small, smallAgain]);
      ctx.log(`  cached: ${label} ${windows.map((r) => r.rate).join(' / ')} req/s, 2k ${smallAgain.rate}; RSS ${mem.rss_mib} MiB (peak ${mem.peak_rss_mib})`);
      return [
        {
          id: 'resolve_at_scale_cached',
          title: `Resolve, uniform random over ${label} DIDs, a ${round(bytes / 2 ** 30, 2)} GiB resolve cache warmed (reference: over 2,000)`,
          value: mean(windows),
          unit: 'req/s',
          reference: 'same_run_line',
          referenceValue: reference,
          target: { op: '>=', ratio: 0.8 },
          extra: { cache_bytes: bytes, dids: o.bigDids, warmed, p99_ms: windows[1]!.latency_ms.p99, ...mem },
          load: windows[1]!,
          details: { big: windows, small: [...resolves.small, smallAgain] },
        },
      ];
    };
    const resolves = { small: [] as LoadResult[], big: [] as LoadResult[] };
    for (let i = 0; i < 2; i++) {
      resolves.small.push(await run(small, smallDir, SMALL_DIDS, `resolve-2k-${i + 1}`));
      resolves.big.push(await run(big, bigDir, o.bigDids, `resolve-${label}-${i + 1}`));
    }
    const register = async (svc: ServiceProcess, name: string): Promise<LoadResult> => {
      await ctx.settle(name);
      // enough for warm-up and window at ~4,500/s: a node that used them up would answer 409 to the last one resent
      const count = s.quick ? 6_000 : 60_000;
      return ctx.gen.run(
        { name, url: svc.urls.directory, connections: s.connections, durationS: s.durationS, warmupS: s.warmupS, request: { kind: 'registration', profile: ctx.profile, count } },
        svc.pid,
      );
    };
    const regSmall = await register(small, 'register-2k');
    const regBig = await register(big, `register-${label}`);
    const memBig = memoryOf(big.pid);
    const memSmall = memoryOf(small.pid);
    const cached = o.bigCacheBytes === undefined ? [] : await cachedLine(o.bigCacheBytes);
    const resolveSmall = mean(resolves.small);
    const resolveBig = mean(resolves.big);
    ctx.log(`  resolve: 2k ${resolves.small.map((r) => r.rate).join(' / ')}, ${label} ${resolves.big.map((r) => r.rate).join(' / ')} req/s`);
    ctx.log(`  register: 2k ${regSmall.rate}/s, ${label} ${regBig.rate}/s; RSS ${label} ${memBig.rss_mib} MiB (peak ${memBig.peak_rss_mib})`);
    const mem = { rss_mib: memBig.rss_mib, peak_rss_mib: memBig.peak_rss_mib, small_rss_mib: memSmall.rss_mib };
    return [
      {
        id: 'resolve_at_scale',
        title: `Resolve, uniform random over ${label} DIDs (reference: over 2,000)`,
        value: resolveBig,
        unit: 'req/s',
        reference: 'same_run_line',
        referenceValue: resolveSmall,
        target: { op: '>=', ratio: 0.8 },
        extra: { small_req_per_s: resolveSmall, dids: o.bigDids, p99_ms: resolves.big[1]!.latency_ms.p99, small_p99_ms: resolves.small[1]!.latency_ms.p99, ...mem },
        load: resolves.big[1]!,
        details: { small: resolves.small, big: resolves.big },
      },
      {
        id: 'registration_at_scale',
        title: `Registrations accepted with ${label} DIDs (reference: with 2,000)`,
        ...registrationsAnswered(regSmall, regBig),
        unit: 'req/s',
        reference: 'same_run_line',
        referenceValue: regSmall.rate,
        target: { op: '>=', ratio: 0.95 },
        extra: { small_req_per_s: regSmall.rate, non2xx: regBig.non2xx, small_non2xx: regSmall.non2xx, ...mem },
        load: regBig,
        details: { small: regSmall },
      },
      ...cached,
    ];
  } finally {
    await Promise.allSettled([small.stop(), big.stop()]);
  }
}

/**
 * The registration figure's value, or why there is none: a window that met an answer other than `2xx` measured
 * something else — most often it used up its pre-signed registrations and resent the last one (`409`).
 */
export function registrationsAnswered(small: LoadResult, big: LoadResult): Pick<Figure, 'value' | 'unavailable'> {
  const refused = small.non2xx + big.non2xx;
  if (refused === 0) return { value: big.rate };
  return { value: null, unavailable: `${refused} registrations answered other than 2xx (2k ${small.non2xx}, big ${big.non2xx}): pre-sign more` };
}
