/**
 * Interleaved A/B comparison of two builds, for deciding whether a change is faster (not part of the report).
 *
 *   npm run bench:ab -- --other <built tree> [--job store1k|summary|pull|relay|relay2|resolve] [--rounds 8] [--seconds 5] [--swap] [--cpu-prof <dir>]
 *
 * A is this checkout, B the other tree (its own `bin/ddn.js`, `dist/` and `node_modules/`, e.g. a `git worktree`
 * after `npm ci && npm run build`). Both run as combined nodes at once, each on its own data directory; the same
 * load job alternates between them in short windows (A B, B A, A B, …). On a shared machine the speed drifts over
 * minutes, so one bench run per side, minutes apart, compares the drift; windows seconds apart see the same one.
 * Prints each round's rates and the median of the per-round ratios B ÷ A. `--swap` makes the other tree A (started
 * first) and this checkout B: run both ways and take the geometric mean, since one way alone can mislead. `--cpu-prof` writes a V8 CPU profile of
 * each side's service into `<dir>/A` and `<dir>/B` (`npx tsx bench/profile-top.ts <file>` summarises one).
 * `--job relay2` is the report's two-hop line: each side also starts a Relay-only process of its own tree
 * (`--roles relay --directory-url` its combined node) and the load goes to that Relay, which stores into the
 * combined node's Cache over node-signed HTTP; CPU is both processes', printed apart too (Relay / Cache node).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { median, medianThreads, summariseAb, threadsPerRequest, type SideRun } from './ab-summary.js';
import { envelopeTemplate, freshEnvelope } from './envelopes.js';
import { registerRecipients, storeEnvelopes } from './fixtures.js';
import { retrievalRequest } from './figures/retrieval.js';
import type { LoadJob, LoadResult } from './jobs.js';
import { LoadGenerator } from './loadgen-client.js';
import { freePorts, ServiceProcess } from './service.js';

const JOBS = ['store1k', 'summary', 'pull', 'relay', 'relay2', 'resolve'] as const;
type JobName = (typeof JOBS)[number];
const CONNECTIONS = 32;
const ENVELOPE_BYTES = 1024;
const MAILBOX_SIZE = 10;

const { values } = parseArgs({
  options: {
    other: { type: 'string' },
    job: { type: 'string', default: 'store1k' },
    rounds: { type: 'string', default: '8' },
    seconds: { type: 'string', default: '5' },
    'cpu-prof': { type: 'string' },
    swap: { type: 'boolean', default: false },
  },
});
if (values.other === undefined) throw new Error('--other <built tree> is required');
const jobName = values.job as JobName;
if (!JOBS.includes(jobName)) throw new Error(`--job is one of ${JOBS.join(', ')}`);
const rounds = Number(values.rounds);
const seconds = Number(values.seconds);
if (!Number.isInteger(rounds) || rounds < 1 || !(seconds > 0)) throw new Error('--rounds is a whole number ≥ 1 and --seconds a number > 0');

interface Side {
  name: 'A' | 'B';
  service: ServiceProcess;
  job: LoadJob;
  runs: SideRun[];
  /** The processes whose CPU is measured (relay2: the Relay-only process, then the combined node); else the service. */
  pids?: number[];
  /** relay2: each round's CPU per request of each of `pids`, µs. */
  perProcess?: number[][];
}

