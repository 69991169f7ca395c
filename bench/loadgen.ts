/**
 * The load generator: a child process of the orchestrator (`fork`), driving autocannon against the service
 * child. Per-request envelopes and retrieval proofs are built here with the project's protocol code; proofs are
 * signed before the measured window so signing does not compete with the service for the CPU during it. It
 * reports its own CPU use over each measured window.
 */
import { randomUUID } from 'node:crypto';
import { appendFileSync, readFileSync } from 'node:fs';
import autocannon from 'autocannon';
import { to0x } from '../src/base/bytes.js';
import { submitRoute } from '../src/client/actions.js';
import { buildMutationRequest } from '../src/client/payloads.js';
import { keyPairFromSeed } from '../src/crypto/ed25519.js';
import { makeProfile } from '../src/protocol/profile.js';
import { envelopeTemplate, proofHeaders, type ProofSigner } from './envelopes.js';
import type { DidUpdateRequest, LatencyMs, LoadgenMessage, LoadgenReply, LoadJob, LoadResult, ProofRequest, RandomDidRequest } from './jobs.js';
import { signedRegistrations } from './registrations.js';
import { round } from './proc.js';

/** A 2xx latency recorder (ms, float) with exact percentiles. */
class Latencies {
  private data = new Float64Array(1 << 16);
  private n = 0;
  add(ms: number): void {
    if (this.n === this.data.length) {
      const next = new Float64Array(this.data.length * 2);
      next.set(this.data);
      this.data = next;
    }
    this.data[this.n++] = ms;
  }
  summary(): LatencyMs {
    const s = this.data.subarray(0, this.n).sort();
    const at = (q: number) => (s.length === 0 ? 0 : round(s[Math.min(s.length - 1, Math.floor(q * s.length))], 2));
    let sum = 0;
    for (const v of s) sum += v;
    return { mean: s.length === 0 ? 0 : round(sum / s.length, 2), p50: at(0.5), p90: at(0.9), p99: at(0.99), max: at(1) };
  }
}

function proofSigner(spec: ProofRequest): () => Record<string, string> {
  const r: ProofSigner = { did: spec.did, key: keyPairFromSeed(Buffer.from(spec.seedHex, 'hex')), keyId: spec.keyId, serviceId: spec.serviceId };
  return () => proofHeaders(spec.profile, r, spec.endpoint, spec.operation, '*');
}

type RequestSetup = (req: autocannon.Request) => autocannon.Request;

interface SignedRequest {
  method: NonNullable<autocannon.Request['method']>;
  path: string;
  body: Buffer;
}

/** The requests of a did-update job, one list per URL, in sending order (all signed now, before any window). */
function didUpdateLists(r: DidUpdateRequest): SignedRequest[][] {
  const profile = makeProfile(r.profile);
  const lists: SignedRequest[][] = Array.from({ length: 1 + (r.moreUrls?.length ?? 0) }, () => []);
  const keys = r.dids.map((d) => keyPairFromSeed(Buffer.from(d.seedHex, 'hex')));
  const validUntil = BigInt(Date.now() + 3_600_000);
  for (let round = 0; round < r.rounds; round++) {
    r.dids.forEach((d, i) => {
      const fields = { service: { id: d.serviceId, type: d.serviceType, serviceEndpoint: [`https://r${round}.bench.example/`] } };
      const built = buildMutationRequest(profile, d.did, 'UpdateService', fields, { nonce: BigInt(d.nonce) + BigInt(round), validUntil, signerKeyId: 'root' });
      const route = submitRoute(d.did, 'UpdateService', built.request);
      const body = Buffer.from(JSON.stringify({ ...built.request, signature: to0x(keys[i]!.sign(built.payload)) }));
      lists[i % lists.length]!.push({ method: route.method, path: route.path, body });
    });
  }
  return lists;
}

/** The request paths of a random-did job, read once per file and count. */
const pathLists = new Map<string, string[]>();
function randomDidPaths(r: RandomDidRequest): string[] {
  const key = `${r.didsFile}\n${r.count}\n${r.pathPrefix}`;
  let paths = pathLists.get(key);
  if (paths === undefined) {
    const lines = readFileSync(r.didsFile, 'utf8').split('\n', r.count);
    paths = lines.filter((l) => l !== '').map((l) => r.pathPrefix + encodeURIComponent(l.split('\t', 1)[0]!));
    if (paths.length === 0) throw new Error(`no DIDs in ${r.didsFile}`);
    pathLists.clear();
    pathLists.set(key, paths);
  }
  return paths;
}

/** A registration job's pre-signed requests, made before its warm-up and sent once each across its phases. */
let registrationSetup: RequestSetup | undefined;
function registrations(profile: string, count: number): RequestSetup {
  registrationSetup ??= sequence(signedRegistrations(profile, count).map((body) => ({ method: 'POST', path: '/register-did', body })));
  return registrationSetup;
}

/** Sends the requests of `list` in order, one per request, across warm-up and measured window (the last again when used up). */
function sequence(list: SignedRequest[]): RequestSetup {
  let i = 0;
  return (req) => {
    const next = list[Math.min(i++, list.length - 1)]!;
    req.method = next.method;
    req.path = next.path;
    req.body = next.body;
    return req;
  };
}

