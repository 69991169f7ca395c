/**
 * Resolve under writes (issue 39, item 2): `GET /resolve/{did}` of a DID drawn uniformly from 2,000 registered
 * ones, on a Directory-only node, alone and while a steady 100 signed writes/s (`UpdateService` of 200 of those
 * DIDs, round-robin) go to the same node; on the embedded SQLite ledger and on PostgreSQL (one Directory process,
 * `DDN_BENCH_PG_URL`). Windows alternate — alone, with writes, alone — and the figure is the rate with writes
 * divided by the mean of the two alone (target ≥ 0.9): a block must drop only the answers it changed. The writes
 * are signed before each window, so the window measures the node serving them, not the generator signing them on
 * the same cores. Before the first window the writes run alone for {@link WRITE_WARMUP_S} seconds, so that their
 * code is compiled as a node taking writes all day has it (resolve's code is warmed by each window's own warm-up):
 * a write's first 10 seconds cost a Directory about 1.5 × the CPU of its fortieth, mostly V8 compiling and running
 * the write path's code unoptimized (bench/HISTORY.md, session 34). A last window sends the writes alone and reads
 * what they cost the node: CPU per write (blocks included) and the time per block.
 */
import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { to0x } from '../../src/base/bytes.js';
import { submitRoute } from '../../src/client/actions.js';
import { buildMutationRequest } from '../../src/client/payloads.js';
import { makeProfile, type Profile } from '../../src/protocol/profile.js';
import { enc, type BenchContext, type Figure } from '../context.js';
import type { LoadJob, LoadResult } from '../jobs.js';
import { cpuMs, round } from '../proc.js';
import { freePort, ServiceProcess } from '../service.js';
import { registerWriters, SERVICE_TYPE, type WriterDid } from './directory-writes.js';

/** Block interval of these deployments (as the write figures': a block every 100 ms while writes come). */
const BLOCK_TIME_MS = 100;
const READ_SET = 2000;
const WRITERS = 200;
const WRITES_PER_S = 100;
/**
 * Seconds of writes alone before the resolve windows (`--quick`: a third): V8 compiles a path only after enough
 * calls, and at 100 a second the write path's own functions reach their optimized code after some 30–40 s.
 */
const WRITE_WARMUP_S = 30;

/** One signed update ready to send: its writer and document nonce, and the request. */
interface SignedWrite {
  nonce: bigint;
  /** The whole HTTP request, serialized ({@link RawKeepAlive.build}). */
  request: Buffer;
}

/**
 * Signed updates at a steady rate: every 10 ms, as many as are due since the start (at most 32 in flight), each to
 * the next writer DID whose previous update was answered, with its next document nonce (taken from the answer
 * when one was refused for its nonce). Answers are counted.
 *
 * The updates are built and signed before the window ({@link presign}): the generator shares the machine's cores
 * with the node, and signing inside the window would take from the node the CPU the figure measures it by. An
 * update whose nonce moved (a refusal) is signed when it is sent, and counted (`signedInWindow`).
 */
export class SteadyWrites {
  private readonly nonces: bigint[];
  private readonly busy: boolean[];
  private readonly ready: SignedWrite[][];
  private readonly validUntil = BigInt(Date.now() + 3_600_000);
  private next = 0;
  private sent = 0;
  private n = 0;
  private timer: NodeJS.Timeout | undefined;
  private t0 = 0;
  private readonly inFlight = new Set<Promise<void>>();
  /**
   * Keep-alive connections, requests serialized when signed: `fetch` cost the generator about a millisecond of CPU
   * per write on this machine, `node:http` ~0.6 ms.
   */
  private readonly http: RawKeepAlive;
  accepted = 0;
  refused = 0;
  /** Updates signed during a window (their pre-signed nonce was taken). */
  signedInWindow = 0;
  /** Writes accepted per second of the last window. */
  rate = 0;

  constructor(
    url: string,
    private readonly profile: Profile,
    private readonly writers: readonly WriterDid[],
    firstNonce: bigint,
    private readonly perS: number,
  ) {
    this.nonces = writers.map(() => firstNonce);
    this.busy = writers.map(() => false);
    this.ready = writers.map(() => []);
    const u = new URL(url);
    this.http = new RawKeepAlive(u.hostname, Number(u.port));
  }

