/**
 * `npx tsx bench/pg-write-cpu.ts [--rate 80] [--seconds 5] [--warmup 2] [--rounds 4] [--dids 200] [--shapes one,split,…] [--steps] [--threads]
 * [--windows <file>] [--reads] [--other <built tree>]` (needs `DDN_BENCH_PG_URL`
 * and a built dist/): the Directory processes' CPU per accepted write at one fixed rate (issue 39, item 5), so
 * that throughput, which a loaded machine moves, does not move the per-write share of each process's fixed work
 * (blocks, polls, batches). The shapes, windows interleaved, rotating the order every round:
 *
 * - `one`: one PostgreSQL Directory process takes every write;
 * - `split`: two processes of one ledger started with `--ledger-hand-over off`, the writes split between them
 *   (every process admits: the design before session 39);
 * - `built`: two processes of one ledger as `ddn serve` starts them (`--ledger-hand-over on`, the default), the
 *   writes split between them: the one that does not produce hands its writes to the one that does
 *   (src/http/hand-over.ts) — the leader shape as built, at most `--ledger-hand-over-max` (16) hand-overs in flight;
 * - `built<N>` (e.g. `built8`, `built4`): the same with `--ledger-hand-over-max N` (a deployment of its own): beyond N
 *   hand-overs in flight, the process admits the write itself (outcome `busy`);
 * - `to_producer`: the `split` processes, every write sent to the block producer, the other process only
 *   copying blocks — what the leader shape (one process admits and produces, the others hand writes to it)
 *   costs at best: its hop from the other process to the producer is not in it;
 * - `built@other`, `built<N>@other`: the same, run by the built tree `--other <dir>` names (its `bin/`, `dist/` and
 *   `node_modules/`): a two-process change measured against a base, windows interleaved as every shape's;
 * - `handed`: the writes split as in `split`, but those sent to the other process handed on raw to the producer
 *   before any route reads them (`bench/hand-over-preload.mjs`, loaded into the Directory processes): the leader
 *   shape as prototyped before it was built, hop included.
 *
 * Each two-process deployment is started only when one of its shapes is asked for. After each window of a
 * two-process shape, the hand-overs it made (`ddn_ledger_hand_overs_total` of each process: handed, failed, taken)
 * are printed, and any answer other than `202` is counted by status; the summary gives each shape's medians of writes
 * accepted a second and its hand-overs by outcome over the counted windows.
 *
 * `--warmup S`: each shape's first window, not counted, of S seconds (its processes' JIT and caches: at 150 writes/s
 * the CPU per write still fell by a third over the first four 5-second windows after 2 s, session 39).
 *
 * Prints one line per window (writes accepted, CPU ms of each Directory process, CPU ÷ writes accepted in it, load
 * average) and the medians of each shape ÷ `one`. `--steps`: also, per process and window, the shared ledger's
 * steps — how many, and the CPU of the synchronous ones (`bench/ledger-steps-preload.mjs`): where a second
 * process's CPU goes. `--threads`: also each process's CPU per thread name (`main` is the event loop; V8's helpers,
 * libuv's pool). `--windows <file>`: the windows as JSON (shape, process ids, start and end on the monotonic clock
 * in µs — a V8 CPU profile's clock — and writes accepted), for `bench/profile-areas.ts` to read the Directory
 * processes' profiles (`DDN_BENCH_CPU_PROF_DIR`) window by window. `--reads`: while the writes run, one reader
 * resolves a writer's DID at the shape's last process every 2 ms, one read at a time — as the write figure's
 * visibility probe does (with two processes, the one that does not produce: each read copies the other's rows it
 * heard of first). On a loaded machine the rate asked for may not be reached: read the
 * accepted rates beside the ratios (bench/HISTORY.md, session 20).
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { to0x } from '../src/base/bytes.js';
import { submitRoute } from '../src/client/actions.js';
import { buildMutationRequest } from '../src/client/payloads.js';
import { makeProfile, type Profile } from '../src/protocol/profile.js';
import { deploy, registerWriters, SERVICE_TYPE, type Deployment, type WriterDid, type WriteFigureOptions } from './figures/directory-writes.js';
import { cpuMs } from './proc.js';
import { readThreadTicks, threadCpu } from './thread-cpu.js';
import { enc } from './context.js';

const { values } = parseArgs({
  options: {
    rate: { type: 'string', default: '80' },
    seconds: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '2' },
    rounds: { type: 'string', default: '4' },
    dids: { type: 'string', default: '200' },
    shapes: { type: 'string', default: 'one,split,built,to_producer,handed' },
    steps: { type: 'boolean', default: false },
    threads: { type: 'boolean', default: false },
    windows: { type: 'string' },
    reads: { type: 'boolean', default: false },
    other: { type: 'string' },
  },
});
const pgUrl = process.env.DDN_BENCH_PG_URL;
if (pgUrl === undefined) throw new Error('set DDN_BENCH_PG_URL, e.g. postgres://postgres@127.0.0.1:5432/postgres');
const RATE = Number(values.rate);
const SECONDS = Number(values.seconds);

/** Writer DIDs of one deployment with their next document nonces. */
class Writers {
  private next = 0;
  private readonly busy: boolean[];
  private readonly validUntil = BigInt(Date.now() + 3_600_000);
  private n = 0;
  /** Answers other than `202` by status (0: no answer) since the last {@link takeStatuses}. */
  private statuses = new Map<number, number>();
  constructor(
    private readonly profile: Profile,
    private readonly dids: readonly WriterDid[],
    private readonly nonces: bigint[],
  ) {
    this.busy = dids.map(() => false);
  }