/** POSTs fresh envelopes to `relayUrl` until one is answered 202 (a Relay-only process registers its node DID first). */
async function relayReady(relayUrl: string, to: string): Promise<void> {
  const until = Date.now() + 30_000;
  for (;;) {
    const { body } = freshEnvelope(envelopeTemplate(to, ENVELOPE_BYTES));
    const res = await fetch(`${relayUrl}/relay`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    const text = await res.text();
    if (res.status === 202) return;
    if (Date.now() > until) throw new Error(`the Relay-only process answered ${res.status}: ${text.slice(0, 200)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function startSide(name: 'A' | 'B', root: string | undefined, work: string): Promise<Side> {
  const dataDir = join(work, name);
  const service = await ServiceProcess.start({
    dataDir,
    ports: await freePorts(),
    blockTimeMs: 50,
    logFile: join(work, `${name}.log`),
    ...(root === undefined ? {} : { root }),
    ...(values['cpu-prof'] === undefined ? {} : { cpuProfDir: resolve(values['cpu-prof'], name) }),
  });
  const { profile } = (await (await fetch(`${service.urls.directory}/health`)).json()) as { profile: string };
  const [r] = await registerRecipients(service.urls.directory, service.urls.cache, profile, 1);
  const cache = service.urls.cache;
  const base = { name: `${jobName}-${name}`, url: cache, connections: CONNECTIONS, durationS: seconds, warmupS: 1 };
  if (jobName === 'store1k') {
    return { name, service, runs: [], job: { ...base, request: { kind: 'envelope', path: '/cache/store', to: r.did, bodyBytes: ENVELOPE_BYTES } } };
  }
  if (jobName === 'resolve') {
    // the registered recipient's `GET /resolve` (the bench's resolve figure)
    const request = { kind: 'static', method: 'GET', path: `/resolve/${encodeURIComponent(r.did)}` } as const;
    return { name, service, runs: [], job: { ...base, url: service.urls.directory, request } };
  }
  if (jobName === 'relay') {
    // base-DID delivery on the combined node: its Relay stores into its own Cache in-process
    const request = { kind: 'envelope', path: '/relay', to: r.did, bodyBytes: ENVELOPE_BYTES } as const;
    return { name, service, runs: [], job: { ...base, name: `relay-${name}`, url: service.urls.relay, request } };
  }
  if (jobName === 'relay2') {
    // two HTTP hops, as the report's relay_to_cache: a Relay-only process of the same tree stores into the node's Cache
    const relay = await ServiceProcess.start({
      dataDir: join(work, `${name}-relay`),
      roles: ['relay'],
      ports: { relay: 0 },
      directoryUrl: service.urls.directory,
      blockTimeMs: 50,
      logFile: join(work, `${name}-relay.log`),
      ...(root === undefined ? {} : { root }),
      ...(values['cpu-prof'] === undefined ? {} : { cpuProfDir: resolve(values['cpu-prof'], `${name}-relay`) }),
    });
    await relayReady(relay.urls.relay, r.did);
    const request = { kind: 'envelope', path: '/relay', to: r.did, bodyBytes: ENVELOPE_BYTES } as const;
    return {
      name,
      service,
      runs: [],
      pids: [relay.pid, service.pid],
      perProcess: [],
      job: { ...base, name: `relay2-${name}`, url: relay.urls.relay, request },
    };
  }
  await storeEnvelopes(cache, r.did, MAILBOX_SIZE, ENVELOPE_BYTES);
  return { name, service, runs: [], job: { ...base, request: retrievalRequest(cache, r, profile, jobName) } };
}

function sideRun(r: LoadResult): SideRun {
  const cpu = r.target_cpu;
  if (cpu === undefined || r.ok === 0) return { rate: r.rate, cpuPerRequestUs: NaN };
  return { rate: r.rate, cpuPerRequestUs: (cpu.cpu_ms * 1000) / r.ok, threads: threadsPerRequest(cpu.threads ?? [], r.ok) };
}

/** `main 69+15, ddn-verify 59+1 …`: each thread's median µs per request, user+system. */
function threadLine(runs: readonly SideRun[]): string {
  return medianThreads(runs)
    .map((t) => `${t.name} ${t.userUs}+${t.systemUs}`)
    .join(', ');
}

const work = mkdtempSync(join(tmpdir(), 'ddn-ab-'));
const gen = LoadGenerator.start();
try {
  const [rootA, rootB] = values.swap ? [resolve(values.other), undefined] : [undefined, resolve(values.other)];
  const a = await startSide('A', rootA, work);
  const b = await startSide('B', rootB, work);
  console.log(
    `job ${jobName}, ${rounds} rounds of ${seconds} s per side, ${CONNECTIONS} connections; ` +
      `A = ${rootA ?? 'this checkout'}, B = ${rootB ?? 'this checkout'}`,
  );
  for (let i = 0; i < rounds; i++) {
    for (const side of i % 2 === 0 ? [a, b] : [b, a]) {
      const r = await gen.run(side.job, side.pids ?? side.service.pid);
      if (r.ok === 0) throw new Error(`${side.name}: no request succeeded (${JSON.stringify(r.statuses)})`);
      side.runs.push(sideRun(r));
      side.perProcess?.push((r.target_cpu?.processes ?? []).map((p) => (p.cpu_ms * 1000) / r.ok));
    }
    const [ra, rb] = [a.runs[i], b.runs[i]];
    console.log(
      `round ${i + 1}: A ${Math.round(ra.rate)} req/s (${Math.round(ra.cpuPerRequestUs)} µs CPU), ` +
        `B ${Math.round(rb.rate)} req/s (${Math.round(rb.cpuPerRequestUs)} µs CPU), B/A ${(rb.rate / ra.rate).toFixed(3)}`,
    );
  }
  const s = summariseAb(a.runs, b.runs);
  console.log(
    `median: A ${s.medianRateA} req/s, B ${s.medianRateB} req/s; B/A per round: median ${s.ratio.median}, ` +
      `min ${s.ratio.min}, max ${s.ratio.max}; B faster in ${s.bFaster} of ${s.rounds}; ` +
      `CPU per request A ${s.medianCpuUsA} µs, B ${s.medianCpuUsB} µs`,
  );
  if (a.perProcess !== undefined && b.perProcess !== undefined) {
    // relay2: the Relay-only process and the combined node apart (medians over the rounds)
    const each = (side: Side) => [0, 1].map((i) => Math.round(median(side.perProcess!.map((p) => p[i] ?? NaN)))).join(' / ');
    console.log(`CPU per request, Relay process / Cache node, µs (medians): A ${each(a)}, B ${each(b)}`);
  } else {
    console.log(`threads, µs per request (user+system), A: ${threadLine(a.runs)}`);
    console.log(`threads, µs per request (user+system), B: ${threadLine(b.runs)}`);
  }
} finally {
  await ServiceProcess.stopAll();
  await gen.stop();
  rmSync(work, { recursive: true, force: true });
}