  /** Builds and signs the next `count` updates (round-robin over the writers), before a window. */
  presign(count: number): void {
    for (let k = 0; k < count; k++) {
      const i = k % this.writers.length;
      const queue = this.ready[i]!;
      const nonce = queue.length > 0 ? queue[queue.length - 1]!.nonce + 1n : this.nonces[i]!;
      queue.push(this.sign(i, nonce));
    }
  }

  /** Starts a window: counters from zero, the updates sent at the rate until {@link stop}. */
  start(): void {
    this.accepted = 0;
    this.refused = 0;
    this.signedInWindow = 0;
    this.sent = 0;
    this.t0 = performance.now();
    this.timer = setInterval(() => {
      const due = Math.floor(((performance.now() - this.t0) / 1000) * this.perS);
      while (this.sent < due && this.inFlight.size < 32) {
        const i = this.freeWriter();
        if (i === undefined) break;
        this.send(i);
      }
      // what could not be sent now is not owed later: the rate is what the Directory answered
      this.sent = Math.max(this.sent, due - this.perS);
    }, 10);
  }

  private freeWriter(): number | undefined {
    for (let k = 0; k < this.writers.length; k++) {
      const i = (this.next + k) % this.writers.length;
      if (!this.busy[i]) {
        this.next = i + 1;
        return i;
      }
    }
    return undefined;
  }

  private sign(i: number, nonce: bigint): SignedWrite {
    const w = this.writers[i]!;
    const fields = { service: { id: w.serviceId, type: SERVICE_TYPE, serviceEndpoint: [`https://w${this.n++}.bench.example/`] } };
    const built = buildMutationRequest(this.profile, w.did, 'UpdateService', fields, { nonce, validUntil: this.validUntil, signerKeyId: 'root' });
    const route = submitRoute(w.did, 'UpdateService', built.request);
    const body = JSON.stringify({ ...built.request, signature: to0x(w.key.sign(built.payload)) });
    return { nonce, request: this.http.build(route.method, route.path, body) };
  }

  /** Writer `i`'s update for its current nonce: the pre-signed one, or one signed now. */
  private take(i: number): SignedWrite {
    const queue = this.ready[i]!;
    const nonce = this.nonces[i]!;
    while (queue.length > 0 && queue[0]!.nonce < nonce) queue.shift();
    if (queue.length > 0 && queue[0]!.nonce === nonce) return queue.shift()!;
    queue.length = 0;
    this.signedInWindow++;
    return this.sign(i, nonce);
  }

  private send(i: number): void {
    const write = this.take(i);
    this.sent++;
    this.busy[i] = true;
    const p = this.http
      .send(write.request)
      .then(({ status, text }) => {
        if (status === 202) {
          this.accepted++;
          this.nonces[i]!++;
          return;
        }
        this.refused++;
        const expected = /"expected":"([0-9]+)"/.exec(text)?.[1];
        if (expected !== undefined) this.nonces[i] = BigInt(expected);
        if (process.env.DDN_BENCH_DEBUG !== undefined) process.stderr.write(`${status} ${text.slice(0, 200)}\n`);
      })
      .catch(() => void this.refused++)
      .finally(() => {
        this.busy[i] = false;
        this.inFlight.delete(p);
      });
    this.inFlight.add(p);
  }

  /** Sends one update (pre-signed if {@link presign} made one) and waits for its answer: the ms it took. */
  async one(): Promise<number> {
    const i = this.freeWriter();
    if (i === undefined) throw new Error('every writer is busy');
    const t0 = performance.now();
    this.send(i);
    await Promise.all(this.inFlight);
    return performance.now() - t0;
  }

  /** Stops sending and waits for the answers of what was sent. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    const s = (performance.now() - this.t0) / 1000;
    await Promise.all(this.inFlight);
    this.rate = round(this.accepted / Math.max(0.001, s), 1);
  }

  /** Closes the kept-alive connections. */
  close(): void {
    this.http.destroy();
  }
}

/**
 * Keep-alive HTTP/1.1 connections to one host that send requests already serialized whole (request line, headers
 * and body in one buffer, built with the write before the window) and read back only the status and the body an
 * answer declares by `content-length`. `node:http` cost the generator ~0.6 ms of CPU per write on this machine
 * (the request object, header validation, the parser's callbacks), on the two cores the node under test shares;
 * this costs a fraction of it (bench/HISTORY.md, session 26). One request at a time per connection, no pipelining.
 */