  /** The answers other than `202` counted since the last call, e.g. `409×3, 503×1`, and starts counting again. */
  takeStatuses(): string {
    const out = [...this.statuses].map(([status, n]) => `${status}×${n}`).join(', ');
    this.statuses = new Map();
    return out;
  }

  /** Sends `RATE` writes a second for `seconds` s, spread over `urls` in turn; the number accepted. */
  async steady(urls: readonly string[], seconds: number, handTo?: string): Promise<{ accepted: number; refused: number }> {
    let reading = values.reads;
    const reader = (async () => {
      while (reading) {
        await fetch(`${urls[urls.length - 1]!}/resolve/${enc(this.dids[0]!.did)}`).then(
          (r) => r.text(),
          () => '',
        );
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    })();
    try {
      return await this.writes(urls, seconds, handTo);
    } finally {
      reading = false;
      await reader;
    }
  }

  private async writes(urls: readonly string[], seconds: number, handTo?: string): Promise<{ accepted: number; refused: number }> {
    let accepted = 0;
    let refused = 0;
    let sent = 0;
    const inFlight = new Set<Promise<void>>();
    const t0 = performance.now();
    await new Promise<void>((resolve) => {
      const timer = setInterval(() => {
        const elapsed = (performance.now() - t0) / 1000;
        if (elapsed >= seconds) {
          clearInterval(timer);
          resolve();
          return;
        }
        const due = Math.floor(elapsed * RATE);
        while (sent < due && inFlight.size < 32) {
          const i = this.free();
          if (i === undefined) break;
          const url = urls[sent % urls.length]!;
          sent++;
          const p = this.send(url, i, handTo !== undefined && url !== handTo ? handTo : undefined).then((ok) => void (ok ? accepted++ : refused++));
          inFlight.add(p);
          void p.finally(() => inFlight.delete(p));
        }
        sent = Math.max(sent, due - RATE);
      }, 5);
    });
    await Promise.all(inFlight);
    return { accepted, refused };
  }

  private free(): number | undefined {
    for (let k = 0; k < this.dids.length; k++) {
      const i = (this.next + k) % this.dids.length;
      if (!this.busy[i]) {
        this.next = i + 1;
        return i;
      }
    }
    return undefined;
  }

  private async send(url: string, i: number, handTo?: string): Promise<boolean> {
    const w = this.dids[i]!;
    this.busy[i] = true;
    try {
      const fields = { service: { id: w.serviceId, type: SERVICE_TYPE, serviceEndpoint: [`https://c${this.n++}.bench.example/`] } };
      const built = buildMutationRequest(this.profile, w.did, 'UpdateService', fields, {
        nonce: this.nonces[i]!,
        validUntil: this.validUntil,
        signerKeyId: 'root',
      });
      const route = submitRoute(w.did, 'UpdateService', built.request);
      const body = JSON.stringify({ ...built.request, signature: to0x(w.key.sign(built.payload)) });
      const res = await fetch(`${url}${route.path}`, {
        method: route.method,
        headers: { 'content-type': 'application/json', ...(handTo === undefined ? {} : { 'x-hand-to': handTo }) },
        body,
      });
      const text = await res.text();
      if (res.status === 202) {
        this.nonces[i]!++;
        return true;
      }
      this.statuses.set(res.status, (this.statuses.get(res.status) ?? 0) + 1);
      const expected = /"expected":"([0-9]+)"/.exec(text)?.[1];
      if (expected !== undefined) this.nonces[i] = BigInt(expected);
      return false;
    } catch {
      this.statuses.set(0, (this.statuses.get(0) ?? 0) + 1);
      return false;
    } finally {
      this.busy[i] = false;
    }
  }
}

/** A shape: where its writes go, and where the other process hands them on to, if it does. */
interface Shape {
  d: Deployment;
  w: Writers;
  urls: string[];
  handTo?: string;
}

async function prepared(d: Deployment): Promise<Writers> {
  const url = d.processes[0]!.urls.directory;
  const health = (await (await fetch(`${url}/health`)).json()) as { profile: string };
  const profile = makeProfile(health.profile);
  const dids = await registerWriters(url, profile, Number(values.dids));
  // 20 at a time: every read at once would leave the bench one kept-alive connection per DID to the producer,
  // which counts them against its cap per address (256) beside the other process's hand-over connections
  const nonces: bigint[] = [];
  for (let i = 0; i < dids.length; i += 20) {
    const some = dids.slice(i, i + 20).map(async (w) => (await (await fetch(`${url}/dids/${enc(w.did)}/nonces`)).json()) as { document_nonce: string });
    for (const n of await Promise.all(some)) nonces.push(BigInt(n.document_nonce));
  }
  return new Writers(profile, dids, nonces);
}

const work = mkdtempSync(join(tmpdir(), 'ddn-pg-write-cpu-'));
// the Directory processes (children, which inherit the environment) take the hop's preload; only `handed` uses it
const preload = fileURLToPath(new URL('./hand-over-preload.mjs', import.meta.url));
process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ''} --import ${preload}`.trim();
if (values.steps) {
  process.env.DDN_BENCH_STEPS_DIR = join(work, 'steps');
  process.env.NODE_OPTIONS += ` --import ${fileURLToPath(new URL('./ledger-steps-preload.mjs', import.meta.url))}`;
}

type Steps = Record<string, { n: number; us: number; rows: number }>;
/** The running step totals a Directory process wrote (none without `--steps`). */
function stepsOf(pid: number): Steps {
  if (!values.steps) return {};
  try {
    return JSON.parse(readFileSync(join(work, 'steps', `${pid}.json`), 'utf8')) as Steps;
  } catch {
    return {};
  }
}
/** The steps between two totals, e.g. `adoptPending 224/374 rows 47.2 ms`. */
function stepsBetween(before: Steps, after: Steps): string {
  return Object.entries(after)
    .map(([name, s]) => {
      const b = before[name] ?? { n: 0, us: 0, rows: 0 };
      if (s.n === b.n) return '';
      const rows = s.rows - b.rows;
      const us = s.us - b.us;
      return `${name} ${s.n - b.n}${rows > 0 ? `/${rows} rows` : ''}${us > 0 ? ` ${(us / 1000).toFixed(1)} ms` : ''}`;
    })
    .filter((x) => x !== '')
    .join(', ');
}
const settleSteps = () => new Promise((resolve) => setTimeout(resolve, values.steps ? 150 : 0));
/** Hand-overs by outcome of a process so far (`ddn_ledger_hand_overs_total`; empty without the metric). */
async function handOvers(url: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${url}/metrics`)).text().catch(() => '');
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^ddn_ledger_hand_overs_total\{outcome="(\w+)"\} ([0-9.e+]+)$/gm)) out[m[1]!] = Number(m[2]);
  return out;
}
/** The hand-overs between two readings, e.g. `handed 380, taken 0`; empty when there were none. */
function handOversBetween(before: Record<string, number>, after: Record<string, number>): string {
  return Object.entries(after)
    .map(([k, v]) => [k, v - (before[k] ?? 0)] as const)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');
}

