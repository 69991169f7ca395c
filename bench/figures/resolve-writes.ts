/**
 * Resolve under writes (issue 39, item 2): `GET /resolve/{did}` of a DID drawn uniformly from 2,000 registered
 * ones, on a Directory-only node, alone and while a steady 100 signed writes/s (`UpdateService` of 200 of those
 * DIDs, round-robin) go to the same node; on the embedded SQLite ledger and on PostgreSQL (one Directory process,
 * `DDN_BENCH_PG_URL`). Windows alternate — alone, with writes, alone — and the figure is the rate with writes
 * divided by the mean of the two alone (target ≥ 0.9): a block must drop only the answers it changed.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { to0x } from '../../src/base/bytes.js';
import { submitRoute } from '../../src/client/actions.js';
import { buildMutationRequest } from '../../src/client/payloads.js';
import { makeProfile, type Profile } from '../../src/protocol/profile.js';
import { enc, type BenchContext, type Figure } from '../context.js';
import type { LoadJob, LoadResult } from '../jobs.js';
import { round } from '../proc.js';
import { freePort, ServiceProcess } from '../service.js';
import { registerWriters, SERVICE_TYPE, type WriterDid } from './directory-writes.js';

/** Block interval of these deployments (as the write figures': a block every 100 ms while writes come). */
const BLOCK_TIME_MS = 100;
const READ_SET = 2000;
const WRITERS = 200;
const WRITES_PER_S = 100;

/**
 * Signed updates at a steady rate: every 10 ms, as many as are due since the start (at most 32 in flight), each to
 * the next writer DID whose previous update was answered, with its next document nonce (taken from the answer
 * when one was refused for its nonce). Answers are counted.
 */
export class SteadyWrites {
  private readonly nonces: bigint[];
  private readonly busy: boolean[];
  private readonly validUntil = BigInt(Date.now() + 3_600_000);
  private next = 0;
  private sent = 0;
  private n = 0;
  private timer: NodeJS.Timeout | undefined;
  private t0 = 0;
  private readonly inFlight = new Set<Promise<void>>();
  accepted = 0;
  refused = 0;
  /** Writes accepted per second from the start to the stop. */
  rate = 0;

  constructor(
    private readonly url: string,
    private readonly profile: Profile,
    private readonly writers: readonly WriterDid[],
    firstNonce: bigint,
    private readonly perS: number,
  ) {
    this.nonces = writers.map(() => firstNonce);
    this.busy = writers.map(() => false);
  }

  start(): void {
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

  private send(i: number): void {
    const w = this.writers[i]!;
    this.sent++;
    this.busy[i] = true;
    const fields = { service: { id: w.serviceId, type: SERVICE_TYPE, serviceEndpoint: [`https://w${this.n++}.bench.example/`] } };
    const built = buildMutationRequest(this.profile, w.did, 'UpdateService', fields, { nonce: this.nonces[i]!, validUntil: this.validUntil, signerKeyId: 'root' });
    const route = submitRoute(w.did, 'UpdateService', built.request);
    const body = JSON.stringify({ ...built.request, signature: to0x(w.key.sign(built.payload)) });
    const p = fetch(`${this.url}${route.path}`, { method: route.method, headers: { 'content-type': 'application/json' }, body })
      .then(async (res) => {
        const text = await res.text();
        if (res.status === 202) {
          this.accepted++;
          this.nonces[i]!++;
          return;
        }
        this.refused++;
        const expected = /"expected":"([0-9]+)"/.exec(text)?.[1];
        if (expected !== undefined) this.nonces[i] = BigInt(expected);
        if (process.env.DDN_BENCH_DEBUG !== undefined) process.stderr.write(`${res.status} ${text.slice(0, 200)}\n`);
      })
      .catch(() => void this.refused++)
      .finally(() => {
        this.busy[i] = false;
        this.inFlight.delete(p);
      });
    this.inFlight.add(p);
  }

  /** Stops sending and waits for the answers of what was sent. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    const s = (performance.now() - this.t0) / 1000;
    await Promise.all(this.inFlight);
    this.rate = round(this.accepted / Math.max(0.001, s), 1);
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
  const alone1 = await run('alone');
  const writers = dids.slice(0, Math.min(WRITERS, dids.length));
  const writes = new SteadyWrites(url, profile, writers, BigInt(nonces.document_nonce), WRITES_PER_S);
  let busy: LoadResult;
  try {
    busy = await run('writes', () => writes.start());
  } finally {
    await writes.stop();
  }
  const writesPerS = writes.rate;
  const alone2 = await run('alone-again');
  const alone = (alone1.rate + alone2.rate) / 2;
  ctx.log(`  ${store}: alone ${alone1.rate} / ${alone2.rate} req/s, with ${writesPerS} writes/s ${busy.rate} req/s`);
  return {
    value: busy.rate,
    unit: 'req/s',
    reference: 'same_run_line',
    referenceValue: round(alone, 1),
    target: { op: '>=', ratio: 0.9 },
    extra: {
      alone_req_per_s: round(alone, 1),
      writes_per_s: writesPerS,
      writes_refused: writes.refused,
      p99_ms: busy.latency_ms.p99,
      alone_p99_ms: alone1.latency_ms.p99,
    },
    load: busy,
    details: { alone: [alone1, alone2], dids: count, writers: Math.min(WRITERS, count), block_time_ms: BLOCK_TIME_MS },
  };
}