export class RawKeepAlive {
  private readonly idle: Socket[] = [];
  private readonly open = new Set<Socket>();

  constructor(
    private readonly host: string,
    private readonly port: number,
  ) {}

  /** `POST`/`PUT` of `path` with a JSON body, as one buffer for {@link send}. */
  build(method: string, path: string, body: string): Buffer {
    const b = Buffer.from(body, 'utf8');
    const head = `${method} ${path} HTTP/1.1\r\nhost: ${this.host}:${this.port}\r\ncontent-type: application/json\r\ncontent-length: ${b.length}\r\n\r\n`;
    return Buffer.concat([Buffer.from(head, 'latin1'), b]);
  }

  /** Sends one serialized request on an idle connection (a new one if none) and resolves with the answer. */
  send(request: Buffer): Promise<{ status: number; text: string }> {
    const socket = this.idle.pop() ?? this.connect();
    return new Promise((resolve, reject) => {
      let buf: Buffer = Buffer.alloc(0);
      const done = (err: Error | undefined, answer?: { status: number; text: string }, keep = false) => {
        socket.off('data', onData);
        socket.off('error', onError);
        socket.off('close', onClose);
        if (keep) this.idle.push(socket);
        else socket.destroy();
        if (err !== undefined) reject(err);
        else resolve(answer!);
      };
      const onData = (chunk: Buffer) => {
        buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buf.toString('latin1', 0, end);
        const status = Number(head.slice(9, 12));
        const cl = /\r\ncontent-length:\s*(\d+)/i.exec(head);
        if (cl === null) return done(new Error(`answer without content-length: ${head.slice(0, 200)}`));
        const total = end + 4 + Number(cl[1]);
        if (buf.length < total) return;
        done(undefined, { status, text: buf.toString('utf8', end + 4, total) }, buf.length === total && !/\r\nconnection:\s*close/i.test(head));
      };
      const onError = (err: Error) => done(err);
      const onClose = () => done(new Error('connection closed before the answer'));
      socket.on('data', onData);
      socket.on('error', onError);
      socket.on('close', onClose);
      socket.write(request);
    });
  }

  private connect(): Socket {
    const socket = connect({ host: this.host, port: this.port, noDelay: true });
    this.open.add(socket);
    socket.once('close', () => {
      this.open.delete(socket);
      const i = this.idle.indexOf(socket);
      if (i >= 0) this.idle.splice(i, 1);
    });
    // an idle connection's error (the server closing it) must not be unhandled
    socket.on('error', () => undefined);
    return socket;
  }

  /** Closes every connection. */
  destroy(): void {
    for (const s of this.open) s.destroy();
    this.idle.length = 0;
  }
}

export interface ResolveWritesOptions {
  work: string;
  pgUrl: string | undefined;
}

export async function resolveUnderWritesFigures(ctx: BenchContext, o: ResolveWritesOptions): Promise<Figure[]> {
  const out: Figure[] = [];
  for (const store of ['sqlite', 'pg'] as const) {
    const head = { id: `resolve_writes_${store}`, title: `Resolve under ${WRITES_PER_S} writes/s, ${store === 'sqlite' ? 'SQLite' : 'PostgreSQL'} (reference: resolve alone)` };
    if (store === 'pg' && o.pgUrl === undefined) {
      out.push({ ...head, value: null, unit: 'req/s', unavailable: 'DDN_BENCH_PG_URL is not set' });
      continue;
    }
    const schema = `bench_rw_${randomBytes(5).toString('hex')}`;
    const dataDir = join(o.work, `resolve-writes-${store}`);
    mkdirSync(dataDir, { recursive: true });
    const service = await ServiceProcess.start({
      dataDir,
      roles: ['directory'],
      ports: { directory: await freePort() },
      blockTimeMs: BLOCK_TIME_MS,
      logFile: join(o.work, `resolve-writes-${store}.log`),
      serveArgs: store === 'pg' ? ['--db', o.pgUrl!, '--db-schema', schema] : [],
    });
    try {
      out.push({ ...head, ...(await measure(ctx, service, o.work, store)) });
    } finally {
      await service.stop();
      if (store === 'pg') {
        const admin = new pg.Client({ connectionString: o.pgUrl });
        await admin.connect();
        await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        await admin.end();
      }
    }
  }
  return out;
}