interface Phase {
  durationS: number;
  amount?: number;
  setup?: RequestSetup;
  method: NonNullable<autocannon.Request['method']>;
  path: string;
  headers: Record<string, string>;
  body?: string | Buffer;
}

interface PhaseOutcome {
  result: autocannon.Result;
  latency: LatencyMs;
  wallS: number;
  cpuMs: number;
}

function runPhase(job: LoadJob, phase: Phase, lat = new Latencies()): Promise<PhaseOutcome> {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const request: autocannon.Request = { method: phase.method, path: phase.path, headers: phase.headers };
    if (phase.body !== undefined) request.body = phase.body;
    if (phase.setup) request.setupRequest = phase.setup;
    const opts: autocannon.Options = {
      url: job.url,
      connections: job.connections,
      pipelining: 1,
      timeout: job.timeoutS ?? 30,
      requests: [request],
      ...(phase.amount === undefined ? { duration: phase.durationS } : { amount: phase.amount }),
    };
    const inst = autocannon(opts, (err, result) => {
      clearTimeout(guard);
      if (err) return reject(err instanceof Error ? err : new Error(String(err)));
      const cpu = process.cpuUsage(cpu0);
      resolve({ result, latency: lat.summary(), wallS: (performance.now() - t0) / 1000, cpuMs: (cpu.user + cpu.system) / 1000 });
    });
    // an amount-bounded phase against a service slower than expected still stops by itself
    const guard = setTimeout(() => inst.stop(), Math.max(10, phase.durationS * 3) * 1000);
    inst.on('response', (_client: unknown, status: number, _bytes: number, ms: number) => {
      if (status >= 200 && status < 300) lat.add(ms);
    });
  });
}

function phaseFor(job: LoadJob, durationS: number, proofs?: Record<string, string>[]): Phase {
  const r = job.request;
  switch (r.kind) {
    case 'static':
      return {
        durationS,
        method: r.method,
        path: r.path,
        headers: { ...(r.body === undefined ? {} : { 'content-type': 'application/json' }), ...r.headers },
        ...(r.body === undefined ? {} : { body: r.body }),
      };
    case 'envelope': {
      const t = envelopeTemplate(r.to, r.bodyBytes);
      return {
        durationS,
        method: 'POST',
        path: r.path,
        headers: { 'content-type': 'application/json' },
        body: t.buf,
        setup: (req) => {
          t.buf.write(randomUUID(), t.idOffset, 'latin1');
          req.body = t.buf;
          return req;
        },
      };
    }
    case 'did-update':
      throw new Error('did-update jobs run through runDidUpdates');
    case 'random-did': {
      const paths = randomDidPaths(r);
      return {
        durationS,
        method: 'GET',
        path: paths[0]!,
        headers: {},
        setup: (req) => {
          req.path = paths[Math.floor(Math.random() * paths.length)]!;
          return req;
        },
      };
    }
    case 'registration':
      return { durationS, method: 'POST', path: '/register-did', headers: { 'content-type': 'application/json' }, setup: registrations(r.profile, r.count) };
    case 'proof': {
      const sign = proofSigner(r);
      let i = 0;
      return {
        durationS,
        method: 'GET',
        path: r.path,
        headers: {},
        ...(proofs === undefined ? {} : { amount: proofs.length }),
        setup: (req) => {
          // past the pre-signed ones (never expected) or during warm-up: sign now
          req.headers = proofs !== undefined && i < proofs.length ? proofs[i++] : sign();
          return req;
        },
      };
    }
  }
}

/** autocannon's counts of several instances run side by side (one per URL) as one. */
function merged(outcomes: PhaseOutcome[], lat: Latencies): PhaseOutcome {
  const first = outcomes[0]!;
  if (outcomes.length === 1) return first;
  const sum = (k: '2xx' | 'non2xx' | 'errors' | 'timeouts') => outcomes.reduce((n, o) => n + o.result[k], 0);
  const statusCodeStats: Record<string, { count: number }> = {};
  for (const o of outcomes) {
    for (const [code, st] of Object.entries(o.result.statusCodeStats ?? {})) {
      statusCodeStats[code] = { count: (statusCodeStats[code]?.count ?? 0) + (st as { count: number }).count };
    }
  }
  const result = {
    ...first.result,
    '2xx': sum('2xx'),
    non2xx: sum('non2xx'),
    errors: sum('errors'),
    timeouts: sum('timeouts'),
    duration: Math.max(...outcomes.map((o) => o.result.duration)),
    statusCodeStats,
  } as autocannon.Result;
  return { result, latency: lat.summary(), wallS: Math.max(...outcomes.map((o) => o.wallS)), cpuMs: Math.max(...outcomes.map((o) => o.cpuMs)) };
}

