/**
 * `npx tsx bench/pg-write-cpu.ts [--rate 80] [--seconds 5] [--rounds 4] [--dids 200] [--shapes one,split,…] [--steps] [--threads]
 * [--windows <file>] [--reads]` (needs `DDN_BENCH_PG_URL`
 * and a built dist/): the Directory processes' CPU per accepted write at one fixed rate (issue 39, item 5), so
 * that throughput, which a loaded machine moves, does not move the per-write share of each process's fixed work
 * (blocks, polls, batches). Three shapes, windows interleaved, rotating the order every round:
 *
 * - `one`: one PostgreSQL Directory process takes every write;
 * - `split`: two processes of one ledger, the writes split between them (every process admits: today's design);
 * - `to_producer`: the same two processes, every write sent to the block producer, the other process only
 *   copying blocks — what the leader shape (one process admits and produces, the others hand writes to it)
 *   costs at best: its hop from the other process to the producer is not in it;
 * - `handed`: the writes split as in `split`, but those sent to the other process handed on raw to the producer
 *   before any route reads them (`bench/hand-over-preload.mjs`, loaded into the Directory processes): the leader
 *   shape prototyped, hop included.
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
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { to0x } from '../src/base/bytes.js';
import { submitRoute } from '../src/client/actions.js';
import { buildMutationRequest } from '../src/client/payloads.js';
import { makeProfile, type Profile } from '../src/protocol/profile.js';
import { deploy, registerWriters, SERVICE_TYPE, type Deployment, type WriterDid } from './figures/directory-writes.js';
import { cpuMs } from './proc.js';
import { readThreadTicks, threadCpu } from './thread-cpu.js';
import { enc } from './context.js';

const { values } = parseArgs({
  options: {
    rate: { type: 'string', default: '80' },
    seconds: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '4' },
    dids: { type: 'string', default: '200' },
    shapes: { type: 'string', default: 'one,split,to_producer,handed' },
    steps: { type: 'boolean', default: false },
    threads: { type: 'boolean', default: false },
    windows: { type: 'string' },
    reads: { type: 'boolean', default: false },
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
  constructor(
    private readonly profile: Profile,
    private readonly dids: readonly WriterDid[],
    private readonly nonces: bigint[],
  ) {
    this.busy = dids.map(() => false);
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
      const expected = /"expected":"([0-9]+)"/.exec(text)?.[1];
      if (expected !== undefined) this.nonces[i] = BigInt(expected);
      return false;
    } catch {
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
  const nonces = await Promise.all(
    dids.map(async (w) => BigInt(((await (await fetch(`${url}/dids/${enc(w.did)}/nonces`)).json()) as { document_nonce: string }).document_nonce)),
  );
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
const one = await deploy('pg1', { work, pgUrl });
const two = await deploy('pg2', { work, pgUrl });
try {
  const writers = { one: await prepared(one), two: await prepared(two) };
  const shapes: Record<'one' | 'split' | 'to_producer' | 'handed', Shape> = {
    one: { d: one, w: writers.one, urls: [one.processes[0]!.urls.directory] },
    split: { d: two, w: writers.two, urls: two.processes.map((p) => p.urls.directory) },
    // process 0 started first and took the producer's lock
    to_producer: { d: two, w: writers.two, urls: [two.processes[0]!.urls.directory] },
    handed: { d: two, w: writers.two, urls: two.processes.map((p) => p.urls.directory), handTo: two.processes[0]!.urls.directory },
  };
  const names = values.shapes.split(',').filter((n): n is keyof typeof shapes => n in shapes);
  const perWrite: Record<string, number[]> = { one: [], split: [], to_producer: [], handed: [] };
  const windows: { shape: string; round: number; pids: number[]; startUs: number; endUs: number; accepted: number }[] = [];
  const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);
  // one window of each, not counted: the processes' first writes (JIT, caches)
  for (const name of names) await shapes[name].w.steady(shapes[name].urls, 2, shapes[name].handTo);
  for (let r = 0; r < Number(values.rounds); r++) {
    for (let k = 0; k < names.length; k++) {
      const name = names[(k + r) % names.length]!;
      const s = shapes[name];
      const pids = s.d.processes.map((p) => p.pid);
      await settleSteps();
      const stepsBefore = pids.map(stepsOf);
      const threadsBefore = pids.map((p) => readThreadTicks(p));
      const before = pids.map((p) => cpuMs(p));
      const startUs = monotonicUs();
      const got = await s.w.steady(s.urls, SECONDS, s.handTo);
      const endUs = monotonicUs();
      const cpu = pids.map((p, i) => cpuMs(p) - before[i]!);
      const threads = pids.map((p, i) => threadCpu(threadsBefore[i]!, readThreadTicks(p)));
      windows.push({ shape: name, round: r + 1, pids, startUs, endUs, accepted: got.accepted });
      await settleSteps();
      const stepsAfter = pids.map(stepsOf);
      const total = cpu.reduce((a, b) => a + b, 0);
      const us = (total * 1000) / Math.max(1, got.accepted);
      perWrite[name]!.push(us);
      console.log(
        `round ${r + 1} ${name.padEnd(11)} ${(got.accepted / SECONDS).toFixed(1)} writes/s accepted (${got.refused} refused), CPU ${cpu.map((c) => c.toFixed(0)).join(' + ')} ms, ${us.toFixed(0)} µs/write, load ${loadavg()[0]!.toFixed(1)}`,
      );
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
  const base = median(perWrite.one!);
  for (const name of names)
    console.log(`${name.padEnd(11)} median ${median(perWrite[name]!).toFixed(0)} µs/write, ÷ one ${(median(perWrite[name]!) / base).toFixed(3)}`);
} finally {
  await Promise.allSettled([one.close(), two.close()]);
}