async function measure(ctx: BenchContext, service: ServiceProcess, work: string, store: string): Promise<Omit<Figure, 'id' | 'title'>> {
  const { settings: s } = ctx;
  const url = service.urls.directory;
  const health = (await (await fetch(`${url}/health`)).json()) as { profile: string };
  const profile = makeProfile(health.profile);
  const count = s.quick ? 300 : READ_SET;
  ctx.log(`  ${store}: registering ${count} DIDs`);
  const dids = await registerWriters(url, profile, count);
  const didsFile = join(work, `resolve-writes-${store}.dids`);
  writeFileSync(didsFile, dids.map((d) => `${d.did}\n`).join(''));
  const nonces = (await (await fetch(`${url}/dids/${enc(dids[0]!.did)}/nonces`)).json()) as { document_nonce: string };
  const job: LoadJob = {
    name: `resolve-writes-${store}`,
    url,
    connections: s.connections,
    durationS: s.durationS,
    warmupS: s.warmupS,
    request: { kind: 'random-did', pathPrefix: '/resolve/', didsFile, count },
  };
  const run = async (label: string, first?: () => void): Promise<LoadResult> => {
    await ctx.settle(`resolve-writes-${store}-${label}`);
    first?.();
    // once each, alternating: the mean of the two alone windows brackets the one with writes
    return ctx.gen.run({ ...job, name: `${job.name}-${label}` }, service.pid);
  };
  const writers = dids.slice(0, Math.min(WRITERS, dids.length));
  const writes = new SteadyWrites(url, profile, writers, BigInt(nonces.document_nonce), WRITES_PER_S);
  // signed before each window, with room for the warm-up and a slow start
  const presign = (seconds = s.warmupS + s.durationS + 2) => writes.presign(Math.ceil(seconds * WRITES_PER_S * 1.2));
  const warmupS = s.quick ? WRITE_WARMUP_S / 3 : WRITE_WARMUP_S;
  ctx.log(`  ${store}: ${warmupS} s of writes alone first (their code compiled)`);
  presign(warmupS + 2);
  const warm = await writesFor(service.pid, writes, warmupS * 1000);
  const alone1 = await run('alone');
  presign();
  let busy: LoadResult;
  const writer0 = process.cpuUsage();
  const busyT0 = performance.now();
  try {
    busy = await run('writes', () => writes.start());
  } finally {
    await writes.stop();
  }
  const writerCores = cpuCores(process.cpuUsage(writer0), performance.now() - busyT0);
  const busyWrites = { rate: writes.rate, refused: writes.refused, signedInWindow: writes.signedInWindow };
  const alone2 = await run('alone-again');
  presign();
  const cost = await writesAlone(ctx, service, writes, store).finally(() => writes.close());
  const alone = (alone1.rate + alone2.rate) / 2;
  ctx.log(
    `  ${store}: alone ${alone1.rate} / ${alone2.rate} req/s, with ${busyWrites.rate} writes/s ${busy.rate} req/s; ` +
      `node CPU ${cost.cpu_us_per_write} µs per write (${warm.cpu_us_per_write} in the warm-up), ${cost.block_ms} ms per block (${cost.blocks_per_s} blocks/s); writer ${writerCores} cores`,
  );
  return {
    value: busy.rate,
    unit: 'req/s',
    reference: 'same_run_line',
    referenceValue: round(alone, 1),
    target: { op: '>=', ratio: 0.9 },
    extra: {
      alone_req_per_s: round(alone, 1),
      writes_per_s: busyWrites.rate,
      writes_refused: busyWrites.refused,
      writes_signed_in_window: busyWrites.signedInWindow,
      writer_cpu_cores: writerCores,
      node_cpu_us_per_write: cost.cpu_us_per_write,
      node_main_cpu_us_per_write: cost.main_cpu_us_per_write,
      warmup_node_cpu_us_per_write: warm.cpu_us_per_write,
      warmup_main_cpu_us_per_write: warm.main_cpu_us_per_write,
      block_ms: cost.block_ms,
      blocks_per_s: cost.blocks_per_s,
      p99_ms: busy.latency_ms.p99,
      alone_p99_ms: alone1.latency_ms.p99,
    },
    load: busy,
    details: {
      alone: [alone1, alone2],
      writes_alone: cost,
      write_warmup: { seconds: warmupS, ...warm },
      dids: count,
      writers: Math.min(WRITERS, count),
      block_time_ms: BLOCK_TIME_MS,
    },
  };
}

