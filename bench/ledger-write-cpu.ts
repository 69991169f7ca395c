/**
 * `npx tsx bench/ledger-write-cpu.ts --other <tree> [--rounds 3] [--blocks 150]`: the embedded ledger's CPU per
 * write — admission (each on its own event-loop turn, as the benchmark's writes arrive) and block production —
 * in one process with no HTTP, this checkout against another tree's sources, interleaved (issue 39 item 2).
 * Each side is a child process running its tree's own `src/` (through that tree's test harness): a ledger on a
 * temporary SQLite file, 300 DIDs, blocks of 10 signed `update_service` writes, signed before the measure.
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

const { values } = parseArgs({
  options: { other: { type: 'string' }, rounds: { type: 'string', default: '3' }, blocks: { type: 'string', default: '150' }, child: { type: 'string' } },
});
const DIDS = 300;
const PER_BLOCK = 10;

interface Result {
  per_write_us: number;
  admit_us: number;
  block_us: number;
}

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
  let admit = 0;
  let block = 0;
  const cpu = (u: NodeJS.CpuUsage) => u.user + u.system;
  const t0 = process.cpuUsage();
  for (let b = 0; b < blocks; b++) {
    for (const call of calls.slice(b * PER_BLOCK, (b + 1) * PER_BLOCK)) {
      const a0 = process.cpuUsage();
      h.ledger.isPending(call);
      await h.ledger.admit(call, H.metaOf(call));
      admit += cpu(process.cpuUsage(a0));
    }
    h.clock.advance(100);
    const b0 = process.cpuUsage();
    if (h.ledger.produceBlock() === null) throw new Error('no block');
    block += cpu(process.cpuUsage(b0));
  }
  const n = blocks * PER_BLOCK;
  const r: Result = { per_write_us: Math.round(cpu(process.cpuUsage(t0)) / n), admit_us: Math.round(admit / n), block_us: Math.round(block / n) };
  h.close();
  console.log(JSON.stringify(r));
}

function side(root: string, blocks: number): Result {
  const self = fileURLToPath(import.meta.url);
  const r = spawnSync(process.execPath, ['--import', 'tsx', self, '--child', root, '--blocks', String(blocks)], { encoding: 'utf8', cwd: root });
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
    const f = (r: Result) => `${r.per_write_us} µs (admit ${r.admit_us}, block ${r.block_us})`;
    console.log(`round ${round}: other ${f(other)}, this ${f(mine)}, this ÷ other ${ratios.at(-1)!.toFixed(3)}`);
  }
  ratios.sort((a, b) => a - b);
  console.log(`median this ÷ other: ${ratios[Math.floor(ratios.length / 2)]!.toFixed(3)}`);
}
