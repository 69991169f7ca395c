/**
 * `npm run bench:chain`: Directory writes on a Substrate chain (`--ledger substrate`, the dev chain of
 * `npm run dev-chain`) next to the embedded ledger, in the same run: changes accepted per second (202s) and the
 * time from a 202 to the change being finalized, for the same pre-signed registrations. Writes
 * bench/results/chain-latest.{json,md}. Options: `--changes N` (default 400 per ledger), `--concurrency C`
 * (default 16).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { keyPairFromSeed } from '../src/crypto/ed25519.js';
import { generateDid } from '../src/protocol/did.js';
import { multibaseEd25519 } from '../src/protocol/keys.js';
import { PLATFORM } from '../src/protocol/profile.js';
import { ROOT, freePort } from './service.js';
import { registrationBody } from './registrations.js';

const { values } = parseArgs({ options: { changes: { type: 'string', default: '400' }, concurrency: { type: 'string', default: '16' } } });
const CHANGES = Number(values.changes);
const CONCURRENCY = Number(values.concurrency);

interface Child {
  proc: ChildProcess;
  line: Record<string, unknown>;
}

/** Starts a command that prints one JSON line when ready. */
function start(args: string[], what: string): Promise<Child> {
  const proc = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let err = '';
  proc.stderr!.setEncoding('utf8').on('data', (s: string) => (err = (err + s).slice(-8192)));
  return new Promise((resolve, reject) => {
    let out = '';
    proc.stdout!.setEncoding('utf8').on('data', (s: string) => {
      out += s;
      const nl = out.indexOf('\n');
      if (nl >= 0) resolve({ proc, line: JSON.parse(out.slice(0, nl)) as Record<string, unknown> });
    });
    proc.on('exit', (code) => reject(new Error(`${what} exited (${code}) before it was ready:\n${err}`)));
  });
}

const stop = (c: Child) => {
  try {
    process.kill(-c.proc.pid!, 'SIGTERM');
  } catch {
    // gone
  }
};

/** A client-built, signed registration body for DID number `i` (no prepare round trip). */
function registration(i: number, seedBase: number): Record<string, unknown> {
  const seed = new Uint8Array(32);
  new DataView(seed.buffer).setUint32(0, seedBase + i);
  const key = keyPairFromSeed(seed);
  const did = generateDid(PLATFORM, seed.slice(0, 16));
  const vm = `${did}#key-1`;
  const document = {
    id: did,
    verificationMethod: [{ id: vm, type: 'Ed25519VerificationKey2020', controller: did, publicKeyMultibase: multibaseEd25519(key.publicKey) }],
    authentication: [vm],
  };
  return registrationBody(PLATFORM, key, did, document, BigInt(Date.now() + 3_600_000));
}

const percentile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};

/** Submits `bodies` with `CONCURRENCY` in flight; the 202 rate, then the 202 → finalized times. */
async function measure(url: string, bodies: Record<string, unknown>[]) {
  const accepted = new Map<string, number>();
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < bodies.length) {
        const body = bodies[next++]!;
        const res = await fetch(`${url}/register-did`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
        const answer = (await res.json()) as { tx_hash?: string };
        if (res.status !== 202 || answer.tx_hash === undefined) throw new Error(`register-did answered ${res.status}: ${JSON.stringify(answer)}`);
        accepted.set(answer.tx_hash, performance.now());
      }
    }),
  );
  const acceptSeconds = (performance.now() - t0) / 1000;
  const finalizedMs: number[] = [];
  const waiting = new Set(accepted.keys());
  const deadline = performance.now() + 600_000;
  while (waiting.size > 0 && performance.now() < deadline) {
    for (const tx of [...waiting]) {
      const r = (await (await fetch(`${url}/transactions/${tx}`)).json()) as { status?: string };
      if (r.status === 'finalized' || r.status === 'failed') {
        finalizedMs.push(performance.now() - accepted.get(tx)!);
        waiting.delete(tx);
      }
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const allSeconds = (performance.now() - t0) / 1000;
  return {
    changes: bodies.length,
    accepted_per_s: Math.round(bodies.length / acceptSeconds),
    finalized_per_s: Math.round((bodies.length - waiting.size) / allSeconds),
    unfinished: waiting.size,
    to_finality_ms: {
      p50: Math.round(percentile(finalizedMs, 50)),
      p95: Math.round(percentile(finalizedMs, 95)),
      max: Math.round(percentile(finalizedMs, 100)),
    },
  };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'ddn-bench-chain-'));
  const children: Child[] = [];
  try {
    const key = join(dir, 'op.key.json');
    const chain = await start(['--import', 'tsx', 'scripts/dev-chain.ts', '--port', '0', '--key-out', key], 'the dev chain');
    children.push(chain);
    const chainUrl = String(chain.line.chain_url);
    const common = ['bin/ddn.js', 'serve', '--roles', 'directory', '--rate-limit', 'off', '--log-level', 'warn'];
    const substrate = await start(
      [
        ...common,
        '--directory-port',
        String(await freePort()),
        '--data-dir',
        join(dir, 'substrate'),
        '--ledger',
        'substrate',
        '--chain-url',
        chainUrl,
        '--chain-key',
        key,
      ],
      'the substrate Directory',
    );
    children.push(substrate);
    const embedded = await start([...common, '--directory-port', String(await freePort()), '--data-dir', join(dir, 'embedded')], 'the embedded Directory');
    children.push(embedded);
    const bodies = (base: number) => Array.from({ length: CHANGES }, (_, i) => registration(i, base));
    const [eBodies, sBodies] = [bodies(1_000_000), bodies(2_000_000)];
    // the substrate Directory answers writes once it has applied the chain head
    for (let i = 0; i < 600 && (await fetch(`${String(substrate.line.directory_url)}/ready`)).status !== 200; i++) await new Promise((r) => setTimeout(r, 100));
    const results = {
      machine: { cores: (await import('node:os')).cpus().length, node: process.version },
      settings: {
        changes: CHANGES,
        concurrency: CONCURRENCY,
        embedded_block_time_ms: 1000,
        chain: 'dev chain (chopsticks, instant blocks, finalized at once)',
      },
      embedded: await measure(String(embedded.line.directory_url), eBodies),
      substrate: await measure(String(substrate.line.directory_url), sBodies),
      at: new Date().toISOString(),
    };
    const md =
      `# Directory writes: embedded ledger and Substrate chain (${results.at})\n\n` +
      `${CHANGES} pre-signed registrations per ledger, ${CONCURRENCY} in flight; ${results.machine.cores} cores, Node ${results.machine.node}.\n\n` +
      '| ledger | accepted/s (202) | finalized/s | 202 → finalized p50 | p95 | max |\n| --- | --- | --- | --- | --- | --- |\n' +
      (['embedded', 'substrate'] as const)
        .map((k) => {
          const r = results[k];
          return `| ${k} | ${r.accepted_per_s} | ${r.finalized_per_s} | ${r.to_finality_ms.p50} ms | ${r.to_finality_ms.p95} ms | ${r.to_finality_ms.max} ms |`;
        })
        .join('\n') +
      '\n\nThe dev chain builds a block per transaction and finalizes it at once; on a real chain the time to finality is\n' +
      'the chain\'s (docs/chain.md, "Which chain").\n';
    writeFileSync(join(ROOT, 'bench/results/chain-latest.json'), `${JSON.stringify(results, null, 2)}\n`);
    writeFileSync(join(ROOT, 'bench/results/chain-latest.md'), md);
    process.stdout.write(md);
  } finally {
    for (const c of children.reverse()) stop(c);
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