/** Cores a CPU usage over `wallMs` took. */
function cpuCores(u: NodeJS.CpuUsage, wallMs: number): number {
  return round((u.user + u.system) / 1000 / Math.max(1, wallMs), 3);
}

/** What the writes alone cost the node (no resolve load): CPU per accepted write, and its blocks. */
interface WriteCost {
  writes_per_s: number;
  cpu_us_per_write: number;
  /** The event loop's share (the thread resolve runs on). */
  main_cpu_us_per_write: number;
  blocks_per_s: number;
  /** Mean wall time to produce one block (`ddn_ledger_block_production_seconds`), on the event loop. */
  block_ms: number;
  idle_cpu_cores: number;
}

/**
 * The steady writes alone for `ms` (the write path's warm-up): the node's CPU per accepted write over them, whole
 * process and event loop, its idle CPU not taken out.
 */
async function writesFor(pid: number, writes: SteadyWrites, ms: number): Promise<{ cpu_us_per_write: number; main_cpu_us_per_write: number }> {
  const cpu0 = cpuMs(pid);
  const main0 = cpuMs(pid, pid);
  writes.start();
  await new Promise((r) => setTimeout(r, ms));
  await writes.stop();
  const accepted = Math.max(1, writes.accepted);
  return { cpu_us_per_write: round(((cpuMs(pid) - cpu0) * 1000) / accepted), main_cpu_us_per_write: round(((cpuMs(pid, pid) - main0) * 1000) / accepted) };
}

/** Reads a counter or a histogram's `_sum`/`_count` of the node's `GET /metrics`. */
async function metric(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{}`));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

/**
 * The steady writes with no resolve load, one window long, after an idle window as long: the node's CPU per
 * accepted write (its blocks included, the idle window's CPU taken out) and the blocks' time.
 */
async function writesAlone(ctx: BenchContext, service: ServiceProcess, writes: SteadyWrites, store: string): Promise<WriteCost> {
  const pid = service.pid;
  const url = service.urls.directory;
  const windowMs = ctx.settings.durationS * 1000;
  await ctx.settle(`resolve-writes-${store}-writes-alone`);
  const idle0 = cpuMs(pid);
  const idleT0 = performance.now();
  await new Promise((r) => setTimeout(r, Math.min(windowMs, 3000)));
  const idleCores = (cpuMs(pid) - idle0) / (performance.now() - idleT0);
  const blocks0 = await metric(url, 'ddn_ledger_blocks_total');
  const prodS0 = await metric(url, 'ddn_ledger_block_production_seconds_sum');
  const prodN0 = await metric(url, 'ddn_ledger_block_production_seconds_count');
  const cpu0 = cpuMs(pid);
  const main0 = cpuMs(pid, pid);
  const t0 = performance.now();
  writes.start();
  await new Promise((r) => setTimeout(r, windowMs));
  await writes.stop();
  const wall = performance.now() - t0;
  const cpu = cpuMs(pid) - cpu0 - idleCores * wall;
  const main = cpuMs(pid, pid) - main0;
  const blocks = (await metric(url, 'ddn_ledger_blocks_total')) - blocks0;
  const prodS = (await metric(url, 'ddn_ledger_block_production_seconds_sum')) - prodS0;
  const prodN = (await metric(url, 'ddn_ledger_block_production_seconds_count')) - prodN0;
  const accepted = Math.max(1, writes.accepted);
  return {
    writes_per_s: writes.rate,
    cpu_us_per_write: round((cpu * 1000) / accepted),
    main_cpu_us_per_write: round((main * 1000) / accepted),
    blocks_per_s: round(blocks / (wall / 1000), 1),
    block_ms: prodN > 0 ? round((prodS * 1000) / prodN, 2) : 0,
    idle_cpu_cores: round(idleCores, 3),
  };
}
