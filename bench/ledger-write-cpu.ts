/**
 * `npx tsx bench/ledger-write-cpu.ts --other <tree> [--rounds 3] [--blocks 150] [--pg]`: the embedded ledger's CPU per
 * write — admission (each on its own event-loop turn, as the benchmark's writes arrive) and block production —
 * in one process with no HTTP, this checkout against another tree's sources, interleaved (issue 39 item 2).
 * Each side is a child process running its tree's own `src/` (through that tree's test harness): a ledger on a
 * temporary SQLite file, 300 DIDs, blocks of 10 signed `update_service` writes, signed before the measure.
 *
 * With `--pg` (and `DDN_BENCH_PG_URL`, whose database no other work uses): a ledger on PostgreSQL instead, one
 * process (`test/support/pg-ledger.ts`: its replica, pool and session), every write awaited before the next and a
 * block made by `produceOnce` after every 10 — the process's CPU per write and its PostgreSQL backends' (/proc).
 *
 * CPU counters, not profiles: on a loaded machine a V8 profile is wall-clock (a sample carries the time its thread
 * waited), which inflates syscalls several times; `process.cpuUsage` does not (bench/HISTORY.md, session 22).
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import type * as Harness from '../test/ledger/harness.js';
import type * as Did from '../src/protocol/did.js';
import type * as ProfileModule from '../src/protocol/profile.js';
import type * as PgLedger from '../test/support/pg-ledger.js';
import type { Call } from '../src/ledger/extrinsic.js';
import type { Ed25519KeyPair } from '../src/crypto/ed25519.js';
import { cpuMsBetween, cpuMsByName } from './proc.js';

const { values } = parseArgs({
  options: {
    other: { type: 'string' },
    rounds: { type: 'string', default: '3' },
    blocks: { type: 'string', default: '150' },
    child: { type: 'string' },
    pg: { type: 'boolean', default: false },
  },
});
const DIDS = 300;
const PER_BLOCK = 10;

interface Result {
  per_write_us: number;
  admit_us: number;
  block_us: number;
  /** With `--pg`: the PostgreSQL backends' CPU per write. */
  pg_us?: number;
}

/** The backends of `DDN_BENCH_PG_URL`'s database (their title names it). */
const pgDatabase = () => ` ${new URL(process.env.DDN_BENCH_PG_URL ?? 'postgres://x/postgres').pathname.slice(1) || 'postgres'} `;

/** One side: the writes through the ledger of `root`'s sources; prints its {@link Result}. */
async function child(root: string, blocks: number): Promise<void> {
  const at = (path: string) => pathToFileURL(resolve(root, path)).href;
  const H = (await import(at('test/ledger/harness.ts'))) as typeof Harness;
  const { generateDid } = (await import(at('src/protocol/did.ts'))) as typeof Did;
  const { PLATFORM } = (await import(at('src/protocol/profile.ts'))) as typeof ProfileModule;
  const h = new H.Harness({ finalityDepth: 2 });
  const keys = Array.from({ length: DIDS }, (_, i) => H.seedKey((i % 250) + 1));
  const dids = keys.map(() => generateDid(PLATFORM, new Uint8Array(randomBytes(16))));
  dids.forEach((did, i) => {
    h.submit(H.registerCall(did, keys[i]!));
    if (i % 100 === 99) h.produce();
  });
  const nonces = dids.map(() => 0n);
  const calls = Array.from({ length: blocks * PER_BLOCK }, (_, k) => {
    const i = k % DIDS;
    const did = dids[i]!;
    const service = H.serviceOf(did, 'cache', { serviceEndpoint: [`https://w${k}.bench.example/`], authorization: [`${did}#root`] });
    return H.patchCall('update_service', did, service, H.rootSigner(keys[i]!), { nonce: nonces[i]!++ });
  });
  if (values.pg) {
    h.close();
    await pgChild(root, H, dids, keys, calls);
    return;
  }
  const r = await measure(
    calls,
    async (call) => {
      h.ledger.isPending(call);
      await h.ledger.admit(call, H.metaOf(call));
    },
    async () => {
      h.clock.advance(100);
      if (h.ledger.produceBlock() === null) throw new Error('no block');
    },
  );
  h.close();
  console.log(JSON.stringify(r));
}

