/**
 * `npm run bench [-- --quick] [-- --only a,b] [-- --cpu-prof] [-- --no-build] [-- --keep]`
 *
 * Builds dist/ when src/ changed since the last build, measures the references (hello-world HTTP, raw SQLite
 * commits, Ed25519 verifications), starts the service (`ddn serve`, combined roles, SQLite) as its own child
 * process on loopback, registers recipients through the SDK, runs each figure with the load generator in a third
 * process, and writes bench/results/latest.json and latest.md. A figure with a hello-world or Ed25519 target
 * has that reference measured again right before and right after it, and its ratio is taken against their mean
 * (a shared machine's speed drifts within minutes). Every loop is bounded; everything it starts it stops.
 *
 * --quick     2 s per figure and a 50,000-envelope pre-fill (under two minutes)
 * --only      a subset of figures (large, resolve, store1k, store1m, retrieval, relay, growth, writes, hot, blocks, feed,
 *             resolve_writes, resolve_scale)
 * --stream-minutes M  the registration stream's length (`--only stream`, never in a whole run; default 10)
 * --big-dids N      DIDs of resolve_scale's big ledger (default 100,000, quick 20,000; the documented figure: 1,000,000)
 * --big-data-dir D  a data directory `npm run bench:bigledger` built, used in place by resolve_scale
 * --big-cache-bytes B  resolve_scale's big node runs with a resolve cache of B bytes (0: none) instead of the
 *                    default, which is sized by the machine's memory
 * --repeat N  each figure N times (references and floor beside every run); the median run is reported (the
 *             25 MiB RSS figure runs once, on the fresh service)
 * --cpu-prof  V8 CPU profiles of the service processes into bench/results/profiles/
 * A subset or a profiled run writes bench/results/partial.{json,md} and a copy named by the time it was written
 * (partial-<time>.{json,md}), never latest.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BenchContext, Figure, ReferenceId, Settings } from './context.js';
import type { LoadJob, LoadResult } from './jobs.js';
import { registerRecipients, storeEnvelopes } from './fixtures.js';
import { store1KiBFigure, store1MiBFigure, storeSplitFigure } from './figures/cache-store.js';
import { blockBacklogFigure } from './figures/block-backlog.js';
import { blockStreamFigures } from './figures/block-stream.js';
import { directoryWriteFigures } from './figures/directory-writes.js';
import { feedFigures } from './figures/feed.js';
import { growthFigures } from './figures/growth.js';
import { hotMailboxFigures } from './figures/hot-mailbox.js';
import { largeEnvelopeFigure } from './figures/large-envelope.js';
import { relayFigures } from './figures/relay.js';
import { resolveFigure } from './figures/resolve.js';
import { resolveScaleFigures } from './figures/resolve-scale.js';
import { resolveUnderWritesFigures } from './figures/resolve-writes.js';
import { retrievalFigures } from './figures/retrieval.js';
import { cpuPerWriteFigure } from './figures/write-cpu.js';
import { LoadGenerator } from './loadgen-client.js';
import { prefillMailbox, removeDatabase } from './prefill.js';
import { medianRuns } from './repeats.js';
import { machineInfo, round, waitForQuiet, type Quiet } from './proc.js';
import { ed25519Verifies, helloWorld, quietest, sqliteCommits } from './references.js';
import { applyRatios, summarize, writeReport, type References, type Report } from './report.js';
import { freePorts, ROOT, serviceCommandLine, ServiceProcess, type ServiceOptions } from './service.js';

/** The growth figures' service: every pull reads SQLite (see `--cache-read-cache-bytes`). */
const GROWTH_SERVE_ARGS = ['--cache-read-cache-bytes', '0'];
const FIGURES = [
  'large',
  'resolve',
  'store1k',
  'store1k_split',
  'store1m',
  'retrieval',
  'relay',
  'growth',
  'writes',
  'hot',
  'blocks',
  'feed',
  'resolve_writes',
  'resolve_scale',
  'stream',
] as const;
/** Figures a whole run leaves out unless named with --only: the registration stream runs for minutes. */
const NOT_DEFAULT: readonly FigureName[] = ['stream'];
type FigureName = (typeof FIGURES)[number];

