/**
 * A sustained registration stream (issue 39, item 4; `npm run bench -- --only stream --stream-minutes 10`, not in the
 * default run): a fresh Directory-only deployment (SQLite, then PostgreSQL with one process, each with the default
 * block interval of 1 s) takes registrations through the SDK (prepare, sign, submit) from `STREAM_CONNECTIONS`
 * clients as fast as it accepts them, for the given minutes. Every second the bench reads the Directory's
 * `/metrics`: the pool's size, the blocks produced and their production time (`ddn_ledger_block_production_seconds`,
 * whose sum and count give the mean time of the blocks of that second). Finalized = accepted − still pending
 * (finality depth 0; a registration refused by a block would count as finalized, none is expected).
 *
 * The figure is the finalized rate over the accepted rate of the whole stream (≥ 0.95: finalization keeps up);
 * beside it the rates, the pool's largest size and block production time percentiles by the pool's size.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { DirectoryClient } from '../../src/client/directory-client.js';
import { didDocumentFor, generateKeyPair } from '../../src/client/keys.js';
import { generateDid } from '../../src/protocol/did.js';
import { makeProfile } from '../../src/protocol/profile.js';
import type { BenchContext, Figure } from '../context.js';
import { round } from '../proc.js';
import { freePort, ServiceProcess } from '../service.js';

const STREAM_CONNECTIONS = 32;
const BLOCK_INTERVAL_MS = 1000;

interface Sample {
  s: number;
  accepted: number;
  pool: number;
  blocks: number;
  /** Mean production time of the blocks made since the last sample, ms (0: none). */
  block_ms: number;
}

function metric(text: string, name: string): number {
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})?\\s+(\\S+)`, 'm').exec(text);
  return m === null ? 0 : Number(m[1]);
}

function pct(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? 0 : round(s[Math.min(s.length - 1, Math.floor(q * s.length))]!, 1);
}

async function stream(ctx: BenchContext, url: string, seconds: number): Promise<{ samples: Sample[]; accepted: number; refused: number; seconds: number }> {
  const health = (await (await fetch(`${url}/health`)).json()) as { profile: string };
  const profile = makeProfile(health.profile);
  const client = new DirectoryClient(url, { profile });
  let accepted = 0;
  let refused = 0;
  const t0 = performance.now();
  const until = t0 + seconds * 1000;
  const worker = async () => {
    while (performance.now() < until) {
      const key = generateKeyPair();
      const did = generateDid(profile);
      try {
        await client.register({ did, key, didDocument: didDocumentFor(did, key.publicKey) });
        accepted++;
      } catch {
        refused++;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  };
  const samples: Sample[] = [];
  let last = { sum: 0, count: 0 };
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      await new Promise((r) => setTimeout(r, 1000));
      const text = await (await fetch(`${url}/metrics`)).text();
      const sum = metric(text, 'ddn_ledger_block_production_seconds_sum');
      const count = metric(text, 'ddn_ledger_block_production_seconds_count');
      const blocks = count - last.count;
      samples.push({
        s: round((performance.now() - t0) / 1000, 1),
        accepted,
        pool: metric(text, 'ddn_ledger_pool_transactions'),
        blocks,
        block_ms: blocks > 0 ? round(((sum - last.sum) * 1000) / blocks, 1) : 0,
      });
      last = { sum, count };
      if (samples.length % 60 === 0) ctx.log(`    ${samples.length} s: ${accepted} accepted, pool ${samples[samples.length - 1]!.pool}`);
    }
  })();
  await Promise.all(Array.from({ length: STREAM_CONNECTIONS }, worker));
  const took = (performance.now() - t0) / 1000;
  sampling = false;
  await sampler;
  return { samples, accepted, refused, seconds: took };
}

function streamFigure(id: string, title: string, r: Awaited<ReturnType<typeof stream>>): Figure {
  const lastPool = r.samples[r.samples.length - 1]?.pool ?? 0;
  const finalized = r.accepted - lastPool;
  const withBlocks = r.samples.filter((x) => x.blocks > 0);
  const bin = (lo: number, hi: number) => withBlocks.filter((x) => x.pool >= lo && x.pool < hi).map((x) => x.block_ms);
  const bins = { '0-1k': bin(0, 1000), '1k-5k': bin(1000, 5000), '5k+': bin(5000, Infinity) };
  const extra: Record<string, number> = {
    accepted_per_s: round(r.accepted / r.seconds, 1),
    finalized_per_s: round(finalized / r.seconds, 1),
    refused: r.refused,
    pool_max: Math.max(0, ...r.samples.map((x) => x.pool)),
    pool_end: lastPool,
  };
  for (const [k, xs] of Object.entries(bins)) {
    extra[`block_ms_p50_pool_${k}`] = pct(xs, 0.5);
    extra[`block_ms_p99_pool_${k}`] = pct(xs, 0.99);
    extra[`seconds_pool_${k}`] = xs.length;
  }
  return {
    id,
    title,
    value: round(finalized / r.seconds, 1),
    unit: 'registrations/s finalized',
    reference: 'same_run_line',
    referenceValue: round(r.accepted / r.seconds, 1),
    target: { op: '>=', ratio: 0.95 },
    extra,
    details: { seconds: round(r.seconds, 1), samples: r.samples },
  };
}

export async function blockStreamFigures(ctx: BenchContext, o: { work: string; pgUrl: string | undefined; minutes: number }): Promise<Figure[]> {
  const out: Figure[] = [];
  for (const id of ['sqlite', 'pg'] as const) {
    const title = `Registration stream of ${o.minutes} min, ${id === 'sqlite' ? 'SQLite' : 'PostgreSQL, one process'}: finalized ÷ accepted`;
    if (id === 'pg' && o.pgUrl === undefined) {
      out.push({ id: `block_stream_${id}`, title, value: null, unit: 'registrations/s finalized', unavailable: 'DDN_BENCH_PG_URL is not set' });
      continue;
    }
    const schema = `bench_s_${randomBytes(5).toString('hex')}`;
    const dataDir = join(o.work, `stream-${id}`);
    mkdirSync(dataDir, { recursive: true });
    const svc = await ServiceProcess.start({
      dataDir,
      roles: ['directory'],
      ports: { directory: await freePort() },
      blockTimeMs: BLOCK_INTERVAL_MS,
      logFile: join(o.work, `stream-${id}.log`),
      serveArgs: id === 'pg' ? ['--db', o.pgUrl!, '--db-schema', schema] : [],
    });
    try {
      await ctx.settle(`stream-${id}`);
      ctx.log(`  ${id}: registrations for ${o.minutes} min, ${STREAM_CONNECTIONS} clients`);
      const r = await stream(ctx, svc.urls.directory, o.minutes * 60);
      const f = streamFigure(`block_stream_${id}`, title, r);
      ctx.log(`    accepted ${f.extra?.accepted_per_s}/s, finalized ${f.extra?.finalized_per_s}/s, pool max ${f.extra?.pool_max}`);
      out.push(f);
    } finally {
      await svc.stop();
      if (id === 'pg') {
        const admin = new pg.Client({ connectionString: o.pgUrl });
        await admin.connect();
        await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        await admin.end();
      }
    }
  }
  return out;
}