/** Admits `calls` one by one, a block after every {@link PER_BLOCK}: the CPU per write of each part. */
async function measure(calls: readonly Call[], admitOne: (c: Call) => Promise<void>, produce: () => Promise<void>): Promise<Result> {
  let admit = 0;
  let block = 0;
  const cpu = (u: NodeJS.CpuUsage) => u.user + u.system;
  const pg0 = values.pg ? cpuMsByName('postgres', pgDatabase()) : undefined;
  const t0 = process.cpuUsage();
  for (let b = 0; b * PER_BLOCK < calls.length; b++) {
    for (const call of calls.slice(b * PER_BLOCK, (b + 1) * PER_BLOCK)) {
      const a0 = process.cpuUsage();
      await admitOne(call);
      admit += cpu(process.cpuUsage(a0));
    }
    const b0 = process.cpuUsage();
    await produce();
    block += cpu(process.cpuUsage(b0));
  }
  const n = calls.length;
  const r: Result = { per_write_us: Math.round(cpu(process.cpuUsage(t0)) / n), admit_us: Math.round(admit / n), block_us: Math.round(block / n) };
  if (pg0 !== undefined) r.pg_us = Math.round((cpuMsBetween(pg0, cpuMsByName('postgres', pgDatabase())) * 1000) / n);
  return r;
}

/** {@link child} on PostgreSQL: the DIDs registered there, then the same writes through one process. */
async function pgChild(root: string, H: typeof Harness, dids: string[], keys: Ed25519KeyPair[], calls: readonly Call[]): Promise<void> {
  const P = (await import(pathToFileURL(resolve(root, 'test/support/pg-ledger.ts')).href)) as typeof PgLedger;
  const d = await P.pgLedgerDeployment({ pollMs: 600_000 });
  const p = await d.start(0, false);
  try {
    for (let i = 0; i < dids.length; i += 100) {
      await Promise.all(dids.slice(i, i + 100).map((did, k) => p.ledger.admit(H.registerCall(did, keys[i + k]!), H.metaOf(H.registerCall(did, keys[i + k]!)))));
      if (!(await p.sync.produceOnce())) throw new Error('not the producer');
    }
    // a first block's worth, not counted: the connections' first statements
    await measure(
      calls.slice(0, PER_BLOCK * 5),
      (call) => p.ledger.admit(call, H.metaOf(call)).then(() => undefined),
      async () => void (await p.sync.produceOnce()),
    );
    const r = await measure(
      calls.slice(PER_BLOCK * 5),
      async (call) => {
        p.ledger.isPending(call);
        await p.ledger.admit(call, H.metaOf(call));
      },
      async () => {
        d.clock.advance(100);
        if (!(await p.sync.produceOnce())) throw new Error('not the producer');
      },
    );
    console.log(JSON.stringify(r));
  } finally {
    await p.close();
    await d.drop();
  }
}

function side(root: string, blocks: number): Result {
  const self = fileURLToPath(import.meta.url);
  const args = ['--import', 'tsx', self, '--child', root, '--blocks', String(blocks), ...(values.pg ? ['--pg'] : [])];
  // the PostgreSQL suites' harness reads its database from DDN_TEST_PG_URL
  const env = values.pg ? { ...process.env, DDN_TEST_PG_URL: process.env.DDN_BENCH_PG_URL } : process.env;
  const r = spawnSync(process.execPath, args, { encoding: 'utf8', cwd: root, env });
  if (r.status !== 0) throw new Error(`${root}: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as Result;
}

const blocks = Number(values.blocks);
if (values.child !== undefined) await child(values.child, blocks);
else {
  if (values.other === undefined) throw new Error('usage: npx tsx bench/ledger-write-cpu.ts --other <tree> [--rounds 3] [--blocks 150]');
  const here = resolve(fileURLToPath(import.meta.url), '../..');
  const ratios: number[] = [];
  for (let round = 1; round <= Number(values.rounds); round++) {
    const other = side(resolve(values.other), blocks);
    const mine = side(here, blocks);
    ratios.push(mine.per_write_us / other.per_write_us);
    const f = (r: Result) => `${r.per_write_us} µs (admit ${r.admit_us}, block ${r.block_us}${r.pg_us === undefined ? '' : `; PostgreSQL ${r.pg_us}`})`;
    console.log(`round ${round}: other ${f(other)}, this ${f(mine)}, this ÷ other ${ratios.at(-1)!.toFixed(3)}`);
  }
  ratios.sort((a, b) => a - b);
  console.log(`median this ÷ other: ${ratios[Math.floor(ratios.length / 2)]!.toFixed(3)}`);
}