/** References measured again beside the figures that use them. */
type PairedKind = 'hello' | 'ed25519';
const PAIRED_REFERENCE: Record<PairedKind, ReferenceId> = { hello: 'hello_world_rps', ed25519: 'ed25519_verifies_per_s' };

interface Args {
  quick: boolean;
  only: Set<FigureName>;
  cpuProf: boolean;
  build: boolean;
  keep: boolean;
  /** Runs of each figure; the median run is reported (`bench/repeats.ts`). */
  repeat: number;
  /** Minutes of the registration stream (`--only stream`). */
  streamMinutes: number;
  /** DIDs of resolve_scale's big ledger (undefined: the default of the mode). */
  bigDids: number | undefined;
  bigDataDir: string | undefined;
  /** resolve_scale's big node: a resolve cache of this many bytes (undefined: the default, sized by memory). */
  bigCacheBytes: number | undefined;
  /** `--hand-over-max N`: `--ledger-hand-over-max` of the `dir_writes_pg2` processes (unset: the default, 16). */
  handOverMax: number | undefined;
}

function parseArgs(argv: string[]): Args {
  const a: Args = {
    quick: false,
    only: new Set(FIGURES.filter((f) => !NOT_DEFAULT.includes(f))),
    cpuProf: false,
    build: true,
    keep: false,
    repeat: 1,
    streamMinutes: 10,
    bigDids: undefined,
    bigDataDir: undefined,
    bigCacheBytes: undefined,
    handOverMax: undefined,
  };
  for (let i = 0; i < argv.length; i++) {
    const x = argv[i];
    if (x === '--quick') a.quick = true;
    else if (x === '--cpu-prof') a.cpuProf = true;
    else if (x === '--no-build') a.build = false;
    else if (x === '--keep') a.keep = true;
    else if (x === '--stream-minutes') {
      const n = Number(argv[++i]);
      if (!(n > 0 && n <= 60)) throw new Error('--stream-minutes: minutes from more than 0 to 60');
      a.streamMinutes = n;
    } else if (x === '--repeat') {
      const n = Number(argv[++i]);
      if (!Number.isInteger(n) || n < 1 || n > 9) throw new Error('--repeat: a whole number of runs from 1 to 9');
      a.repeat = n;
    } else if (x === '--big-dids') {
      const n = Number(argv[++i]);
      if (!Number.isInteger(n) || n < 2000) throw new Error('--big-dids: a whole number of DIDs, at least 2,000');
      a.bigDids = n;
    } else if (x === '--big-cache-bytes') {
      const n = Number(argv[++i]);
      if (!Number.isInteger(n) || n < 0) throw new Error('--big-cache-bytes: a whole number of bytes');
      a.bigCacheBytes = n;
    } else if (x === '--hand-over-max') {
      const n = Number(argv[++i]);
      if (!Number.isInteger(n) || n < 1 || n > 4096) throw new Error('--hand-over-max: a whole number of hand-overs from 1 to 4096');
      a.handOverMax = n;
    } else if (x === '--big-data-dir') {
      a.bigDataDir = argv[++i];
      if (a.bigDataDir === undefined) throw new Error('--big-data-dir: a data directory');
    } else if (x === '--only') {
      const names = (argv[++i] ?? '').split(',').filter(Boolean);
      for (const n of names) if (!(FIGURES as readonly string[]).includes(n)) throw new Error(`--only: unknown figure ${n} (${FIGURES.join(', ')})`);
      a.only = new Set(names as FigureName[]);
    } else
      throw new Error(
        `unknown option ${x}\nusage: npm run bench -- [--quick] [--only ${FIGURES.join(',')}] [--repeat N] [--stream-minutes M] [--big-dids N] [--big-data-dir DIR] [--big-cache-bytes B] [--hand-over-max N] [--cpu-prof] [--no-build] [--keep]`,
      );
  }
  return a;
}