/** A did-update job: one autocannon per URL, side by side, each sending its own list of pre-signed updates. */
async function runDidUpdates(job: LoadJob, r: DidUpdateRequest, durationS: number, setups: RequestSetup[]): Promise<PhaseOutcome> {
  const urls = [job.url, ...(r.moreUrls ?? [])];
  const lat = new Latencies();
  const connections = Math.max(1, Math.floor(job.connections / urls.length));
  const outcomes = await Promise.all(
    urls.map((url, i) =>
      runPhase({ ...job, url, connections }, { durationS, method: 'POST', path: '/', headers: { 'content-type': 'application/json' }, setup: setups[i]! }, lat),
    ),
  );
  return merged(outcomes, lat);
}

/** An envelope job against several processes: one autocannon per URL, side by side, the connections split. */
async function runSplitEnvelopes(job: LoadJob, urls: readonly string[], durationS: number): Promise<PhaseOutcome> {
  const lat = new Latencies();
  const connections = Math.max(1, Math.floor(job.connections / urls.length));
  const outcomes = await Promise.all(urls.map((url) => runPhase({ ...job, url, connections }, phaseFor(job, durationS), lat)));
  return merged(outcomes, lat);
}

async function run(job: LoadJob): Promise<LoadResult> {
  if (job.request.kind === 'envelope' && (job.request.moreUrls?.length ?? 0) > 0) {
    const urls = [job.url, ...(job.request.moreUrls ?? [])];
    if (job.warmupS > 0) await runSplitEnvelopes(job, urls, job.warmupS);
    return measured(job, () => runSplitEnvelopes(job, urls, job.durationS));
  }
  if (job.request.kind === 'did-update') {
    const r = job.request;
    const setups = didUpdateLists(r).map(sequence);
    if (job.warmupS > 0) await runDidUpdates(job, r, job.warmupS, setups);
    return measured(job, () => runDidUpdates(job, r, job.durationS, setups));
  }
  // a registration job signs its own DIDs, each sent once
  if (job.request.kind === 'registration') registrationSetup = undefined;
  let presigned: Record<string, string>[] | undefined;
  if (job.warmupS > 0) {
    const w = await runPhase(job, phaseFor(job, job.warmupS));
    if (job.request.kind === 'proof') {
      // enough proofs for the measured window at the warm-up rate (signed inline there, so a lower bound) + 60 %
      const rate = w.result['2xx'] / Math.max(0.1, w.wallS);
      const sign = proofSigner(job.request);
      const n = Math.min(600_000, Math.max(2_000, Math.ceil(rate * job.durationS * 1.6)));
      presigned = Array.from({ length: n }, sign);
    }
  }
  if (job.request.kind === 'proof' && presigned === undefined) {
    const sign = proofSigner(job.request);
    presigned = Array.from({ length: 20_000 * job.durationS }, sign);
  }
  const p = presigned;
  return { ...(await measured(job, () => runPhase(job, phaseFor(job, job.durationS, p)))), ...(p === undefined ? {} : { presigned: p.length }) };
}

/** The measured window of `job` (announced to the orchestrator, marked for perf) and its result. */
async function measured(job: LoadJob, window: () => Promise<PhaseOutcome>): Promise<LoadResult> {
  reply({ type: 'measuring' });
  mark(job.name, 'start');
  const m = await window();
  mark(job.name, 'end');
  const r = m.result;
  const duration = Math.max(0.001, r.duration || m.wallS);
  const statuses: Record<string, number> = {};
  for (const [code, s] of Object.entries(r.statusCodeStats ?? {})) statuses[code] = (s as { count: number }).count;
  const bodyBytes = job.request.kind === 'envelope' ? job.request.bodyBytes : 0;
  return {
    name: job.name,
    connections: job.connections,
    rate: round(r['2xx'] / duration, 1),
    ok: r['2xx'],
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    statuses,
    duration_s: round(duration, 2),
    latency_ms: m.latency,
    sent_bytes_per_s: Math.round((r['2xx'] * bodyBytes) / duration),
    loadgen_cpu: { cpu_ms: Math.round(m.cpuMs), wall_ms: Math.round(m.wallS * 1000), cores: round(m.cpuMs / (m.wallS * 1000), 2) },
  };
}

/**
 * With `DDN_BENCH_MARKS=<file>`, each measured window's start and end go to that file as CLOCK_MONOTONIC seconds
 * (`<name> start|end <s>`), the clock `perf record -k CLOCK_MONOTONIC` stamps its samples with: a whole run
 * can be profiled once and its samples cut to one figure's window.
 */
function mark(name: string, edge: 'start' | 'end'): void {
  const file = process.env.DDN_BENCH_MARKS;
  if (file !== undefined) appendFileSync(file, `${name} ${edge} ${(Number(process.hrtime.bigint()) / 1e9).toFixed(6)}\n`);
}

function reply(msg: LoadgenReply): void {
  process.send?.(msg);
}

// the orchestrator gone (crashed or interrupted): nothing left to report to
process.on('disconnect', () => process.exit(0));

process.on('message', (msg: LoadgenMessage) => {
  if (msg.type === 'exit') {
    process.exit(0);
  }
  run(msg.job).then(
    (result) => reply({ type: 'result', result }),
    (err: unknown) => reply({ type: 'error', message: err instanceof Error ? (err.stack ?? err.message) : String(err) }),
  );
});