/** `one`, `split`, `built`, `built<N>` (`--ledger-hand-over-max N`), `to_producer` or `handed`; `built…@other`: `--other`'s. */
type ShapeName = string;
const SHAPE_NAME = /^(one|split|built([1-9][0-9]{0,3})?(@other)?|to_producer|handed)$/;
const names: ShapeName[] = values.shapes.split(',').filter((n) => SHAPE_NAME.test(n));
const unknown = values.shapes.split(',').filter((n) => !SHAPE_NAME.test(n));
if (unknown.length > 0) throw new Error(`--shapes: unknown ${unknown.join(', ')} (one, split, built, built<N>, built…@other, to_producer, handed)`);
const otherTree = values.other === undefined ? undefined : resolve(values.other);
if (names.some((n) => n.endsWith('@other')) !== (otherTree !== undefined)) throw new Error('a shape `…@other` and --other <built tree> go together');
const deployments: Deployment[] = [];
/** A deployment and its writers, started now. */
async function started(id: 'pg1' | 'pg2' | 'pg2_off', extra: Pick<WriteFigureOptions, 'handOverMax' | 'root'> = {}): Promise<{ d: Deployment; w: Writers }> {
  const d = await deploy(id, { work, pgUrl, ...extra });
  deployments.push(d);
  return { d, w: await prepared(d) };
}
try {
  const one = await started('pg1');
  // `split`, `to_producer` and `handed`: every process admits (the design before the leader shape was built)
  const off = names.some((n) => n === 'split' || n === 'to_producer' || n === 'handed') ? await started('pg2_off') : undefined;
  const urlsOf = (d: Deployment) => d.processes.map((p) => p.urls.directory);
  const shapes: Record<ShapeName, Shape> = {
    one: { ...one, urls: urlsOf(one.d) },
    ...(off === undefined
      ? {}
      : {
          split: { ...off, urls: urlsOf(off.d) },
          // process 0 started first and took the producer's lock
          to_producer: { ...off, urls: [urlsOf(off.d)[0]!] },
          handed: { ...off, urls: urlsOf(off.d), handTo: urlsOf(off.d)[0]! },
        }),
  };
  // `built`: `ddn serve`'s default cap; `built<N>`: `--ledger-hand-over-max N`, a deployment each; `@other`: that tree's
  for (const name of names.filter((n) => n.startsWith('built'))) {
    const [base, tree] = name.split('@') as [string, string | undefined];
    const max = base === 'built' ? undefined : Number(base.slice('built'.length));
    const on = await started('pg2', { handOverMax: max, root: tree === undefined ? undefined : otherTree });
    shapes[name] = { ...on, urls: urlsOf(on.d) };
  }
  const shapeOf = (name: ShapeName): Shape => shapes[name]!;
  const perWrite: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  const perSecond: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  const handedBy: Record<string, Record<string, number>> = Object.fromEntries(names.map((n) => [n, {}]));
  const windows: { shape: string; round: number; pids: number[]; startUs: number; endUs: number; accepted: number }[] = [];
  const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);
  // one window of each, not counted: the processes' first writes (JIT, caches)
  for (const name of names) await shapeOf(name).w.steady(shapeOf(name).urls, Number(values.warmup), shapeOf(name).handTo);
  for (const name of names) shapeOf(name).w.takeStatuses();
  for (let r = 0; r < Number(values.rounds); r++) {
    for (let k = 0; k < names.length; k++) {
      const name = names[(k + r) % names.length]!;
      const s = shapeOf(name);
      const pids = s.d.processes.map((p) => p.pid);
      await settleSteps();
      const handBefore = await Promise.all(urlsOf(s.d).map(handOvers));
      const stepsBefore = pids.map(stepsOf);
      const threadsBefore = pids.map((p) => readThreadTicks(p));
      const before = pids.map((p) => cpuMs(p));
      const startUs = monotonicUs();
      const got = await s.w.steady(s.urls, SECONDS, s.handTo);
      const endUs = monotonicUs();
      const cpu = pids.map((p, i) => cpuMs(p) - before[i]!);
      const threads = pids.map((p, i) => threadCpu(threadsBefore[i]!, readThreadTicks(p)));
      const handAfter = await Promise.all(urlsOf(s.d).map(handOvers));
      windows.push({ shape: name, round: r + 1, pids, startUs, endUs, accepted: got.accepted });
      await settleSteps();
      const stepsAfter = pids.map(stepsOf);
      const total = cpu.reduce((a, b) => a + b, 0);
      const us = (total * 1000) / Math.max(1, got.accepted);
      perWrite[name]!.push(us);
      perSecond[name]!.push(got.accepted / SECONDS);
      for (const [i, a] of handAfter.entries())
        for (const [k, v] of Object.entries(a)) handedBy[name]![k] = (handedBy[name]![k] ?? 0) + v - (handBefore[i]![k] ?? 0);
      const statuses = s.w.takeStatuses();
      console.log(
        `round ${r + 1} ${name.padEnd(11)} ${(got.accepted / SECONDS).toFixed(1)} writes/s accepted (${got.refused} refused${statuses === '' ? '' : `: ${statuses}`}), CPU ${cpu.map((c) => c.toFixed(0)).join(' + ')} ms, ${us.toFixed(0)} µs/write, load ${loadavg()[0]!.toFixed(1)}`,
      );
      if (pids.length > 1) {
        const hand = handAfter.map((a, i) => handOversBetween(handBefore[i]!, a));
        if (hand.some((h) => h !== '')) console.log(`  hand-overs: ${hand.map((h, i) => `process ${i}: ${h === '' ? 'none' : h}`).join('; ')}`);
      }
      if (values.steps) pids.forEach((p, i) => console.log(`  process ${i}: ${stepsBetween(stepsBefore[i]!, stepsAfter[i]!)}`));
      if (values.threads) {
        threads.forEach((t, i) =>
          console.log(
            `  process ${i} threads: ${t
              .map((x) => `${x.name} ${(x.user_ms + x.system_ms).toFixed(0)}`)
              .filter((x) => !x.endsWith(' 0'))
              .join(', ')} ms`,
          ),
        );
      }
    }
  }
  if (values.windows !== undefined) writeFileSync(values.windows, JSON.stringify(windows, null, 1));
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  // without `one` among the shapes there is nothing to divide by: the medians alone
  const base = perWrite.one === undefined ? undefined : median(perWrite.one);
  for (const name of names) {
    const hand = Object.entries(handedBy[name]!)
      .filter(([, n]) => n > 0)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ');
    console.log(
      `${name.padEnd(11)} median ${median(perWrite[name]!).toFixed(0)} µs/write${base === undefined ? '' : `, ÷ one ${(median(perWrite[name]!) / base).toFixed(3)}`}, ${median(perSecond[name]!).toFixed(1)} writes/s accepted (median)${hand === '' ? '' : `; hand-overs in all: ${hand}`}`,
    );
  }
} finally {
  await Promise.allSettled(deployments.map((d) => d.close()));
}