function settingsFor(quick: boolean): Settings {
  return {
    quick,
    retries: quick ? 0 : 2,
    otherCpuLimit: 0.3,
    durationS: quick ? 2 : 10,
    pairedS: quick ? 2 : 5,
    warmupS: quick ? 1 : 2,
    connections: 32,
    bigConnections: 4,
    prefillRows: quick ? 50_000 : 1_000_000,
    microSeconds: quick ? 1 : 3,
    mailboxSize: 10,
    envelopeBytes: 1024,
    bigEnvelopeBytes: 1024 * 1024,
    largeEnvelopeBytes: 25 * 1024 * 1024,
  };
}

const t0 = performance.now();
function log(msg: string): void {
  process.stderr.write(`[bench ${((performance.now() - t0) / 1000).toFixed(1).padStart(6)} s] ${msg}\n`);
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const settings = settingsFor(args.quick);
  const resultsDir = join(ROOT, 'bench', 'results');
  if (args.build && distIsStale()) {
    log('building dist/ (tsc -p tsconfig.build.json): the service runs as compiled JavaScript');
    try {
      execFileSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'inherit' });
    } catch {
      throw new Error('the build failed (above); fix it, or pass --no-build to measure the dist/ there is');
    }
  }
  const work = mkdtempSync(join(tmpdir(), 'ddn-bench-'));
  const dataDir = join(work, 'data');
  const profDir = join(resultsDir, 'profiles');
  if (args.cpuProf) mkdirSync(profDir, { recursive: true });
  const ports = await freePorts();
  const svcOptions: ServiceOptions = {
    dataDir,
    ports,
    blockTimeMs: 50,
    logFile: join(work, 'service.log'),
    ...(args.cpuProf ? { cpuProfDir: profDir } : {}),
  };
  const notes: string[] = [];
  const gen = LoadGenerator.start();
  const quietLog: Record<string, Quiet> = {};
  // Before each measurement: let other work on the machine finish first, and record how busy it was. The wait
  // is bounded per measurement and in total (so --quick stays under two minutes on a busy machine).
  let quietBudgetS = settings.quick ? 8 : 300;
  const settle = async (what: string) => {
    const t = performance.now();
    const ours = () => [process.pid, gen.pid, ...ServiceProcess.pids()];
    const q = await waitForQuiet(Math.min(settings.quick ? 3 : 30, Math.max(0, quietBudgetS)), settings.quick ? 0.3 : 1, ours);
    quietBudgetS -= (performance.now() - t) / 1000;
    quietLog[what] = q;
    if (!q.quiet) log(`  the machine is busy (${q.busy_cores} cores used by others) — ${what} measured anyway`);
  };
  const load = async (job: LoadJob, pids: number | readonly number[], probe?: () => number): Promise<LoadResult> => {
    let best: LoadResult | undefined;
    for (let attempt = 1; ; attempt++) {
      const p0 = probe?.();
      const run = await gen.run(job, pids);
      const r = p0 === undefined ? run : { ...run, probe_delta: probe!() - p0 };
      const other = r.other_cpu_cores ?? 0;
      if (best === undefined || other < (best.other_cpu_cores ?? 0)) best = r;
      if (other <= settings.otherCpuLimit || attempt > settings.retries) return { ...best, attempts: attempt };
      log(`  other work used ${other} cores during ${job.name}: measuring it again`);
      await settle(`${job.name} (run ${attempt + 1})`);
    }
  };
  let service: ServiceProcess | undefined;
  // Ctrl-C or a kill still stops every child before leaving
  const onSignal = (sig: NodeJS.Signals) => {
    log(`${sig}: stopping`);
    void Promise.allSettled([ServiceProcess.stopAll(), gen.stop()]).then(() => {
      if (!args.keep) rmSync(work, { recursive: true, force: true });
      process.exit(130);
    });
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    await settle('hello_world_start');
    log('reference: hello-world HTTP');
    const helloStart = await helloWorld(load, settings.connections, settings.durationS, settings.warmupS);
    log(`  ${helloStart.rate} req/s`);
    await settle('sqlite');
    log('reference: SQLite single-row WAL commits');
    const sqlite = await quietest(
      () => sqliteCommits(settings.microSeconds, work),
      settings.retries,
      settings.otherCpuLimit,
      () => settle('sqlite (again)'),
    );
    log(`  FULL ${sqlite.full.per_s}/s, NORMAL ${sqlite.normal.per_s}/s`);
    await settle('ed25519');
    log('reference: Ed25519 verifications');
    const ed = await quietest(
      () => ed25519Verifies(settings.microSeconds, work),
      settings.retries,
      settings.otherCpuLimit,
      () => settle('ed25519 (again)'),
    );
    log(`  ${ed.per_s}/s`);

    log(`starting the service (data in ${dataDir})`);
    service = await ServiceProcess.start(svcOptions);
    const health = (await (await fetch(`${service.urls.directory}/health`)).json()) as { profile: string };
    log('registering recipients through the SDK');
    const [store, retrieval, relay, large] = await registerRecipients(service.urls.directory, service.urls.cache, health.profile, 4);
    const ctx: BenchContext = { settings, gen, service, profile: health.profile, recipients: { store, retrieval, relay, large }, log, settle, load };
    const figures: Figure[] = [];
    /**
     * The last reference measured after a figure, and the work done since: a figure that follows with nothing in
     * between takes it as its "before" (it was measured right before it), instead of measuring the same again.
     */
    let lastAfter: { kind: PairedKind; beside: { value: number; load?: LoadResult }; figuresAt: number } | undefined;
    let figuresRun = 0;
    /** The reference of `kind` measured once more now, beside a figure. */
    const besideRun = async (kind: PairedKind, label: string): Promise<{ value: number; load?: LoadResult }> => {
      if (label.startsWith('before ') && lastAfter?.kind === kind && lastAfter.figuresAt === figuresRun) {
        log(`  ${kind === 'ed25519' ? 'ed25519' : 'hello-world'} ${label}: the run after the figure before it`);
        return lastAfter.beside;
      }
      await settle(`${kind} ${label}`);
      if (kind === 'ed25519') {
        const r = await quietest(
          () => ed25519Verifies(settings.microSeconds, work),
          settings.retries,
          settings.otherCpuLimit,
          () => settle(`ed25519 ${label} (again)`),
        );
        log(`  ed25519 ${label}: ${r.per_s}/s`);
        return { value: r.per_s };
      }
      const r = await helloWorld(load, settings.connections, settings.pairedS, settings.warmupS);
      log(`  hello-world ${label}: ${r.rate} req/s`);
      return { value: r.rate, load: { ...r, name: `hello-world ${label}` } };
    };
    /** One run of a figure (or of the figures one measurement yields), with its references beside it. */
    const runOnce = async (name: FigureName, label: string, fn: () => Promise<Figure | Figure[]>, paired?: PairedKind) => {
      const before = paired === undefined ? undefined : await besideRun(paired, `before ${name}`);
      await settle(name);
      log(label);
      figuresRun++;
      const got = await fn();
      const list = Array.isArray(got) ? got : [got];
      for (const f of list) log(`  ${f.id}: ${f.value === null ? `unavailable — ${f.unavailable}` : `${f.value} ${f.unit}`}`);
      if (paired !== undefined && before !== undefined) {
        const after = await besideRun(paired, `after ${name}`);
        lastAfter = { kind: paired, beside: after, figuresAt: figuresRun };
        const loads = [before.load, after.load].filter((l): l is LoadResult => l !== undefined);
        const pair = { before: before.value, after: after.value, ...(loads.length > 0 ? { loads } : {}) };
        for (const f of list) if (f.reference === PAIRED_REFERENCE[paired]) f.paired = pair;
      }
      return list;
    };
    const step = async (name: FigureName, label: string, fn: () => Promise<Figure | Figure[]>, paired?: PairedKind) => {
      if (!args.only.has(name)) return;
      // the peak RSS growth is measured once, on a fresh service: later runs would start from memory it kept
      const count = name === 'large' ? 1 : args.repeat;
      const runs: Figure[][] = [];
      for (let i = 1; i <= count; i++) runs.push(await runOnce(name, count > 1 ? `${label} (run ${i} of ${count})` : label, fn, paired));
      figures.push(...medianRuns(runs));
    };
    await step('large', '25 MiB envelope: store + retrieve, peak RSS', () => largeEnvelopeFigure(ctx));
    await step('resolve', 'resolve', () => resolveFigure(ctx), 'hello');
    await step('store1k', 'cache store 1 KiB', () => store1KiBFigure(ctx), 'hello');
    await step('feed', 'export feed and mirror lag', () => feedFigures(ctx), 'hello');
    /** A process of one role asking the combined node's Directory over HTTP (`--roles <role> --directory-url`). */
    const startSplit = (role: 'cache' | 'relay') => () =>
      ServiceProcess.start({
        dataDir: join(work, `${role}-data`),
        roles: [role],
        ports: { [role]: 0 },
        directoryUrl: ctx.service.urls.directory,
        blockTimeMs: 50,
        logFile: join(work, `${role}.log`),
        ...(args.cpuProf ? { cpuProfDir: profDir } : {}),
      });
    await step('store1k_split', 'cache store 1 KiB, Cache-only process', () => storeSplitFigure(ctx, startSplit('cache')), 'hello');
    await step('store1m', 'cache store 1 MiB', () => store1MiBFigure(ctx));
    if (args.only.has('retrieval') || args.only.has('growth')) {
      await storeEnvelopes(service.urls.cache, retrieval.did, settings.mailboxSize, settings.envelopeBytes);
    }
    await step('retrieval', 'signed retrieval (summary, pull)', () => retrievalFigures(ctx), 'ed25519');
    await step('relay', 'relay → cache', () => relayFigures(ctx, startSplit('relay')), 'hello');
    await step('growth', 'growth of cost', () =>
      growthFigures(ctx, async (rows) => {
        await ctx.service.stop();
        const cacheDb = join(dataDir, 'cache.sqlite');
        removeDatabase(cacheDb);
        let pre = null;
        if (rows > 0) {
          log(`  pre-filling ${rows.toLocaleString('en')} envelopes through SQLite`);
          pre = prefillMailbox(cacheDb, rows, ctx.profile);
          log(`  pre-filled in ${pre.seconds} s`);
        }
        // the read cache off: the pull figure is to read the mailbox of 1M entries, not a page kept in memory
        ctx.service = service = await ServiceProcess.start({ ...svcOptions, serveArgs: GROWTH_SERVE_ARGS });
        return pre;
      }),
    );
    await step(
      'writes',
      'Directory writes: SQLite, PostgreSQL with one and with two Directory processes (hand-over on, and off)',
      async () => {
        const writes = await directoryWriteFigures(ctx, {
          work,
          pgUrl: process.env.DDN_BENCH_PG_URL,
          ...(args.cpuProf ? { cpuProfDir: profDir } : {}),
          ...(args.handOverMax === undefined ? {} : { handOverMax: args.handOverMax }),
        });
        return [...writes, cpuPerWriteFigure(writes)];
      },
      'hello',
    );
    await step('hot', 'hot mailbox: one recipient on SQLite and PostgreSQL Cache processes, and through a Relay', () =>
      hotMailboxFigures(ctx, { work, pgUrl: process.env.DDN_BENCH_PG_URL }),
    );
    await step('blocks', 'block time under a backlog (embedded ledger, in this process)', () => blockBacklogFigure(ctx, work));
    await step('stream', `a registration stream of ${args.streamMinutes} min on SQLite and PostgreSQL`, () =>
      blockStreamFigures(ctx, { work, pgUrl: process.env.DDN_BENCH_PG_URL, minutes: args.streamMinutes }),
    );
    await step('resolve_writes', 'resolve under 100 writes/s: SQLite, PostgreSQL', () =>
      resolveUnderWritesFigures(ctx, { work, pgUrl: process.env.DDN_BENCH_PG_URL }),
    );
    await step('resolve_scale', 'resolve and registration as the Directory grows', () =>
      resolveScaleFigures(ctx, {
        work,
        bigDids: args.bigDids ?? (settings.quick ? 20_000 : 100_000),
        bigDataDir: args.bigDataDir,
        bigCacheBytes: args.bigCacheBytes,
      }),
    );
    await service.stop();
    service = undefined;

    await settle('hello_world_end');
    log('reference: hello-world HTTP again (drift check)');
    const helloEnd = await helloWorld(load, settings.connections, settings.durationS, settings.warmupS);
    log(`  ${helloEnd.rate} req/s`);
    // the reference is what the undisturbed runs saw (both, when neither or both were disturbed)
    const calm = [helloStart, helloEnd].filter((h) => (h.other_cpu_cores ?? 0) <= settings.otherCpuLimit);
    const used = calm.length > 0 ? calm : [helloStart, helloEnd];
    const rps = used.reduce((sum, h) => sum + h.rate, 0) / used.length;
    const refs: References = {
      hello_world: { start: helloStart, end: helloEnd, rps: round(rps, 1), drift_pct: round(((helloEnd.rate - helloStart.rate) / helloStart.rate) * 100, 1) },
      sqlite,
      ed25519: ed,
    };
    applyRatios(refs, figures);
    for (const f of figures) {
      if (f.id === 'cache_store_1kib' && f.value !== null) f.extra = { ...f.extra, ratio_to_sqlite_commits: round(f.value / sqlite.full.per_s, 2) };
    }
    if (args.repeat > 1)
      notes.push(
        `--repeat ${args.repeat}: each figure but the 25 MiB RSS one (measured once, on the fresh service) ran ${args.repeat} times, each run with its own references beside it and its own floor; the run with the median ratio (the lower middle for an even count) is reported, with every run's ratio beside it.`,
      );
    if (settings.quick)
      notes.push(
        `--quick: ${settings.durationS} s per figure after ${settings.warmupS} s of warm-up; the growth figure pre-fills ${settings.prefillRows.toLocaleString('en')} envelopes instead of 1,000,000.`,
      );
    notes.push(
      `The growth pre-fill writes directly into cache.sqlite through the mailbox's own migrations (1 KiB envelopes, unexpired, over 10,000 synthetic recipients), before the service starts.`,
      `The retrieval figures poll one unchanged mailbox, as a client polling for new mail does, so the Cache answers them from its read cache (pages and summaries kept per recipient while the recipient's mailbox version holds; every request still has its proof checked, its signature verified and its nonce committed). The growth figures run the service with \`${GROWTH_SERVE_ARGS.join(' ')}\`, so their pulls read SQLite every time: growth-pull-empty in the load details is the pull without the read cache.`,
      `Retrieval requests each carry a new nonce and signature, signed by the load generator before its measured window (so signing does not compete with the service for the CPU); the count is sized from the warm-up rate.`,
      `The load generator is autocannon ${autocannonVersion()} in its own process; all loads use keep-alive connections and no pipelining.`,
      `Request rate limits are off in every service process (\`DDN_RATE_LIMIT=off\`, i.e. \`--rate-limit off\`): the load generator is one loopback client sending thousands of requests a second to one recipient, which the default limits refuse by design; with them on, each request also pays one in-memory counter per budget it counts against.`,
    );
    const busyBefore = Object.entries(quietLog).filter(([, q]) => !q.quiet);
    const loads = [helloStart, helloEnd, ...figures.flatMap((f) => [f.load, f.details?.empty as LoadResult | undefined])];
    const busyDuring = loads.filter((l): l is LoadResult => l !== undefined && (l.other_cpu_cores ?? 0) > settings.otherCpuLimit);
    notes.push(
      busyBefore.length === 0
        ? `Before every measurement other work used < ${settings.otherCpuLimit} cores (see \`quiet\` in latest.json).`
        : `Other work used ≥ ${settings.otherCpuLimit} cores before ${busyBefore.map(([k, q]) => `${k} (${q.busy_cores})`).join(', ')} (waits are bounded; see \`quiet\` in latest.json).`,
      busyDuring.length === 0
        ? `During every kept run other work used ≤ ${settings.otherCpuLimit} cores.`
        : `Runs disturbed by other work even in the quietest attempt kept (skewed figures): ${busyDuring.map((l) => `${l.name} (${l.other_cpu_cores} cores)`).join(', ')}.`,
    );
    if (calm.length === 1) notes.push(`The hello-world reference is the undisturbed run only (${calm[0] === helloStart ? 'start' : 'end'}).`);
    const report: Report = {
      generated_at: new Date().toISOString(),
      source: sourceInfo(),
      mode: settings.quick ? 'quick' : 'full',
      machine: machineInfo(),
      commands: {
        bench: `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`,
        service: serviceCommandLine({ ...svcOptions, dataDir: '<tmp>/data' }),
        growth_service: serviceCommandLine({ ...svcOptions, dataDir: '<tmp>/data', serveArgs: GROWTH_SERVE_ARGS }),
        split_relay: serviceCommandLine({
          dataDir: '<tmp>/relay-data',
          roles: ['relay'],
          ports: { relay: 0 },
          directoryUrl: '<service directory URL>',
          blockTimeMs: 50,
          logFile: '',
        }),
        split_cache: serviceCommandLine({
          dataDir: '<tmp>/cache-data',
          roles: ['cache'],
          ports: { cache: 0 },
          directoryUrl: '<service directory URL>',
          blockTimeMs: 50,
          logFile: '',
        }),
        load_generator: 'node --import tsx bench/loadgen.ts (forked; autocannon, pipelining 1)',
        hello_world_reference: 'node bench/references/hello-server.mjs',
        micro_references: `node --import tsx bench/references/micro.ts sqlite|ed25519 ${settings.microSeconds}`,
      },
      settings,
      references: refs,
      figures,
      summary: summarize(figures),
      notes,
      quiet: quietLog,
      duration_s: round((performance.now() - t0) / 1000, 1),
    };
    // a subset (--only) or a profiled run (--cpu-prof) never replaces the last whole run
    const partial = args.only.size < FIGURES.length - NOT_DEFAULT.length || [...args.only].some((f) => NOT_DEFAULT.includes(f)) || args.cpuProf;
    const files = writeReport(resultsDir, report, partial ? 'partial' : 'latest');
    log(`wrote ${files.json} and ${files.md}`);
    if (partial) {
      // each subset run also keeps its own copy, so interleaved runs (A B B A) do not overwrite each other's tables
      const own = writeReport(resultsDir, report, `partial-${report.generated_at.replace(/[:.]/g, '-')}`);
      log(`and ${own.md}`);
    }
    log(
      `met: ${report.summary.met.join(', ') || '—'}; missed: ${report.summary.missed.join(', ') || '—'}; unavailable: ${report.summary.unavailable.join(', ') || '—'}`,
    );
  } finally {
    await ServiceProcess.stopAll();
    await gen.stop().catch(() => undefined);
    if (!args.keep) rmSync(work, { recursive: true, force: true });
    else log(`kept ${work}`);
  }
}

/** True when a file under src/ is newer than the last build (tsc rewrites every output, dist/cli/main.js included). */
function distIsStale(): boolean {
  let built: number;
  try {
    built = statSync(join(ROOT, 'dist', 'cli', 'main.js')).mtimeMs;
  } catch {
    return true;
  }
  const newer = (dir: string): boolean =>
    readdirSync(dir, { withFileTypes: true }).some((e) =>
      e.isDirectory() ? newer(join(dir, e.name)) : e.name.endsWith('.ts') && statSync(join(dir, e.name)).mtimeMs > built,
    );
  return newer(join(ROOT, 'src'));
}

/** The commit measured and how many files differ from it (read-only git queries). */
function sourceInfo(): { commit: string; uncommitted_files: number } {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT }).toString().trim();
    const dirty = execFileSync('git', ['status', '--porcelain'], { cwd: ROOT }).toString().split('\n').filter(Boolean).length;
    return { commit, uncommitted_files: dirty };
  } catch {
    return { commit: 'unknown', uncommitted_files: -1 };
  }
}

function autocannonVersion(): string {
  try {
    return (
      JSON.parse(execFileSync(process.execPath, ['-p', 'JSON.stringify(require("autocannon/package.json"))'], { cwd: ROOT }).toString()) as { version: string }
    ).version;
  } catch {
    return '?';
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
